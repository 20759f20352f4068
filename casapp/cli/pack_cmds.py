"""Commands on packs: pack, render, show, cat, diff, distill, report. The only place cas imports
packer."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cas.display import shown
from cas.errors import (
    EXIT_PROBLEM,
    NotFound,
    OutputError,
    StoreNotFound,
    UsageError,
)
from cas.fsutil import write_output
from cas.locate import load_pack, manifest_dir, pack_path
from cas.progress import Progress
from cas.store import Store
from casapp.cli._common import json_option, pass_ctx
from casapp.cli.context import Ctx, emit_json, emit_report, note_sink, project_root, warn

if TYPE_CHECKING:
    from packer.results import PackReport

# packer is imported inside each command: its tokenizer and parsers cost start-up time that
# the blob commands should not pay. These mirror packer.render.FORMATS and MODES (a test checks).
FORMATS = ("markdown", "xml", "plain")
MODES = ("lite", "full", "split")


def _store_for_pack(ctx: Ctx, root: Path) -> Store:
    return ctx.open_or_create_store(root / ".cas")


@click.command()
@click.argument("scopes", nargs=-1)
@click.option("-t", "--target", "targets", multiple=True, help="Pack only these targets.")
@click.option("--baseline", metavar="MANIFEST", help="Record this pack as the parent.")
@click.option(
    "--include-secret",
    "allow",
    multiple=True,
    metavar="PATH",
    help="Pack this file even though it looks like a secret (repeatable).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write no manifest; exit 1 if any committed manifest is stale or an orphan.",
)
@click.option(
    "--prune",
    is_flag=True,
    help="Remove orphan packs: manifests no configured scope or target makes (not loads, not "
    "memory packs); 'cas gc' then frees their blobs.",
)
@click.option(
    "--explain",
    metavar="PATH",
    help="Write nothing; say why PATH got its tier in each pack (rule, rating, prices, choice).",
)
@click.option(
    "--now",
    metavar="YYYY-MM-DD",
    help="The day rules with an age condition count to (without it they match nothing).",
)
@json_option
@pass_ctx
def pack(
    ctx: Ctx,
    scopes: tuple[str, ...],
    targets: tuple[str, ...],
    baseline: str | None,
    allow: tuple[str, ...],
    check: bool,
    explain: str | None,
    now: str | None,
    as_json: bool,
    prune: bool,
) -> None:
    """Build the context packs of this repository (all scopes, or SCOPE...)."""
    from packer.config import load_config
    from packer.packing import pack_project
    from packer.rules import parse_day

    if prune and (check or explain is not None):
        raise UsageError("--prune removes files: not with --check or --explain, which write none")
    day = parse_day(now) if now is not None else None
    root = project_root()
    config = load_config(root)
    with (
        _store_for_pack(ctx, root) as store,
        Progress("packing", enabled=ctx.progress, stages=True) as bar,
    ):
        report = pack_project(
            root, store, config, scopes=scopes, targets=targets, baseline=baseline,
            allow_secrets=allow, check=check, explain=explain, now=day, progress=bar.sink,
            notes=note_sink(ctx), prune=prune,
        )  # fmt: skip
    if explain is not None:
        _print_explained(report, explain, as_json=as_json)
        return

    if as_json:
        emit_report(report)
    else:
        _print_report(report, root, quiet=ctx.quiet, check=check)
    if check and (report.stale or report.orphans):
        sys.exit(EXIT_PROBLEM)


def _print_explained(report: PackReport, path: str, *, as_json: bool) -> None:
    from packer.explain import describe

    if not report.explained:
        raise NotFound(
            "path",
            path,
            "no pack holds it (a path relative to the project root; ignored, excluded and "
            "secret-named files are in no pack: 'cas show PACK' lists what one holds)",
        )
    if as_json:
        emit_json({"explained": [describe(x) for x in report.explained]})
        return
    click.echo("\n".join(describe(x) for x in report.explained), nl=False)


def _print_report(report: PackReport, root: Path, *, quiet: bool, check: bool) -> None:
    for r in report.results:
        rel = r.path.relative_to(root)
        state = (
            ("stale" if r.written else "up to date")
            if check
            else ("written" if r.written else "unchanged")
        )
        click.echo(f"{r.digest}  {shown(str(rel))} ({state})")
        if quiet:
            continue
        t = r.totals
        click.echo(f"  {'tier':<9}{'files':>7}{'bytes':>12}{'tokens':>9}")
        for tier in ("high", "medium", "low"):
            row = t[tier]
            click.echo(f"  {tier:<9}{row['files']:>7}{row['bytes']:>12}{row['tokens']:>9}")
        if t["withheld"]:
            click.echo(f"  {'withheld':<9}{t['withheld']:>7}")
        used = r.tokens["markdown"]
        # a share of the target, which a fit fills to 90% or more: a full pack reads as full
        pct = 100 * used // max(r.budget["target"], 1)
        click.echo(
            f"  budget: {used} tokens, {pct}% of target {r.budget['target']} "
            f"(max {r.budget['max']}); xml {r.tokens['xml']}, plain {r.tokens['plain']}"
        )
    if report.withheld:
        listed = ", ".join(f"{shown(p)} ({k})" for p, k in report.withheld)
        click.echo(f"withheld as secrets, stored nowhere: {listed}")
    if report.redacted:
        listed = ", ".join(f"{p} ({k})" for p, k in report.redacted)
        click.echo(f"secrets redacted, stored with the values cut out: {listed}")
    if not quiet:
        for note in report.notes:
            warn(f"note: {shown(note.path)}: {note.reason}")
    if check and report.stale:
        for name in report.stale:
            rel = pack_path(manifest_dir(root), name).relative_to(root)
            warn(f"error: {shown(str(rel))} is stale: run 'cas pack' and commit it")
    _print_orphans(report, check=check)


def _print_orphans(report: PackReport, *, check: bool) -> None:
    """One line per orphan pack: pruned, or what to do about it."""
    for file in report.orphans:
        if check:
            warn(
                f"error: {shown(file)} is an orphan: no scope or target in the configuration "
                "makes it; run 'cas pack --prune' (or configure it again) and commit"
            )
        elif report.pruned:
            click.echo(f"{shown(file)} (pruned: no scope or target makes it; 'cas gc' frees it)")
        else:
            click.echo(
                f"{shown(file)} (orphan: no scope or target in the configuration makes it; "
                "'cas pack --prune' removes it)"
            )


def _open_store_optional(ctx: Ctx) -> Store | None:
    try:
        return ctx.open_store(readonly=True)
    except StoreNotFound:
        return None


@click.command()
@click.argument("manifest")
@click.option("--mode", type=click.Choice(MODES), default="lite", show_default=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="markdown", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Write here (a directory for --mode split) instead of stdout.",
)
@pass_ctx
def render(ctx: Ctx, manifest: str, mode: str, fmt: str, output: Path | None) -> None:
    """Render a pack as text for an agent, reading bodies from the store only."""
    from casapp.project import Project

    root = project_root()
    with ctx.open_store(readonly=True) as store, Project(root, store) as project:
        if mode == "split":
            if output is None:
                raise UsageError("--mode split writes a directory: give it with -o DIR")
            _check_split_folder(output)
            parts = project.render_split(manifest, fmt)
            try:
                output.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(str(output), exc.strerror or str(exc)) from None
            for name, text in parts.items():
                write_output(output / name, [text.encode("utf-8")])
            if not ctx.quiet:
                click.echo(f"wrote {len(parts)} files to {shown(str(output))}")
            return
        text = project.render(manifest, mode, fmt)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_output(output, [text.encode("utf-8")])


def _check_split_folder(output: Path) -> None:
    """--mode split writes one file per part into a folder: anything else there is an error
    before any rendering, never a half-written set."""
    if output.is_dir() or not os.path.lexists(output):
        return
    what = "a dangling symlink" if output.is_symlink() and not output.exists() else "not a folder"
    raise OutputError(
        str(output),
        f"--mode split writes a folder of files, and this is {what}: give a new "
        "or existing folder with -o DIR",
    )


@click.command()
@click.argument("manifest")
@click.option(
    "--tree",
    is_flag=True,
    help="Instead: the tree of folders and files with the tokens, bytes and files of each tier.",
)
@click.option(
    "--depth",
    type=click.IntRange(0, 1000),
    default=3,
    show_default=True,
    help="With --tree: the levels shown below the root.",
)
@json_option
@pass_ctx
def show(ctx: Ctx, manifest: str, tree: bool, depth: int, as_json: bool) -> None:
    """List a pack's entries: tier, tokens, rating, size, path, reason, digest."""

    if tree and as_json:
        raise UsageError("--tree prints a table; --json lists the entries: give one of them")
    root = project_root()
    store = _open_store_optional(ctx)
    try:
        found = load_pack(manifest, manifest_dir(root), store)
    finally:
        if store is not None:
            store.close()
    m, digest, src = found.manifest, found.digest, found.source
    if tree:
        from packer.picture import token_tree

        click.echo(f"{shown(src)}  {digest}")
        for line in token_tree(m, depth):
            click.echo(line)
        return
    if as_json:
        emit_json(
            {
                "manifest": src,
                "digest": str(digest),
                "scope": m.scope,
                "target": m.target,
                "tokenizer": m.tokenizer,
                "budget": {"target": m.budget_target, "max": m.budget_max},
                "parent": str(m.parent) if m.parent else None,
                "totals": m.totals,
                "entries": [
                    {
                        "path": e.path,
                        "tier": e.tier,
                        "rating": e.rating,
                        "listed": e.listed,
                        "tokens": e.tokens,
                        "size": e.size,
                        "reason": e.reason,
                        "kind": e.kind,
                        "digest": str(e.digest) if e.digest else None,
                        "summary": str(e.summary) if e.summary else None,
                    }
                    for e in m.entries
                ],
            }
        )
        return
    click.echo(f"{shown(src)}  {digest}")
    click.echo(f"{'tier':<7}{'tokens':>7}{'rating':>12}{'bytes':>10}  path  [reason]  digest")
    for e in m.entries:
        body = str(e.digest) if e.digest else "(withheld)"
        why = shown(e.reason or "")
        click.echo(
            f"{e.tier:<7}{e.tokens:>7}{e.rating:>12}{e.size:>10}  {shown(e.path)}  [{why}]  {body}"
        )


@click.command(name="cat")
@click.argument("manifest")
@click.argument("path")
@click.option(
    "--summary",
    is_flag=True,
    help="Print the file's summary instead: the one the pack shows, or for a file shown in full "
    "or left out, the one cas makes of it.",
)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here, not stdout.")
@pass_ctx
def cat(ctx: Ctx, manifest: str, path: str, summary: bool, output: Path | None) -> None:
    """Print one file of a pack by its path, from the store (re-hashed as it is read)."""
    from casapp.project import Project

    root = project_root()
    if summary:
        with ctx.open_store(readonly=True) as store, Project(root, store) as project:
            data = project.summary(manifest, path)
        if output is None:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            write_output(output, [data])
        return
    with (
        ctx.open_store(readonly=True) as store,
        Project(root, store) as project,
        project.open_file(manifest, path) as reader,
    ):
        if output is None:
            out = sys.stdout.buffer
            for piece in reader.chunks():
                out.write(piece)
            out.flush()
        else:
            write_output(output, reader.chunks())


@click.command(name="diff")
@click.argument("old")
@click.argument("new")
@json_option
@pass_ctx
def diff_cmd(ctx: Ctx, old: str, new: str, as_json: bool) -> None:
    """What changed between two packs: added, removed, changed, re-tiered, token deltas."""
    from packer.diff import diff as diff_packs

    root = project_root()
    store = _open_store_optional(ctx)
    try:
        a = load_pack(old, manifest_dir(root), store).manifest
        b = load_pack(new, manifest_dir(root), store).manifest
    finally:
        if store is not None:
            store.close()
    d = diff_packs(a, b)
    if as_json:
        emit_json(
            {
                "old_tokens": d.old_tokens,
                "new_tokens": d.new_tokens,
                "changes": [
                    {
                        "path": c.path,
                        "change": c.change,
                        "old_tier": c.old_tier,
                        "new_tier": c.new_tier,
                        "old_tokens": c.old_tokens,
                        "new_tokens": c.new_tokens,
                        "delta": c.delta,
                    }
                    for c in d.changes
                ],
            }
        )
        return
    for c in d.changes:
        tiers = f"{c.old_tier or '-'} -> {c.new_tier or '-'}"
        click.echo(f"{c.change:<17} {tiers:<16} {c.delta:>+7}  {shown(c.path)}")
    click.echo(f"tokens: {d.old_tokens} -> {d.new_tokens} ({d.new_tokens - d.old_tokens:+})")


@click.command(name="distill")
@click.option(
    "-t", "--target", "targets", multiple=True, help="Write for this target (repeatable)."
)
@click.option("--all-targets", is_flag=True, help="Write for every configured target.")
@click.option(
    "--commits",
    type=click.IntRange(1, 10_000),
    metavar="N",
    help="The window: the newest N commits of the first-parent chain (default 20).",
)
@click.option("--since", metavar="REV", help="The window: the commits after REV, up to HEAD.")
@click.option("--old", metavar="PACK", help="With --new: re-tiered files and token deltas.")
@click.option("--new", metavar="PACK", help="The newer pack of the two (see --old).")
@click.option(
    "--budget",
    type=click.IntRange(1, 10**9),
    metavar="TOKENS",
    help="Tokens for every target, instead of each target's configured budget.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Write here: a file for one target, a folder (DIR/TARGET/90_recent_changes.md) for "
    "several or --all-targets.",
)
@json_option
@pass_ctx
def distill_cmd(
    ctx: Ctx,
    targets: tuple[str, ...],
    all_targets: bool,
    commits: int | None,
    since: str | None,
    old: str | None,
    new: str | None,
    budget: int | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """A recent-changes document from the git history, within each target's token budget."""
    from cas.fsutil import atomic_write
    from cas.report import report_json
    from packer.config import load_config
    from packer.distill import DEFAULT_COMMITS, DOCUMENT_NAME, choose_targets, distill

    if commits is not None and since is not None:
        raise UsageError("give the window as --commits N or as --since REV, not both")
    if (old is None) != (new is None):
        raise UsageError("--old and --new go together: the two packs to compare")
    if all_targets and targets:
        raise UsageError("--all-targets writes every target: drop --target, or drop it")
    root = project_root()
    config = load_config(root)
    chosen = choose_targets(config, targets)
    several = all_targets or len(chosen) > 1
    if several and output is None and not as_json:
        raise UsageError(
            f"{len(chosen)} targets ({', '.join(t.name or '-' for t in chosen)}): name one with "
            "--target, or write them all with -o DIR"
        )
    old_pack = new_pack = None
    if old is not None and new is not None:
        store = _open_store_optional(ctx)
        try:
            old_pack = load_pack(old, manifest_dir(root), store).manifest
            new_pack = load_pack(new, manifest_dir(root), store).manifest
        finally:
            if store is not None:
                store.close()
    documents = []
    for target in chosen:
        made = distill(
            root,
            budget or target.budget.target,
            tokenizer=config.tokenizer,
            commits=commits or DEFAULT_COMMITS,
            since=since,
            old=old_pack,
            new=new_pack,
        )
        path = None
        if output is not None:
            path = output / target.name / DOCUMENT_NAME if several else output
            if several:
                atomic_write(path, made.text.encode("utf-8"))
            else:
                write_output(path, [made.text.encode("utf-8")])
        documents.append((target, made, path))
    if as_json:
        emit_json(
            {
                "documents": [
                    {"target": t.name, "path": str(p) if p else None, "text": d.text}
                    | report_json(d)
                    for t, d, p in documents
                ]
            }
        )
    elif output is None:
        click.echo(documents[0][1].text, nl=False)
    elif not ctx.quiet:
        for t, d, p in documents:
            click.echo(
                f"{shown(str(p))}: {d.tokens} of {d.budget} tokens, "
                f"{d.shown} of {d.commits} commits{f' ({t.name})' if t.name else ''}"
            )


@click.command(name="report")
@click.argument("manifest")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="Write the page here, not stdout."
)
@pass_ctx
def report_cmd(ctx: Ctx, manifest: str, output: Path | None) -> None:
    """A pack as one self-contained HTML page: a treemap by tier, the budget, the omitted and
    withheld files, a filter."""
    from packer.picture import html_report

    root = project_root()
    store = _open_store_optional(ctx)
    try:
        found = load_pack(manifest, manifest_dir(root), store)
    finally:
        if store is not None:
            store.close()
    page = html_report(found.manifest, found.manifest.name, str(found.digest)).encode("utf-8")
    if output is None:
        out = sys.stdout.buffer
        out.write(page)
        out.flush()
    else:
        write_output(output, [page])


COMMANDS = [pack, render, show, cat, diff_cmd, distill_cmd, report_cmd]
