"""Derived facts cached in the store: token counts, summaries, secret-scan results, stat data.

Keys carry the version of the code that made the value (``SUMMARY_VERSION`` and the like), so a
change of rules never reuses a stale result. Everything here may be dropped at any time; it is
recomputed from content. Writes are collected and committed once per pack.
"""

from __future__ import annotations

from cas.store import Store


class Cache:
    def __init__(self, store: Store, *, enabled: bool = True) -> None:
        self._store = store
        self._pending: dict[bytes, bytes] = {}
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(namespace: str, key: bytes) -> bytes:
        return namespace.encode("utf-8") + b"\0" + key

    def get(self, namespace: str, key: bytes) -> bytes | None:
        if not self.enabled:
            return None
        full = self.key(namespace, key)
        value = self._pending.get(full)
        if value is None:
            value = self._store.kv_get("cache", full)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def preload(self, namespace: str) -> dict[bytes, bytes]:
        """Every entry of a namespace, read in one transaction (keys without the prefix)."""
        if not self.enabled:
            return {}
        prefix = self.key(namespace, b"")
        return {k[len(prefix) :]: v for k, v in self._store.kv_items("cache", prefix)}

    def put(self, namespace: str, key: bytes, value: bytes) -> None:
        if self.enabled:
            self._pending[self.key(namespace, key)] = value

    def flush(self) -> None:
        if self._pending and not self._store.readonly:
            items = sorted(self._pending.items())
            self._pending.clear()
            self._store.kv_put("cache", items)
