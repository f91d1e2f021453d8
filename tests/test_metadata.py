"""Datasette metadata derived from schema.py: metadata.yml and the get_metadata hook."""

import sqlite3
from pathlib import Path

import pytest
from conftest import DATASETTE_1, ingest_named, metadata_of, sql_rows
from datasette.app import Datasette
from markupsafe import escape

from datasette_perfetto import metadata as md
from datasette_perfetto import schema
from datasette_perfetto.ingest import ingest_bytes

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def trace_db(tmp_path_factory, demo_bytes):
    return ingest_named(tmp_path_factory, demo_bytes, "trace")


@pytest.fixture
def plain_db(tmp_path):
    path = tmp_path / "plain.db"
    conn = sqlite3.connect(path)
    conn.execute("create table things (id integer primary key, ts integer, name text)")
    conn.execute("insert into things (ts, name) values (1, 'one'), (2, 'two')")
    # A slice table alone does not make a trace database.
    conn.execute("create table slice (id integer primary key, ts integer, dur integer)")
    conn.commit()
    conn.close()
    return path


def column_dl(page: str) -> str:
    start = page.index('<dl class="column-descriptions">')
    return page[start : page.index("</dl>", start)]


# -- metadata.yml and schema docs ---------------------------------------------


def test_metadata_yml_matches_schema():
    committed = (ROOT / "metadata.yml").read_text(encoding="utf-8")
    assert committed == md.render_yaml(), (
        'metadata.yml is out of date; regenerate it with: python -c "from '
        "datasette_perfetto.metadata import render_yaml; "
        "open('metadata.yml', 'w', encoding='utf-8').write(render_yaml())\""
    )


def test_metadata_yml_loads_as_datasette_metadata():
    import yaml

    doc = yaml.safe_load((ROOT / "metadata.yml").read_text(encoding="utf-8"))
    assert doc["databases"][md.YAML_DATABASE] == md.database_metadata()
    assert "units" not in str(doc)  # see metadata.py: pint units break 0.65 filters


def test_every_table_and_column_is_documented():
    for t in schema.TABLES:
        assert t.doc.strip(), t.name
        for c in t.columns:
            assert c.doc.strip(), f"{t.name}.{c.name}"
    for v in schema.VIEWS:
        assert v.doc.strip(), v.name
        for c in v.columns:
            assert c.doc.strip(), f"{v.name}.{c.name}"


def test_datasette_metadata_covers_schema():
    tables = md.datasette_metadata("x")["databases"]["x"]["tables"]
    stored = schema.TABLES + tuple(d.table for d in schema.DERIVED)
    assert list(tables) == [t.name for t in stored] + [v.name for v in schema.VIEWS]
    for t in stored:
        assert tables[t.name]["description"] == t.doc
        assert list(tables[t.name]["columns"]) == [c.name for c in t.columns]
    slice_cols = tables["slice"]["columns"]
    assert slice_cols["ts"] == "Start timestamp. (ns)"
    assert slice_cols["name"] == "Slice name."
    assert tables["machine"]["columns"]["system_ram_bytes"].endswith("(bytes)")
    # View columns are documented from the columns they select.
    assert tables["thread_track"]["columns"]["utid"] == schema.table("track").columns[-3].doc
    assert tables["counter_track"]["columns"]["unit"] == "Unit of a counter track's values."
    assert tables["slices"]["columns"] == slice_cols


def test_datasette_metadata_returns_fresh_dicts():
    a = md.datasette_metadata("t")
    a["databases"]["t"]["tables"]["slice"]["columns"]["ts"] = "changed"
    assert md.datasette_metadata("t")["databases"]["t"]["tables"]["slice"]["columns"]["ts"] != "changed"


# -- through Datasette ----------------------------------------------------------


@pytest.mark.asyncio
async def test_slice_table_page_shows_descriptions(trace_db):
    ds = Datasette([str(trace_db)])
    r = await ds.client.get("/trace/slice")
    assert r.status_code == 200
    assert str(escape(schema.table("slice").doc)) in r.text
    dl = column_dl(r.text)
    for c in schema.table("slice").columns:
        expected = escape(md.column_description(c))
        assert f"<dt>{c.name}</dt><dd>{expected}</dd>" in dl
    assert "<dt>ts</dt><dd>Start timestamp. (ns)</dd>" in dl
    # Raw nanosecond values, not pint-rounded quantities.
    first_ts = sqlite3.connect(trace_db).execute("select ts from slice order by id limit 1").fetchone()[0]
    assert f'class="col-ts type-int">{first_ts}<' in r.text

    meta = await metadata_of(ds)
    assert meta["title"] == "Perfetto trace"
    trace = meta["databases"]["trace"]
    assert trace["description"] == md.DATABASE_DESCRIPTION
    assert trace["tables"]["slice"]["columns"]["dur"].endswith("(ns)")


@pytest.mark.asyncio
async def test_database_page_lists_tables_and_views(trace_db):
    ds = Datasette([str(trace_db)])
    r = await ds.client.get("/trace")
    assert r.status_code == 200
    for name in [t.name for t in schema.TABLES] + [v.name for v in schema.VIEWS]:
        if DATASETTE_1 and name.startswith("_"):
            # Datasette 1.0 hides tables named with a leading underscore (trace_processor's
            # __intrinsic_* names) from the list; they are still served.
            assert (await ds.client.get(f"/trace/{name}")).status_code == 200, name
            continue
        assert f'href="/trace/{name}"' in r.text, name
    assert str(escape(md.DATABASE_DESCRIPTION)) in r.text


@pytest.mark.asyncio
async def test_sql_functions_available(trace_db):
    conn = sqlite3.connect(trace_db)
    arg_set_id, key, value = conn.execute(
        "select arg_set_id, key, int_value from args where value_type = 'int' limit 1"
    ).fetchone()
    ds = Datasette([str(trace_db)])
    # Datasette binds named parameters as text, so the arg_set_id goes in literally.
    sql = f"select extract_arg({int(arg_set_id)}, :k) as v, trace_dur() > 0 as d"
    assert await sql_rows(ds, "trace", sql, k=key) == [{"v": value, "d": 1}]


@pytest.mark.asyncio
async def test_thread_track_view_is_browsable(trace_db):
    ds = Datasette([str(trace_db)])
    r = await ds.client.get("/trace/thread_track")
    assert r.status_code == 200
    assert "Slice tracks associated with a thread." in r.text
    assert "<dt>utid</dt>" in column_dl(r.text)
    rows = (await ds.client.get("/trace/thread_track.json?_shape=array")).json()
    assert rows and all(row["utid"] is not None for row in rows)


@pytest.mark.asyncio
async def test_non_trace_database_gets_no_perfetto_metadata(trace_db, plain_db):
    ds = Datasette([str(trace_db), str(plain_db)])
    meta = await metadata_of(ds)
    assert "trace" in meta["databases"]
    assert "plain" not in meta.get("databases", {})
    assert "title" not in meta  # a mixed instance keeps Datasette's own title

    for path in ("/plain", "/plain/things", "/plain/slice"):
        r = await ds.client.get(path)
        assert r.status_code == 200, path
        assert "column-descriptions" not in r.text
        assert "Perfetto" not in r.text
    assert await sql_rows(ds, "plain", "select extract_arg(1, 'x') as v") == [{"v": None}]


@pytest.mark.asyncio
async def test_only_non_trace_databases(plain_db):
    ds = Datasette([str(plain_db)])
    assert (await ds.client.get("/plain/things")).status_code == 200
    assert await metadata_of(ds) == {}


@pytest.mark.asyncio
async def test_local_metadata_wins_and_does_not_leak(trace_db):
    mine = {"title": "Mine", "databases": {"trace": {"tables": {"slice": {"description": "My slices"}}}}}
    ds = Datasette([str(trace_db)], metadata=mine)
    r = await ds.client.get("/trace/slice")
    assert "My slices" in r.text
    assert "<dt>ts</dt>" in column_dl(r.text)  # plugin columns still merged in
    assert (await metadata_of(ds))["title"] == "Mine"

    # Datasette merges into (and adds keys to) the dicts the hook returns; a
    # later instance must not see the first one's metadata.
    ds2 = Datasette([str(trace_db)])
    r = await ds2.client.get("/trace/slice")
    assert "My slices" not in r.text
    assert schema.table("slice").doc in r.text


@pytest.mark.asyncio
async def test_detection_is_cached_per_file_version(tmp_path, plain_db, demo_bytes, monkeypatch):
    calls = []
    real = md.read_is_trace

    def counting(path, immutable):
        calls.append(path)
        return real(path, immutable)

    monkeypatch.setattr(md, "read_is_trace", counting)
    path = tmp_path / "later.db"
    path.write_bytes(plain_db.read_bytes())
    immutable = tmp_path / "frozen.db"
    ingest_bytes(demo_bytes, str(immutable))
    ds = Datasette([str(path)], immutables=[str(immutable)])
    for _ in range(3):
        assert (await ds.client.get("/later/things")).status_code == 200
        assert (await ds.client.get("/frozen/slice")).status_code == 200
    assert sorted(calls) == sorted([str(path), str(immutable)])
    meta = await metadata_of(ds)
    assert list(meta["databases"]) == ["frozen"]

    # Ingesting over a served mutable file replaces it; the next lookup notices. 0.65 asks the plugin on
    # every request; 1.0 stored the metadata at startup, so it is stored again, as a restart would.
    ingest_bytes(demo_bytes, str(path))
    if DATASETTE_1:
        from datasette_perfetto.compat import register_trace_databases

        await register_trace_databases(ds)
    meta = await metadata_of(ds)
    assert sorted(meta["databases"]) == ["frozen", "later"]
    assert meta["title"] == "Perfetto traces"
