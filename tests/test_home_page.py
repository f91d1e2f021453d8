"""Datasette's home page with trace databases served: a report link per trace database."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import datasette_with

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0


def report_links(page: str) -> list[str]:
    section = page.split('aria-label="Trace reports"', 1)
    if len(section) == 1:
        return []
    body = section[1].split("</section>", 1)[0]
    return [part.split('"', 1)[0] for part in body.split('href="')[1:]]


@pytest.mark.asyncio
async def test_home_page_links_each_trace_databases_report(demo_db, sched_db, tmp_path):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("create table t (x)").connection.close()
    ds = datasette_with([demo_db.path, sched_db.path, plain])
    response = await ds.client.get("/")
    assert response.status_code == 200
    demo, sched = demo_db.path.stem, sched_db.path.stem
    assert report_links(response.text) == [
        f"/{demo}/-/report",
        f"/{demo}/-/tracks",
        f"/{sched}/-/report",
        f"/{sched}/-/tracks",
    ]
    # The plain database keeps its ordinary listing and gets no report link.
    assert 'href="/plain"' in response.text and "/plain/-/report" not in response.text


@pytest.mark.asyncio
async def test_home_page_hides_reports_of_databases_the_actor_cannot_see(demo_db, sched_db):
    sched = sched_db.path.stem
    ds = datasette_with([demo_db.path, sched_db.path], permissions={"databases": {sched: {"allow": {"id": "root"}}}})
    anonymous = report_links((await ds.client.get("/")).text)
    assert anonymous == [f"/{demo_db.path.stem}/-/report", f"/{demo_db.path.stem}/-/tracks"]
    root = {"ds_actor": ds.sign({"a": {"id": "root"}}, "actor")}
    assert f"/{sched}/-/report" in report_links((await ds.client.get("/", cookies=root)).text)


@pytest.mark.asyncio
async def test_home_page_without_trace_databases_has_no_report_section(tmp_path):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("create table t (x)").connection.close()
    page = (await datasette_with([plain]).client.get("/")).text
    assert "Trace reports" not in page
