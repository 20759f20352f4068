"""The ``cas`` command: parse, call one library function, print.

Errors are mapped here and only here: a `CasError` prints one line on stderr and exits with its
code; anything else is a bug, shown in one line (with a traceback under ``--debug`` or
``CAS_DEBUG=1``). Ctrl-C prints one line and exits 130: SIGINT stays blocked until `main` is
inside the handler (see ``cas/__main__.py``), worker processes never see it (`cas.procpool`),
and once it is caught, or once the command is done, further Ctrl-Cs are ignored so that nothing
can interrupt the clean-up with a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import signal
import sys
from typing import NoReturn

import click

from cas.cli._common import DEBUG_HELP, QUIET_HELP, STORE_HELP, CasGroup, Ctx, warn
from cas.display import echoes_cut, one_line, shown
from cas.errors import EXIT_INTERRUPTED, EXIT_PROBLEM, EXIT_USAGE, CasError, Interrupted
from cas.residency import map_large_buffers

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# Each command by the module that defines it: running one imports that module alone (and what
# it imports), not every command's dependencies; ``cas --help`` loads them all to list them.
COMMAND_MODULES = {
    **dict.fromkeys(("init", "put", "get", "has", "stat", "ls", "info"), "cas.cli.store_cmds"),
    **dict.fromkeys(("pack", "render", "show", "cat", "diff", "distill"), "cas.cli.pack_cmds"),
    **dict.fromkeys(("search", "load", "mcp"), "cas.cli.agent_cmds"),
    **dict.fromkeys(("remote", "push", "pull"), "cas.cli.remote_cmds"),
    **dict.fromkeys(("verify", "gc", "pin", "unpin", "pins"), "cas.cli.maint_cmds"),
    "mem": "cas.cli.mem_cmds",
}


@click.group(cls=CasGroup, context_settings=CONTEXT, lazy=COMMAND_MODULES)
@click.option("--store", "store_opt", envvar="CAS_STORE", metavar="PATH", help=STORE_HELP)
@click.option("--debug", is_flag=True, envvar="CAS_DEBUG", help=DEBUG_HELP)
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
@click.version_option(package_name="cas", prog_name="cas")
@click.pass_context
def cli(ctx: click.Context, store_opt: str | None, debug: bool, quiet: bool) -> None:
    """Content-addressed storage with deterministic, token-bounded context packs.

    --store, --debug and -q/--quiet go before the command or after it (cas init -q)."""
    if not gc.isenabled():  # off while the modules loaded (cas/__main__.py); the command's are
        gc.freeze()  # what was made so far lives as long as the process: never gone through
        gc.enable()
    if isinstance(ctx.obj, Ctx):  # main() passes one in, to read --quiet afterwards
        ctx.obj.store_opt, ctx.obj.debug, ctx.obj.quiet = store_opt, debug, quiet
    else:
        ctx.obj = Ctx(store_opt=store_opt, debug=debug, quiet=quiet)


_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _debug_wanted(argv: list[str]) -> bool:
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
    click.echo(f"cas: {Interrupted()}", err=True)
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


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_wanted(args)
    map_large_buffers()
    state = Ctx(store_opt=None, debug=debug, quiet=False)
    interrupted = False
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # see cas/__main__.py
        try:
            cli.main(args=args, prog_name="cas", standalone_mode=False, obj=state)
        except (click.exceptions.Abort, KeyboardInterrupt):
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
        click.echo(f"cas: error: {one_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up
        interrupted = True
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        hint = ""
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            hint = f" (see '{ctx.command_path} --help')"
        message = echoes_cut(exc.format_message())
        click.echo(f"cas: error: {one_line(message)}{one_line(hint)}", err=True)
        sys.exit(exc.exit_code if exc.exit_code else EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
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
            click.echo(f"cas: error: cannot write the output: {exc.strerror}", err=True)
        elif isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
            # the process limit (RLIMIT_NPROC, `ulimit -u`) counts threads too
            click.echo(
                "cas: error: cannot start a thread: this user has reached its limit of "
                "processes (ulimit -u); end some or raise the limit",
                err=True,
            )
        else:
            click.echo(
                f"cas: internal error: {type(exc).__name__}: {one_line(str(exc))} (rerun with "
                "--debug for a "
                "traceback, and please report it)",
                err=True,
            )
        sys.exit(EXIT_USAGE)
    if interrupted:  # outside the handler: the exception and the frames it holds are released
        _exit_interrupted()
