"""Remote configuration: records of the store's ``remotes`` table.

A remote is a name for an S3 location (``s3://bucket/prefix``) plus how to reach it: an endpoint
URL for S3-compatible servers (MinIO, Ceph, SeaweedFS), a region, and optionally the name of an
AWS profile. Credentials are never part of it: they come from the standard AWS chain at the
moment of use, so nothing secret is ever written to the store. An endpoint with a user or
password in it is refused for that reason, and no message ever shows an endpoint's user,
password, query or fragment (`shown_url`).

A remote also carries how patient and how trusting to be with it (`Settings`): the connect and
read timeouts, the tries per request, the largest blob a pull or deep verify accepts from it,
the size a push fills its pack objects to, and how long to wait for a lock held by another
party (a push meeting a gc) before giving up. Each is taken from the environment
(``CAS_REMOTE_*``), else the record, else the default.

Record (msgpack, key = the remote's name in UTF-8)::

    {version: 1, url: "s3://bucket/prefix", endpoint: str | nil, region: str | nil,
     profile: str | nil, connect_timeout?: float, read_timeout?: float, attempts?: int,
     max_blob?: int, pack_size?: int, lock_wait?: float}

The settings keys are optional (absent: not set), so an older cas still reads the record.
"""

from __future__ import annotations

import math
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgpack

from cas.display import echoed
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
# A host name or IPv4 address; an IPv6 address comes in brackets and is checked by urlsplit.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")

DEFAULT_CONNECT_TIMEOUT: Final = 5.0
# A server that takes the connection and then says nothing fails the first request in this
# long (that request is tried once); later requests are tried `DEFAULT_ATTEMPTS` times.
DEFAULT_READ_TIMEOUT: Final = 15.0
DEFAULT_ATTEMPTS: Final = 3
# The largest blob a pull or deep verify accepts from a remote: its whole content is hashed
# before it is stored, so this bounds the work one object can ask for.
DEFAULT_MAX_BLOB: Final = 4 << 30
# A push fills pack objects to about this size (see cas.remote.objects).
DEFAULT_PACK_SIZE: Final = 16 << 20
# A push, pull, verify or gc that finds the remote locked by the other side gives up at once by
# default (exit 1, busy); with a wait it tries again until the wait is over (cas.remote.lock).
DEFAULT_LOCK_WAIT: Final = 0.0
_TIMEOUT_RANGE: Final = (0.05, 3600.0)
_ATTEMPTS_RANGE: Final = (1, 20)
_MAX_BLOB_RANGE: Final = (1 << 20, 1 << 50)
_PACK_SIZE_RANGE: Final = (64 << 10, 1 << 30)
_LOCK_WAIT_RANGE: Final = (0.0, 86400.0)
_SETTING_KEYS: Final = (
    "connect_timeout",
    "read_timeout",
    "attempts",
    "max_blob",
    "pack_size",
    "lock_wait",
)
_SIZES: Final = ("max_blob", "pack_size")
ENV: Final = {
    "connect_timeout": "CAS_REMOTE_CONNECT_TIMEOUT",
    "read_timeout": "CAS_REMOTE_READ_TIMEOUT",
    "attempts": "CAS_REMOTE_ATTEMPTS",
    "max_blob": "CAS_REMOTE_MAX_BLOB",
    "pack_size": "CAS_REMOTE_PACK_SIZE",
    "lock_wait": "CAS_REMOTE_LOCK_WAIT",
}
OPTION: Final = {
    "connect_timeout": "--connect-timeout",
    "read_timeout": "--read-timeout",
    "attempts": "--attempts",
    "max_blob": "--max-blob",
    "pack_size": "--pack-size",
    "lock_wait": "--lock-wait",
}


@dataclass(frozen=True, slots=True)
class Remote:
    name: str
    bucket: str
    prefix: str  # "" or "a/b" (no leading or trailing slash)
    endpoint: str | None = None
    region: str | None = None
    profile: str | None = None
    # None: not set on this remote (the environment or the default decides).
    connect_timeout: float | None = None
    read_timeout: float | None = None
    attempts: int | None = None
    max_blob: int | None = None
    pack_size: int | None = None
    lock_wait: float | None = None

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
            **{key: getattr(self, key) for key in _SETTING_KEYS if getattr(self, key) is not None},
        }


@dataclass(frozen=True, slots=True)
class Settings:
    """How one run talks to a remote: each value from the environment, else the remote's
    record, else the default."""

    connect_timeout: float
    read_timeout: float
    attempts: int
    max_blob: int
    pack_size: int
    lock_wait: float


def setting_hint(key: str) -> str:
    """Where the user changes setting ``key``, as they would type it."""
    return f"{OPTION[key]} at 'cas remote add' or {ENV[key]}"


def settings(remote: Remote, environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of ``remote`` for this run (``environ`` defaults to the process's)."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {
        "connect_timeout": DEFAULT_CONNECT_TIMEOUT,
        "read_timeout": DEFAULT_READ_TIMEOUT,
        "attempts": DEFAULT_ATTEMPTS,
        "max_blob": DEFAULT_MAX_BLOB,
        "pack_size": DEFAULT_PACK_SIZE,
        "lock_wait": DEFAULT_LOCK_WAIT,
    }
    for key in _SETTING_KEYS:
        text = env.get(ENV[key], "").strip()
        if text:
            values[key] = parse_setting(key, text, ENV[key])
        elif getattr(remote, key) is not None:
            values[key] = getattr(remote, key)
    return Settings(**values)


_SECONDS = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?")
_SECOND_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_SIZE = re.compile(r"(\d+)\s*([KMGT]i?B?|B)?", re.IGNORECASE)
_SIZE_UNITS: Final = {"": 0, "b": 0, "k": 10, "m": 20, "g": 30, "t": 40}


def parse_setting(key: str, text: str, where: str) -> float | int:
    """The value of setting ``key`` written as ``text`` (``where`` names it in an error):
    seconds as ``15``, ``15s``, ``500ms``, ``2m`` or ``1h``; tries as an integer; sizes as ``4GiB``,
    ``512M`` or bytes. Malformed or out of range is a `UsageError`."""
    text = text.strip()
    value: float | int
    if key == "attempts":
        if not text.isdigit():
            raise UsageError(f"{where}: {echoed(text)} is not a whole number of tries")
        value = int(text)
    elif key in _SIZES:
        size = _SIZE.fullmatch(text)
        if size is None:
            raise UsageError(
                f"{where}: {echoed(text)} is not a size: use forms like 4GiB or 512MiB"
            )
        unit = (size.group(2) or "").lower()[:1]
        value = int(size.group(1)) << _SIZE_UNITS[unit]
    else:
        seconds = _SECONDS.fullmatch(text)
        if seconds is None:
            raise UsageError(
                f"{where}: {echoed(text)} is not a duration: use forms like 15, 15s, 500ms"
            )
        value = float(seconds.group(1)) * _SECOND_UNITS[seconds.group(2)]
    return check_setting(key, value, where)


def check_setting(key: str, value: float | int, where: str) -> float | int:
    """``value`` when it is in the range allowed for ``key``; a `UsageError` otherwise."""
    if key == "attempts":
        low, high = _ATTEMPTS_RANGE
        if not low <= value <= high:
            raise UsageError(f"{where}: {value} tries is out of range ({low} to {high})")
        return int(value)
    if key == "max_blob":
        low, high = _MAX_BLOB_RANGE
        if not low <= value <= high:
            raise UsageError(f"{where}: {value} bytes is out of range (1 MiB to 1 PiB)")
        return int(value)
    if key == "pack_size":
        low, high = _PACK_SIZE_RANGE
        if not low <= value <= high:
            raise UsageError(f"{where}: {value} bytes is out of range (64 KiB to 1 GiB)")
        return int(value)
    if key == "lock_wait":
        low_w, high_w = _LOCK_WAIT_RANGE
        if not math.isfinite(value) or not low_w <= value <= high_w:
            raise UsageError(f"{where}: {value:g} s is out of range (0 s to 24 h)")
        return float(value)
    low_s, high_s = _TIMEOUT_RANGE
    if not math.isfinite(value) or not low_s <= value <= high_s:
        raise UsageError(f"{where}: {value:g} s is out of range ({low_s:g} s to {high_s:g} s)")
    return float(value)


# --- URLs ---------------------------------------------------------------------------------------


def shown_url(text: str) -> str:
    """``text`` as it may be shown: without user, password, query or fragment, whatever its
    form (a malformed URL included). Every message that names an endpoint goes through this."""
    text = text.split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


_CREDENTIALS_HINT: Final = (
    "credentials are never stored: they come from the standard AWS chain "
    "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or --profile, ~/.aws, or an "
    "instance role)"
)


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket[/prefix]``; anything else is a `UsageError`."""
    if "@" in url.split("?", 1)[0].split("#", 1)[0].partition("://")[2].partition("/")[0]:
        raise UsageError(
            f"the remote URL holds a user or password (not shown): {_CREDENTIALS_HINT}"
        )
    if "?" in url or "#" in url:
        raise UsageError(
            f"remote URL {echoed(shown_url(url))} must not have a query or fragment (not shown)"
        )
    if not url.startswith("s3://"):
        raise UsageError(f"remote URL {echoed(shown_url(url))} must look like s3://bucket/prefix")
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise UsageError(
            f"bucket {echoed(bucket)} is not a valid S3 bucket name: 3 to 63 lowercase letters, "
            "digits, dots and hyphens"
        )
    prefix = prefix.strip("/")
    if prefix:
        parts = prefix.split("/")
        if any(not _PREFIX_PART.fullmatch(p) or p in (".", "..") for p in parts):
            raise UsageError(
                f"prefix {echoed(prefix)} must be folder names of letters, digits and ._=+- "
                "separated by single slashes"
            )
    return bucket, prefix


def check_endpoint(endpoint: str, what: str = "endpoint") -> str:
    """An http(s) URL with a host, and no credentials, query or fragment; returned without a
    trailing '/'. Anything else is a `UsageError` that shows the URL only through `shown_url`
    (``what`` names where the URL came from)."""
    shown = echoed(shown_url(endpoint))
    scheme, sep, rest = endpoint.partition("://")
    authority = rest.split("?", 1)[0].split("#", 1)[0].partition("/")[0]
    if "@" in authority:
        # Not shown at all: it holds the credentials.
        raise UsageError(f"{what} holds a user or password (not shown): {_CREDENTIALS_HINT}")
    if "?" in endpoint or "#" in endpoint:
        raise UsageError(f"{what} {shown} must not have a query or fragment (not shown)")
    if not sep or scheme.lower() not in ("http", "https"):
        raise UsageError(f"{what} {shown} must start with http:// or https://")
    if any(c.isspace() or not c.isprintable() for c in endpoint):
        raise UsageError(f"{what} {shown} must not hold spaces or control characters")
    # urlsplit's own messages may quote the URL: each problem is said in our words.
    try:
        parsed = urllib.parse.urlsplit(endpoint)
    except ValueError:
        raise UsageError(f"{what} {shown} is not a valid URL: a bracketed host must be an IPv6 "
                         "address, as in http://[::1]:9000") from None  # fmt: skip
    host = parsed.hostname or ""
    if not host:
        raise UsageError(f"{what} {shown} has no host")
    if not authority.startswith("[") and not _HOST.fullmatch(host):
        raise UsageError(f"{what} {shown}: {echoed(host)} is not a host name or IP address")
    try:
        port = parsed.port
    except ValueError:
        port = 0
    if port == 0 or authority.endswith(":"):
        raise UsageError(f"{what} {shown} has an invalid port: use 1 to 65535")
    return endpoint.rstrip("/")


def make_remote(
    name: str,
    url: str,
    *,
    endpoint: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
    attempts: int | None = None,
    max_blob: int | None = None,
    pack_size: int | None = None,
    lock_wait: float | None = None,
) -> Remote:
    """A validated `Remote`."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"remote name {echoed(name)} must be 1 to 64 letters, digits and ._- starting with a "
            "letter or digit"
        )
    bucket, prefix = parse_url(url)
    if region is not None and not _REGION.fullmatch(region):
        raise UsageError(f"region {echoed(region)} must be lowercase letters, digits and hyphens")
    if profile is not None and not _PROFILE.fullmatch(profile):
        raise UsageError(
            f"profile name {echoed(profile)} has characters a profile name cannot have"
        )
    return Remote(
        name,
        bucket,
        prefix,
        check_endpoint(endpoint) if endpoint is not None else None,
        region,
        profile,
        _checked("connect_timeout", connect_timeout),
        _checked("read_timeout", read_timeout),
        _checked("attempts", attempts),
        _checked("max_blob", max_blob),
        _checked("pack_size", pack_size),
        _checked("lock_wait", lock_wait),
    )


def _checked(key: str, value: float | None) -> Any:
    """A setting given to `make_remote`: None (not set), or checked like the option."""
    return None if value is None else check_setting(key, value, OPTION[key])


def _encode(remote: Remote) -> bytes:
    record = {
        "version": RECORD_VERSION,
        "url": remote.url,
        "endpoint": remote.endpoint,
        "region": remote.region,
        "profile": remote.profile,
    }
    for key in _SETTING_KEYS:
        value = getattr(remote, key)
        if value is not None:
            record[key] = value
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
    numbers: dict[str, Any] = {}
    for key in _SETTING_KEYS:
        value = record.get(key)
        integral = key in ("attempts", *_SIZES)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int if integral else int | float):
            raise bad(f"{key} must be {'an integer' if integral else 'a number'}")
        numbers[key] = value
    try:
        return make_remote(
            name,
            url,
            endpoint=fields["endpoint"],
            region=fields["region"],
            profile=fields["profile"],
            **numbers,
        )
    except UsageError as exc:
        raise bad(str(exc)) from None


def add_remote(store: Store, remote: Remote) -> None:
    """Record ``remote``; a name already in use is an error (remove it first)."""
    key = remote.name.encode()
    if store.kv.get(TABLE, key) is not None:
        raise RemoteError(remote.name, "already exists", "run 'cas remote remove' first")
    store.kv.put(TABLE, [(key, _encode(remote))])


def remove_remote(store: Store, name: str) -> None:
    if not store.kv.delete(TABLE, [name.encode()]):
        raise NotFound("remote", name, _known_hint(store))


def list_remotes(store: Store) -> list[Remote]:
    """Every configured remote, sorted by the bytes of its name."""
    return [_decode(store, key.decode(), value) for key, value in store.kv.items(TABLE)]


def get_remote(store: Store, name: str) -> Remote:
    raw = store.kv.get(TABLE, name.encode())
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
    names = [key.decode() for key, _ in store.kv.items(TABLE)]
    return f"remotes: {', '.join(names)}" if names else "no remote is configured"
