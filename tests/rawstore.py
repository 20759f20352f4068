"""Damage on purpose: rows of the store's tables, read and written under its contract.

The store keeps its tables to itself (`cas.store_tables`) and offers no raw transaction. A test
that must break a record the way a bad disk or a bug would, or count the rows a table holds,
reaches under the contract through this module, and only such a test does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cas import Digest, Store
from cas.records import META


def get(store: Store, table: str, key: bytes) -> bytes | None:
    with store._read() as txn:
        value: bytes | None = txn.get(key, db=store._dbs[table])
    return value


def put(store: Store, table: str, key: bytes, value: bytes) -> None:
    store._write(lambda txn: txn.put(key, value, db=store._dbs[table]))


def change(store: Store, table: str, key: bytes, how: Callable[[bytes], bytes]) -> None:
    """Replace the value under ``key`` (which must be there) by ``how(value)``."""

    def run(txn: object) -> None:
        value = txn.get(key, db=store._dbs[table])  # type: ignore[attr-defined]
        assert value is not None, (table, key)
        txn.put(key, how(value), db=store._dbs[table])  # type: ignore[attr-defined]

    store._write(run)


def delete(store: Store, table: str, key: bytes) -> bool:
    return bool(store._write(lambda txn: txn.delete(key, db=store._dbs[table])))


def rows(store: Store, table: str) -> list[tuple[bytes, bytes]]:
    with store._read() as txn:
        return [(bytes(k), bytes(v)) for k, v in txn.cursor(db=store._dbs[table])]


def entries(store: Store, table: str) -> int:
    with store._read() as txn:
        count: int = txn.stat(store._dbs[table])["entries"]
    return count


def age(store: Store, digests: set[Digest], seconds: float) -> None:
    """Make blobs look last referenced ``seconds`` ago."""
    then = time.time_ns() - int(seconds * 1e9)

    def backdate(record: bytes) -> bytes:
        size, stored, first, _last = META.unpack(record)
        return META.pack(size, stored, first, then)

    for d in digests:
        change(store, "meta", d, backdate)


def drop_table(store: Store, table: str) -> None:
    """Remove ``table`` from the data file, as a store made before it existed lacks it."""
    store._write(lambda txn: txn.drop(store._dbs[table], delete=True))  # type: ignore[attr-defined]
