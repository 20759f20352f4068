"""cas: a content-addressed store of BLAKE3-addressed, zstd-compressed blobs in LMDB.

The engine: `Store` keeps immutable, deduplicated blobs; `Digest` names them. Policy about what
goes into a context pack lives in the separate ``packer`` package, which uses this API.

The names below load on first use: ``import cas.anything`` runs this file first, and the
command must reach its Ctrl-C handling (``cas/__main__.py``) before LMDB and zstd are loaded.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: importing typing would cost the command its start-up time
if TYPE_CHECKING:
    from cas.batch import Batch
    from cas.digest import Digest
    from cas.errors import CasError
    from cas.reader import BlobReader
    from cas.store import BlobStat, Store, StoreStats, find_store

_HOMES = {
    "Batch": "cas.batch",
    "BlobReader": "cas.reader",
    "BlobStat": "cas.store",
    "CasError": "cas.errors",
    "Digest": "cas.digest",
    "Store": "cas.store",
    "StoreStats": "cas.store",
    "find_store": "cas.store",
}

__all__ = [
    "Batch",
    "BlobReader",
    "BlobStat",
    "CasError",
    "Digest",
    "Store",
    "StoreStats",
    "find_store",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'cas' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
