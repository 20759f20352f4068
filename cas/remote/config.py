"""Remote configuration: records of the store's ``remotes`` table.

A remote is a name for an S3 location (``s3://bucket/prefix``) plus how to reach it: an endpoint
URL for S3-compatible servers (MinIO, Ceph, SeaweedFS), a region, and optionally the name of an
AWS profile. Credentials are never part of it: they come from the standard AWS chain at the
moment of use, so nothing secret is ever written to the store. An endpoint with a user or
password in it is refused for that reason.

Record (msgpack, key = the remote's name in UTF-8)::

    {version: 1, url: "s3://bucket/prefix", endpoint: str | nil, region: str | nil,
     profile: str | nil}
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Final

import msgpack

from cas.errors import ConfigError, NotFound, RemoteError, UsageError
from cas.store import Store

TABLE: Final = "remotes"
RECORD_VERSION: Final = 1

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# S3's rules for new buckets: 3 to 63 lowercase letters, digits, dots and hyphens.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_PREFIX_PART = re.compile(r"[A-Za-z0-9._=+-]+")
_REGION = re.compile(r"[a-z0-9-]{1,64}")
_PROFILE = re.compile(r"[A-Za-z0-9._@+=-]{1,128}")


@dataclass(frozen=True, slots=True)
class Remote:
    name: str
    bucket: str
    prefix: str  # "" or "a/b" (no leading or trailing slash)
    endpoint: str | None = None
    region: str | None = None
    profile: str | None = None

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, sub: str) -> str:
        """The object key of ``sub`` (``blobs/<hex>``...) under this remote's prefix."""
        return f"{self.prefix}/{sub}" if self.prefix else sub

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": self.url,
            "endpoint": self.endpoint,
            "region": self.region,
            "profile": self.profile,
        }


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket[/prefix]``; anything else is a `UsageError`."""
    if not url.startswith("s3://"):
        raise UsageError(f"remote URL {url!r} must look like s3://bucket/prefix")
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise UsageError(
            f"bucket {bucket!r} is not a valid S3 bucket name: 3 to 63 lowercase letters, "
            "digits, dots and hyphens"
        )
    prefix = prefix.strip("/")
    if prefix:
        parts = prefix.split("/")
        if any(not _PREFIX_PART.fullmatch(p) or p in (".", "..") for p in parts):
            raise UsageError(
                f"prefix {prefix!r} must be folder names of letters, digits and ._=+- "
                "separated by single slashes"
            )
    return bucket, prefix


def check_endpoint(endpoint: str) -> str:
    """An http(s) URL without credentials, query or fragment; returned without a trailing '/'."""
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UsageError(f"endpoint {endpoint!r} must be an http:// or https:// URL")
    if parsed.username is not None or parsed.password is not None:
        # Shown without the URL itself: it holds the credentials.
        raise UsageError(
            "the endpoint URL holds a user or password: credentials are never stored; set "
            "them in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or a profile"
        )
    if parsed.query or parsed.fragment:
        raise UsageError(f"endpoint {endpoint!r} must not have a query or fragment")
    try:
        _ = parsed.port
    except ValueError:
        raise UsageError(f"endpoint {endpoint!r} has an invalid port") from None
    return endpoint.rstrip("/")


def make_remote(
    name: str,
    url: str,
    *,
    endpoint: str | None = None,
    region: str | None = None,
    profile: str | None = None,
) -> Remote:
    """A validated `Remote`."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"remote name {name!r} must be 1 to 64 letters, digits and ._- starting with a "
            "letter or digit"
        )
    bucket, prefix = parse_url(url)
    if region is not None and not _REGION.fullmatch(region):
        raise UsageError(f"region {region!r} must be lowercase letters, digits and hyphens")
    if profile is not None and not _PROFILE.fullmatch(profile):
        raise UsageError(f"profile name {profile!r} has characters a profile name cannot have")
    return Remote(
        name,
        bucket,
        prefix,
        check_endpoint(endpoint) if endpoint is not None else None,
        region,
        profile,
    )


def _encode(remote: Remote) -> bytes:
    record = {
        "version": RECORD_VERSION,
        "url": remote.url,
        "endpoint": remote.endpoint,
        "region": remote.region,
        "profile": remote.profile,
    }
    data: bytes = msgpack.packb(record, use_bin_type=True)
    return data


def _decode(store: Store, name: str, raw: bytes) -> Remote:
    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{store.path} (remotes table)", name, problem)

    try:
        record = msgpack.unpackb(raw, raw=False)
    except Exception as exc:  # msgpack raises assorted errors on damaged input
        raise bad(f"damaged record ({type(exc).__name__})") from None
    if not isinstance(record, dict) or not isinstance(record.get("version"), int):
        raise bad("damaged record (not a versioned map)")
    if record["version"] > RECORD_VERSION:
        raise bad(f"record version {record['version']} is newer than this cas: upgrade cas")
    fields: dict[str, str | None] = {}
    for key in ("endpoint", "region", "profile"):
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            raise bad(f"{key} must be a string")
        fields[key] = value
    url = record.get("url")
    if not isinstance(url, str):
        raise bad("url must be a string")
    try:
        return make_remote(name, url, **fields)
    except UsageError as exc:
        raise bad(str(exc)) from None


def add_remote(store: Store, remote: Remote) -> None:
    """Record ``remote``; a name already in use is an error (remove it first)."""
    key = remote.name.encode()
    if store.kv_get(TABLE, key) is not None:
        raise RemoteError(remote.name, "already exists", "run 'cas remote remove' first")
    store.kv_put(TABLE, [(key, _encode(remote))])


def remove_remote(store: Store, name: str) -> None:
    if not store.kv_delete(TABLE, [name.encode()]):
        raise NotFound("remote", name, _known_hint(store))


def list_remotes(store: Store) -> list[Remote]:
    """Every configured remote, sorted by the bytes of its name."""
    return [_decode(store, key.decode(), value) for key, value in store.kv_items(TABLE)]


def get_remote(store: Store, name: str) -> Remote:
    raw = store.kv_get(TABLE, name.encode())
    if raw is None:
        raise NotFound("remote", name, _known_hint(store))
    return _decode(store, name, raw)


def resolve_remote(store: Store, remote: Remote | str) -> Remote:
    """``remote`` itself, or the configured remote of that name."""
    return remote if isinstance(remote, Remote) else get_remote(store, remote)


def choose_remote(store: Store, name: str | None) -> Remote:
    """The remote called ``name``, or the only one configured when ``name`` is None."""
    if name is not None:
        return get_remote(store, name)
    remotes = list_remotes(store)
    if len(remotes) == 1:
        return remotes[0]
    if not remotes:
        raise UsageError("no remote configured: run 'cas remote add NAME s3://bucket/prefix'")
    names = ", ".join(r.name for r in remotes)
    raise UsageError(f"several remotes are configured ({names}): name one")


def _known_hint(store: Store) -> str:
    names = [key.decode() for key, _ in store.kv_items(TABLE)]
    return f"remotes: {', '.join(names)}" if names else "no remote is configured"
