"""Fixed-layout records kept beside blobs, shared by the store and its batches."""

from __future__ import annotations

import struct
import time
from typing import Any

# meta table: raw size, stored size, first stored ns, last referenced ns
META = struct.Struct(">QQqq")
# chunkrefs table: how many blob indexes reference the chunk, last time a put wrote or reused it
CHUNKREF = struct.Struct(">Iq")


def now_ns() -> int:
    return time.time_ns()


# An LMDB transaction. lmdb's stubs type every read as bytes | memoryview; the store always opens
# transactions with buffers=False, so reads are bytes, and an untyped alias avoids a cast per read.
Txn = Any
