"""One remote's bucket through boto3: list, get, put, with errors mapped and requests counted.

Credentials come only from the standard AWS chain (environment, shared files and profiles,
container and instance roles), resolved by boto3 at the moment of use. None is ever passed in,
kept, printed or logged; error messages are built here from the error's code and HTTP status,
never from the server's text or botocore's message (which can echo request details).

Every HTTP request the client sends (retries included) is counted per operation by a
``before-send`` event hook, so a report can show exactly what a push or pull cost.
"""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol

import boto3
import botocore.exceptions as bexc
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from cas.errors import (
    CasError,
    RemoteAuthError,
    RemoteBucketMissing,
    RemoteError,
    RemoteUnreachable,
)
from cas.remote.config import Remote

# Objects above this size go up as multipart uploads, in parts of this size. With the default
# 1 MiB chunks every blob and chunk frame is far below it; it matters for stores created with
# large chunks and for very large manifests.
MULTIPART_THRESHOLD: Final = 8 << 20
PART_SIZE: Final = 8 << 20
LIST_PAGE: Final = 1000

_AUTH_CODES: Final = frozenset(
    {
        "AccessDenied",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "InvalidSecurity",
        "TokenRefreshRequired",
        "AllAccessDisabled",
        "AccountProblem",
        "403",
    }
)
_MISSING_KEY_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    """One listed object: its key relative to the folder that was listed, size and ETag."""

    name: str
    size: int
    etag: str


class Bucket:
    """The objects of one remote (its bucket, under its prefix). Thread-safe."""

    def __init__(self, remote: Remote, *, connections: int = 16) -> None:
        self.remote = remote
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._client: Any = self._guard(lambda: self._connect(connections))
        self._client.meta.events.register("before-send.s3", self._count)
        self._transfer = TransferConfig(
            multipart_threshold=MULTIPART_THRESHOLD,
            multipart_chunksize=PART_SIZE,
            max_concurrency=4,
        )

    def _connect(self, connections: int) -> Any:
        remote = self.remote
        aws = boto3.session.Session(profile_name=remote.profile)
        if aws.get_credentials() is None:
            raise RemoteAuthError(remote.name, "no AWS credentials found")
        config = Config(
            region_name=remote.region or aws.region_name or "us-east-1",
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            max_pool_connections=connections,
            user_agent_extra="cas",
            # S3-compatible servers are addressed by path: their buckets have no DNS names.
            s3={"addressing_style": "path"} if remote.endpoint else {},
        )
        return aws.client("s3", endpoint_url=remote.endpoint, config=config)

    # --- requests -------------------------------------------------------------------------------

    def _count(self, event_name: str = "", **_kwargs: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self._requests[operation] += 1

    def requests(self) -> dict[str, int]:
        """HTTP requests sent so far, per S3 operation (retries included), sorted by name."""
        with self._lock:
            return dict(sorted(self._requests.items()))

    # --- operations -----------------------------------------------------------------------------

    def check(self) -> None:
        """Fail with one clear error when the bucket cannot be reached, read or found."""
        self._call(self._client.head_bucket, Bucket=self.remote.bucket)

    def list_page(
        self, folder: str, *, start_after: str = "", max_keys: int = LIST_PAGE
    ) -> tuple[list[ObjectInfo], bool]:
        """One ListObjectsV2 page of ``folder`` (``blobs/``...) after the name ``start_after``:
        (objects in key order, whether more follow)."""
        base = self.remote.key(folder)
        args: dict[str, Any] = {"Bucket": self.remote.bucket, "Prefix": base, "MaxKeys": max_keys}
        if start_after:
            args["StartAfter"] = base + start_after
        page = self._call(self._client.list_objects_v2, **args)
        found = [
            ObjectInfo(
                str(item["Key"])[len(base) :],
                int(item.get("Size", 0)),
                str(item.get("ETag", "")).strip('"'),
            )
            for item in page.get("Contents", [])
            if str(item["Key"]).startswith(base)
        ]
        return found, bool(page.get("IsTruncated")) and bool(found)

    def list_all(self, folder: str) -> list[ObjectInfo]:
        """Every object under ``folder``, in key order."""
        out: list[ObjectInfo] = []
        after = ""
        while True:
            page, more = self.list_page(folder, start_after=after)
            out.extend(page)
            if not more:
                return out
            after = page[-1].name

    def get(self, sub: str, *, max_size: int) -> bytes | None:
        """The bytes of object ``sub``, or None when it does not exist. An object larger than
        ``max_size`` raises `ObjectTooLarge` before its body is read (a remote is never
        trusted: a hostile object must not make the reader allocate what it likes)."""
        try:
            response = self._call(
                self._client.get_object, Bucket=self.remote.bucket, Key=self.remote.key(sub)
            )
        except _MissingObject:
            return None
        body = response["Body"]
        try:
            size = int(response.get("ContentLength", 0))
            if size > max_size:
                raise ObjectTooLarge(size, max_size)
            data: bytes = self._guard(lambda: body.read(max_size + 1))
        finally:
            body.close()
        if len(data) > max_size:
            raise ObjectTooLarge(len(data), max_size)
        return data

    def put(self, sub: str, data: bytes) -> None:
        """Upload ``data`` as object ``sub`` (one PUT is atomic; a multipart upload is invisible
        until it completes)."""
        key = self.remote.key(sub)
        if len(data) < MULTIPART_THRESHOLD:
            self._call(self._client.put_object, Bucket=self.remote.bucket, Key=key, Body=data)
            return
        self._call(
            self._client.upload_fileobj,
            io.BytesIO(data),
            self.remote.bucket,
            key,
            Config=self._transfer,
        )

    def close(self) -> None:
        self._client.close()

    # --- errors ---------------------------------------------------------------------------------

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return self._guard(lambda: fn(*args, **kwargs))

    def _guard(self, thunk: Any) -> Any:
        try:
            return thunk()
        except CasError:
            raise
        except Exception as exc:
            mapped = self._mapped(exc)
            if mapped is None:
                raise
            raise mapped from None

    def _mapped(self, exc: BaseException) -> Any:
        """The `CasError` (or `_MissingObject`) for a boto3 failure; None for a bug of ours."""
        name = self.remote.name
        where = self.remote.endpoint or "S3"
        seen: set[int] = set()
        current: BaseException | None = exc
        # boto3's transfer layer may wrap the error that matters; look down the chain.
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if isinstance(current, bexc.ClientError):
                return self._client_error(current)
            if isinstance(current, bexc.NoCredentialsError | bexc.PartialCredentialsError):
                return RemoteAuthError(name, "no complete AWS credentials found")
            if isinstance(current, bexc.ProfileNotFound):
                return RemoteAuthError(name, f"AWS profile {self.remote.profile!r} not found")
            if isinstance(current, bexc.CredentialRetrievalError):
                return RemoteAuthError(name, "the AWS credential provider failed")
            if isinstance(current, bexc.SSLError):
                return RemoteUnreachable(name, where, "TLS handshake failed")
            if isinstance(current, bexc.ConnectTimeoutError | bexc.ReadTimeoutError):
                return RemoteUnreachable(name, where, "timed out")
            if isinstance(
                current,
                bexc.EndpointConnectionError
                | bexc.ConnectionClosedError
                | bexc.ConnectionError
                | bexc.ResponseStreamingError
                | bexc.IncompleteReadError,
            ):
                return RemoteUnreachable(name, where, "connection failed")
            if isinstance(current, bexc.BotoCoreError):
                return RemoteError(name, f"S3 client error ({type(current).__name__})")
            current = current.__cause__ or current.__context__
        return None

    def _client_error(self, exc: bexc.ClientError) -> CasError | _MissingObject:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        name = self.remote.name
        operation = exc.operation_name
        if code == "NoSuchBucket" or (operation == "HeadBucket" and status == 404):
            return RemoteBucketMissing(name, self.remote.bucket)
        if code in _MISSING_KEY_CODES and operation in ("GetObject", "HeadObject"):
            return _MissingObject()
        if code in _AUTH_CODES or status == 403:
            return RemoteAuthError(name, f"the server answered {code or status} to {operation}")
        if status >= 500 or code in ("SlowDown", "ServiceUnavailable", "InternalError"):
            return RemoteError(
                name, f"the server failed {operation} with {code or status}", "retry later"
            )
        return RemoteError(name, f"the server refused {operation}: {code or status}")


class ObjectTooLarge(Exception):
    """An object larger than anything cas writes at that place; the caller reports it as a
    problem with that object (a `str` of it is the problem's description)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"object of {size} bytes is over the limit of {limit} for its kind")
        self.size = size
        self.limit = limit


class _MissingObject(CasError):
    """A GET of an object that does not exist; `Bucket.get` turns it into None."""

    def __init__(self) -> None:
        super().__init__("no such object")


class Timed(Protocol):
    """A transfer report: it records the requests a run sent and how long it took."""

    requests: dict[str, int]
    seconds: float


@contextmanager
def session(remote: Remote, jobs: int, report: Timed) -> Iterator[Bucket]:
    """A `Bucket` for one push, pull or verify with ``jobs`` transfers in flight; on the way out,
    whatever happened, ``report`` gets the requests sent and the seconds taken."""
    started = time.monotonic()
    bucket = Bucket(remote, connections=jobs + 4)
    try:
        yield bucket
    finally:
        report.requests = bucket.requests()
        report.seconds = time.monotonic() - started
        bucket.close()
