"""The ``cas`` command as click reads it: the group of commands, its global options, and `main`,
which parses a command line and runs what it asks for.

`casapp.cli.quick` reads the plain forms of ``cas search`` without click; how a command ends, its
errors and Ctrl-C, is `casapp.cli.guard`'s, for both.
"""

from __future__ import annotations

import sys

import click

from cas.display import echoes_cut, one_line
from cas.errors import EXIT_USAGE
from cas.residency import map_large_buffers
from casapp.cli._common import DEBUG_HELP, QUIET_HELP, STORE_HELP, CasGroup
from casapp.cli.context import Ctx, echo
from casapp.cli.guard import debug_wanted, guarded, modules_loaded

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# Each command by the module that defines it: running one imports that module alone (and what
# it imports), not every command's dependencies; ``cas --help`` loads them all to list them.
COMMAND_MODULES = {
    **dict.fromkeys(("init", "put", "get", "has", "stat", "ls", "info"), "casapp.cli.store_cmds"),
    **dict.fromkeys(("pack", "render", "show", "cat", "diff", "distill"), "casapp.cli.pack_cmds"),
    **dict.fromkeys(("search", "load", "context", "mcp"), "casapp.cli.agent_cmds"),
    **dict.fromkeys(("remote", "push", "pull"), "casapp.cli.remote_cmds"),
    **dict.fromkeys(("verify", "gc", "pin", "unpin", "pins"), "casapp.cli.maint_cmds"),
    "mem": "casapp.cli.mem_cmds",
    "export": "casapp.cli.export_cmds",
    "report": "casapp.cli.pack_cmds",
    "textconv": "casapp.cli.review_cmds",
}


@click.group(cls=CasGroup, context_settings=CONTEXT, lazy=COMMAND_MODULES)
@click.option("--store", "store_opt", envvar="CAS_STORE", metavar="PATH", help=STORE_HELP)
@click.option("--debug", is_flag=True, envvar="CAS_DEBUG", help=DEBUG_HELP)
@click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)
@click.version_option(package_name="cas-packs", prog_name="cas")
@click.pass_context
def cli(ctx: click.Context, store_opt: str | None, debug: bool, quiet: bool) -> None:
    """Content-addressed storage with deterministic, token-bounded context packs.

    --store, --debug and -q/--quiet go before the command or after it (cas init -q)."""
    modules_loaded()
    if isinstance(ctx.obj, Ctx):  # main() passes one in, to read --quiet afterwards
        ctx.obj.store_opt, ctx.obj.debug, ctx.obj.quiet = store_opt, debug, quiet
    else:
        ctx.obj = Ctx(store_opt=store_opt, debug=debug, quiet=quiet)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = debug_wanted(args)
    map_large_buffers()
    state = Ctx(store_opt=None, debug=debug, quiet=False)

    def command() -> None:
        """The command click parses and runs, with click's own outcomes (``--help``, a usage
        error, Ctrl-C at a prompt) turned into their lines and exit codes."""
        try:
            cli.main(args=args, prog_name="cas", standalone_mode=False, obj=state)
        except click.exceptions.Abort:
            raise KeyboardInterrupt from None
        except click.exceptions.NoArgsIsHelpError as exc:
            echo(exc.ctx.get_help() if exc.ctx else str(exc))
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            hint = ""
            ctx = getattr(exc, "ctx", None)
            if ctx is not None:
                hint = f" (see '{ctx.command_path} --help')"
            message = echoes_cut(exc.format_message())
            echo(f"cas: error: {one_line(message)}{one_line(hint)}", err=True)
            sys.exit(exc.exit_code if exc.exit_code else EXIT_USAGE)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)

    guarded(command, state, debug=debug)
