"""Progress on a terminal: one line on stderr, redrawn at most a few times a second.

Silent when stderr is not a terminal, when ``CI`` is set, or when the caller asks for quiet, so
logs in CI hold only results. Only the CLI draws: library code sends progress events
(`cas.events`), and the CLI passes `Progress.sink` as their sink.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from cas.display import human_bytes

if TYPE_CHECKING:
    from cas.events import ProgressEvent


def wanted(quiet: bool, stream: TextIO | None = None) -> bool:
    out = stream if stream is not None else sys.stderr
    if quiet or os.environ.get("CI") or os.environ.get("CAS_NO_PROGRESS"):
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``with Progress("storing", total=n, enabled=...) as p: p.update(done, bytes_done)``, or
    ``run(progress=p.sink)`` for a library call that sends events. With ``stages`` the label
    names each event's stage (``gc: sweep``)."""

    def __init__(
        self,
        label: str,
        *,
        total: int | None = None,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 0.2,
        stages: bool = False,
    ) -> None:
        self.base = label
        self.stages = stages
        self.label = label
        self.total = total
        self.enabled = enabled
        self._stream = stream if stream is not None else sys.stderr
        self._interval = interval
        self._start = time.monotonic()
        self._last = 0.0
        self._width = 0
        self.count = 0
        self.nbytes = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(
        self, count: int | None = None, nbytes: int | None = None, *, force: bool = False
    ) -> None:
        if count is not None:
            self.count = count
        if nbytes is not None:
            self.nbytes = nbytes
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self._interval:
            return
        self._last = now
        elapsed = max(now - self._start, 1e-6)
        parts = [f"{self.label}: {self.count}"]
        if self.total:
            parts[0] += f"/{self.total} ({100 * self.count // max(self.total, 1)}%)"
        if self.nbytes:
            parts.append(f"{human_bytes(self.nbytes)} at {human_bytes(self.nbytes / elapsed)}/s")
        line = ", ".join(parts)
        pad = max(self._width - len(line), 0)
        self._width = len(line)
        self._stream.write("\r" + line + " " * pad)
        self._stream.flush()

    @property
    def sink(self) -> Callable[[ProgressEvent], None] | None:
        """`show`, or None when nothing is drawn (a library call then builds no events)."""
        return self.show if self.enabled else None

    def show(self, event: ProgressEvent) -> None:
        """Draw a progress event (a `cas.events.ProgressSink`)."""
        if self.stages:
            self.label = f"{self.base}: {event.stage}"
        self.total = event.total or None
        self.update(event.done, event.nbytes)

    def advance(self, count: int = 1, nbytes: int = 0) -> None:
        self.update(self.count + count, self.nbytes + nbytes)

    def close(self) -> None:
        if self.enabled and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
