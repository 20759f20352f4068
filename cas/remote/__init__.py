"""Remotes: push a store's packs to S3-compatible object storage and pull them elsewhere.

`config` keeps remote records in the store (never credentials), `storage` says what the remote
code needs of a bucket, `s3` is such a bucket through boto3 and `memory_bucket` one in memory,
`blobs` offers a remote as a store of blobs (`cas.blobstore`), `sync` pushes, pulls and
verifies. `sync` is loaded on first use: importing boto3 costs start-up time that commands which
never touch a remote should not pay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cas.remote.config import (
    Remote,
    add_remote,
    choose_remote,
    get_remote,
    list_remotes,
    make_remote,
    remove_remote,
)

if TYPE_CHECKING:
    from cas.remote.sync import (
        LocalManifest,
        PullReport,
        PushReport,
        RemoteGcReport,
        RemoteProblem,
        RemoteVerifyReport,
        collect_remote,
        local_manifests,
        pull,
        push,
        verify_remote,
    )

_LAZY = frozenset(
    {
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
        "verify_remote",
    }
)

__all__ = [
    "LocalManifest",
    "PullReport",
    "PushReport",
    "Remote",
    "RemoteGcReport",
    "RemoteProblem",
    "RemoteVerifyReport",
    "add_remote",
    "choose_remote",
    "collect_remote",
    "get_remote",
    "list_remotes",
    "local_manifests",
    "make_remote",
    "pull",
    "push",
    "remove_remote",
    "verify_remote",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from cas.remote import sync

        return getattr(sync, name)
    raise AttributeError(f"module 'cas.remote' has no attribute {name!r}")
