"""Per-file work in worker processes, for runs large enough to pay for starting them.

Hashing and zstd release the interpreter lock, but reading a file, preparing its frame and (in
the packer) scanning it for secrets are Python between those calls: in threads, two cores stay
half idle. Processes do not share a lock. Workers are spawned, never forked (a forked child would
inherit the parent's LMDB handles and its locks), ignore Ctrl-C (the parent handles it), and each
opens its own read-only view of the store, so it can skip compressing what is already stored and
read the caches. Only the committing process writes.

`run` returns results in input order. If a worker cannot start or dies, it raises
`BrokenProcessPool`: the caller does the rest in threads.

A spawned worker imports the parent's main module, so processes are chosen by themselves
(`worth_it`) only once `enable_auto` was called: the `cas` command does so, its main module being
safe to import. A program that embeds cas gets threads unless it opts in the same way (with its
entry point under ``if __name__ == "__main__":``) or asks for processes explicitly.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from cas.batch import Batch
from cas.residency import map_large_buffers
from cas.store import Store

# Below these, threads win: a worker process costs about 0.2 s of start-up.
MIN_FILES: Final = 1500
MIN_BYTES: Final = 64 << 20
CHUNK: Final = 32  # items per task
_IN_FLIGHT: Final = 4  # tasks per worker queued ahead
_ORPHAN_CHECK_S: Final = 0.5

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class View:
    """What a task sees in a worker process: the store, read-only; a batch over it for
    `Batch.prepare` (never flushed); the caller's picklable extra."""

    store: Store
    batch: Batch
    extra: Any


@dataclass(frozen=True, slots=True)
class _Setup(Generic[T, R]):
    store: str
    level: int
    task: Callable[[View, T], R]  # a module-level function: pickled by reference
    extra: Any
    parent: int  # the pid of the process that started the pool


_WORKER: dict[str, tuple[View, Callable[[View, Any], Any]]] = {}
_AUTO: dict[str, bool] = {"enabled": False}


def enable_auto(enabled: bool = True) -> None:
    """Let `worth_it` choose processes for large runs (see the module docstring)."""
    _AUTO["enabled"] = enabled


def worth_it(count: int, nbytes: int) -> bool:
    """Whether a run of ``count`` files, ``nbytes`` in all, should use processes."""
    if not _AUTO["enabled"] or (os.cpu_count() or 1) < 2:
        return False
    return count >= MIN_FILES or nbytes >= MIN_BYTES


def workers() -> int:
    return max(2, min(4, os.cpu_count() or 2))


def _start(setup: _Setup[Any, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    map_large_buffers()  # each file's content and frame is a large buffer, freed at once
    # The parent is named by the setup, not asked of the OS: a parent killed while this worker
    # started would otherwise look like the process this worker was handed to.
    threading.Thread(target=_exit_when_orphaned, args=(setup.parent,), daemon=True).start()
    store = Store.at(setup.store, readonly=True)
    _WORKER["view"] = (View(store, store.batch(level=setup.level), setup.extra), setup.task)


def _exit_when_orphaned(parent: int) -> None:
    """A worker whose parent was killed (SIGKILL runs no clean-up) would wait for work forever,
    holding the store open: it leaves as soon as it is re-parented."""
    while os.getppid() == parent:
        time.sleep(_ORPHAN_CHECK_S)
    os._exit(0)


def _run_chunk(items: list[Any]) -> list[Any]:
    view, task = _WORKER["view"]
    return [task(view, item) for item in items]


def run(
    store: Store,
    level: int,
    task: Callable[[View, T], R],
    items: Sequence[T],
    *,
    extra: Any = None,
    inline: Callable[[T], bool] | None = None,
) -> Iterator[tuple[T, R | None]]:
    """``(item, task(view, item))`` for each item, in input order, computed in worker processes.
    Items ``inline`` picks come back with None, in their place, for the caller to handle."""
    setup = _Setup(str(store.path), level, task, extra, os.getpid())
    count = workers()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(count, context, initializer=_start, initargs=(setup,)) as pool:
        window: deque[tuple[list[T], Future[list[R]] | None]] = deque()
        chunk: list[T] = []

        def send() -> None:
            nonlocal chunk
            if chunk:
                window.append((chunk, pool.submit(_run_chunk, chunk)))
                chunk = []

        def drain(limit: int) -> Iterator[tuple[T, R | None]]:
            while len(window) > limit:
                sent, fut = window.popleft()
                if fut is None:
                    yield sent[0], None
                else:
                    yield from zip(sent, fut.result(), strict=True)

        for item in items:
            if inline is not None and inline(item):
                send()
                window.append(([item], None))
            else:
                chunk.append(item)
                if len(chunk) >= CHUNK:
                    send()
            yield from drain(_IN_FLIGHT * count)
        send()
        yield from drain(0)
