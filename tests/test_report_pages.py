"""Report pages through datasette.client: formats, errors, permissions, escaping, canned queries."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner
from conftest import assert_fuzzed_flags_never_500, datasette_with, query_names, served, sql_path
from datasette.cli import cli as datasette_cli

from datasette_perfetto.ingest import ingest_bytes
from datasette_perfetto.report.canned import canned_queries
from datasette_perfetto.report.scope import FLAGS
from datasette_perfetto.report.views import NOUNS
from datasette_perfetto.trace_builder import TraceBuilder
from datasette_perfetto.web import Page

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


def hostile_trace() -> bytes:
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "<script>alert('p')</script>")
    track = seq.thread(10, 12, "w\"orker' & <b>")
    long_name = "x" * 3000
    seq.slice_begin(1_000, track, "<img src=x onerror=alert(1)>")
    seq.slice_end(2_000, track)
    seq.slice_begin(3_000, track, long_name)
    seq.slice_end(4_000, track)
    seq.slice_begin(5_000, track, "bad \udcff bytes".encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
    seq.slice_end(6_000, track)
    return b.to_bytes()


@pytest.fixture
def demo_ds(demo_db):
    return served(demo_db.path)


@pytest.mark.asyncio
async def test_slices_table_html_shows_numbers_and_links(demo_ds, demo_db):
    page = (await demo_ds.client.get("/demo/-/report/slices")).text
    top_name, top_count = demo_db.rows(
        "SELECT name, count(*) FROM slice GROUP BY name ORDER BY sum(max(dur, 0)) DESC LIMIT 1"
    )[0]
    assert top_name == "URLRequest" and f">{top_name}</a>" in page
    assert "47 names" in page and "743 total" in page
    # Drill-down: the name links to inspect, the footnote reveals more rows, SQL is shown with an editor link.
    assert 'href="/demo/-/report/slices/inspect?name=URLRequest"' in page
    assert "rerun with top=50" in page and 'href="/demo/-/report/slices/table?top=50"' in page
    assert "SQL this page ran" in page and "open in the SQL editor" in page


@pytest.mark.asyncio
async def test_json_txt_and_sql_formats(demo_ds):
    data = (await demo_ds.client.get("/demo/-/report/slices.json?top=3")).json()
    assert data["noun"] == "slices" and data["view"] == "table"
    assert len(data["slices_table"]["rows"]) == 3
    assert data["context"]["scope"] == {"top": "3"}
    assert data["slices_table"]["rows"][0]["stats"]["p95"]  # richer stats than the text
    text = await demo_ds.client.get("/demo/-/report/slices.txt?top=3")
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text.startswith("[demo.pftrace | full trace | 2s |")
    sql = (await demo_ds.client.get("/demo/-/report/slices.sql?name=Raster")).text
    assert "FROM report_slice_name" in sql and ':name = "Raster"' in sql


@pytest.mark.asyncio
async def test_sql_shown_is_the_sql_run(demo_ds, demo_db):
    data = (await demo_ds.client.get("/demo/-/report/slices.json?thread=CrBrowserMain&top=2")).json()
    query = next(q for q in data["queries"] if q["purpose"].startswith("slice names, top by the sort key"))
    conn = sqlite3.connect(demo_db.path)
    rows = conn.execute(query["sql"], {k: (int(v) if v.isdigit() else v) for k, v in query["params"].items()})
    assert [r[0] for r in rows] == [r["name"] for r in data["slices_table"]["rows"]]


@pytest.mark.asyncio
async def test_sql_link_opens_the_editor_with_the_query_and_its_values(demo_ds):
    data = (await demo_ds.client.get("/demo/-/report/slices.json?name=Raster")).json()
    query = next(q for q in data["queries"] if q["purpose"].startswith("slice names, top by the sort key"))
    path, _, query_string = query["url"].partition("?")
    assert path == sql_path("demo")  # 0.65 /demo, 1.0 /demo/-/query (/demo?sql= redirects there)
    editor = await demo_ds.client.get(query["url"])
    assert editor.status_code == 200 and "Raster" in editor.text
    rows = (await demo_ds.client.get(f"{path}.json?_shape=array&{query_string}")).json()
    assert [r["name"] for r in rows] == ["Raster"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path, message",
    [
        ("/demo/-/report/bogus", "unknown noun 'bogus'"),
        ("/demo/-/report/slices/pie", "slices has no view 'pie'"),
        ("/demo/-/report/slices.json?top=0", "top: must be between 1 and 10000"),
        ("/demo/-/report/slices.json?time=2s", "time: expected START,END"),
        ("/demo/-/report/slices.json?min_duration=5parsecs", "min_duration: unknown unit 'parsecs'"),
        ("/demo/-/report/slices.json?sort=size", "sort: 'size' is not a sort key of slices table"),
        ("/demo/-/report/slices.json?colour=red", "unknown parameter 'colour'"),
        ("/demo/-/report/slices.json?top=1&top=2", "top: given more than once"),
        ("/demo/-/report.json?name=x", "overview does not take name"),
    ],
)
async def test_bad_requests_are_400_with_the_reason(demo_ds, path, message):
    r = await demo_ds.client.get(path)
    assert r.status_code == 400
    if path.split("?")[0].endswith(".json"):
        body = r.json()
        assert body["ok"] is False and message in body["error"]
    else:
        assert message.replace("'", "&#39;") in r.text


@pytest.mark.asyncio
async def test_json_integers_are_numbers_and_zeros_are_present(demo_ds, demo_db):
    r = await demo_ds.client.get("/demo/-/report/slices.json?top=100")
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    assert f'"trace_start_ts": {start},' in r.text  # an int64 as a JSON number, not a string
    rows = {row["name"]: row for row in r.json()["slices_table"]["rows"]}
    instant = rows["InputEvent"]  # instants: a name whose total is 0
    assert (instant["total_dur"], instant["max_dur"], instant["count"]) == (0, 0, 12)
    assert set(instant) == set(rows["URLRequest"])  # every field present, zero or not
    # The CLI's JSON is the same rendering.
    cli = json.loads(
        CliRunner()
        .invoke(datasette_cli, ["perfetto", "report", str(demo_db.path), "slices", "--top", "100", "--format", "json"])
        .output
    )
    assert cli["slices_table"] == r.json()["slices_table"]


@pytest.mark.asyncio
async def test_errors_are_the_same_on_every_page(tmp_path, demo_db):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)")
    ds = served(plain, demo_db.path)
    message = "plain is not a trace database (no slice and trace_bounds tables)"
    for path in ("/plain/-/report", "/plain/-/tracks", "/plain/-/track/1", "/plain/-/slice/1"):
        assert (await ds.client.get(path.replace("plain", "nope"))).status_code == 404, path
        r = await ds.client.get(path + ".json")
        assert r.status_code == 400 and r.json() == {
            "ok": False,
            "error": message,
            "status": 400,
            "parameter": None,
            "options": [],
        }, path
        html = await ds.client.get(path)
        assert html.status_code == 400 and message in html.text, path
    baseline = await ds.client.get("/demo/-/report/slices.json?baseline=plain")
    assert baseline.status_code == 400 and baseline.json()["error"] == message
    text = await ds.client.get("/plain/-/report/slices.txt")
    assert (text.status_code, text.text) == (400, f"error: {message}\n")
    # A bad parameter: 400 with the parameter and its valid values, on the report and the tracks list alike.
    for path, parameter in (("/demo/-/report/slices.json?sort=x", "sort"), ("/demo/-/tracks.json?sort=x", "sort")):
        r = await ds.client.get(path)
        error = r.json()
        assert r.status_code == 400 and (error["ok"], error["status"], error["parameter"]) == (False, 400, parameter)
        assert "x" not in error["options"] and error["options"], path


@pytest.mark.asyncio
async def test_a_page_over_the_time_limit_is_503(demo_db, monkeypatch):
    # Only the plugin's queries get the 1 ms limit: Datasette 1.0 runs its own permission SQL under the setting.
    monkeypatch.setattr(Page, "time_limit_ms", property(lambda page: 1))
    ds = served(demo_db.path)
    r = await ds.client.get("/demo/-/report.json")
    assert r.status_code == 503 and r.json()["status"] == 503
    assert "took longer than the 1 ms query limit (the sql_time_limit_ms setting)" in r.json()["error"]
    html = await ds.client.get("/demo/-/report")
    assert html.status_code == 503 and "sql_time_limit_ms" in html.text


@pytest.mark.asyncio
async def test_pages_share_one_stylesheet(demo_ds):
    css = await demo_ds.client.get("/-/static-plugins/datasette_perfetto/perfetto.css")
    assert css.status_code == 200 and ".perfetto-report-table" in css.text and ".perfetto-fields" in css.text
    link = '<link rel="stylesheet" href="/-/static-plugins/datasette_perfetto/perfetto.css">'
    assert link in (await demo_ds.client.get("/demo")).text  # the trace summary on the database page
    for path in ("/demo/-/report", "/demo/-/report/slices", "/demo/-/report/nope", "/demo/-/tracks", "/demo/-/track/0"):
        page = (await demo_ds.client.get(path)).text
        assert link in page and "<style" not in page, path
        content = page.split('<section class="content">')[1].split("<footer")[0]
        classes = {c for attr in re.findall(r'class="([^"]*)"', content) for c in attr.split()}
        # Ours are prefixed; the rest are Datasette's own.
        others = {c for c in classes if not c.startswith("perfetto-")}
        assert others <= {"table-wrapper", "rows-and-columns", "crumbs", "message-error"}, (path, others)


@pytest.mark.asyncio
async def test_permissions_are_checked(demo_db):
    ds = datasette_with([demo_db.path], {"databases": {"demo": {"allow": {"id": "root"}}}})
    assert (await ds.client.get("/demo/-/report")).status_code == 403
    assert (await ds.client.get("/demo/-/report/slices.json")).status_code == 403
    assert (await ds.client.get("/demo/slices_table.json")).status_code == 403  # its canned queries too
    root = {"ds_actor": ds.sign({"a": {"id": "root"}}, "actor")}
    assert (await ds.client.get("/demo/-/report", cookies=root)).status_code == 200
    assert (await ds.client.get("/demo/slices_table.json?_shape=array", cookies=root)).json()[0]["count"] > 0
    closed = datasette_with([demo_db.path], {"allow": {"id": "root"}})  # view-instance
    for path in ("/demo/-/report", "/demo/slices_table.json"):
        assert (await closed.client.get(path)).status_code == 403, path


@pytest.mark.asyncio
async def test_sql_links_and_canned_queries_need_execute_sql(demo_db):
    open_ds = served(demo_db.path)
    assert (await open_ds.client.get("/demo/slices_table.json?_shape=array&name=Raster")).json()[0]["count"] == 48
    assert sorted(canned_queries()) == await query_names(open_ds, "demo")  # listed
    closed = datasette_with([demo_db.path], {"allow_sql": {"id": "root"}})
    page = (await closed.client.get("/demo/-/report/slices")).text
    assert "open in the SQL editor" not in page and "SQL this page ran" in page
    # Refused and not listed; the report itself and the database page stay open.
    assert (await closed.client.get("/demo/slices_table.json")).status_code == 403
    assert (await closed.client.get("/demo/slices_table")).status_code == 403
    database_page = await closed.client.get("/demo")
    assert database_page.status_code == 200 and "slices_table" not in database_page.text
    assert await query_names(closed, "demo") == []
    # An actor allowed SQL gets the links and the queries (the query is then private: anonymous may not see it).
    root = {"ds_actor": closed.sign({"a": {"id": "root"}}, "actor")}
    assert "open in the SQL editor" in (await closed.client.get("/demo/-/report/slices", cookies=root)).text
    rows = (await closed.client.get("/demo/slices_table.json?_shape=array&name=Raster", cookies=root)).json()
    assert rows[0]["count"] == 48
    assert sorted(canned_queries()) == await query_names(closed, "demo", cookies=root)


@pytest.mark.asyncio
async def test_canned_query_takes_report_flag_syntax(demo_ds, demo_db):
    rows = (
        await demo_ds.client.get("/demo/slices_table.json?_shape=array&time=0.5s,1s&thread=Cr*&top=2&sort=dur")
    ).json()
    start = demo_db.one("SELECT start_ts FROM trace_bounds")
    expected = demo_db.rows(
        "SELECT s.name, count(*) FROM slice s JOIN thread_track tt ON tt.id = s.track_id JOIN thread USING (utid) "
        "WHERE thread.name GLOB 'Cr*' AND s.ts < ? AND s.ts + max(s.dur, 0) >= ? "
        "GROUP BY s.name ORDER BY sum(max(s.dur, 0)) DESC LIMIT 2",
        (start + 1_000_000_000, start + 500_000_000),
    )
    assert [(r["name"], r["count"]) for r in rows] == expected


@pytest.mark.asyncio
async def test_hostile_names_are_escaped_and_intact(tmp_path):
    path = tmp_path / "hostile.db"
    ingest_bytes(hostile_trace(), str(path))
    ds = served(path)
    page = (await ds.client.get("/hostile/-/report/slices?top=50")).text
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script>alert" not in page
    assert "x" * 3000 in page  # long names are not cut
    text = (await ds.client.get("/hostile/-/report/slices.txt?top=50")).text
    assert "<img src=x onerror=alert(1)>" in text  # plain text is not HTML-escaped


@pytest.mark.asyncio
async def test_text_that_is_not_utf8_is_read_as_datasette_reads_it(tmp_path):
    # An import writes valid UTF-8 and pages read it with SQLite's decoding; bytes someone wrote into the database
    # since are read Datasette's way, invalid sequences replaced, on every page that shows them.
    path = tmp_path / "edited.db"
    ingest_bytes(hostile_trace(), str(path))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE slice SET name = CAST(X'626164FF6E616D65' AS TEXT) WHERE name LIKE '<img%'")
    conn.execute("UPDATE report_slice_name SET name = CAST(X'626164FF6E616D65' AS TEXT) WHERE name LIKE '<img%'")
    conn.commit()
    conn.close()
    ds = served(path)
    r = await ds.client.get("/edited/-/report/slices.json?top=50")
    assert r.status_code == 200 and "bad\ufffdname" in {row["name"] for row in r.json()["slices_table"]["rows"]}
    page = await ds.client.get("/edited/-/report/slices?top=50")
    assert page.status_code == 200 and "bad\ufffdname" in page.text


@pytest.mark.asyncio
async def test_fuzzed_parameters_never_500(demo_ds):
    paths = ["/demo/-/report"] + [f"/demo/-/report/{noun}/{view}" for noun, views in NOUNS.items() for view in views]
    flags = [f for f in FLAGS if f != "baseline"]  # one database: no baseline to compare with
    await assert_fuzzed_flags_never_500(demo_ds, paths, flags, seed=7, rounds=150, max_len=12)


@pytest.mark.asyncio
async def test_database_page_links_to_the_report(demo_ds):
    page = (await demo_ds.client.get("/demo")).text
    assert 'href="/demo/-/report"' in page
    assert (await demo_ds.client.get("/demo/-/report")).status_code == 200


@pytest.mark.asyncio
async def test_canned_query_min_count_is_numeric(demo_ds, demo_db):
    rows = (await demo_ds.client.get("/demo/slices_table.json?_shape=array&min_count=40&top=50")).json()
    expected = demo_db.rows("SELECT name FROM slice GROUP BY name HAVING count(*) >= 40")
    assert sorted(r["name"] for r in rows) == sorted(r[0] for r in expected) and len(rows) == 4


@pytest.mark.asyncio
async def test_template_dir_overrides_the_report_table_partial(demo_db, tmp_path):
    # The report's tables are rendered outside Datasette's (asynchronous) environment, but found where it
    # finds templates: a --template-dir copy of the partial is the one used.
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "_report_table.html").write_text(
        '<section class="site-table">{{ table.title }}: {{ table.rows|length }} rows</section>'
    )
    ds = datasette_with([demo_db.path], template_dir=str(templates))
    page = await ds.client.get("/demo/-/report/slices")
    assert page.status_code == 200
    assert re.search(r'<section class="site-table">Slices \(743 total, 47 names\): 10 rows</section>', page.text)
    assert "perfetto-report-table" not in page.text
    default = await served(demo_db.path).client.get("/demo/-/report/slices")
    assert "site-table" not in default.text and 'class="rows-and-columns perfetto-report-table"' in default.text


def test_table_cells_escape_every_field():
    # A cell's text, link, details page, hover text, extra class and subtitle all reach the page escaped.
    from datasette_perfetto.report.base import Cell, Link, Linker, Table
    from datasette_perfetto.report.web import rows_html

    hostile = '"><script>x</script>'
    cell = Cell(hostile, Link.to("slices", "", {"name": hostile}), hostile, hostile, "/d/-/slice/1" + hostile, hostile)
    (row,) = rows_html(Table("t", ["a"], [[cell]]), Linker("/d/-/report", "d.db").url)
    assert "<script>" not in row and hostile not in row
    assert row.count("&#34;&gt;&lt;script&gt;x&lt;/script&gt;") == 5  # text, title, class, href, subtitle
    assert "name=%22%3E%3Cscript%3Ex%3C%2Fscript%3E" in row  # the link's value, quoted
