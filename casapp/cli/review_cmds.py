"""Commands for reviewing packs where code is reviewed: textconv, git's diff driver for packs."""

from __future__ import annotations

import sys

import click

from cas.digest import Digest
from cas.errors import CasError, InputError
from casapp.cli._common import pass_ctx
from casapp.cli.context import Ctx, echo


@click.command()
@click.argument("file")
@pass_ctx
def textconv(ctx: Ctx, file: str) -> None:
    """Print a pack file (or - for stdin) as diff-friendly lines: a header, then one line per
    entry (path, tier, tokens, rating, short digest).

    git's diff driver for packs: with '*.pack diff=cas' in .gitattributes and
    'git config diff.cas.textconv "cas textconv"' (cas init sets both), git diff, git log -p
    and pull-request tools show a pack's change line by line. Needs no store. A file that is
    not a manifest prints one '#' line saying so, and exits 0, so a diff never breaks on it."""
    from packer.difftext import manifest_text

    try:
        if file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as f:
                data = f.read()
    except OSError as exc:
        raise InputError(file, exc.strerror or str(exc)) from None
    if not data:  # git hands an empty side for a pack added or deleted
        return
    try:
        # not named by its path: git hands a temporary file, and the line must not change with it
        text = manifest_text(data, "it")
    except CasError as exc:
        echo(f"# not a cas manifest ({len(data)} bytes, {Digest.of(data)}): {exc}")
        return
    sys.stdout.write(text)
    sys.stdout.flush()


COMMANDS = [textconv]
