"""The command that writes packs out for keeping: cas export (`packer.export`)."""

from __future__ import annotations

from pathlib import Path

import click

from cas.display import shown
from casapp.cli._common import json_option, pass_ctx
from casapp.cli.context import Ctx, emit_report, project_root


@click.command(name="export")
@click.argument("args", nargs=-1, required=True, metavar="[PACK...] DIR")
@json_option
@pass_ctx
def export_cmd(ctx: Ctx, args: tuple[str, ...], as_json: bool) -> None:
    """Write packs (default: every pack of the project) to DIR: FULL/, LITE/ and SPLIT/ as
    they are now, and archive/NAME-DIGEST/ with pack.zip (meta/ and repo/, the same bytes on
    every machine) and its .txt indexes, kept for every pack and digest ever exported."""
    from casapp.project import Project

    *packs, folder = args
    with ctx.open_store(readonly=True) as store, Project(project_root(), store) as project:
        done = project.export(Path(folder), packs)
    if as_json:
        emit_report(done)
        return
    if ctx.quiet:
        return
    for p in done.packs:
        kept = f", {len(p.kept)} unchanged" if p.kept else ""
        click.echo(
            f"{p.name} {p.digest}: {len(p.written)} written{kept}; "
            f"archive {shown(str(Path(folder) / p.archive))}"
        )
    for rel in done.removed:
        click.echo(f"removed {shown(rel)} (no longer a part of its pack)")


COMMANDS = [export_cmd]
