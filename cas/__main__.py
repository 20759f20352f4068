"""``python -m cas`` and the ``cas`` command: Ctrl-C is held back until the command can handle it.

Importing the commands takes a tenth of a second or more; a Ctrl-C meanwhile would print a
KeyboardInterrupt traceback. SIGINT is blocked first (this module imports nothing heavy, and
``cas/__init__`` loads its names lazily), and `cas.cli.main` unblocks it once it is inside the
handler that turns it into one line and exit 130.
"""

import signal


def run() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    from cas.cli import main

    main()


if __name__ == "__main__":
    run()
