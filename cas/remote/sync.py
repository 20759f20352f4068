"""Push, pull, verify and gc a remote: the entry points, in one place.

``cas push``, ``cas pull``, ``cas remote verify`` (and ``cas verify --remote``) and
``cas gc --remote`` call these.
Each returns a report whose ``requests`` counts every HTTP request sent, per S3 operation.
Each takes ``storage=``: an `ObjectStorage` to use instead of connecting to the remote's bucket
(`cas.remote.memory_bucket.MemoryBucket` runs them without a server; tests/test_remote_sync.py).
The work lives in `cas.remote.push`, `cas.remote.pull` and `cas.remote.verify`; the remote
layout and the listing strategy are described in `cas.remote.layout`.
"""

from __future__ import annotations

from cas.remote.config import Remote
from cas.remote.gc import RemoteGcReport, collect_remote
from cas.remote.layout import LocalManifest, local_manifests
from cas.remote.lock import remove_all
from cas.remote.pull import PullReport, pull
from cas.remote.push import PushReport, push
from cas.remote.s3 import Bucket
from cas.remote.verify import RemoteProblem, RemoteVerifyReport, verify_remote

__all__ = [
    "LocalManifest",
    "PullReport",
    "PushReport",
    "RemoteGcReport",
    "RemoteProblem",
    "RemoteVerifyReport",
    "collect_remote",
    "local_manifests",
    "pull",
    "push",
    "unlock",
    "verify_remote",
]


def unlock(remote: Remote) -> int:
    """Remove every lock object of ``remote``; the number removed."""
    bucket = Bucket(remote)
    try:
        bucket.check()
        return remove_all(bucket)
    finally:
        bucket.close()
