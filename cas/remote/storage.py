"""Object storage as the remote code sees it: the `ObjectStorage` protocol and its types.

Push, pull, remote verify and remote gc, the index reader and the pack uploader
(`cas.remote.objects`) and the lock objects (`cas.remote.lock`) use a remote's objects through
this protocol only. Two classes satisfy it: `cas.remote.s3.Bucket` (S3-compatible storage
through boto3) and `cas.remote.memory_bucket.MemoryBucket` (a dict, for testing remote logic
without a server). ``tests/test_memory_bucket.py`` runs one suite against both, so the memory
bucket behaves as the real one does where the remote code depends on it.

Every name is an object's key below the remote's prefix (``packs/<hex>``, ``index/<hex>``...).
What the remote code relies on:

* listing is in key order (by bytes), a page at a time, after a given name;
* a PUT replaces the whole object at once (readers see the old or the new bytes, never a mix);
* a GET of a missing object is None, not an error; a ranged GET returns at most the bytes
  asked for, fewer when the object is shorter, and b"" from past its end;
* a delete of a missing object is no error;
* every request is counted, per operation, for the reports.

This module imports no S3 client: the memory bucket and what runs on it load no boto3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from cas.remote.config import Remote, Settings

# Objects above this size go up as multipart uploads, in parts of this size. With the default
# 1 MiB chunks every blob and chunk frame is far below it; it matters for stores created with
# large chunks and for very large manifests.
MULTIPART_THRESHOLD: Final = 8 << 20
PART_SIZE: Final = 8 << 20
# The most keys one LIST returns (and one multi-object DELETE takes).
LIST_PAGE: Final = 1000


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One listed object: its key relative to the folder that was listed, size, ETag and the
    server's time of its last write (seconds since the epoch; 0.0 when the server gave none)."""

    name: str
    size: int
    etag: str
    modified: float = 0.0


class ObjectTooLarge(Exception):
    """An object larger than anything cas writes at that place; the caller reports it as a
    problem with that object (a `str` of it is the problem's description)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"object of {size} bytes is over the limit of {limit} for its kind")
        self.size = size
        self.limit = limit


class _Pages(Protocol):
    def list_page(
        self, folder: str, *, start_after: str = "", max_keys: int = LIST_PAGE
    ) -> tuple[list[ObjectInfo], bool]: ...


def all_pages(storage: _Pages, folder: str) -> list[ObjectInfo]:
    """Every object under ``folder``, in key order, page after page: `ObjectStorage.list_all`
    of any storage that lists a page at a time."""
    out: list[ObjectInfo] = []
    after = ""
    while True:
        page, more = storage.list_page(folder, start_after=after)
        out.extend(page)
        if not more:
            return out
        after = page[-1].name


class ObjectStorage(Protocol):
    """The objects of one remote (a bucket, under a prefix). Implementations are thread-safe:
    transfers run in worker threads (`cas.remote.transfer`)."""

    @property
    def remote(self) -> Remote:
        """The remote's record: its name for messages, its bucket and prefix."""
        ...

    @property
    def settings(self) -> Settings:
        """How this run talks to the remote (pack size and blob size limit included)."""
        ...

    def check(self) -> None:
        """Fail with one clear error (a `cas.errors.RemoteError`) when the remote cannot be
        reached, read or found."""
        ...

    def requests(self) -> dict[str, int]:
        """Requests sent so far, per S3 operation name (retries included), sorted by name."""
        ...

    def list_page(
        self, folder: str, *, start_after: str = "", max_keys: int = LIST_PAGE
    ) -> tuple[list[ObjectInfo], bool]:
        """One page of the objects under ``folder`` whose name sorts after ``start_after``:
        (objects in key order, names relative to ``folder``; whether more follow)."""
        ...

    def list_all(self, folder: str) -> list[ObjectInfo]:
        """Every object under ``folder``, in key order."""
        ...

    def get(self, sub: str, *, max_size: int) -> bytes | None:
        """The bytes of object ``sub``, or None when it does not exist; `ObjectTooLarge` when
        it holds more than ``max_size`` bytes (raised before they are read)."""
        ...

    def get_range(self, sub: str, start: int, length: int) -> bytes | None:
        """At most ``length`` bytes of object ``sub`` from offset ``start``; None when the
        object does not exist; fewer bytes (b"" past the end) when it is shorter."""
        ...

    def put(self, sub: str, data: bytes, *, single_up_to: int = MULTIPART_THRESHOLD) -> None:
        """Write object ``sub`` whole (atomically replacing one of that name). Objects below
        ``single_up_to`` bytes go up in one request; larger ones may go in parts."""
        ...

    def delete(self, subs: list[str]) -> None:
        """Delete objects ``subs``; one that does not exist is no error."""
        ...

    def close(self) -> None:
        """Release connections; the object is not used again."""
        ...
