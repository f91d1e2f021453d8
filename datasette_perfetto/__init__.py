"""datasette-perfetto: Perfetto traces as trace_processor-compatible SQLite, browsed with Datasette.

This module is the Datasette plugin: its hooks are declared here, thin, and
delegate to the modules that do the work.
"""

from pluggy import HookimplMarker

# Datasette's own marker is this same object; making it here keeps `import
# datasette_perfetto` (the importers, the CLI's ingest) from loading Datasette.
hookimpl = HookimplMarker("datasette")



@hookimpl
def register_commands(cli):
    # pluggy matches hook arguments by name, so this one must be called `cli`. Imported
    # here: the importers (and their child processes) have no use for click.
    from . import cli as cli_module

    cli_module.register(cli)


@hookimpl
def prepare_connection(conn):
    from .functions import register_functions

    register_functions(conn)


@hookimpl
def register_routes():
    from .pages import ROUTES as PAGE_ROUTES
    from .report.web import ROUTE, report_page

    return [(ROUTE, report_page), *PAGE_ROUTES]


@hookimpl
def render_cell(value, column, table, database, datasette):
    # Id cells of trace databases link to the details pages; runs per cell, so cell_link exits early.
    from .pages.links import cell_link

    return cell_link(datasette, database, table, column, value)


@hookimpl
def canned_queries(datasette, database, actor):
    # The report views' SQL as shareable canned queries (Datasette 0.65's hook): on trace
    # databases, for actors allowed to run SQL there.
    async def inner():
        from .metadata import is_trace_database
        from .report.canned import canned_queries as report_queries
        from .report.web import can

        try:
            db = datasette.get_database(database)
        except KeyError:
            return None
        if not is_trace_database(db) or not await can(datasette, actor, "execute-sql", database):
            return None
        return report_queries()

    return inner


@hookimpl
def get_metadata(datasette, key, database, table):
    # Descriptions for every served trace database (Datasette 0.65; 1.0 ignores this hook).
    from .metadata import plugin_metadata

    return plugin_metadata(datasette, key, database)


@hookimpl
def extra_template_vars(view_name, database, datasette):
    # The trace summary panel on a trace database's page (templates/database.html).
    if view_name != "database" or not database:
        return None

    async def inner():
        from .metadata import is_trace_database
        from .summary import trace_summary

        db = datasette.get_database(database)
        if not is_trace_database(db):
            return {}
        return {"perfetto_summary": await db.execute_fn(trace_summary)}

    return inner
