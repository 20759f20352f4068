"""cas: a content-addressed store of BLAKE3-addressed, zstd-compressed blobs in LMDB.

The engine: `Store` keeps immutable, deduplicated blobs; `Digest` names them. Policy about what
goes into a context pack lives in the separate ``packer`` package, which uses this API.
"""

from cas.batch import Batch
from cas.digest import Digest
from cas.errors import CasError
from cas.reader import BlobReader
from cas.store import BlobStat, Store, StoreStats, find_store

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
