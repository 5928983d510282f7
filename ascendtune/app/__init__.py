"""The application layer: one use case per command.

`ascendtune.app.<command>` holds the command's option record (`TopoOptions`, ...), its
`run(options) -> report` and its `document(report)` (the `--json` document without
`schema_version`, which the printer adds). Every report says how the command ends: `exit_code`
(SPEC section 4) and `error` (the error it ends with after its output, or None). The Typer CLI
and `ascendtune.api` both call `run` and `document`; neither re-sequences the steps behind them.
"""
