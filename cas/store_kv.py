"""The store's key-value tables: values kept under keys their callers choose.

``cache`` (derived facts, keyed by blob digest and the deriving code's version: `cas.cache`),
``remotes`` (`cas.remote.config`) and ``usage`` (the memory's access counts: `memory.usage`).
The store knows nothing of what the values mean: each layer owns its keys and its records. A
`Store` has one `KeyValues` (``store.kv``); each call is its own transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from cas.errors import KeyTooLong
from cas.store_tables import KV_TABLES

if TYPE_CHECKING:
    from cas.store_tables import Faces

KvTable = Literal["cache", "remotes", "usage"]


class KeyValues:
    """The key-value tables of one store (see the module docstring)."""

    __slots__ = ("_faces",)

    def __init__(self, faces: Faces) -> None:
        self._faces = faces

    # Keys of these tables are chosen by callers (names, paths). One longer than LMDB takes
    # cannot be there, so reading or deleting it finds nothing, and writing it is refused with
    # `KeyTooLong`, before any transaction: never MDB_BAD_VALSIZE, never "store is full".
    # (The cache keys its long keys by digest, see cas/cache.py.)

    def get(self, table: KvTable, key: bytes) -> bytes | None:
        _check_kv(table)
        if len(key) > self._faces.max_key_size:
            return None
        with self._faces.read() as t:
            value = t.kv_get(table, key)
        self._faces.residency.note_lookups()
        return value

    def get_many(self, table: KvTable, keys: Sequence[bytes]) -> list[bytes | None]:
        """The values of ``keys`` (None where absent), read in one transaction."""
        _check_kv(table)
        limit = self._faces.max_key_size
        with self._faces.read() as t:
            out = t.kv_get_many(table, keys, limit)
        self._faces.residency.note_lookups(len(keys))
        return out

    def items(self, table: KvTable, prefix: bytes = b"") -> list[tuple[bytes, bytes]]:
        _check_kv(table)
        if len(prefix) > self._faces.max_key_size:
            return []
        with self._faces.read() as t:
            return t.kv_items(table, prefix)

    def put(self, table: KvTable, items: Iterable[tuple[bytes, bytes]]) -> None:
        _check_kv(table)
        pending = list(items)
        size = sum(len(k) + len(v) for k, v in pending)
        for key, _value in pending:
            if len(key) > self._faces.max_key_size:
                raise KeyTooLong(table, len(key), self._faces.max_key_size)
        self._faces.change(lambda t: t.kv_put(table, pending), expected_bytes=size)

    def delete(self, table: KvTable, keys: Iterable[bytes]) -> int:
        _check_kv(table)
        wanted = [key for key in keys if len(key) <= self._faces.max_key_size]
        return self._faces.change(lambda t: t.kv_delete(table, wanted))

    def update(
        self, table: KvTable, keys: Iterable[bytes], update: Callable[[bytes | None], bytes]
    ) -> None:
        """Set each of ``keys`` to ``update(its value now, or None)``, all in one write
        transaction: concurrent writers never lose an update (a count goes up by each). A key
        too long to keep is refused (`KeyTooLong`). ``update`` may run again if the
        transaction is retried: it computes, it never acts."""
        _check_kv(table)
        pending = list(dict.fromkeys(keys))
        for key in pending:
            if len(key) > self._faces.max_key_size:
                raise KeyTooLong(table, len(key), self._faces.max_key_size)
        if pending:
            size = sum(len(k) + 64 for k in pending)
            self._faces.change(lambda t: t.kv_update(table, pending, update), expected_bytes=size)


def _check_kv(table: str) -> None:
    if table not in KV_TABLES:
        raise ValueError(f"{table!r} is not a table of caller-chosen keys ({', '.join(KV_TABLES)})")
