"""``python -m cas`` and the ``cas`` command: Ctrl-C is held back until the command can handle it.

Importing the commands takes a tenth of a second or more; a Ctrl-C meanwhile would print a
KeyboardInterrupt traceback. SIGINT is blocked first (this module imports nothing heavy, and
``cas/__init__`` loads its names lazily), and `cas.cli.main` unblocks it once it is inside the
handler that turns it into one line and exit 130.

The cyclic garbage collector is off while the command's modules load (they make many objects
that live as long as the process, and each collection would go through all of them again: a
third of a short command's start-up); `cas.cli` freezes what they made and turns it back on
before the command runs.
"""

import _signal  # type: ignore[import-not-found]  # the C module: `signal` would import enum
import gc


def run() -> None:
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    gc.disable()
    from cas.cli import main

    try:
        main()
    finally:
        # The command is done (or has reported why not): a Ctrl-C now would only turn the
        # interpreter's exit into a traceback.
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


if __name__ == "__main__":
    run()
