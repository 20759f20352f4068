"""``python -m cas`` and the ``cas`` command: Ctrl-C is held back until the command can handle it.

Importing the commands takes a tenth of a second or more; a Ctrl-C meanwhile would print a
KeyboardInterrupt traceback. SIGINT is blocked first (this module imports nothing heavy, and
``cas/__init__`` loads its names lazily), and `casapp.cli.guard.guarded` unblocks it once it is
inside the handler that turns it into one line and exit 130. A plain ``cas search`` is read by
`casapp.cli.quick`, without importing click; any other command line by click (`casapp.cli.main`).

The cyclic garbage collector is off while the command's modules load (they make many objects
that live as long as the process, and each collection would go through all of them again: a
third of a short command's start-up); `casapp.cli.guard.modules_loaded` freezes what they made and
turns it back on before the command runs.

Once the command is done, the process leaves at once (`os._exit`, after flushing its output):
tearing down the interpreter, module by module and object by object, took a tenth to a third of
a short command's time (`cas search`), and there is nothing left for it to do. Every file the
command wrote was closed and every store transaction committed or rolled back by then, and no
exit handler of cas or of the libraries it loads has anything to write. Should a thread other
than a daemon still run (none does in cas; a library might leave one), or a tracer or profiler
watch the process (coverage, cProfile, pyinstrument: they report at the end), the interpreter
leaves as usual.
"""

import _signal  # type: ignore[import-not-found]  # the C module: `signal` would import enum
import gc


def run() -> None:
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    gc.disable()
    import sys

    from casapp.cli.quick import parsed

    command = parsed(sys.argv[1:])
    if command is None:
        from casapp.cli import main

        command = main
    try:
        command()
    except SystemExit as exc:
        status = exc.code
    else:
        status = 0
    finally:
        # The command is done (or has reported why not): a Ctrl-C now would only turn the
        # interpreter's exit into a traceback.
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    leave(status)


def leave(status: str | int | None) -> None:
    """End the process with ``status`` (what `SystemExit` carries) as the interpreter would,
    without tearing it down (see the module docstring)."""
    import os
    import sys

    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(status)  # a tracer or profiler (coverage, cProfile) reports as the process ends
    threading = sys.modules.get("threading")
    if threading is not None and any(
        not t.daemon and t is not threading.main_thread() for t in threading.enumerate()
    ):
        sys.exit(status)  # a thread still works: the interpreter waits for it
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:  # as the interpreter does with a message
        print(status, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # the reader went away (cas get ... | head), or closed
            code = code or 1  # a report cut short is not a clean one (cas/cli, BrokenPipeError)
    os._exit(code)


if __name__ == "__main__":
    run()
