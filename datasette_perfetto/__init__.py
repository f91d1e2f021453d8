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
    from .connection import prepare

    prepare(conn)


@hookimpl
def register_routes():
    from .pages import ROUTES as PAGE_ROUTES
    from .report.web import ROUTE, report_page

    return [(ROUTE, report_page), *PAGE_ROUTES]


@hookimpl
def extra_css_urls(template, view_name, datasette):
    # The one stylesheet (static/perfetto.css): on the plugin's own pages and on the database page, which
    # shows a trace database's summary. Datasette serves a plugin's static/ under both spellings of its name.
    if view_name == "perfetto" or template == "database.html":
        return [datasette.urls.static_plugins("datasette_perfetto", "perfetto.css")]
    return None


@hookimpl
def render_cell(value, column, table, database, datasette):
    # Id cells of trace databases link to the details pages; runs per cell, so cell_link exits early.
    from .pages.links import cell_link

    return cell_link(datasette, database, table, column, value)


@hookimpl
def asgi_wrapper(datasette):
    # The report canned queries' flags checked as the report checks them, after Datasette has answered.
    from .report.canned_web import checked_flags

    return lambda app: checked_flags(datasette, app)


@hookimpl
def canned_queries(datasette, database, actor):
    # The report views' SQL as shareable canned queries on trace databases (Datasette 0.65;
    # 1.0 ignores this hook: see startup).
    from .compat import report_canned_queries

    return report_canned_queries(datasette, database, actor)


@hookimpl
def get_metadata(datasette, key, database, table):
    # Descriptions for every served trace database (Datasette 0.65; 1.0 ignores this hook).
    from .metadata import plugin_metadata

    return plugin_metadata(datasette, key, database)


@hookimpl
def startup(datasette):
    # Datasette 1.0 has neither canned_queries nor get_metadata: it stores both, once.
    from .compat import is_datasette_1, register_trace_databases

    if not is_datasette_1(datasette):
        return None

    async def inner():
        await register_trace_databases(datasette)

    return inner


@hookimpl
def permission_resources_sql(datasette, actor, action):
    # Datasette 1.0 only (0.65 has no such hook): the report's queries need execute-sql, as on 0.65.
    if action != "view-query":
        return None
    from .compat import query_permission_rules

    return query_permission_rules(datasette, actor)


@hookimpl
def extra_template_vars(template, view_name, database, datasette):
    if template == "index.html":
        # The home page links each trace database's report (templates/index.html); the
        # template keeps only the databases the actor may see.
        from .metadata import trace_database_names

        return {"perfetto_trace_databases": trace_database_names(datasette)}
    # The trace summary panel on a trace database's page (templates/database.html). Its SQL
    # pages are view "database" too (1.0: canned queries as well), rendered with query.html.
    if view_name != "database" or template != "database.html" or not database:
        return None

    async def inner():
        from .metadata import is_trace_database
        from .summary import trace_summary

        db = datasette.get_database(database)
        if not is_trace_database(db):
            return {}
        return {"perfetto_summary": await db.execute_fn(trace_summary)}

    return inner
