"""Commands an agent asks with: search, load, context, mcp."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from cas.display import echoed, shown
from cas.errors import UsageError
from cas.locate import pack_path
from cas.progress import Progress
from casapp.cli import searching
from casapp.cli._common import json_option, mode_option, pass_ctx
from casapp.cli.context import Ctx, emit_json, note_sink, project_root, warn

if TYPE_CHECKING:
    from packer.load import LoadResult

# These mirror packer.render.FORMATS (a test checks).
FORMATS = ("markdown", "xml", "plain")

memory_scope_option = click.option(
    "--memory-scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="Also the memory of SCOPE (repeatable): global, user:ID or session:ID. Without it no "
    "memory is seen, nor a load drawn on one.",
)


@click.command()
@click.argument("query")
@click.option("--pack", "packs", multiple=True, metavar="PACK", help="Search only this pack.")
@click.option("--path", "paths", multiple=True, metavar="GLOB", help="Only paths matching GLOB.")
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many files.")
@memory_scope_option
@mode_option
@json_option
@pass_ctx
def search(
    ctx: Ctx,
    query: str,
    packs: tuple[str, ...],
    paths: tuple[str, ...],
    k: int,
    scopes: tuple[str, ...],
    mode: str,
    as_json: bool,
) -> None:
    """Search the files of the packs, and the memories of --memory-scope, by words (code-aware:
    with_context, NewRouter and os.path.join are found whole and by their words) and by meaning
    (a question in other words than the code's). The first search by meaning of a large tree
    embeds every file once (kept in the store)."""
    searching.run(ctx, query, packs, paths, k, scopes, as_json, mode)


@click.command()
@click.argument("query")
@click.option("--budget", type=int, metavar="TOKENS", help="Target and max (default: [load]).")
@click.option("--name", default="load", show_default=True, help="Write manifests/NAME.pack.")
@click.option("--render", "show", is_flag=True, help="Print the rendered load, not a report.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="markdown", show_default=True)
@click.option("--dry-run", is_flag=True, help="Write nothing (no manifest, no blobs).")
@memory_scope_option
@mode_option
@json_option
@pass_ctx
def load(
    ctx: Ctx,
    query: str,
    budget: int | None,
    name: str,
    show: bool,
    fmt: str,
    dry_run: bool,
    scopes: tuple[str, ...],
    mode: str,
    as_json: bool,
) -> None:
    """Fit the packs to one question: the packs its words trigger, what it is about in full
    or with the matching symbols' source, the rest summarized or listed, within the budget.
    With --memory-scope, that memory is drawn on too (and the load is seen only where it is
    asked for)."""
    from casapp.project import Project
    from packer.render import render_lite

    _check_name(name)
    if budget is not None and budget < 1:
        raise UsageError(f"--budget must be a positive number of tokens, not {budget}")
    root = project_root()
    with (
        ctx.open_store() as store,
        Project(root, store, scopes=scopes, notes=note_sink(ctx)) as project,
    ):
        with Progress("load", enabled=ctx.progress, stages=True) as bar:
            result = project.load(
                query, budget=budget, name=name, write=not dry_run, progress=bar.sink, mode=mode
            )
        path = pack_path(project.manifests, name)
        text = render_lite(result.manifest, result.fetch(store), fmt) if show else ""
    if show:
        click.echo(text, nl=False)
        if not ctx.quiet:
            for line in _report_lines(result, path, dry_run):
                warn(line)
        return
    if as_json:
        emit_json(
            {
                "query": query,
                "manifest": None if dry_run else str(path),
                "digest": str(result.digest),
                "core": result.core,
                "triggered": [
                    {"domain": t.domain, "triggers": list(t.words), "packs": list(t.packs)}
                    for t in result.triggered
                ],
                "packs": result.packs,
                "gaps": result.gaps,
                "fallback": result.fallback,
                "unmatched": result.unmatched,
                "focused": result.focused,
                "tokens": result.tokens,
                "budget": {
                    "target": result.manifest.budget_target,
                    "max": result.manifest.budget_max,
                },
            }
        )
        return
    for line in _report_lines(result, path, dry_run):
        click.echo(line)


@click.command()
@click.argument("query")
@click.option(
    "--scope",
    metavar="SCOPE",
    default="global",
    show_default=True,
    help="The memory the session lives in: global, user:ID or session:ID.",
)
@click.option(
    "--session",
    metavar="ID",
    help="The conversation (default: a new one, named in the report: pass it on the next turn).",
)
@click.option("--budget", type=int, metavar="TOKENS", help="Exact budget (default: [load]).")
@click.option("--render", "show", is_flag=True, help="Print the context, not a report.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="markdown", show_default=True)
@click.option("--date", metavar="YYYY-MM-DD", help="The day of the turn [default: today].")
@memory_scope_option
@mode_option
@json_option
@pass_ctx
def context(
    ctx: Ctx,
    query: str,
    scope: str,
    session: str | None,
    budget: int | None,
    show: bool,
    fmt: str,
    date: str | None,
    scopes: tuple[str, ...],
    mode: str,
    as_json: bool,
) -> None:
    """The context for the next turn of a conversation, within one exact budget: the session's
    recent turns and facts always, what QUERY finds in its memory and in the packs (core and
    triggered domains), and nothing the session was given before unchanged. The context is
    a load manifest pinned as context/SCOPE/SESSION; the session's ledger records what it gave.
    Add the turn itself with 'cas mem turn'."""
    from casapp.project import Project
    from memory.entries import check_date
    from memory.scopes import check_scope

    if budget is not None and budget < 1:
        raise UsageError(f"--budget must be a positive number of tokens, not {budget}")
    scope = check_scope(scope)
    day = check_date(date) if date is not None else None
    root = project_root()
    with (
        ctx.open_store() as store,
        Project(root, store, scopes=(scope, *scopes), notes=note_sink(ctx)) as project,
    ):
        chosen = session if session is not None else project.new_session(scope)
        with Progress("context", enabled=ctx.progress, stages=True) as bar:
            found = project.context(
                query, scope=scope, session=chosen, budget=budget, date=day, mode=mode,
                fmt=fmt, progress=bar.sink,
            )  # fmt: skip
    m = found.load.manifest
    tiers = {t: sum(1 for e in m.entries if e.tier == t) for t in ("high", "medium", "low")}
    if as_json:
        emit_json(
            {
                "scope": found.scope,
                "session": found.session,
                "turn": found.turn,
                "digest": str(found.digest),
                "pin": found.pin,
                "pinned": list(found.pinned),
                "given": found.given,
                "domains": list(found.domains),
                "new_domains": list(found.new_domains),
                "packs": found.load.packs,
                "tokens": found.tokens,
                "budget": found.budget,
                "tiers": tiers,
                "text": found.text if show else None,
            }
        )
        return
    lines = [
        f"session {found.session} of {found.scope}, turn {found.turn}: {tiers['high']} in full, "
        f"{tiers['medium']} summarized, {found.given} given earlier and unchanged; "
        f"{found.tokens[fmt]:,} of {found.budget:,} tokens",
    ]
    for t in found.load.triggered:
        how = f"by {', '.join(t.words)}" if t.words else "earlier in this session"
        lines.append(f"domain {t.domain} ({how}): {', '.join(t.packs)}")
    lines.append(f"pinned as {found.pin}: {found.digest}")
    if show:
        click.echo(found.text, nl=False)
        if not ctx.quiet:
            for line in lines:
                warn(line)
        return
    for line in lines:
        click.echo(line)


def _report_lines(result: LoadResult, path: Path, dry_run: bool) -> list[str]:
    m = result.manifest
    tiers = {t: sum(1 for e in m.entries if e.tier == t) for t in ("high", "medium", "low")}
    from cas.visibility import SOURCE_PREFIX

    out = [f"core: {', '.join(result.core) or '(none)'}"]
    memories = [p for p in result.packs if p.startswith(SOURCE_PREFIX)]
    if memories:
        out.append(f"memory: {', '.join(memories)}")
    for t in result.triggered:
        out.append(f"triggered {t.domain} by {', '.join(t.words)}: {', '.join(t.packs)}")
    for qname, paths in result.gaps.items():
        out.append(f"gap: {qname} not shown; added {', '.join(shown(p) for p in paths)}")
    if result.fallback:
        out.append(f"fallback: names still not shown, drew on every pack ({m.budget_max} tokens)")
    if result.unmatched:
        out.append(f"not found in any pack: {echoed(', '.join(result.unmatched), quoted=False)}")
    where = "(dry run, not written)" if dry_run else shown(str(path))
    out.append(
        f"{m.name} {where}: {tiers['high']} in full, {tiers['medium']} summarized "
        f"({len(result.focused)} with the matching source), {tiers['low']} omitted; "
        f"{result.tokens['markdown']:,} of {m.budget_target:,} tokens (max {m.budget_max:,})"
    )
    return out


def _check_name(name: str) -> None:
    import re

    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        raise UsageError(
            f"--name {echoed(name)} is not allowed: use [a-z0-9][a-z0-9_-]*, at most 64 characters"
        )


@click.command()
@click.option(
    "--http",
    "port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Serve streamable HTTP on 127.0.0.1:PORT instead of stdio.",
)
@click.option(
    "--project",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="The project whose packs to serve (default: the one the working directory is in; "
    "its .cas unless --store says otherwise).",
)
@click.option(
    "--memory-scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="A memory the server may use (repeatable; the first is the memory tools' default): "
    "global, user:ID or session:ID; the pack tools see it and nothing of any other memory. "
    "None: no memory tools work.",
)
@pass_ctx
def mcp(ctx: Ctx, port: int | None, project: Path | None, scopes: tuple[str, ...]) -> None:
    """Serve this project's packs to agents over the Model Context Protocol (stdio, or HTTP on
    127.0.0.1). Tools: list_packs, render_pack, read_file, search, load, verify (read-only),
    and remember, recall, facts on the memories given with --memory-scope."""
    from casapp.mcpserver import serve
    from memory.scopes import check_scope
    from packer.project import find_project_root

    scopes = tuple(dict.fromkeys(check_scope(s) for s in scopes))
    root = find_project_root(project) if project is not None else project_root()
    if project is not None and not ctx.store_opt:
        ctx.store_opt = str(root / ".cas")
    with ctx.open_store() as store:
        serve(root, store, port, scopes)


COMMANDS = [search, load, context, mcp]
