"""A remote's objects in a dict: `cas.remote.storage.ObjectStorage` without a server.

For testing remote logic (the index reader, the pack uploader, `cas.remote.blobs`, locks) where
starting SeaweedFS is not worth it, and for faults a server will not produce on cue. It behaves
as `cas.remote.s3.Bucket` does where the remote code depends on it (``tests/test_memory_bucket``
runs one suite against both): listing in key order a page at a time, whole-object PUTs, None for
a missing object, short ranged reads at the end, ETags that are the MD5 of a single-part
object, and requests counted per S3 operation, multipart uploads as S3 counts them.

Time comes from ``clock`` (default `time.time`), so a test can age objects past a grace period.
Thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from cas.remote.config import Remote, Settings, make_remote, settings
from cas.remote.storage import (
    LIST_PAGE,
    MULTIPART_THRESHOLD,
    PART_SIZE,
    ObjectInfo,
    ObjectStorage,
    ObjectTooLarge,
    all_pages,
)


@dataclass(frozen=True, slots=True)
class _Object:
    data: bytes
    etag: str
    modified: float


class MemoryBucket:
    """Objects by name (below the remote's prefix) in a dict."""

    def __init__(
        self, remote: Remote | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._remote = remote if remote is not None else make_remote("memory", "s3://memory")
        self._settings = settings(self._remote)
        self.clock = clock
        self.objects: dict[str, _Object] = {}
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self.closed = False

    @property
    def remote(self) -> Remote:
        return self._remote

    @property
    def settings(self) -> Settings:
        return self._settings

    def _count(self, operation: str, times: int = 1) -> None:
        self._requests[operation] += times

    def requests(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._requests.items()))

    def check(self) -> None:
        with self._lock:
            self._count("HeadBucket")

    def list_page(
        self, folder: str, *, start_after: str = "", max_keys: int = LIST_PAGE
    ) -> tuple[list[ObjectInfo], bool]:
        # Keys compare as S3 compares them, by their UTF-8 bytes.
        after = (folder + start_after).encode()
        with self._lock:
            self._count("ListObjectsV2")
            names = sorted(
                (n for n in self.objects if n.startswith(folder) and n.encode() > after),
                key=str.encode,
            )
            page = [
                ObjectInfo(n[len(folder) :], len(o.data), o.etag, o.modified)
                for n in names[: max(0, max_keys)]
                for o in (self.objects[n],)
            ]
        return page, len(names) > len(page) and bool(page)

    def list_all(self, folder: str) -> list[ObjectInfo]:
        return all_pages(self, folder)

    def get(self, sub: str, *, max_size: int) -> bytes | None:
        with self._lock:
            self._count("GetObject")
            found = self.objects.get(sub)
        if found is None:
            return None
        if len(found.data) > max_size:
            raise ObjectTooLarge(len(found.data), max_size)
        return found.data

    def get_range(self, sub: str, start: int, length: int) -> bytes | None:
        if length <= 0:
            return b""
        with self._lock:
            self._count("GetObject")
            found = self.objects.get(sub)
        if found is None:
            return None
        return found.data[start : start + length]

    def put(self, sub: str, data: bytes, *, single_up_to: int = MULTIPART_THRESHOLD) -> None:
        body = bytes(data)
        with self._lock:
            if len(body) < max(single_up_to, MULTIPART_THRESHOLD):
                self._count("PutObject")
                etag = hashlib.md5(body, usedforsecurity=False).hexdigest()
            else:
                parts = -(-len(body) // PART_SIZE)
                self._count("CreateMultipartUpload")
                self._count("UploadPart", parts)
                self._count("CompleteMultipartUpload")
                etag = f"{hashlib.md5(body, usedforsecurity=False).hexdigest()}-{parts}"
            self.objects[sub] = _Object(body, etag, self.clock())

    def delete(self, subs: list[str]) -> None:
        with self._lock:
            for i in range(0, len(subs), LIST_PAGE):
                self._count("DeleteObjects")
                for sub in subs[i : i + LIST_PAGE]:
                    self.objects.pop(sub, None)

    def close(self) -> None:
        self.closed = True

    # --- for tests: faults no server produces on cue ----------------------------------------

    def replace(self, sub: str, data: bytes) -> None:
        """Change an object's bytes behind the remote code's back (no request counted)."""
        with self._lock:
            old = self.objects[sub]
            self.objects[sub] = _Object(bytes(data), old.etag, old.modified)


def _keeps_the_contract(storage: MemoryBucket) -> ObjectStorage:
    """mypy holds `MemoryBucket` to the protocol here (`cas.remote.storage.ObjectStorage`)."""
    return storage
