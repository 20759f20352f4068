"""Push, pull and verify a store against a remote: the entry points, in one place.

``cas push``, ``cas pull`` and ``cas remote verify`` (and ``cas verify --remote``) call these.
Each returns a report whose ``requests`` counts every HTTP request sent, per S3 operation.
The work lives in `cas.remote.push`, `cas.remote.pull` and `cas.remote.verify`; the remote
layout and the listing strategy are described in `cas.remote.layout`.
"""

from __future__ import annotations

from cas.remote.layout import LocalManifest, local_manifests, manifests_dir
from cas.remote.pull import PullReport, pull
from cas.remote.push import PushReport, push
from cas.remote.verify import RemoteProblem, RemoteVerifyReport, verify_remote

__all__ = [
    "LocalManifest",
    "PullReport",
    "PushReport",
    "RemoteProblem",
    "RemoteVerifyReport",
    "local_manifests",
    "manifests_dir",
    "pull",
    "push",
    "verify_remote",
]
