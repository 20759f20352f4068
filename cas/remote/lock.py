"""Lock objects: how a remote gc keeps off pushes and pulls, and they off it.

S3 has no atomic "create if absent" that every compatible server honours, so the lock is the
write-then-look protocol: each party writes its own object under ``locks/`` and then lists the
folder. A gc (``locks/gc-...``) goes ahead only when it sees no other live lock; a push, pull or
remote verify (``locks/use-...``) only when it sees no live gc lock; the one that sees a
conflict deletes its own object and stops. Two parties cannot both go ahead: of two writes, the
second party's listing comes after the first party's write, so it sees that lock (S3 listings
are strongly consistent after a write, as on AWS since 2020, SeaweedFS and MinIO).

A lock stays live while its holder rewrites it every `REFRESH_S` seconds (a thread does); one
whose last write, by the server's clock, is older than `STALE_S` belongs to a process that
died, and a gc deletes it. Ages are measured against the server's time of the holder's own
fresh write, so client clocks never matter.

A party that meets a conflict gives up at once unless the remote's ``lock_wait`` setting
(``--lock-wait``, ``CAS_REMOTE_LOCK_WAIT``) gives it time: then it takes its lock back, waits
(one second, doubling up to `RETRY_MAX_S`) and writes a new one, until it goes ahead or the
wait is over (`RemoteBusy`, as without a wait).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
import time
from types import TracebackType
from typing import Final

from cas.errors import RemoteBusy
from cas.remote.storage import ObjectInfo, ObjectStorage

LOCKS: Final = "locks/"
GC: Final = "gc"
USE: Final = "use"
STALE_S: Final = 600.0
REFRESH_S: Final = 120.0
RETRY_FIRST_S: Final = 1.0
RETRY_MAX_S: Final = 15.0


class RemoteLock:
    """A held lock object: ``with RemoteLock(bucket, "use", "push"):``."""

    def __init__(
        self,
        bucket: ObjectStorage,
        kind: str,
        command: str,
        *,
        stale_s: float = STALE_S,
        wait_s: float | None = None,
    ):
        """``wait_s``: how long to keep trying when the other side holds the lock (default:
        the remote's ``lock_wait`` setting)."""
        if kind not in (GC, USE):
            raise ValueError(kind)
        self.bucket = bucket
        self.kind = kind
        self.command = command
        self.stale_s = stale_s
        self.wait_s = bucket.settings.lock_wait if wait_s is None else wait_s
        self.name = self._new_name()
        self.tries = 0
        self.body = json.dumps(
            {"kind": kind, "command": command, "host": socket.gethostname(), "pid": os.getpid()},
            sort_keys=True,
        ).encode()
        self.stale: list[str] = []  # stale locks of dead holders seen (a gc removes them)
        self.server_now = 0.0
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None

    def __enter__(self) -> RemoteLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def _new_name(self) -> str:
        return f"{self.kind}-{time.time_ns():020d}-{secrets.token_hex(6)}"

    def acquire(self) -> None:
        """Write this lock, then look; on a conflict take it back and try again while the
        wait lasts, then raise `RemoteBusy`."""
        deadline = time.monotonic() + self.wait_s
        delay = RETRY_FIRST_S
        while True:
            try:
                self._try()
                return
            except RemoteBusy:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
            time.sleep(min(delay, left))
            delay = min(delay * 2, RETRY_MAX_S)
            self.name = self._new_name()
            self.stale = []

    def _try(self) -> None:
        """Write this lock, then look: raise `RemoteBusy` (with this lock removed) on a
        conflict."""
        self.tries += 1
        self.bucket.put(LOCKS + self.name, self.body)
        listed = self.bucket.list_all(LOCKS)
        own = next((o for o in listed if o.name == self.name), None)
        self.server_now = own.modified if own is not None and own.modified else time.time()
        blockers: list[ObjectInfo] = []
        for other in listed:
            if other.name == self.name:
                continue
            if self.server_now - other.modified > self.stale_s:
                self.stale.append(other.name)
                continue
            if self.kind == GC or other.name.startswith(GC + "-"):
                blockers.append(other)
        if blockers:
            self._delete_own()
            first = blockers[0]
            holder = "a gc" if first.name.startswith(GC + "-") else "a push, pull or verify"
            age = max(0.0, self.server_now - first.modified)
            raise RemoteBusy(self.bucket.remote.name, holder, age, len(blockers))
        if self.kind == GC and self.stale:
            self.bucket.delete([LOCKS + name for name in self.stale])
        self._refresher = threading.Thread(
            target=self._refresh, name="cas-remote-lock", daemon=True
        )
        self._refresher.start()

    def _refresh(self) -> None:
        while not self._stop.wait(REFRESH_S):
            try:
                self.bucket.put(LOCKS + self.name, self.body)
            except Exception:  # the next refresh tries again; the lock's age shows it
                continue

    def release(self) -> None:
        self._stop.set()
        if self._refresher is not None:
            self._refresher.join()
            self._refresher = None
        self._delete_own()

    def _delete_own(self) -> None:
        # A lock left behind goes stale and a later gc removes it.
        with contextlib.suppress(Exception):
            self.bucket.delete([LOCKS + self.name])


def remove_all(bucket: ObjectStorage) -> int:
    """Delete every lock object (``cas remote unlock``); the number removed."""
    names = [LOCKS + o.name for o in bucket.list_all(LOCKS)]
    bucket.delete(names)
    return len(names)
