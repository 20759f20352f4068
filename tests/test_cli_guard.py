"""How a command ends (`casapp.cli.guard.guarded`): a `CasError` is one line and its code, anything
else one line and exit 2 (a traceback only with debug), output that cannot be written one line,
and a command that succeeds returns."""

from __future__ import annotations

import errno

import pytest

from cas.errors import EXIT_USAGE, BlobNotFound, UsageError
from casapp.cli.context import Ctx
from casapp.cli.guard import debug_wanted, guarded


def _ends(command: object, capsys: pytest.CaptureFixture[str], debug: bool = False) -> tuple:
    state = Ctx(store_opt=None, debug=debug, quiet=False)
    with pytest.raises(SystemExit) as ended:
        guarded(command, state, debug=debug)  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    return ended.value.code, out, err


def test_a_command_that_succeeds_returns(capsys: pytest.CaptureFixture[str]) -> None:
    ran = []
    guarded(lambda: ran.append(1), Ctx(None, False, False), debug=False)
    assert ran == [1]
    assert capsys.readouterr() == ("", "")


def test_a_cas_error_is_its_line_and_its_code(capsys: pytest.CaptureFixture[str]) -> None:
    def fails() -> None:
        raise UsageError("the budget must be positive\nsecond line")

    code, out, err = _ends(fails, capsys)
    assert code == UsageError.exit_code == EXIT_USAGE
    assert out == "" and err == "cas: error: the budget must be positive\\nsecond line\n"

    def missing() -> None:
        raise BlobNotFound("blake3:" + "0" * 64)

    code, _out, err = _ends(missing, capsys)
    assert code == BlobNotFound.exit_code and err.startswith("cas: error: ")
    assert err.count("\n") == 1


def test_a_bug_is_one_line_without_debug_and_a_traceback_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def buggy() -> None:
        raise KeyError("oops")

    code, _out, err = _ends(buggy, capsys)
    assert code == EXIT_USAGE
    assert err == (
        "cas: internal error: KeyError: 'oops' (rerun with --debug for a traceback, and please "
        "report it)\n"
    )
    code, _out, err = _ends(buggy, capsys, debug=True)
    assert code == EXIT_USAGE and "Traceback (most recent call last)" in err


def test_output_that_cannot_be_written_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    code, _out, err = _ends(full, capsys)
    assert code == EXIT_USAGE
    assert err == "cas: error: cannot write the output: No space left on device\n"


def test_an_exit_the_command_asked_for_passes_through(capsys: pytest.CaptureFixture[str]) -> None:
    def exits() -> None:
        raise SystemExit(1)

    assert _ends(exits, capsys) == (1, "", "")


def test_debug_is_wanted_from_the_command_line_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CAS_DEBUG", raising=False)
    assert debug_wanted(["search", "x", "--debug"])
    assert not debug_wanted(["search", "x"])
    monkeypatch.setenv("CAS_DEBUG", "0")
    assert not debug_wanted([])
    monkeypatch.setenv("CAS_DEBUG", "1")
    assert debug_wanted([])


@pytest.mark.parametrize("busy", [False, True])
def test_a_ctrl_c_python_cannot_raise_where_it_lands_still_stops_the_command(busy: bool) -> None:
    """A KeyboardInterrupt raised in a weak reference's callback (where a Ctrl-C lands when it
    arrives while an import drops its module lock) is not lost and printed with a traceback:
    the command stops with its one line and exit 130. ``busy``: as on a loaded machine, the hook
    is still starting the thread that sends the Ctrl-C again when that thread sends it (CI saw
    it lost once so)."""
    import subprocess
    import sys
    import textwrap

    slow = (
        "import threading\n"
        "_start = threading.Thread.start\n"
        "def slow_start(self):\n"
        "    _start(self)\n"
        "    time.sleep(0.1)\n"
        "threading.Thread.start = slow_start\n"
    )
    script = textwrap.dedent(
        """
        import signal
        import time
        import weakref
        from casapp.cli.context import Ctx
        from casapp.cli.guard import guarded
        SLOW

        # A Ctrl-C that reaches Python, whatever the test run inherited: a shell without job
        # control starts its background jobs with SIGINT ignored, and a Ctrl-C sent again to a
        # process that ignores it stops nothing (rightly: it is not the terminal's).
        signal.signal(signal.SIGINT, signal.default_int_handler)

        class Thing:
            pass

        def command():
            thing = Thing()
            def callback(ref):
                raise KeyboardInterrupt  # as a Ctrl-C arriving inside the callback would
            kept = weakref.ref(thing, callback)
            del thing
            # Work that a Ctrl-C sent again must stop: ten seconds of it by the clock.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pass
            print("finished", kept)

        guarded(command, Ctx(None, False, False), debug=False)
        """
    ).replace("SLOW\n", slow if busy else "")
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert "finished" not in done.stdout
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.startswith("cas: ") and len(done.stderr.strip().splitlines()) == 1
