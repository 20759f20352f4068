"""How a command ends: errors mapped here and only here, without the click parser.

A `CasError` prints one line on stderr and exits with its code; anything else is a bug, shown in
one line (with a traceback under ``--debug`` or ``CAS_DEBUG=1``). Ctrl-C prints one line and
exits 130: SIGINT stays blocked until the command is inside `guarded` (see ``cas/__main__.py``),
worker processes never see it (`cas.procpool`), and once it is caught, or once the command is
done, further Ctrl-Cs are ignored so that nothing can interrupt the clean-up with a traceback.

`casapp.cli.main` runs a command parsed by click through `guarded` (after turning click's own
outcomes, a usage error or ``--help``, into their lines and codes); `casapp.cli.quick` runs a
``cas search`` it parsed itself through the same function.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module: `signal` would import enum
import contextlib
import errno
import gc
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from cas.display import one_line, shown
from cas.errors import EXIT_INTERRUPTED, EXIT_PROBLEM, EXIT_USAGE, CasError, Interrupted
from casapp.cli.context import Ctx, echo, warn

_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def modules_loaded() -> None:
    """The command's modules are loaded: the objects made so far live as long as the process,
    so the cyclic garbage collector (off while they loaded, see ``cas/__main__.py``) is turned
    back on with them frozen, never gone through."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def debug_wanted(argv: list[str]) -> bool:
    """Tracebacks are decided from the whole command line, before any parsing."""
    return "--debug" in argv or os.environ.get("CAS_DEBUG", "") not in ("", "0")


def _exit_interrupted() -> NoReturn:
    """One line and exit 130, once the interrupted work has unwound (its transactions rolled
    back, its worker processes stopped).

    The `cas` command leaves with ``os._exit``, after flushing its output: CPython turns the exit
    of a process into a death by SIGINT whenever a KeyboardInterrupt went through code run by
    ``exec`` (dataclasses build their methods that way during an import), even one that was
    caught later, and the documented code is 130 whatever was being imported.
    """
    gc.collect()  # a generator the caught exception's frames held closes now, and its workers stop
    echo(f"cas: {Interrupted()}", err=True)
    from cas.procpool import launched_as_cas

    if not launched_as_cas():
        sys.exit(EXIT_INTERRUPTED)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


def interrupted_inside(exc: BaseException) -> bool:
    """Whether Ctrl-C is what ``exc`` carries: Python 3.11 wraps an exception raised while a
    class is created (a KeyboardInterrupt arriving during an import, in a descriptor's
    ``__set_name__``) in a RuntimeError whose cause it is."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _note_fallback(state: Ctx) -> None:
    procpool = sys.modules.get("cas.procpool")  # a command that never loaded it ran no worker
    reason = procpool.failure() if procpool is not None else None
    if reason is not None and not state.quiet:
        warn(f"note: worker processes failed ({shown(reason)}); the rest ran in threads")


# How long after a lost Ctrl-C it is sent again (`_unraisable`), each time it is lost again.
_AGAIN_AFTER_S = 0.005


def _unraisable(args: Any) -> None:
    """`sys.unraisablehook` while a command runs: a Ctrl-C that landed where Python cannot raise
    it (a weak reference's callback, such as the one that drops an import's module lock) would
    be printed as "Exception ignored" with a traceback, and lost; it is sent again
    (`_send_again`), so the command stops with its one line and exit 130. Anything else goes to
    the usual hook."""
    if isinstance(args.exc_value, KeyboardInterrupt) or args.exc_type is KeyboardInterrupt:
        _send_again()
        return
    sys.__unraisablehook__(args)


def _send_again() -> None:
    """Send SIGINT again from another thread, a moment later and then again until Python raised
    it where the command can see it. Sent from here, it would be raised at once, inside this
    hook, and lost again; and the thread cannot know when the hook has returned (on a busy
    machine it may still be starting the thread when the moment has passed). So, until it is
    delivered, the SIGINT handler raises nothing while this hook runs: a signal that lands
    there is only a reason to send one more."""
    import threading

    previous = _signal.getsignal(_signal.SIGINT)
    if previous is _signal.SIG_IGN:
        return  # the command is past caring (its clean-up)
    in_hook = [True]
    delivered = threading.Event()
    # A handler of ours can be put in place only from the main thread, and taken back only
    # when the one before it was Python's (`getsignal` gives None for one set from C).
    ours = threading.current_thread() is threading.main_thread() and previous is not None

    def deliver(signum: int, frame: Any) -> None:
        if in_hook[0]:
            return  # landed in the hook again: the thread sends another
        delivered.set()
        _signal.signal(_signal.SIGINT, previous)
        raise KeyboardInterrupt

    def again() -> None:
        while not delivered.wait(_AGAIN_AFTER_S):
            if ours and _signal.getsignal(_signal.SIGINT) is not deliver:
                return  # the command put its own handler (or SIG_IGN) in place: its call
            os.kill(os.getpid(), _signal.SIGINT)
            if not ours:
                return  # no handler of ours to tell when it landed: sent once, as before

    if ours:
        _signal.signal(_signal.SIGINT, deliver)
    try:
        with contextlib.suppress(RuntimeError):  # no thread can start (the interpreter ends)
            threading.Thread(target=again, daemon=True).start()
    finally:
        # From here to the hook's return no bytecode checks for a signal (no call, no jump
        # back), so a SIGINT that arrives now is raised in the command's code.
        in_hook[0] = False


def guarded(command: Callable[[], None], state: Ctx, *, debug: bool) -> None:
    """Run ``command`` (whose options are in ``state``) and end as the module says: return when
    it succeeded, else exit (`SystemExit`) with its error's line and code."""
    interrupted = False
    sys.unraisablehook = _unraisable
    try:
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})  # see cas/__main__.py
        try:
            command()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            _note_fallback(state)
            if interrupted_inside(exc):
                raise KeyboardInterrupt from None
            raise
        _note_fallback(state)
    except CasError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        echo(f"cas: error: {one_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up
        interrupted = True
    except BrokenPipeError:
        # The reader went away (cas get ... | head). Exit 1, as click does for the same case:
        # a report cut short must not pass for a clean one (cas verify | head under pipefail).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_PROBLEM)
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        if isinstance(exc, OSError) and exc.errno in _NO_ROOM:
            # Writing the output (stdout, a rendered file) failed; writes to the store have
            # their own error (StoreFull) and roll back.
            echo(f"cas: error: cannot write the output: {exc.strerror}", err=True)
        elif isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
            # the process limit (RLIMIT_NPROC, `ulimit -u`) counts threads too
            echo(
                "cas: error: cannot start a thread: this user has reached its limit of "
                "processes (ulimit -u); end some or raise the limit",
                err=True,
            )
        else:
            echo(
                f"cas: internal error: {type(exc).__name__}: {one_line(str(exc))} (rerun with "
                "--debug for a traceback, and please report it)",
                err=True,
            )
        sys.exit(EXIT_USAGE)
    if interrupted:  # outside the handler: the exception and the frames it holds are released
        _exit_interrupted()
