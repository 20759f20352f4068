"""A thread pool that makes do with the threads it can start.

The per-user process limit (RLIMIT_NPROC, ``ulimit -u``) counts threads too. When it is reached,
worker processes cannot start (`cas.procpool` then hands the work to threads), and a thread pool
may get fewer threads than it asked for: with `Threads`, the work goes on in those it has. Only
a pool that cannot start a single thread fails, with the RuntimeError Python raises for it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


class Threads(ThreadPoolExecutor):
    """`ThreadPoolExecutor` that runs with as many of its threads as the system lets it start."""

    def _adjust_thread_count(self) -> None:
        try:
            super()._adjust_thread_count()
        except RuntimeError:
            # The work item is already queued: a running thread takes it. A thread not started
            # was not recorded, so a later submit tries again.
            if not self._threads:
                raise
