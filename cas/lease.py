"""Leases: a pack in progress tells gc to keep off until its manifest is written.

A pack commits its blobs first and writes its manifest file last; between the two, nothing but
the lease says those blobs are wanted. ``with Lease(store, "pack"):`` records the holder in the
``leases`` table in its own write transaction, refreshes its heartbeat every `HEARTBEAT_S` from
a daemon thread, and deletes the record on exit. gc re-reads the leases inside the transaction
that deletes and refuses to delete while any is live (see DETERMINISM.md, "gc and concurrent
packs").

A lease is live while its heartbeat is younger than `LEASE_TTL_NS`, unless its holder ran on
this machine, in this pid namespace, and that pid is gone: then it is stale at once, so a
SIGKILLed pack does not hold gc off for the whole TTL. Stale leases are deleted by gc. A holder
whose own lease went stale (stopped for longer than the TTL, or unable to write its heartbeat)
learns it from `Lease.lost`; `Lease.check` raises `LeaseLost` before it publishes anything.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgpack

from cas.errors import CasError, LeaseHeld, LeaseLost
from cas.records import Txn, now_ns
from cas.store import Store

LEASE_TTL_NS: Final = 30 * 10**9
HEARTBEAT_S: Final = 2.0
TABLE: Final = "leases"


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


# Where a pid means something: the same host name and pid namespace (containers sharing a
# store through a volume may share a host name, never a pid namespace).
HOST: Final = socket.gethostname()
PIDNS: Final = _pid_namespace()


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    id: str
    kind: str
    pid: int
    host: str
    pidns: str
    start_ns: int
    heartbeat_ns: int

    def encode(self) -> bytes:
        data: bytes = msgpack.packb(
            {
                "id": self.id,
                "kind": self.kind,
                "pid": self.pid,
                "host": self.host,
                "pidns": self.pidns,
                "start_ns": self.start_ns,
                "heartbeat_ns": self.heartbeat_ns,
            }
        )
        return data

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> LeaseRecord:
        """Lenient: a record missing fields (or not msgpack) has heartbeat 0, so it is stale."""
        try:
            obj: Any = msgpack.unpackb(value)
        except Exception:
            obj = None
        got = obj if isinstance(obj, dict) else {}

        def num(name: str) -> int:
            v = got.get(name)
            return v if isinstance(v, int) and not isinstance(v, bool) else 0

        def text(name: str) -> str:
            v = got.get(name)
            return v if isinstance(v, str) else ""

        return cls(
            id=key.decode("utf-8", "replace"),
            kind=text("kind") or "?",
            pid=num("pid"),
            host=text("host"),
            pidns=text("pidns"),
            start_ns=num("start_ns"),
            heartbeat_ns=num("heartbeat_ns"),
        )

    def describe(self, now: int) -> str:
        age = max(now - self.start_ns, 0) / 1e9
        return f"{self.kind} lease {self.id} (pid {self.pid} on {self.host}, {age:.0f} s old)"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    # A killed process its parent has not reaped yet still answers kill(0).
    return state not in (b"Z", b"X")


def is_live(record: LeaseRecord, now: int, ttl_ns: int = LEASE_TTL_NS) -> bool:
    # A heartbeat as far in the future as the TTL is a skewed or bogus clock, not a live
    # holder: it would otherwise keep gc off for as long as the skew.
    if not -ttl_ns < now - record.heartbeat_ns < ttl_ns:
        return False
    same_space = record.host == HOST and record.pidns == PIDNS
    return not (same_space and not pid_alive(record.pid))


def records_in(txn: Txn, store: Store) -> list[LeaseRecord]:
    return [LeaseRecord.decode(bytes(k), bytes(v)) for k, v in txn.cursor(db=store.db(TABLE))]


def split_in(
    txn: Txn, store: Store, now: int, ttl_ns: int = LEASE_TTL_NS, *, clear: bool
) -> tuple[list[LeaseRecord], list[LeaseRecord]]:
    """(live, stale) leases as ``txn`` sees them; with ``clear`` (a write txn) the stale ones
    are deleted."""
    live: list[LeaseRecord] = []
    stale: list[LeaseRecord] = []
    for record in records_in(txn, store):
        (live if is_live(record, now, ttl_ns) else stale).append(record)
    if clear:
        for record in stale:
            txn.delete(record.id.encode(), db=store.db(TABLE))
    return live, stale


def leases(store: Store) -> list[LeaseRecord]:
    with store.read() as txn:
        return records_in(txn, store)


def clear_stale(store: Store, ttl_ns: int = LEASE_TTL_NS) -> tuple[list[LeaseRecord], int]:
    """Delete stale leases (judged again inside the write txn). Returns (live, stale cleared)."""

    def run(txn: Txn) -> tuple[list[LeaseRecord], int]:
        live, stale = split_in(txn, store, now_ns(), ttl_ns, clear=True)
        return live, len(stale)

    with store.read() as txn:
        live, stale = split_in(txn, store, now_ns(), ttl_ns, clear=False)
    if store.readonly or not stale:
        return live, 0
    result: tuple[list[LeaseRecord], int] = store.write(run)
    return result


class Lease:
    """``with Lease(store, "pack") as lease: ...``; call ``lease.check()`` before publishing."""

    def __init__(
        self,
        store: Store,
        kind: str = "pack",
        *,
        heartbeat_s: float = HEARTBEAT_S,
        ttl_ns: int = LEASE_TTL_NS,
    ) -> None:
        self.store = store
        self.kind = kind
        self.id = uuid.uuid4().hex
        self._heartbeat_s = heartbeat_s
        self._ttl_ns = ttl_ns
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_ns = 0
        self._last_beat_ns = 0
        self.lost = False

    def _record(self, now: int) -> LeaseRecord:
        return LeaseRecord(self.id, self.kind, os.getpid(), HOST, PIDNS, self._start_ns, now)

    def __enter__(self) -> Lease:
        self._start_ns = now_ns()
        record = self._record(self._start_ns)
        self.store.kv_put(TABLE, [(self.id.encode(), record.encode())])
        self._last_beat_ns = self._start_ns
        self._thread = threading.Thread(target=self._run, name=f"lease-{self.id}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.store.kv_delete(TABLE, [self.id.encode()])

    def _run(self) -> None:
        while not self._stop.wait(self._heartbeat_s):
            self.beat()

    def beat(self) -> None:
        """Refresh the heartbeat (the daemon thread calls this every `HEARTBEAT_S`)."""
        now = now_ns()

        def run(txn: Txn) -> bool:
            key = self.id.encode()
            present = txn.get(key, db=self.store.db(TABLE)) is not None
            # Re-created even when gc removed it: whatever was pruned is gone either way, and
            # from now on gc keeps off again. `lost` tells the holder not to publish.
            txn.put(key, self._record(now).encode(), db=self.store.db(TABLE))
            return present

        try:
            present = bool(self.store.write(run))
        except CasError:
            if now - self._last_beat_ns >= self._ttl_ns:
                self.lost = True
            return
        if not present or now - self._last_beat_ns >= self._ttl_ns:
            self.lost = True
        self._last_beat_ns = now

    def check(self) -> None:
        """Raise `LeaseLost` if this lease went stale at any point (call before publishing)."""
        if self.lost or now_ns() - self._last_beat_ns >= self._ttl_ns:
            self.lost = True
            raise LeaseLost(self.kind, self.id)


def wait_until_free(
    store: Store,
    *,
    wait_s: float,
    ttl_ns: int = LEASE_TTL_NS,
    poll_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[int, float]:
    """Wait, clearing stale leases, until none is live. Returns (stale cleared, seconds waited);
    raises `LeaseHeld` naming the holders once ``wait_s`` is over."""
    start = clock()
    cleared = 0
    while True:
        live, stale = clear_stale(store, ttl_ns)
        cleared += stale
        waited = clock() - start
        if not live:
            return cleared, waited
        if waited >= wait_s:
            now = now_ns()
            raise LeaseHeld([r.describe(now) for r in live], waited)
        time.sleep(min(poll_s, max(wait_s - waited, 0.01)))
