"""Datasette pages of a trace database, driven through datasette.client."""

from __future__ import annotations

import html
import sqlite3

import pytest
from conftest import served, sql_path, sql_rows

from datasette_perfetto.ingest import ingest_bytes
from datasette_perfetto.trace_builder import TraceBuilder

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


def hostile_trace() -> bytes:
    """A trace whose names try to break out of the page."""
    b = TraceBuilder()
    seq = b.sequence(1)
    seq.process(10, "<script>alert('p')</script>")
    seq.thread(10, 11, 'thread "quoted" & <b>bold</b>')
    track = seq.thread(10, 12, "worker")
    seq.slice_begin(1_000, track, "<img src=x onerror=alert(1)>", args={"html": "<i>x</i>"})
    seq.slice_end(2_000, track)
    return b.to_bytes()


@pytest.mark.asyncio
async def test_database_page_shows_the_trace_summary(demo_db):
    ds = served(demo_db.path)
    page = (await ds.client.get("/demo")).text
    assert "perfetto-summary" in page
    assert "demo.pftrace" in page
    assert "743 slices" in page and "11 threads" in page and "4 processes" in page and "17 flows" in page
    assert 'href="/demo/slice"' in page
    assert "No import errors or data loss." in page


@pytest.mark.asyncio
async def test_sql_pages_do_not_compute_the_summary(demo_db, monkeypatch):
    # They are view "database" too (and on 1.0 so are canned queries), but their template shows no summary.
    from datasette_perfetto import summary

    calls = []
    real = summary.trace_summary
    monkeypatch.setattr(summary, "trace_summary", lambda conn: calls.append(1) or real(conn))
    ds = served(demo_db.path)
    for path in (sql_path("demo") + "?sql=select+1", "/demo/slices_table"):
        response = await ds.client.get(path)
        assert response.status_code == 200 and "perfetto-summary" not in response.text, path
    assert calls == []
    assert "perfetto-summary" in (await ds.client.get("/demo")).text and calls == [1]


@pytest.mark.asyncio
async def test_summary_lists_import_problems(tmp_path, demo_bytes):
    path = tmp_path / "cut.db"
    ingest_bytes(demo_bytes[: len(demo_bytes) - 7], str(path))
    ds = served(path)
    page = (await ds.client.get("/cut")).text
    assert "proto_tokenizer_truncated_packet = 1 (data_loss)" in page
    assert 'href="/cut/stats?value__gt=0"' in page


@pytest.mark.asyncio
async def test_summary_counts_every_machines_stats(tmp_path):
    from test_cli import lossy_machines_trace

    path = tmp_path / "machines.db"
    ingest_bytes(lossy_machines_trace(), str(path))
    conn = sqlite3.connect(path)
    (lost,) = conn.execute("SELECT sum(value) FROM stats WHERE name = 'ftrace_cpu_has_data_loss'").fetchone()
    machines = conn.execute("SELECT count(DISTINCT machine_id) FROM stats WHERE value > 0").fetchone()[0]
    conn.close()
    assert (lost, machines) == (3, 2)  # the host's CPU 0, machine 1001's CPUs 0 and 2
    page = (await served(path).client.get("/machines")).text
    assert "ftrace_cpu_has_data_loss = 3 (data_loss)" in page


@pytest.mark.asyncio
async def test_non_trace_database_page_has_no_summary(tmp_path):
    path = tmp_path / "plain.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    ds = served(path)
    response = await ds.client.get("/plain")
    assert response.status_code == 200 and "perfetto-summary" not in response.text


@pytest.mark.asyncio
async def test_hostile_names_are_escaped(tmp_path):
    path = tmp_path / "hostile.db"
    ingest_bytes(hostile_trace(), str(path))
    ds = served(path)
    for url in ("/hostile", "/hostile/process", "/hostile/thread", "/hostile/slice", "/hostile/args"):
        page = (await ds.client.get(url)).text
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold</b>" not in page, url
    slices = (await ds.client.get("/hostile/slice")).text
    assert html.escape("<img src=x onerror=alert(1)>") in slices.replace("&#39;", "'")
    rows = (await ds.client.get("/hostile/slice.json?_shape=array")).json()
    assert rows[0]["name"] == "<img src=x onerror=alert(1)>"  # stored intact


@pytest.mark.asyncio
async def test_extract_arg_in_ad_hoc_sql(demo_db):
    ds = served(demo_db.path)
    rows = await sql_rows(
        ds,
        "demo",
        "select extract_arg(arg_set_id, 'debug.url') as url from slice where name = 'URLRequest' order by ts limit 1",
    )
    assert rows[0]["url"].startswith("https://")
