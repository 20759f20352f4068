"""Per-file work in worker processes, for runs large enough to pay for starting them.

Hashing and zstd release the interpreter lock, but reading a file, preparing its frame and (in
the packer) scanning it for secrets are Python between those calls: in threads, two cores stay
half idle. Processes do not share a lock. Each worker calls the run's opener once and hands what
it opened to every task: for a put, its own read-only view of the store (`Store.worker_opener`),
so it can skip compressing what is already stored and read the caches; only the committing
process writes. The pool itself knows nothing of stores: it runs tasks.

A worker is a plain child interpreter (``python -P -c``, never a fork: a forked child would
inherit the parent's LMDB handles and its locks) that reads requests on its stdin and answers on
its stdout, one length-prefixed pickle each way. That design, rather than a multiprocessing pool,
is what makes every way of failing clean:

- Nothing is created in ``/dev/shm`` and no helper process is started (multiprocessing's queues
  need named POSIX semaphores, which a worker that failed to start left behind), so a full or
  read-only ``/dev/shm`` changes nothing and a failure leaks nothing.
- A worker imports only cas and the modules of the task and the opener, never the parent's
  main module.
- SIGINT is blocked in the parent while it starts a worker, so the worker begins life with Ctrl-C
  blocked, before its interpreter has even started; its first statement ignores SIGINT. Ctrl-C
  reaches only the parent, which rolls back and exits 130.
- A worker whose parent is gone reads end-of-file (or fails to write) and leaves; nothing polls.
- A worker's stderr goes to a temporary file: if it fails to start or dies, its last line is the
  reason given, and nothing of it reaches the user's terminal.

`run` returns results in input order. If a worker cannot start or dies, it raises
`BrokenProcessPool` with the reason, and the process remembers it: for the rest of the run
`worth_it` says threads, `run` refuses at once, and `failure()` gives the reason (the command
line prints it once). The caller does the rest in threads.

Processes are chosen by themselves (`worth_it`) only in the `cas` command itself
(`launched_as_cas`) or once `enable_auto` said so: a program that embeds cas gets threads unless
it opts in or asks for processes explicitly. ``CAS_WORKERS`` (``threads``, ``processes`` or
``auto``) overrides the choice for a run.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final, Generic, TypeVar

from cas.display import echoed
from cas.errors import UsageError
from cas.residency import map_large_buffers

if TYPE_CHECKING:
    import subprocess

# `subprocess`, `tempfile` and `concurrent.futures.process` (multiprocessing) are imported by the
# functions that start workers: only a large put or pack starts one.

# Below these, threads win: a worker process costs about 0.2 s of start-up.
MIN_FILES: Final = 1500
MIN_BYTES: Final = 64 << 20
CHUNK: Final = 32  # items per request
# ... or fewer: a request is closed once its items weigh this much (a caller's weight is about
# the bytes an item's result holds, a file's size). A worker holds a request's results until
# it answers, and the parent up to `_IN_FLIGHT` answers per worker: 32 files of 8 MiB to a
# request kept over 1 GiB in flight; this way a few tens of MiB, whatever the files' sizes.
CHUNK_WEIGHT: Final = 4 << 20
# Requests sent and not yet handed to the caller weigh at most this much per worker (beyond one
# request each): the answers waiting in the parent for the one before them stay bounded too.
_IN_FLIGHT_WEIGHT: Final = 4 * CHUNK_WEIGHT
_IN_FLIGHT: Final = 4  # requests per worker queued ahead
_READ: Final = 1 << 20
_LENGTH: Final = struct.Struct(">Q")
_REASON_MAX: Final = 200
_STOP_WAIT_S: Final = 5.0
WORKER_MARK: Final = "cas.procpool worker"  # in every worker's command line

# What a worker runs first. SIGINT arrives blocked (see _spawn) and is ignored before anything
# else is imported. The reply channel moves off fd 1, so that a stray print in a task cannot
# corrupt it. The parent's sys.path comes first on stdin, so the worker imports the same cas.
_BOOT: Final = f"""# {WORKER_MARK}
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
import os, sys
reply = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
requests = sys.stdin.buffer
from pickle import loads
from struct import unpack
sys.path[:] = loads(requests.read(unpack(">Q", requests.read(8))[0]))
from cas.procpool import serve
serve(requests, reply)
"""

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

# What a worker calls once to get what its tasks work with: a module-level function, or a
# functools.partial of one over picklable arguments (pickled by reference).
Opener = Callable[[], AbstractContextManager[S]]


@dataclass(frozen=True, slots=True)
class _Setup(Generic[S, T, R]):
    opener: Opener[S]
    task: Callable[[S, T], R]  # a module-level function: pickled by reference


# "auto": None until `enable_auto` says otherwise: whether this process is the `cas` command.
_STATE: dict[str, Any] = {"auto": None, "failure": None}
_MODES: Final = ("auto", "threads", "processes")


def launched_as_cas() -> bool:
    """Whether this process is the `cas` command (its console script or ``python -m cas``),
    which may start worker processes by itself."""
    entry = sys.modules.get("__main__")
    spec = getattr(entry, "__spec__", None)
    if spec is not None:
        return getattr(spec, "name", None) in ("cas", "cas.__main__")
    path = getattr(entry, "__file__", None)
    return path is not None and os.path.basename(path) in ("cas", "cas.exe", "cas-script.py")


def enable_auto(enabled: bool = True) -> None:
    """Let `worth_it` choose processes for large runs, or not (see the module docstring)."""
    _STATE["auto"] = enabled


def auto_enabled() -> bool:
    if _STATE["auto"] is None:
        _STATE["auto"] = launched_as_cas()
    enabled: bool = _STATE["auto"]
    return enabled


def failure() -> str | None:
    """Why worker processes failed in this process, if they did (then every run uses threads)."""
    reason: str | None = _STATE["failure"]
    return reason


def forget_failure() -> None:
    """Try processes again (a long-running program whose limits were raised, say)."""
    _STATE["failure"] = None


def _mode() -> str:
    mode = os.environ.get("CAS_WORKERS", "").strip().lower() or "auto"
    if mode not in _MODES:
        raise UsageError(
            f"CAS_WORKERS is {echoed(mode)}: expected one of {', '.join(_MODES)} "
            "(or leave it unset)"
        )
    return mode


def worth_it(count: int, nbytes: int) -> bool:
    """Whether a run of ``count`` files, ``nbytes`` in all, should use processes."""
    mode = _mode()
    if count == 0 or mode == "threads" or _STATE["failure"] is not None:
        return False
    if mode == "processes":
        return True
    if not auto_enabled() or (os.cpu_count() or 1) < 2:
        return False
    return count >= MIN_FILES or nbytes >= MIN_BYTES


def workers() -> int:
    return max(2, min(4, os.cpu_count() or 2))


# --- the worker's side ----------------------------------------------------------------------------


def _frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def serve(requests: IO[bytes], reply: IO[bytes]) -> None:
    """A worker's life: the setup, then one reply per request until end-of-file."""

    def receive() -> Any:
        head = requests.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return None
        return pickle.loads(requests.read(_LENGTH.unpack(head)[0]))

    def send(obj: object) -> None:
        try:
            data = _frame(obj)
        except Exception as exc:  # a result or an error that does not pickle
            data = _frame(("error", RuntimeError(_describe(exc))))
        reply.write(data)
        reply.flush()

    map_large_buffers()  # each file's content and frame is a large buffer, freed at once
    with contextlib.ExitStack() as opened:
        try:
            setup: _Setup[Any, Any, Any] | None = receive()
            if setup is None:
                return
            state = opened.enter_context(setup.opener())
        except Exception as exc:
            send(("failed", _describe(exc)))
            return
        send(("ready", None))
        try:
            while (items := receive()) is not None:
                try:
                    answer: tuple[str, Any] = ("ok", [setup.task(state, item) for item in items])
                except Exception as exc:
                    answer = ("error", exc)
                send(answer)
        except OSError:
            return  # the parent is gone


# --- the parent's side ----------------------------------------------------------------------------

_READY: Final = -1  # the id of a worker's first reply


class _Worker:
    """One child process and the parent's ends of its pipes."""

    __slots__ = ("errors", "inbox", "outbox", "proc", "sent")

    def __init__(self, proc: subprocess.Popen[bytes], errors: IO[bytes] | None) -> None:
        self.proc = proc
        self.errors = errors
        self.outbox = bytearray()
        self.inbox = bytearray()
        self.sent: deque[int] = deque([_READY])  # request ids awaiting a reply, in order

    @property
    def to_child(self) -> int:
        assert self.proc.stdin is not None
        return self.proc.stdin.fileno()

    @property
    def from_child(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def replies(self) -> Iterator[tuple[int, Any]]:
        """The complete replies in the inbox, with the id of the request each answers."""
        while len(self.inbox) >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(self.inbox)
            end = _LENGTH.size + size
            if len(self.inbox) < end:
                return
            obj = pickle.loads(memoryview(self.inbox)[_LENGTH.size : end])
            del self.inbox[:end]
            yield self.sent.popleft(), obj

    def why(self) -> str:
        """Why this worker stopped answering: its exit and the last line it wrote on stderr."""
        import subprocess

        try:
            code = self.proc.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if code < 0:
            try:
                what = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"was killed by signal {-code}"
        else:
            what = f"exited with status {code}"
        started = "" if self.sent and self.sent[0] == _READY else " while working"
        last = _last_line(self.errors)
        return f"a worker process {what}{started}" + (f" ({last})" if last else "")

    def stop(self, kill: bool) -> None:
        import subprocess

        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()  # end-of-file: an idle worker leaves by itself
        if kill:
            self.proc.kill()
        try:
            self.proc.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.errors is not None:
            self.errors.close()


def _last_line(errors: IO[bytes] | None) -> str:
    if errors is None:
        return ""
    try:
        errors.seek(0, os.SEEK_END)
        errors.seek(max(0, errors.tell() - 4096))
        tail = errors.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    line = tail[-1].strip() if tail else ""
    return line if len(line) <= _REASON_MAX else line[: _REASON_MAX - 3] + "..."


def _error_file() -> IO[bytes] | None:
    import tempfile

    try:
        return tempfile.TemporaryFile(prefix="cas-worker-")
    except OSError:
        return None  # no temporary space: the worker's stderr is dropped, the run goes on


def _spawn(count: int, setup: _Setup[Any, Any, Any], started: list[_Worker]) -> None:
    """Start ``count`` workers (appended to ``started`` as they start, for the caller to stop)
    and queue their setup. Raises BrokenProcessPool if one cannot be started."""
    import subprocess
    from concurrent.futures.process import BrokenProcessPool

    exe = sys.executable
    if not exe:
        raise BrokenProcessPool("no Python interpreter path to start a worker with")
    hello = _frame(list(sys.path)) + _frame(setup)
    # Children inherit the signal mask: blocked here, SIGINT stays blocked in the worker until it
    # has set SIGINT to ignored. A Ctrl-C meanwhile waits, pending, for the parent alone.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for _ in range(count):
            errors = _error_file()
            try:
                proc = subprocess.Popen(
                    [exe, "-P", "-c", _BOOT],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors if errors is not None else subprocess.DEVNULL,
                    bufsize=0,
                    close_fds=True,
                )
            except (OSError, ValueError) as exc:
                if errors is not None:
                    errors.close()
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise BrokenProcessPool(f"cannot start a worker process: {why}") from None
            worker = _Worker(proc, errors)
            started.append(worker)
            os.set_blocking(worker.to_child, False)
            os.set_blocking(worker.from_child, False)
            worker.outbox += hello
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _pump(pool: list[_Worker], results: dict[int, tuple[str, Any]], timeout: int | None) -> None:
    """Wait (up to ``timeout`` ms; None: until something happens) until some worker can be
    written to or has answered; move the bytes; file each complete reply under its request id.
    Raises BrokenProcessPool if a worker is gone or could not start."""
    from concurrent.futures.process import BrokenProcessPool

    poller = select.poll()
    for w in pool:
        poller.register(w.from_child, select.POLLIN)
        if w.outbox:
            poller.register(w.to_child, select.POLLOUT)
    by_fd = {w.from_child: w for w in pool} | {w.to_child: w for w in pool}
    for fd, _events in poller.poll(timeout):
        w = by_fd[fd]
        if fd == w.to_child:
            try:
                written = os.write(fd, w.outbox)
            except BlockingIOError:
                continue
            except OSError:
                raise BrokenProcessPool(w.why()) from None
            del w.outbox[:written]
            continue
        try:
            data = os.read(fd, _READ)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            raise BrokenProcessPool(w.why())
        w.inbox += data
        for request, reply in w.replies():
            kind, value = reply
            if request == _READY:
                if kind != "ready":
                    raise BrokenProcessPool(f"a worker process could not start: {value}")
                continue
            results[request] = reply


def run(
    opener: Opener[S],
    task: Callable[[S, T], R],
    items: Sequence[T],
    *,
    inline: Callable[[T], bool] | None = None,
    weight: Callable[[T], int] | None = None,
) -> Iterator[tuple[T, R | None]]:
    """``(item, task(state, item))`` for each item, in input order, computed in worker
    processes, where ``state`` is what ``opener()`` entered in the worker (once per worker; it
    is left when the worker ends). Items ``inline`` picks come back with None, in their place,
    for the caller to handle. ``weight``: about the bytes an item's result holds (a request
    closes at `CHUNK` items or `CHUNK_WEIGHT` of weight, so memory in flight stays bounded)."""
    from concurrent.futures.process import BrokenProcessPool

    if _STATE["failure"] is not None:
        raise BrokenProcessPool(_STATE["failure"])
    pool: list[_Worker] = []
    finished = False
    try:
        _spawn(workers(), _Setup(opener, task), pool)
        yield from _dispatch(pool, items, inline, weight)
        finished = True
    except BrokenProcessPool as exc:
        _STATE["failure"] = _STATE["failure"] or str(exc)
        raise
    finally:
        # Normal end: end-of-file lets each worker leave. Anything else (an error, Ctrl-C, a
        # caller that stopped early): kill them, they only read.
        for w in pool:
            w.stop(kill=not finished)


def _dispatch(
    pool: list[_Worker],
    items: Sequence[T],
    inline: Callable[[T], bool] | None,
    weight: Callable[[T], int] | None,
) -> Iterator[tuple[T, R | None]]:
    # the window, in input order: ([an item handled inline], None) or (a chunk, its request id)
    window: deque[tuple[list[T], int | None]] = deque()
    results: dict[int, tuple[str, Any]] = {}
    chunk: list[T] = []
    position = next_id = outstanding = weighed = in_flight = 0
    limit = _IN_FLIGHT * len(pool)
    heavy = _IN_FLIGHT_WEIGHT * len(pool)
    weights: dict[int, int] = {}  # request id -> what its items weigh

    def send() -> None:
        nonlocal chunk, next_id, outstanding, weighed, in_flight
        if chunk:
            least = min(pool, key=lambda w: len(w.sent))
            least.outbox += _frame(chunk)
            least.sent.append(next_id)
            window.append((chunk, next_id))
            weights[next_id] = weighed
            in_flight += weighed
            next_id += 1
            outstanding += 1
            chunk = []
            weighed = 0

    def room() -> bool:
        return outstanding < limit and (in_flight < heavy or outstanding < len(pool))

    def fill() -> None:
        nonlocal position, weighed
        while position < len(items) and room() and len(window) < limit * CHUNK:
            item = items[position]
            position += 1
            if inline is not None and inline(item):
                send()
                window.append(([item], None))
            else:
                chunk.append(item)
                weighed += weight(item) if weight is not None else 0
                if len(chunk) >= CHUNK or weighed >= CHUNK_WEIGHT:
                    send()
        if position >= len(items):
            send()

    while True:
        fill()
        if not window:
            return
        head, request = window[0]
        if request is None:
            _pump(pool, results, 0)  # keep the workers fed while the caller works inline
            window.popleft()
            yield head[0], None
            continue
        reply = results.pop(request, None)
        if reply is None:
            _pump(pool, results, None)
            continue
        window.popleft()
        outstanding -= 1
        in_flight -= weights.pop(request)
        kind, value = reply
        if kind != "ok":
            raise value  # the task raised: the same error as in a thread
        yield from zip(head, value, strict=True)
