"""Running transfers in parallel, with progress: the threads behind push, pull and verify.

boto3 clients are thread-safe and a transfer mostly waits on the network, so a few threads keep
a link busy; hashing and zstd release the GIL, so checks run in the same threads. Results are
handled in the calling thread, the only one that writes to the store.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Final, TypeVar

from cas.events import ProgressSink, emit

DEFAULT_JOBS: Final = 8

T = TypeVar("T")
R = TypeVar("R")


def parallel(
    items: Iterable[T],
    work: Callable[[T], Any],
    *,
    jobs: int,
    on_done: Callable[[T, Any], None],
    window: int | None = None,
) -> None:
    """Run ``work`` over ``items`` in ``jobs`` threads, at most ``window`` (default four per
    thread) in flight, calling ``on_done(item, result)`` in this thread as each ends. The first
    error cancels what has not started and is raised once the running transfers end (each is
    bounded by timeouts and retries)."""
    source = iter(items)
    window = window or jobs * 4
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cas-remote") as pool:
        inflight: dict[Future[Any], T] = {}
        try:
            exhausted = False
            while True:
                while not exhausted and len(inflight) < window:
                    try:
                        item = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    inflight[pool.submit(work, item)] = item
                if not inflight:
                    return
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in done:
                    item = inflight.pop(fut)
                    on_done(item, fut.result())
        except BaseException:
            for fut in inflight:
                fut.cancel()
            raise


def ordered(
    items: Iterable[T], work: Callable[[T], R], *, jobs: int, window: int | None = None
) -> Generator[tuple[T, R], None, None]:
    """``(item, work(item))`` in the order of ``items``, ``work`` running in ``jobs`` threads
    with at most ``window`` (default four per thread) in flight. The first error is raised in
    order, after cancelling what has not started."""
    source = iter(items)
    window = window or jobs * 4
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cas-remote") as pool:
        ahead: deque[tuple[T, Future[R]]] = deque()
        try:
            for item in source:
                ahead.append((item, pool.submit(work, item)))
                if len(ahead) >= window:
                    first, fut = ahead.popleft()
                    yield first, fut.result()
            while ahead:
                first, fut = ahead.popleft()
                yield first, fut.result()
        finally:
            for _item, fut in ahead:
                fut.cancel()


class Meter:
    """Progress and counts shared by one push, pull, verify or gc: objects moved of those
    expected so far, and their bytes, sent to ``progress`` as events of ``stage``."""

    def __init__(self, stage: str, progress: ProgressSink | None) -> None:
        self.stage = stage
        self.progress = progress
        self.expected = 0
        self.objects = 0
        self.nbytes = 0

    def expect(self, more: int) -> None:
        self.expected += more
        self._emit()

    def moved(self, nbytes: int) -> None:
        self.objects += 1
        self.nbytes += nbytes
        self._emit()

    def _emit(self) -> None:
        emit(self.progress, self.stage, self.objects, self.expected, self.nbytes)
