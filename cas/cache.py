"""Derived facts cached in the store: token counts, summaries, secret-scan results, stat data.

Keys carry the version of the code that made the value (``SUMMARY_VERSION`` and the like), so a
change of rules never reuses a stale result. Everything here may be dropped at any time; it is
recomputed from content. Writes are collected and committed once per pack.

Two rules keep a cache a cache whatever the table holds:

* Every value is framed with a CRC-32 of its key and bytes (`_frame`). A value that does not
  check out (damaged on disk, written by something else, or moved under another key) is a miss,
  so no reader of a cached value ever has to decode damaged bytes.
* A key longer than LMDB takes (511 bytes, a long relative path in the stat cache) is stored
  under the BLAKE3 of the key instead, its value carrying the whole key: lookups, preloads and
  writes work the same for every key length, in every namespace.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Final

import blake3

from cas.store import Store

# Frame of a cached value: version byte, CRC-32 (big-endian) of key and bytes, then the bytes.
_VERSION: Final = b"\x01"
_CRC: Final = struct.Struct(">I")
_HEAD: Final = len(_VERSION) + _CRC.size
# The separator after a namespace: plain keys follow b"\2", keys too long for LMDB are stored
# as their digest after b"\3" (with the whole key inside the value, behind its length). Entries
# of the unframed layout, keyed after b"\0", are never read (nor overwritten: a cas from before
# the frames still finds its own values there).
_PLAIN: Final = b"\2"
_HASHED: Final = b"\3"
_KEY_LEN: Final = struct.Struct(">I")


def _frame(full_key: bytes, value: bytes) -> bytes:
    return _VERSION + _CRC.pack(zlib.crc32(value, zlib.crc32(full_key))) + value


def _unframe(full_key: bytes, stored: bytes) -> bytes | None:
    """The value, or None when the frame does not check out (a miss)."""
    if len(stored) < _HEAD or stored[:1] != _VERSION:
        return None
    value = stored[_HEAD:]
    if _CRC.unpack_from(stored, 1)[0] != zlib.crc32(value, zlib.crc32(full_key)):
        return None
    return value


class Cache:
    def __init__(self, store: Store, *, enabled: bool = True) -> None:
        self._store = store
        self._pending: dict[bytes, bytes] = {}
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(namespace: str, key: bytes) -> bytes:
        return namespace.encode("utf-8") + _PLAIN + key

    def _stored_key(self, namespace: str, key: bytes) -> tuple[bytes, bool]:
        """The table key for (namespace, key), and whether it is the digest form."""
        full = self.key(namespace, key)
        if len(full) <= self._store.max_key_size:
            return full, False
        return namespace.encode("utf-8") + _HASHED + blake3.blake3(key).digest(), True

    def _decode(self, stored_key: bytes, hashed: bool, key: bytes, raw: bytes) -> bytes | None:
        value = _unframe(stored_key, raw)
        if value is None or not hashed:
            return value
        if len(value) < _KEY_LEN.size:
            return None
        size = _KEY_LEN.unpack_from(value)[0]
        whole = value[_KEY_LEN.size : _KEY_LEN.size + size]
        return value[_KEY_LEN.size + size :] if whole == key else None

    def get(self, namespace: str, key: bytes) -> bytes | None:
        if not self.enabled:
            return None
        stored_key, hashed = self._stored_key(namespace, key)
        raw = self._pending.get(stored_key)
        if raw is None:
            raw = self._store.kv.get("cache", stored_key)
        value = self._decode(stored_key, hashed, key, raw) if raw is not None else None
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def get_many(self, namespace: str, keys: Sequence[bytes]) -> list[bytes | None]:
        """`get` of each key, the store read in one transaction."""
        if not self.enabled:
            return [None] * len(keys)
        stored = [self._stored_key(namespace, key) for key in keys]
        pending = self._pending
        raws = self._store.kv.get_many("cache", [sk for sk, _ in stored if sk not in pending])
        found = iter(raws)
        out: list[bytes | None] = []
        for key, (stored_key, hashed) in zip(keys, stored, strict=True):
            raw = pending.get(stored_key)
            if raw is None and stored_key not in pending:
                raw = next(found)
            value = self._decode(stored_key, hashed, key, raw) if raw is not None else None
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
            out.append(value)
        return out

    def preload(self, namespace: str) -> dict[bytes, bytes]:
        """Every entry of a namespace, read in one transaction (keys without the prefix).
        Entries that do not check out are left out: they are misses."""
        if not self.enabled:
            return {}
        ns = namespace.encode("utf-8")
        out: dict[bytes, bytes] = {}
        plain = ns + _PLAIN
        for stored_key, raw in self._store.kv.items("cache", plain):
            value = _unframe(stored_key, raw)
            if value is not None:
                out[stored_key[len(plain) :]] = value
        for stored_key, raw in self._store.kv.items("cache", ns + _HASHED):
            value = _unframe(stored_key, raw)
            if value is None or len(value) < _KEY_LEN.size:
                continue
            size = _KEY_LEN.unpack_from(value)[0]
            key = value[_KEY_LEN.size : _KEY_LEN.size + size]
            if len(key) == size and stored_key == self._stored_key(namespace, key)[0]:
                out[key] = value[_KEY_LEN.size + size :]
        return out

    def put(self, namespace: str, key: bytes, value: bytes) -> None:
        if not self.enabled:
            return
        stored_key, hashed = self._stored_key(namespace, key)
        body = _KEY_LEN.pack(len(key)) + key + value if hashed else value
        self._pending[stored_key] = _frame(stored_key, body)

    def flush(self) -> None:
        if self._pending and not self._store.readonly:
            items = sorted(self._pending.items())
            self._pending.clear()
            self._store.kv.put("cache", items)
