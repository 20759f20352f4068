"""The full-text index of stored bodies: a cache beside the store, keyed by blob digest.

One SQLite file, ``search.sqlite`` in the store's directory, with FTS5 (in Python's standard
library). Each indexed body is cut into windows of `WINDOW` lines; each window is one row of a
contentless FTS5 table with two columns:

* ``body``: the window's text, tokenized by SQLite (``unicode61``, case folded, ``_`` part of a
  word): ``with_context`` and ``NewRouter`` are single terms (``newrouter``), a dotted name
  ``os.path.join`` is the phrase ``os path join``;
* ``parts``: the words inside each compound identifier of the window (``with context``,
  ``new router``), so ``context`` finds ``with_context`` and ``router`` finds ``NewRouter``.

``docs`` lists the digests indexed and how many windows each has; ``windows`` maps a row to its
digest and line range. The index holds no text (contentless), so it stays small; a row is
deleted by giving its terms again, which are computed from the body: gc forgets a body while it
still exists (`forget`). Everything here is a cache: deleting the file loses nothing, it is
rebuilt from the store, and a newer `VERSION` rebuilds it too. Nothing is ever indexed that is
not stored, so a withheld secret is never in it.

Scoring is not done here: this module answers which windows hold a term
(`TextIndex.windows`), and the packer scores with integers over the packs it searches, so that
a result does not depend on what else the store holds (`packer.search`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

from cas.digest import Digest
from cas.errors import StoreAccessError

INDEX_FILE: Final = "search.sqlite"
VERSION: Final = 1
WINDOW: Final = 40  # lines per window
MAX_BODY: Final = 8 << 20  # larger bodies (logs, data dumps) are not indexed
# The most of one body a reader for the index needs (`text_of` tells a larger body by its
# length alone): a 1 GiB log costs the index 8 MiB of reading, and as much memory, not 1 GiB.
READ_LIMIT: Final = MAX_BODY + 1
_BATCH: Final = 256  # bodies per write transaction

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# A query's identifiers: dotted and ``::`` paths are kept together (``os.path.join``).
_QUERY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS docs (digest BLOB PRIMARY KEY, windows INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS windows (id INTEGER PRIMARY KEY, digest BLOB NOT NULL,"
    " first INTEGER NOT NULL, last INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS windows_digest ON windows (digest)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, parts, content='',"
    " tokenize=\"unicode61 tokenchars '_'\")",
)


@lru_cache(maxsize=1 << 16)
def split_name(name: str) -> tuple[str, ...]:
    """The lowercase words of an identifier: ``with_context`` -> (with, context),
    ``HTTPServerError`` -> (http, server, error), ``parse2`` -> (parse, 2)."""
    out: list[str] = []
    for piece in name.split("_"):
        out.extend(w.lower() for w in _WORD_PIECES.findall(piece))
    return tuple(out)


def text_of(data: bytes) -> str | None:
    """The text the index reads from a body, or None for a body it does not index (binary:
    a NUL byte in its first 8 KiB; or larger than `MAX_BODY`). ``data`` may be the body's first
    `READ_LIMIT` bytes only: the answer is the same."""
    if len(data) > MAX_BODY or b"\0" in data[:8192]:
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def window_rows(text: str) -> list[tuple[int, int, str, str]]:
    """(first line, last line, body, parts) of each window of a text; lines count from 1."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = []
    for start in range(0, len(lines), WINDOW):
        chunk = lines[start : start + WINDOW]
        body = "\n".join(chunk)
        parts: list[str] = []
        for name in sorted(set(_IDENT.findall(body))):
            words = split_name(name)
            if len(words) > 1:
                parts.extend(words)
        rows.append((start + 1, start + len(chunk), body, " ".join(parts)))
    return rows


@dataclass(frozen=True, slots=True)
class QueryName:
    """An identifier or word of a query: ``text`` as written, ``words`` the index terms that
    spell it in sequence (a dotted name is a phrase), ``parts`` its compound's words."""

    text: str
    words: tuple[str, ...]
    parts: tuple[str, ...]

    @property
    def compound(self) -> bool:
        """A name shaped like code: dotted, snake_case or camelCase, not a plain word."""
        return len(self.words) > 1 or len(self.parts) > 1


def query_names(query: str) -> list[QueryName]:
    """The names of a query in order of first appearance, each once (case-insensitive)."""
    out: list[QueryName] = []
    seen: set[tuple[str, ...]] = set()
    for m in _QUERY_NAME.finditer(query):
        text = m.group(0)
        pieces = [p for p in re.split(r"\.|::", text) if p]
        words = tuple(p.lower() for p in pieces)
        parts = tuple(w for p in pieces for w in split_name(p))
        if words in seen:
            continue
        seen.add(words)
        out.append(QueryName(text, words, parts))
    return out


def match_expression(words: tuple[str, ...]) -> str:
    """An FTS5 query for a term or a phrase of terms (index terms need no escaping but quotes)."""
    return '"' + " ".join(w.replace('"', "") for w in words) + '"'


class TextIndex:
    """The index file of one store. Opened per command; SQLite's locking (WAL) lets a search
    read while a pack adds."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, store_dir: str | os.PathLike[str], *, create: bool = True) -> TextIndex | None:
        """The index of the store at ``store_dir``; None when there is none and ``create`` is
        false. An index of another `VERSION`, or one SQLite cannot read, is rebuilt empty."""
        path = Path(store_dir) / INDEX_FILE
        if not create and not path.exists():
            return None
        try:
            conn = _connect(path)
            if not _current(conn):
                conn.close()
                _remove(path)
                conn = _connect(path)
                _create(conn)
        except sqlite3.OperationalError as exc:  # locked or busy: another process has it
            raise StoreAccessError(
                str(path), f"the search index is busy ({exc}); try again"
            ) from None
        except sqlite3.DatabaseError as exc:  # not a database: a cache, rebuilt
            with contextlib.suppress(OSError):
                _remove(path)
            try:
                conn = _connect(path)
                _create(conn)
            except sqlite3.Error:
                raise StoreAccessError(
                    str(path), f"cannot open the search index ({exc}); delete the file"
                ) from None
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TextIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what is indexed ----------------------------------------------------------------------

    def indexed(self, digests: Iterable[Digest]) -> set[Digest]:
        """The digests among ``digests`` whose bodies are indexed."""
        wanted = [bytes(d) for d in digests]
        found: set[Digest] = set()
        cur = self._conn.cursor()
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            for (raw,) in cur.execute(f"SELECT digest FROM docs WHERE digest IN ({marks})", part):
                found.add(Digest(bytes(raw)))
        return found

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM docs").fetchone()[0])

    def size(self) -> int:
        """Bytes of the index on disk (its file and write-ahead log)."""
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.stat(f"{self.path}{suffix}").st_size
        return total

    # --- writing ------------------------------------------------------------------------------

    def add(
        self,
        digests: Iterable[Digest],
        read: Callable[[Digest], bytes | None],
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Index each digest not indexed yet, reading its body with ``read`` (None: gone, skip);
        a body that is not text is recorded with no window, so it is not read again. Returns
        how many bodies were read."""
        todo = sorted(set(digests) - self.indexed(digests))
        done = 0
        for start in range(0, len(todo), _BATCH):
            with self._transaction() as cur:
                for digest in todo[start : start + _BATCH]:
                    data = read(digest)
                    if data is None:
                        continue
                    self._insert(cur, digest, data)
                    done += 1
            if progress is not None:
                progress(min(start + _BATCH, len(todo)))
        return done

    def _insert(self, cur: sqlite3.Cursor, digest: Digest, data: bytes) -> None:
        key = bytes(digest)
        if cur.execute("SELECT 1 FROM docs WHERE digest = ?", (key,)).fetchone():
            return  # another process indexed it since we looked
        text = text_of(data)
        rows = window_rows(text) if text is not None else []
        for first, last, body, parts in rows:
            cur.execute(
                "INSERT INTO windows (digest, first, last) VALUES (?, ?, ?)", (key, first, last)
            )
            rowid = cur.lastrowid
            cur.execute(
                "INSERT INTO fts (rowid, body, parts) VALUES (?, ?, ?)", (rowid, body, parts)
            )
        cur.execute("INSERT INTO docs (digest, windows) VALUES (?, ?)", (key, len(rows)))

    def forget(self, digests: Iterable[Digest], read: Callable[[Digest], bytes | None]) -> int:
        """Drop the entries of these bodies (read once more to name their terms; a body that
        cannot be read any more has its rows unlinked, so no search finds it). Returns how many
        indexed bodies were dropped."""
        present = sorted(self.indexed(digests))
        dropped = 0
        for start in range(0, len(present), _BATCH):
            with self._transaction() as cur:
                for digest in present[start : start + _BATCH]:
                    self._delete(cur, digest, read(digest))
                    dropped += 1
        return dropped

    def _delete(self, cur: sqlite3.Cursor, digest: Digest, data: bytes | None) -> None:
        key = bytes(digest)
        ids = [
            r[0] for r in cur.execute("SELECT id FROM windows WHERE digest = ? ORDER BY id", (key,))
        ]
        text = text_of(data) if data is not None else None
        rows = window_rows(text) if text is not None else []
        if len(rows) == len(ids):
            for rowid, (_first, _last, body, parts) in zip(ids, rows, strict=True):
                cur.execute(
                    "INSERT INTO fts (fts, rowid, body, parts) VALUES ('delete', ?, ?, ?)",
                    (rowid, body, parts),
                )
        cur.execute("DELETE FROM windows WHERE digest = ?", (key,))
        cur.execute("DELETE FROM docs WHERE digest = ?", (key,))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    # --- reading ------------------------------------------------------------------------------

    def windows(self, words: tuple[str, ...]) -> list[tuple[Digest, int, int]]:
        """(digest, first line, last line) of every window holding the term, or the phrase of
        terms, ``words``; in the index's order (by digest, then line)."""
        rows = self._conn.execute(
            "SELECT w.digest, w.first, w.last FROM fts JOIN windows w ON w.id = fts.rowid"
            " WHERE fts MATCH ? ORDER BY w.digest, w.first",
            (match_expression(words),),
        ).fetchall()
        return [(Digest(bytes(d)), int(a), int(b)) for d, a, b in rows]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _current(conn: sqlite3.Connection) -> bool:
    has_info = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'info'"
    ).fetchone()
    if not has_info:
        _create(conn)
        return True
    row = conn.execute("SELECT value FROM info WHERE key = 'version'").fetchone()
    return row is not None and row[0] == str(VERSION)


def _create(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMA:
        conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO info (key, value) VALUES ('version', ?)", (str(VERSION),))
    conn.execute("COMMIT")


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
