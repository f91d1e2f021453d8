"""`datasette perfetto serve`: traces in, one Datasette serving all of them.

Each trace is ingested once into a cache folder keyed by its content and this
package's version (`<cache>/<key>/<trace name>.db`), so serving it again starts at
once, and a changed trace or a new version imports again. A cache entry appears
only complete: ingest() renames a finished temporary file into place, and a lock
on the entry's folder makes a second process wait for the first instead of
importing the same trace beside it. Beside each cached database lies its
Datasette inspect data (row counts and hash, `datasette inspect`'s format), so the
home page never counts rows.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.metadata
import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from datasette.app import Datasette

try:
    import fcntl
except ImportError:  # not POSIX: no lock (two runs of one trace may both import it, each renaming a whole file)
    fcntl = None  # type: ignore[assignment]

from .ingest import IngestError, Progress, TraceSummary, ingest, open_trace, plan_traces
from .metadata import read_is_trace

CACHE_ENV = "DATASETTE_PERFETTO_CACHE"
SQLITE_HEADER = b"SQLite format 3\x00"
HASH_CHUNK = 1 << 20


def default_cache_dir() -> Path:
    """$DATASETTE_PERFETTO_CACHE, else $XDG_CACHE_HOME/datasette-perfetto, else ~/.cache/datasette-perfetto."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "datasette-perfetto"


def package_version() -> str:
    """The package's version and a fingerprint of its code: what a cached database depends on. The
    fingerprint makes a changed checkout (an editable install keeps its version) import again."""
    try:
        version = importlib.metadata.version("datasette-perfetto")
    except importlib.metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
        version = "unknown"
    return f"{version}+{code_fingerprint()}"


@functools.cache
def code_fingerprint() -> str:
    """A hash of the package's Python modules and data files (a few hundred KB: milliseconds)."""
    package = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".tsv") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(path: str, version: str) -> str:
    """sha256 of the version and the file's content, read in chunks (traces can be gigabytes)."""
    digest = hashlib.sha256(f"datasette-perfetto {version}\0".encode())
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(HASH_CHUNK), b""):
                digest.update(chunk)
    except OSError as e:
        raise IngestError(f"{path}: cannot read: {e.strerror or e}") from None
    return digest.hexdigest()[:32]


def database_stem(trace_path: str) -> str:
    """The served database's name: the trace's file name without `.gz` and one extension."""
    name = os.path.basename(trace_path)
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[0] or name


def is_sqlite_file(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False  # open_trace() names the problem


def check_served_database(path: str) -> None:
    """A database given to serve must be a trace database; IngestError (one line) otherwise."""
    found = read_is_trace(path, immutable=False)
    if found is None:
        raise IngestError(f"{path}: database is locked by another process")
    if not found:
        raise IngestError(f"{path}: a SQLite database but not a trace database (ingest the trace instead)")


def check_trace(path: str) -> None:
    """The checks ingest() starts with (readable, a known format), without importing:
    so a bad argument fails before any other trace is imported. An archive is opened and each trace in it."""
    for source in plan_traces([path]).inputs:
        _, stream = open_trace(source)
        stream.close()


@contextmanager
def _locked_folder(folder: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """Holds an exclusive lock on `folder` (created if missing). The lock goes with the
    process, so a killed run never leaves it held."""
    if fcntl is None:
        folder.mkdir(parents=True, exist_ok=True)
        yield
        return
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(folder).st_ino
            except FileNotFoundError:
                current = None
            # The holder may have removed the folder (its import failed): lock the new one.
            if current == os.fstat(fd).st_ino:
                yield
                return
        finally:
            os.close(fd)


def cache_target(trace_path: str, cache_dir: Path, version: str | None = None) -> Path:
    """Where the database of `trace_path` is (or will be) in the cache; reads the whole trace (cache_key)."""
    return Path(cache_dir) / cache_key(trace_path, version or package_version()) / f"{database_stem(trace_path)}.db"


def cached_database(
    trace_path: str,
    cache_dir: Path,
    version: str | None = None,
    progress: Progress | None = None,
    on_wait: Callable[[], None] = lambda: None,
    target: Path | None = None,
) -> tuple[Path, list[TraceSummary] | None]:
    """The database of `trace_path` in the cache, imported first if it is not there;
    returns (its path, the import's summaries or None when it was cached). `target`:
    cache_target's answer, if the caller has it (saves reading the trace again)."""
    target = target or cache_target(trace_path, cache_dir, version)
    folder = target.parent
    if target.is_file():
        if not inspect_path(target).is_file():  # cached by a version that did not write it
            write_inspect_data(target)
        return target, None
    try:
        with _locked_folder(folder, on_wait):
            if target.is_file():  # another process imported it while this one waited
                return target, None
            for leftover in folder.glob(".ingest-*"):  # from a killed run; nobody else writes here now
                leftover.unlink()
            try:
                summaries = ingest([trace_path], str(target), progress)
                write_inspect_data(target)
                return target, summaries
            except BaseException:
                if not any(folder.iterdir()):
                    folder.rmdir()
                raise
    except OSError as e:
        raise IngestError(f"{folder}: cannot use the cache folder: {e.strerror or e}") from None


def inspect_path(database: Path) -> Path:
    return database.with_name(database.stem + ".inspect.json")


def write_inspect_data(database: Path) -> None:
    """Datasette's inspect data for a cached database: every table's row count and the file's hash,
    which Datasette otherwise computes on the first request (counts) and for the page colour (hash)."""
    from datasette.inspect import inspect_hash

    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = {t: {"count": conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0]} for t in tables}
    finally:
        conn.close()
    data = {"hash": inspect_hash(database), "size": database.stat().st_size, "file": str(database), "tables": counts}
    temporary = inspect_path(database).with_suffix(".tmp")
    temporary.write_text(json.dumps(data))
    os.replace(temporary, inspect_path(database))  # readers see a whole file or none


def build_datasette(mutable_paths: Sequence[str], immutable_paths: Sequence[str] = ()) -> Datasette:
    """The Datasette that `serve` and `demo` run: cached trace databases immutable (they never
    change) with their inspect data, a user's own databases mutable. The one place it is constructed."""
    ds = Datasette([str(p) for p in mutable_paths], immutables=[str(p) for p in immutable_paths])
    # Keyed by the names Datasette gave the files (a repeated stem gets `_2`), as --inspect-file is.
    inspect_data = {}
    for name, path in zip(database_names(ds, immutable_paths), immutable_paths):
        try:
            inspect_data[name] = json.loads(inspect_path(Path(path)).read_text())
        except (OSError, ValueError):
            continue  # none (not a cache entry) or unreadable: Datasette counts the rows itself
    ds.inspect_data = inspect_data or None
    return ds


def database_names(ds: Datasette, paths: Sequence[str]) -> list[str]:
    """The names Datasette gave the databases at `paths` (a repeated stem gets `_2`), in that order."""
    by_path = {db.path: name for name, db in ds.databases.items() if db.path}
    return [by_path[str(p)] for p in paths]


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: any free one); OSError when it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # Listening now: a browser opened before the server starts waits instead of failing.
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def server_url(sock: socket.socket, host: str) -> str:
    """`http://host:port` of a listening socket (the port it got, when asked for 0)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}"


def report_url(ds: Datasette, sock: socket.socket, host: str, name: str) -> str:
    return f"{server_url(sock, host)}{ds.urls.database(name)}/-/report"


def run_server(ds: Datasette, sock: socket.socket) -> None:
    """Serves `ds` on `sock` until Ctrl+C, as `datasette serve` does: Datasette's startup
    hooks, then uvicorn with lifespan on, on one event loop."""

    async def main() -> None:
        await ds.invoke_startup()
        server = uvicorn.Server(uvicorn.Config(ds.app(), lifespan="on", log_level="info", workers=1))
        await server.serve(sockets=[sock])

    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl+C it handled; the server has stopped
        pass
    finally:
        sock.close()


__all__ = [
    "build_datasette",
    "cache_target",
    "cached_database",
    "default_cache_dir",
    "package_version",
    "cache_key",
    "database_stem",
    "database_names",
    "is_sqlite_file",
    "check_served_database",
    "check_trace",
    "listen",
    "server_url",
    "report_url",
    "run_server",
]
