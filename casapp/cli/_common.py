"""What every click command shares: the context object passed down, the global options, the
command group that loads each command's module when it is asked for. The context and the output
helpers live in `casapp.cli.context` (click-free, for the quick path) and are re-exported here."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from cas.digest import Digest
from cas.locate import manifest_dir
from casapp.cli.context import Ctx, project_root

pass_ctx = click.make_pass_decorator(Ctx)

json_option = click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
# `packer.hybrid.MODES`, spelled here so a command's options load no search module
SEARCH_MODES = ("auto", "hybrid", "lexical", "semantic")
mode_option = click.option(
    "--mode",
    type=click.Choice(SEARCH_MODES),
    default="auto",
    show_default=True,
    help="By words and meaning (hybrid), exact words and names (lexical), or meaning "
    "(semantic); auto: hybrid over at most 5,000 files, lexical above.",
)


# --- the global options, before the command's name or after it ----------------------------------

STORE_HELP = "The store directory (default: the nearest .cas upward; env CAS_STORE)."
DEBUG_HELP = "Show tracebacks."
QUIET_HELP = "No progress or notes, only results."


def _set_store(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None and isinstance(ctx.obj, Ctx):
        ctx.obj.store_opt = value
    return value


def _set_debug(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value and isinstance(ctx.obj, Ctx):
        ctx.obj.debug = True
    return value


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value and isinstance(ctx.obj, Ctx):
        ctx.obj.quiet = True
    return value


def global_options() -> list[click.Option]:
    """``--store``, ``--debug`` and ``-q/--quiet`` as a command takes them after its name: each
    merged into the context the group made (the last one given wins), so ``cas init -q`` is
    ``cas -q init``. (Tracebacks under ``--debug`` are decided from the whole command line, in
    `casapp.cli.main`, before any parsing.)"""
    return [
        click.Option(
            ["--store"], metavar="PATH", expose_value=False, callback=_set_store, help=STORE_HELP
        ),
        click.Option(
            ["--debug"], is_flag=True, expose_value=False, callback=_set_debug, help=DEBUG_HELP
        ),
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            expose_value=False,
            callback=_set_quiet,
            help=QUIET_HELP,
        ),
    ]


def with_global_options(command: click.Command) -> click.Command:
    """Give ``command``, and every command of it if it is a group, the global options."""
    taken = {name for param in command.params for name in getattr(param, "opts", ())}
    for option in global_options():
        if not taken & set(option.opts):
            command.params.append(option)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_global_options(sub)
    return command


class CasGroup(click.Group):
    """A group of `cas` commands: every command added to it (and to its subgroups, which are
    `CasGroup`s too) takes the global options after its name as well as before.

    ``lazy`` names commands by the module that defines them (in its ``COMMANDS``): such a module
    is imported only when one of its commands is asked for (run, or listed by ``--help``), so a
    command pays for its own imports and no other's."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(with_global_options(cmd), name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module = importlib.import_module(self.lazy[cmd_name])
            for command in module.COMMANDS:
                if command.name == cmd_name:
                    self.add_command(command)
        return self.commands.get(cmd_name)


def project_packs() -> Path:
    """The manifests folder of the project the command runs in: where packs are written, where
    a pack name is looked up, what push sends and where pull writes (`cas.locate`)."""
    return manifest_dir(project_root())


def parse_digests(texts: tuple[str, ...]) -> list[Digest]:
    return [Digest.parse(t) for t in texts]
