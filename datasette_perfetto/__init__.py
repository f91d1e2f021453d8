"""datasette-perfetto: Perfetto traces as trace_processor-compatible SQLite, browsed with Datasette.

This module is the Datasette plugin: its hooks are declared here, thin, and
delegate to the modules that do the work.
"""

from datasette import hookimpl

from . import cli as cli_module
from .functions import register_functions


@hookimpl
def register_commands(cli):
    # pluggy matches hook arguments by name, so this one must be called `cli`.
    cli_module.register(cli)


@hookimpl
def prepare_connection(conn):
    register_functions(conn)


@hookimpl
def get_metadata(datasette, key, database, table):
    # Descriptions for every served trace database (Datasette 0.65; 1.0 ignores this hook).
    from .metadata import plugin_metadata

    return plugin_metadata(datasette, key, database)
