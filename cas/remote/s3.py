"""One remote's bucket through boto3: list, get, put, with errors mapped and requests counted.

Credentials come only from the standard AWS chain (environment, shared files and profiles,
container and instance roles), resolved by boto3 at the moment of use. None is ever passed in,
kept, printed or logged; error messages are built here from the error's code and HTTP status,
never from the server's text or botocore's message (which can echo request details).

Every HTTP request the client sends (retries included) is counted per operation by a
``before-send`` event hook, so a report can show exactly what a push or pull cost.

Patience is bounded (`cas.remote.config.Settings`): each request waits at most the connect and
read timeouts and is tried a bounded number of times. The first request of a run (`Bucket.check`)
is tried once when it times out, so a server that takes connections and never answers fails in
one read timeout, with one line saying so; later requests, to a server that has answered, get
every try.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
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
    RemoteTimeout,
    RemoteUnreachable,
)
from cas.remote.config import Remote, check_endpoint, setting_hint, settings, shown_url
from cas.remote.storage import (
    LIST_PAGE,
    MULTIPART_THRESHOLD,
    PART_SIZE,
    ObjectInfo,
    ObjectStorage,
    ObjectTooLarge,
    all_pages,
)

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
# Where boto3 takes an endpoint from when a remote names none (besides profile files).
_ENDPOINT_VARIABLES: Final = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


class Bucket:
    """The objects of one remote (its bucket, under its prefix), through boto3: the S3
    implementation of `cas.remote.storage.ObjectStorage`. Thread-safe."""

    def __init__(self, remote: Remote, *, connections: int = 16) -> None:
        self.remote = remote
        self.settings = settings(remote)
        # Shown in messages: never a user, password, query or fragment (see `shown_url`).
        self.endpoint = shown_url(remote.endpoint) if remote.endpoint else "S3"
        self._lock = threading.Lock()
        self._requests: Counter[str] = Counter()
        self._connections = connections
        self._aws: Any = None
        self._client: Any = self._guard(lambda: self._connect(self.settings.attempts))
        self.endpoint = shown_url(str(self._client.meta.endpoint_url or self.endpoint))
        self._transfer = TransferConfig(
            multipart_threshold=MULTIPART_THRESHOLD,
            multipart_chunksize=PART_SIZE,
            max_concurrency=4,
        )

    def _connect(self, attempts: int) -> Any:
        """A client trying each request ``attempts`` times, counting what it sends."""
        remote = self.remote
        if self._aws is None:
            if remote.endpoint is None:
                _check_endpoint_variables()
            aws = boto3.session.Session(profile_name=remote.profile)
            if aws.get_credentials() is None:
                raise RemoteAuthError(remote.name, "no AWS credentials found")
            self._aws = aws
        config = Config(
            region_name=remote.region or self._aws.region_name or "us-east-1",
            connect_timeout=self.settings.connect_timeout,
            read_timeout=self.settings.read_timeout,
            retries={"total_max_attempts": attempts, "mode": "standard"},
            max_pool_connections=self._connections,
            user_agent_extra="cas",
            # S3-compatible servers are addressed by path: their buckets have no DNS names.
            s3={"addressing_style": "path"} if remote.endpoint else {},
        )
        try:
            client = self._aws.client("s3", endpoint_url=remote.endpoint, config=config)
        except ValueError:
            # Only an endpoint from the AWS configuration gets here: ours was checked when the
            # remote was added. botocore's message may quote it, so it is not passed on.
            raise RemoteError(
                remote.name,
                "the endpoint URL in the AWS configuration (endpoint_url of the profile) is "
                "malformed",
                "fix it, or give the remote an --endpoint",
            ) from None
        if remote.endpoint is None:
            # From the environment or the profile: held to the rules of 'cas remote add'.
            check_endpoint(str(client.meta.endpoint_url), "the endpoint from the AWS configuration")
        client.meta.events.register("before-send.s3", self._count)
        return client

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
        """Fail with one clear error when the bucket cannot be reached, read or found.

        Asked once first: a timeout then is final (a server that never answers fails in one
        read timeout, not one per try). Any other failure is asked again with every try, so a
        passing fault (a refused connection, a 503) is retried as usual."""
        probe = self._guard(lambda: self._connect(1))
        try:
            probe.head_bucket(Bucket=self.remote.bucket)
            return
        except (bexc.ConnectTimeoutError, bexc.ReadTimeoutError) as exc:
            raise self._timeout(exc, tries=1) from None
        except (bexc.BotoCoreError, bexc.ClientError):
            pass
        finally:
            probe.close()
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
                _epoch(item.get("LastModified")),
            )
            for item in page.get("Contents", [])
            if str(item["Key"]).startswith(base)
        ]
        return found, bool(page.get("IsTruncated")) and bool(found)

    def list_all(self, folder: str) -> list[ObjectInfo]:
        """Every object under ``folder``, in key order."""
        return all_pages(self, folder)

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
            # Reading the body is not retried: one read timeout ends it.
            data: bytes = self._guard(lambda: body.read(max_size + 1), tries=1)
        finally:
            body.close()
        if len(data) > max_size:
            raise ObjectTooLarge(len(data), max_size)
        return data

    def get_range(self, sub: str, start: int, length: int) -> bytes | None:
        """``length`` bytes of object ``sub`` from offset ``start`` (one ranged GET), or None
        when the object does not exist. Fewer bytes come back when the object is shorter; the
        caller checks what it got. More are never read."""
        if length <= 0:
            return b""
        try:
            response = self._call(
                self._client.get_object,
                Bucket=self.remote.bucket,
                Key=self.remote.key(sub),
                Range=f"bytes={start}-{start + length - 1}",
            )
        except _MissingObject:
            return None
        except _RangePastEnd:
            return b""  # the object is shorter than the caller was told
        body = response["Body"]
        try:
            data: bytes = self._guard(lambda: body.read(length + 1), tries=1)
        finally:
            body.close()
        return data

    def delete(self, subs: list[str]) -> None:
        """Delete objects ``subs`` (up to 1000 per request; a missing one is no error)."""
        for i in range(0, len(subs), LIST_PAGE):
            batch = subs[i : i + LIST_PAGE]
            answer = self._call(
                self._client.delete_objects,
                Bucket=self.remote.bucket,
                Delete={"Objects": [{"Key": self.remote.key(s)} for s in batch], "Quiet": True},
            )
            failed = answer.get("Errors") or []
            if failed:
                first = failed[0]
                raise RemoteError(
                    self.remote.name,
                    f"the server refused to delete {len(failed)} objects "
                    f"({first.get('Code', '?')} for {first.get('Key', '?')})",
                )

    def put(self, sub: str, data: bytes, *, single_up_to: int = MULTIPART_THRESHOLD) -> None:
        """Upload ``data`` as object ``sub`` (one PUT is atomic; a multipart upload is invisible
        until it completes). Objects below ``single_up_to`` bytes go up in one PUT."""
        key = self.remote.key(sub)
        if len(data) < max(single_up_to, MULTIPART_THRESHOLD):
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

    def _guard(self, thunk: Any, *, tries: int | None = None) -> Any:
        try:
            return thunk()
        except CasError:
            raise
        except Exception as exc:
            mapped = self._mapped(exc, tries or self.settings.attempts)
            if mapped is None:
                raise
            raise mapped from None

    def _mapped(self, exc: BaseException, tries: int) -> Any:
        """The `CasError` (or `_MissingObject`) for a boto3 failure; None for a bug of ours."""
        name = self.remote.name
        where = self.endpoint
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
                return self._timeout(current, tries=tries)
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

    def _timeout(self, exc: BaseException, *, tries: int) -> RemoteTimeout:
        key = "connect_timeout" if isinstance(exc, bexc.ConnectTimeoutError) else "read_timeout"
        seconds = getattr(self.settings, key)
        return RemoteTimeout(self.remote.name, self.endpoint, seconds, tries, setting_hint(key))

    def _client_error(self, exc: bexc.ClientError) -> CasError:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        name = self.remote.name
        operation = exc.operation_name
        if code == "NoSuchBucket" or (operation == "HeadBucket" and status == 404):
            return RemoteBucketMissing(name, self.remote.bucket)
        if code in _MISSING_KEY_CODES and operation in ("GetObject", "HeadObject"):
            return _MissingObject()
        if operation == "GetObject" and (code == "InvalidRange" or status == 416):
            return _RangePastEnd()
        if code in _AUTH_CODES or status == 403:
            return RemoteAuthError(name, f"the server answered {code or status} to {operation}")
        if status >= 500 or code in ("SlowDown", "ServiceUnavailable", "InternalError"):
            return RemoteError(
                name, f"the server failed {operation} with {code or status}", "retry later"
            )
        return RemoteError(name, f"the server refused {operation}: {code or status}")


def _epoch(value: Any) -> float:
    """A listing's LastModified (a datetime from boto3) as seconds since the epoch."""
    stamp = getattr(value, "timestamp", None)
    return float(stamp()) if callable(stamp) else 0.0


def _check_endpoint_variables() -> None:
    """An endpoint boto3 would take from the environment must be as well formed as one given to
    'cas remote add' (else botocore fails with its own words, quoting the URL)."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").lower() == "true":
        return
    for variable in _ENDPOINT_VARIABLES:
        value = os.environ.get(variable, "")
        if value:
            check_endpoint(value, f"the endpoint in {variable}")


class _MissingObject(CasError):
    """A GET of an object that does not exist; `Bucket.get` turns it into None."""

    def __init__(self) -> None:
        super().__init__("no such object")


class _RangePastEnd(CasError):
    """A ranged GET starting past the end of the object; `Bucket.get_range` returns b""."""

    def __init__(self) -> None:
        super().__init__("range past the end of the object")


class Timed(Protocol):
    """A transfer report: it records the requests a run sent and how long it took."""

    requests: dict[str, int]
    seconds: float


@contextmanager
def session(
    remote: Remote, jobs: int, report: Timed, storage: ObjectStorage | None = None
) -> Iterator[ObjectStorage]:
    """The objects of ``remote`` for one push, pull, verify or gc, with ``jobs`` transfers in
    flight: a `Bucket`, or ``storage`` when given (the caller's, an in-memory bucket in tests;
    left open). On the way out, whatever happened, ``report`` gets the requests sent and the
    seconds taken."""
    started = time.monotonic()
    before = storage.requests() if storage is not None else {}
    objects = storage if storage is not None else Bucket(remote, connections=jobs + 4)
    try:
        yield objects
    finally:
        sent = {k: n - before.get(k, 0) for k, n in objects.requests().items()}
        report.requests = {k: n for k, n in sent.items() if n > 0}
        report.seconds = time.monotonic() - started
        if storage is None:
            objects.close()


def _keeps_the_contract(storage: Bucket) -> ObjectStorage:
    """mypy holds `Bucket` to the protocol here (`cas.remote.storage.ObjectStorage`)."""
    return storage
