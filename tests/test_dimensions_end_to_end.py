"""Dimensions from a real ingest, seen on the tracks page and a details page."""

from __future__ import annotations

import pytest
from conftest import ingest_named, served
from shared_data import TRACES

pytestmark = pytest.mark.web  # served by Datasette: ./dev test runs these on 0.65 and 1.0

PYTORCH = TRACES / "pytorch_ddp"


@pytest.fixture(scope="module")
def ddp_db(tmp_path_factory):
    return ingest_named(tmp_path_factory, [PYTORCH / "rank0.json.gz", PYTORCH / "rank1.json.gz"], "ddp")


@pytest.mark.asyncio
async def test_rank_subtitles_on_the_tracks_page(ddp_db):
    ds = served(ddp_db)
    page = (await ds.client.get("/ddp/-/tracks?_size=1000")).text
    assert "rank 0" in page and "rank 1" in page


@pytest.mark.asyncio
async def test_track_details_show_the_inherited_rank(ddp_db):
    import sqlite3

    conn = sqlite3.connect(ddp_db)
    track_id, trace_id = conn.execute(
        "SELECT d.track_id, t.trace_id FROM track_dimension d JOIN track t ON t.id = d.track_id "
        "WHERE d.name = 'rank' AND d.int_value = 1 ORDER BY d.track_id LIMIT 1"
    ).fetchone()
    conn.close()
    assert trace_id == 1  # rank 1 is the second input
    ds = served(ddp_db)
    data = (await ds.client.get(f"/ddp/-/track/{track_id}.json")).json()
    text = str(data)
    assert "rank" in text and "rank 1" in text
    page = (await ds.client.get(f"/ddp/-/track/{track_id}")).text
    assert "rank 1" in page and "machine" in page


@pytest.mark.asyncio
async def test_two_ranks_count_their_own_processes_only(ddp_db):
    """Each input's events without a pid land in a nameless pid-0 process (as in trace_processor): a placeholder,
    like a machine's idle process, which the report neither counts nor lists."""
    import sqlite3

    conn = sqlite3.connect(ddp_db)
    placeholders = conn.execute("SELECT count(*) FROM process WHERE pid = 0 AND name IS NULL").fetchone()[0]
    named = conn.execute("SELECT count(*) FROM process WHERE NOT (pid = 0 AND name IS NULL)").fetchone()[0]
    conn.close()
    assert placeholders == 3 and named == 6  # upid 0, and one per input; Spans, Traces and python per rank
    ds = served(ddp_db)
    report = (await ds.client.get("/ddp/-/report/processes.json")).json()
    assert report["context"]["process_count"] == named
    assert report["processes_table"]["total_rows"] == named
    assert all(r.get("pid") for r in report["processes_table"]["rows"])
