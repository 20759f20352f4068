"""Leases: a pack in progress tells gc to keep off until its manifest is written.

A pack commits its blobs first and writes its manifest file last; between the two, nothing but
the lease says those blobs are wanted. ``with Lease(store, "pack"):`` records the holder in the
store (`Store.put_lease`) in its own write transaction, refreshes its heartbeat every
`HEARTBEAT_S` from a daemon thread, and deletes the record on exit. gc re-reads the leases inside
the transaction that deletes and refuses to delete while any is live (see DETERMINISM.md, "gc and
concurrent packs").

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
from cas.store import Store, Update

LEASE_TTL_NS: Final = 30 * 10**9
HEARTBEAT_S: Final = 2.0


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
    def decode(cls, lease_id: str, value: bytes) -> LeaseRecord:
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
            id=lease_id,
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


def leases(source: Store | Update) -> list[LeaseRecord]:
    """Every lease, as the store or one of its transactions (gc's deleting one) sees them."""
    refs = source.refs if isinstance(source, Store) else source
    return [LeaseRecord.decode(lease_id, value) for lease_id, value in refs.leases()]


def split(
    source: Store | Update, now: int, ttl_ns: int = LEASE_TTL_NS
) -> tuple[list[LeaseRecord], list[LeaseRecord]]:
    """(live, stale) leases as ``source`` sees them."""
    live: list[LeaseRecord] = []
    stale: list[LeaseRecord] = []
    for record in leases(source):
        (live if is_live(record, now, ttl_ns) else stale).append(record)
    return live, stale


def split_in(
    update: Update, now: int, ttl_ns: int = LEASE_TTL_NS, *, clear: bool
) -> tuple[list[LeaseRecord], list[LeaseRecord]]:
    """(live, stale) leases as the write transaction ``update`` sees them; with ``clear`` the
    stale ones are deleted in it."""
    live, stale = split(update, now, ttl_ns)
    if clear:
        update.delete_leases([record.id for record in stale])
    return live, stale


def clear_stale(store: Store, ttl_ns: int = LEASE_TTL_NS) -> tuple[list[LeaseRecord], int]:
    """Delete stale leases (judged again inside the write txn). Returns (live, stale cleared)."""

    def run(update: Update) -> tuple[list[LeaseRecord], int]:
        live, stale = split_in(update, time.time_ns(), ttl_ns, clear=True)
        return live, len(stale)

    live, stale = split(store, time.time_ns(), ttl_ns)
    if store.readonly or not stale:
        return live, 0
    # it only deletes: on a full disk it may use the store's reserve, as gc's pruning does
    return store.update(run, cleanup=True)


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
        self._start_ns = time.time_ns()
        record = self._record(self._start_ns)
        self.store.refs.put_lease(self.id, record.encode())
        self._last_beat_ns = self._start_ns
        self._thread = threading.Thread(target=self._run, name=f"lease-{self.id}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.store.refs.delete_leases([self.id])

    def _run(self) -> None:
        while not self._stop.wait(self._heartbeat_s):
            self.beat()

    def beat(self) -> None:
        """Refresh the heartbeat (the daemon thread calls this every `HEARTBEAT_S`)."""
        now = time.time_ns()
        try:
            # Re-created even when gc removed it: whatever was pruned is gone either way, and
            # from now on gc keeps off again. `lost` tells the holder not to publish.
            present = self.store.refs.put_lease(self.id, self._record(now).encode())
        except CasError:
            if now - self._last_beat_ns >= self._ttl_ns:
                self.lost = True
            return
        if not present or now - self._last_beat_ns >= self._ttl_ns:
            self.lost = True
        self._last_beat_ns = now

    def check(self) -> None:
        """Raise `LeaseLost` if this lease went stale at any point (call before publishing)."""
        if self.lost or time.time_ns() - self._last_beat_ns >= self._ttl_ns:
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
            now = time.time_ns()
            raise LeaseHeld([r.describe(now) for r in live], waited)
        time.sleep(min(poll_s, max(wait_s - waited, 0.01)))
