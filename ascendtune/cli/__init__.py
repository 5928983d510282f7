"""The command line. Importing it tunes the collector for a short-lived process: a command
allocates hundreds of thousands of objects while importing and reading a host, and at the
default gen0 threshold (700) the collector runs some sixty times for almost nothing to free
(about 5 ms of a 90 ms `topo`). A larger threshold keeps collections (and so a bound on
garbage cycles) for the long runs (`watch`, `bind --watch`, `log` of a large file).
`ascendtune.api` does not import this package: a library caller's collector is left alone."""

import gc

gc.set_threshold(20_000, 20, 20)
