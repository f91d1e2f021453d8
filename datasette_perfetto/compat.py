"""What differs between Datasette 0.65 and 1.0, in one place.

Each difference is found by testing for the feature (never by version string):

* permissions: 0.65 `permission_allowed(actor, action, resource)`, 1.0 `allowed(action=, resource=, actor=)`;
* the SQL editor: 0.65 `/{db}?sql=`, 1.0 `/{db}/-/query?sql=` (the old URL answers 302);
* the report's canned queries: 0.65 asks the `canned_queries` hook on each request, 1.0 stores queries
  once (`add_query`, from the `startup` hook) and checks `view-query` on them;
* table and column documentation: 0.65 asks the `get_metadata` hook, 1.0 stores it at startup
  (metadata.store_metadata);
* the template loader (for the report's synchronous table rendering): 0.65's `jinja_env`, 1.0's
  `get_jinja_environment()`.

The report's queries are for actors allowed `execute-sql` on the database, on both versions: anyone else
gets a 403 on them and does not see them listed (database page, 1.0's `/-/queries`), as a database the
actor may not view answers 403 on its queries (Datasette's own `view-database` check). The SQL is the
plugin's, with bound parameters, so Datasette itself would run it without `execute-sql` (0.65 canned
queries, 1.0 trusted queries); the plugin adds the rule: on 0.65 as an `allow: false` on each query for
such actors, on 1.0 as a `view-query` deny rule (`query_permission_rules`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode


def template_loader(datasette) -> Any:
    """The jinja2 loader Datasette finds templates with: --template-dir, the plugins' folders, its own."""
    if hasattr(datasette, "get_jinja_environment"):  # 1.0
        return datasette.get_jinja_environment().loader
    return datasette.jinja_env.loader


def is_datasette_1(datasette) -> bool:
    """Whether this Datasette stores queries and metadata in its internal database (1.0) rather than
    asking the `canned_queries` and `get_metadata` hooks (0.65)."""
    return hasattr(datasette, "add_query")


async def can(datasette, actor, action: str, database: str | None = None) -> bool:
    """Datasette's permission check on 0.65 and 1.0; the plugin's only one."""
    if hasattr(datasette, "allowed"):  # 1.0
        from datasette.resources import DatabaseResource  # type: ignore[import-not-found]

        resource = DatabaseResource(database=database) if database else None
        return await datasette.allowed(action=action, resource=resource, actor=actor)
    return await datasette.permission_allowed(actor, action, resource=database, default=True)


def sql_editor_url(datasette, database: str, sql: str, params: Mapping[str, Any]) -> str:
    """Datasette's SQL editor pre-filled with `sql` and its named parameters (None as empty)."""
    path = datasette.urls.database(database)
    # 1.0 moved the editor to /{db}/-/query (urls.database_query builds it, but adds base_url twice).
    if hasattr(datasette.urls, "database_query"):
        path += "/-/query"
    return path + "?" + urlencode({"sql": sql, **{k: "" if v is None else v for k, v in params.items()}})


def served_trace_databases(datasette) -> list[str]:
    from .metadata import trace_database_names

    return trace_database_names(datasette, [n for n in datasette.databases if not n.startswith("_")])


def report_canned_queries(datasette, database: str, actor):
    """Datasette 0.65's `canned_queries` hook: the report's queries on a trace database."""

    async def inner():
        from .metadata import is_trace_database
        from .report.canned import canned_queries

        db = datasette.databases.get(database)
        if db is None or not is_trace_database(db):
            return None
        queries = canned_queries()  # new dicts on every call
        # Denied rather than left out for such actors: Datasette asks this hook again with no actor to
        # tell whether a query is private, and a query missing then fails an assertion (500).
        if not await can(datasette, actor, "execute-sql", database):
            for query in queries.values():
                query["allow"] = False
        return queries

    return inner


async def register_trace_databases(datasette) -> None:
    """Datasette 1.0, at startup: the report's queries and the table documentation of every trace database
    served. Idempotent; call it again for a database added after startup."""
    from .metadata import store_metadata
    from .report.canned import canned_queries

    names = served_trace_databases(datasette)
    queries = canned_queries()
    for database in names:
        for name, query in queries.items():
            # Trusted: plugin SQL with bound parameters, so Datasette does not ask for execute-sql itself
            # (query_permission_rules does) and offers no edit/delete actions on it.
            await datasette.add_query(
                database,
                name,
                query["sql"],
                title=query["title"],
                description=query["description"],
                parameters=query["params"],
                is_trusted=True,
                source="plugin",
                replace=True,
            )
    await store_metadata(datasette, names)


async def query_permission_rules(datasette, actor):
    """Datasette 1.0's `permission_resources_sql` for `view-query`: deny the report's queries on each trace
    database where the actor may not run SQL (on 0.65, report_canned_queries' `allow: false`)."""
    from datasette.permissions import PermissionSQL  # type: ignore[import-not-found]

    from .report.canned import canned_queries

    denied = [n for n in served_trace_databases(datasette) if not await can(datasette, actor, "execute-sql", n)]
    if not denied:
        return None
    return PermissionSQL(
        sql="SELECT d.value AS parent, q.value AS child, 0 AS allow, :perfetto_reason AS reason "
        "FROM json_each(:perfetto_databases) AS d, json_each(:perfetto_queries) AS q",
        params={
            "perfetto_databases": json.dumps(denied),
            "perfetto_queries": json.dumps(list(canned_queries())),
            "perfetto_reason": "datasette-perfetto: report queries need execute-sql on the database",
        },
    )
