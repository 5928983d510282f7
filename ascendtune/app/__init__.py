"""The application layer: one function per command, typed options in, typed reports out.

Front ends (the Typer CLI, `ascendtune.api`, `fleet`) call these; each command's JSON document
is built here, in one place, from its report.
"""
