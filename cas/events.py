"""Progress events: what a long operation tells whoever watches it, and nothing more.

Library code (verify, gc, the packer's build and search index, push, pull, remote verify and
remote gc) reports progress by calling a `ProgressSink` with a `ProgressEvent`; it never draws.
The CLI hands in the terminal display's sink (`cas.progress.Progress.sink`); a test, a server or
another front end can pass any callable, or None for no progress at all.

An event carries the running totals of its stage, not increments: a sink that misses events
(or draws only a few a second) still shows the truth, and the last event of a stage is its
result. ``total`` may grow while a stage finds more work (a pull learns of chunks as it reads
chunk indexes); 0 means not known yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class ProgressEvent(NamedTuple):
    stage: str  # the step under way: "verify", "scan", "store", "sweep", "push", ...
    done: int  # units (files, blobs, objects) finished in this stage so far
    total: int = 0  # units the stage has, as known now; 0 when not known
    nbytes: int = 0  # bytes read, hashed or moved in this stage so far


ProgressSink = Callable[[ProgressEvent], None]


def emit(sink: ProgressSink | None, stage: str, done: int, total: int = 0, nbytes: int = 0) -> None:
    """Send one event to ``sink``, if there is one."""
    if sink is not None:
        sink(ProgressEvent(stage, done, total, nbytes))
