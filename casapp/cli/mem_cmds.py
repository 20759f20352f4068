"""Commands on agent memory: cas mem add, show, log, search, fact, curate, rollback, pack, prune;
one entry by its id: get, edit, delete.

The memory package (and the secret scan it runs) is imported when a memory command runs, not
when cas starts."""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import click

from cas.digest import Digest
from cas.display import echoed, shown
from cas.errors import BadDigest, NotFound, UsageError
from cas.report import report_json
from casapp.cli._common import CasGroup, json_option, mode_option, pass_ctx, project_packs
from casapp.cli.context import Ctx, emit_json, emit_report, note_sink, project_root, warn


def _scope(_ctx: click.Context, _param: click.Parameter, text: str) -> str:
    """A scope checked where it comes in, by the one rule every use of it keeps
    (`memory.scopes.check_scope`): nothing runs with a scope that could not be stored."""
    from memory.scopes import check_scope

    return check_scope(text)


scope_option = click.option(
    "--scope",
    default="global",
    show_default=True,
    metavar="SCOPE",
    callback=_scope,
    help="Whose memory: global, user:ID or session:ID.",
)
date_option = click.option(
    "--date",
    metavar="YYYY-MM-DD",
    help="The day this happens on [default: today, by the clock].",
)


def _date(text: str | None) -> str:
    from memory.entries import check_date

    return check_date(text) if text is not None else dt.date.today().isoformat()


def _digest(text: str) -> Digest:
    """A digest given on the command line; a malformed one is named with any secret cut out."""
    from memory.redaction import redacted

    try:
        return Digest.parse(text)
    except BadDigest:
        raise BadDigest(redacted(text)) from None


def _text(words: tuple[str, ...]) -> str:
    """TEXT from the arguments, or from stdin when it is ``-``."""
    if words == ("-",):
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError("the text on stdin is not UTF-8") from None
    if not words:
        raise UsageError("nothing to remember: give TEXT, or - to read it from stdin")
    return " ".join(words)


@click.group(name="mem", cls=CasGroup)
def mem_group() -> None:
    """Agent memory: daily logs, curated memory and facts, kept in the store by scope.

    Every change makes a new state of the scope's memory (a manifest in the store); 'cas mem
    log' lists them and 'cas mem rollback DIGEST' brings an earlier one back. Secrets are cut
    out of every text before it is stored."""


@mem_group.command(name="add")
@click.argument("words", nargs=-1, metavar="TEXT|-")
@scope_option
@date_option
@json_option
@pass_ctx
def mem_add(ctx: Ctx, words: tuple[str, ...], scope: str, date: str | None, as_json: bool) -> None:
    """Append TEXT (or stdin, with -) to today's log of SCOPE."""
    from memory import ops

    text = _text(words)
    with ctx.open_store() as store:
        done = ops.remember(store, scope, text, date=_date(date))
    if as_json:
        emit_report(done)
        return
    note = f" (secret cut out: {', '.join(done.secrets)})" if done.secrets else ""
    if not ctx.quiet:
        click.echo(f"remembered {done.id} in {done.scope} {done.path}{note}")


@mem_group.command(name="curate")
@click.argument("words", nargs=-1, metavar="TEXT|-")
@scope_option
@date_option
@click.option(
    "--id", "ident", metavar="ID", help="Promote the log entry ID instead (moved, its id kept)."
)
@json_option
@pass_ctx
def mem_curate(
    ctx: Ctx, words: tuple[str, ...], scope: str, date: str | None, ident: str | None, as_json: bool
) -> None:
    """Add TEXT to the curated memory (MEMORY.md) of SCOPE, or move the log entry --id there."""
    from memory import edits, ops

    if ident is not None and words:
        raise UsageError("give TEXT or --id ID, not both")
    text = _text(words) if ident is None else ""
    with ctx.open_store() as store:
        if ident is not None:
            done: Any = edits.promote(store, scope, ident, date=_date(date))
        else:
            done = ops.curate(store, scope, text, date=_date(date))
    if as_json:
        emit_report(done)
    elif not ctx.quiet:
        verb = "promoted" if ident is not None else "curated"
        click.echo(f"{verb} {done.id} in {scope} MEMORY.md{_cut_note(done.secrets)}")


@mem_group.command(name="show")
@click.argument("path", required=False)
@scope_option
@click.option("--at", "at", metavar="DIGEST", help="An earlier state ('cas mem log').")
@json_option
@pass_ctx
def mem_show(ctx: Ctx, path: str | None, scope: str, at: str | None, as_json: bool) -> None:
    """List the files of SCOPE's memory, or print one (PATH, e.g. logs/2026-11-24.md)."""
    from memory.redaction import redacted
    from memory.state import head, read_file, read_state

    with ctx.open_store(readonly=True) as store:
        state = read_state(store, scope, _digest(at)) if at is not None else head(store, scope)
        if path is None:
            files = state.manifest.entries if state.manifest is not None else ()
            if as_json:
                emit_json(
                    {
                        "scope": state.scope,
                        "state": str(state.digest) if state.digest else None,
                        "files": [{"path": e.path, "size": e.size} for e in files],
                    }
                )
                return
            for e in files:
                click.echo(f"{e.size:>8}  {shown(e.path)}")
            return
        body = read_file(store, state, path)
    if body is None:
        raise NotFound(
            "memory file", redacted(path), f"memory {scope!r} has no such file ('cas mem show')"
        )
    click.echo(body.decode("utf-8", "replace"), nl=False)


@mem_group.command(name="log")
@scope_option
@click.option("-n", "limit", type=click.IntRange(min=1), help="Only the newest N states.")
@json_option
@pass_ctx
def mem_log(ctx: Ctx, scope: str, limit: int | None, as_json: bool) -> None:
    """The states of SCOPE's memory, newest first, with what each changed."""
    from memory.state import changes, history

    with ctx.open_store(readonly=True) as store:
        rows = [(state, changes(store, state)) for state in history(store, scope, limit)]
    if as_json:
        emit_json(
            {
                "scope": scope,
                "states": [
                    {
                        "state": str(state.digest),
                        "parent": str(state.parent) if state.parent else None,
                        "files": len(state.files),
                        "changes": done,
                    }
                    for state, done in rows
                ],
            }
        )
        return
    for state, done in rows:
        click.echo(f"{state.digest}  {len(state.files)} files")
        for line in done:
            click.echo(f"    {shown(line)}")


@mem_group.command(name="search")
@click.argument("query", nargs=-1, required=True)
@scope_option
@click.option("-k", "-n", "k", type=click.IntRange(min=1), default=20, show_default=True,
              help="How many files.")  # fmt: skip
@mode_option
@json_option
@pass_ctx
def mem_search(
    ctx: Ctx, query: tuple[str, ...], scope: str, k: int, mode: str, as_json: bool
) -> None:
    """The files of SCOPE's memory that best answer QUERY (by words and by meaning, ranked),
    each with its matching lines; facts by their current value."""
    from cas.textindex import TextIndex
    from memory.search import search

    text = " ".join(query)
    with ctx.open_store() as store:
        index = TextIndex.open(store.path, note=note_sink(ctx))
        assert index is not None  # open creates one
        with index:
            hits = search(store, index, scope, text, k=k, mode=mode)
    if as_json:
        emit_json(
            {"scope": scope, "query": text, "mode": mode, "hits": [report_json(h) for h in hits]}
        )
        return
    if not hits:
        click.echo("no matches")
        return
    for h in hits:
        click.echo(f"{shown(h.path)}:{h.first}-{h.last}")
        for n, line in h.snippet:
            click.echo(f"  {n:>5}: {shown(line)}")


@mem_group.command(name="rollback")
@click.argument("digest")
@scope_option
@date_option
@pass_ctx
def mem_rollback(ctx: Ctx, digest: str, scope: str, date: str | None) -> None:
    """Make the files of the earlier state DIGEST the newest state of SCOPE (the journal says
    so; nothing of the history is lost)."""
    from memory.state import rollback

    with ctx.open_store() as store:
        state = rollback(store, scope, _digest(digest), date=_date(date))
    if not ctx.quiet:
        click.echo(f"{scope}: rolled back to {digest} as {state.digest}")


now_option = click.option(
    "--now",
    "now",
    required=True,
    metavar="YYYY-MM-DD",
    help="The day ages are counted to (never the clock: the same day gives the same result).",
)


@mem_group.command(name="pack")
@scope_option
@click.option(
    "-t",
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    help="A target of [memory.targets] (repeatable) [default: every one].",
)
@now_option
@click.option(
    "-o",
    "out",
    type=click.Path(file_okay=False, path_type=str),
    metavar="DIR",
    help="Write each target's document to DIR/<target>/memory.md.",
)
@json_option
@pass_ctx
def mem_pack(
    ctx: Ctx, scope: str, targets: tuple[str, ...], now: str, out: str | None, as_json: bool
) -> None:
    """Build SCOPE's memory pack per target at --now: MEMORY.md and facts, then daily logs by
    age (in full, summarized, a pointer), then 90_recent_changes.md from the project's git
    history up to --now, fitted to each target's budget. The manifests go to the project's
    manifests folder; with one target and no -o the document is printed."""
    from pathlib import Path

    from cas.fsutil import atomic_write
    from memory.ages import load_memory_config
    from memory.entries import check_date
    from memory.packs import build, describe, save
    from memory.recent import history
    from memory.redaction import redacted
    from memory.state import head

    check_date(now)
    root = project_root()
    config = load_memory_config(root)
    known = {t.name: t for t in config.targets}
    for name in targets:
        if name not in known:
            raise UsageError(
                f"memory target {echoed(redacted(name))} is not configured; targets: "
                f"{', '.join(known)}"
            )
    chosen = [known[n] for n in dict.fromkeys(targets)] if targets else list(config.targets)
    folder = project_packs()
    with ctx.open_store() as store:
        state = head(store, scope)
        changes = history(root, now) if config.recent_changes_share else None
        packs = [build(store, state, now, config, t, changes=changes) for t in chosen]
        for p in packs:
            save(store, p, folder)
    if out is not None:
        for p in packs:
            atomic_write(Path(out) / p.target / "memory.md", p.text.encode())
    if as_json:
        emit_json(
            {
                "packs": [
                    {
                        "name": p.name,
                        "scope": p.scope,
                        "target": p.target,
                        "now": p.now,
                        "tokens": p.tokens,
                        "budget": p.budget,
                        "max": p.max,
                        "tiers": p.tiers,
                        "omitted": p.omitted,
                        "recent_changes": p.recent,
                        "text": p.text,
                    }
                    for p in packs
                ]
            }
        )
        return
    if out is None and len(packs) == 1:
        click.echo(packs[0].text, nl=False)
        return
    if not ctx.quiet:
        for p in packs:
            click.echo(describe(p))


@mem_group.command(name="compact")
@scope_option
@now_option
@click.option(
    "--llm",
    "llm",
    metavar="CMD",
    help="A command that decides (JSON on stdin, JSON answer; see 'cas mem' in the README).",
)
@click.option("--dry-run", is_flag=True, help="Only list the decisions.")
@json_option
@pass_ctx
def mem_compact(
    ctx: Ctx, scope: str, now: str, llm: str | None, dry_run: bool, as_json: bool
) -> None:
    """Compact SCOPE's daily logs older than [memory] full_days at --now: promote what is worth
    keeping to MEMORY.md, shorten or drop the rest; every decision journalled."""
    from memory.ages import load_memory_config
    from memory.compact import command_decider, compact

    config = load_memory_config(project_root())
    decide = command_decider(llm) if llm is not None else None
    with ctx.open_store(readonly=dry_run) as store:
        done = compact(store, scope, now, config, decide=decide, dry_run=dry_run)
    if as_json:
        emit_report(done)
        return
    if ctx.quiet:
        return
    for d in done.decisions:
        click.echo(("would " if dry_run else "") + shown(d.journal()))
    if not done.decisions:
        click.echo(f"{scope}: nothing to compact at {now}")


def _session(_ctx: click.Context, _param: click.Parameter, text: str) -> str:
    from memory.session import check_session

    return check_session(text)


session_option = click.option(
    "--session",
    required=True,
    metavar="ID",
    callback=_session,
    help="The conversation (as 'cas context' named it).",
)
max_tokens_option = click.option(
    "--max-tokens",
    type=int,
    default=2_000,
    show_default=True,
    help="Tokens the session's recent turns may hold; past it the oldest go to the day's log.",
)
llm_option = click.option(
    "--llm",
    "llm",
    metavar="CMD",
    help="A command that decides what a flushed turn becomes (COMPRESS, PROMOTE or DELETE; "
    "JSON on stdin, as 'cas mem compact'); default: rules.",
)


@mem_group.command(name="turn")
@click.argument("user")
@click.argument("assistant")
@scope_option
@session_option
@max_tokens_option
@llm_option
@date_option
@json_option
@pass_ctx
def mem_turn(
    ctx: Ctx,
    user: str,
    assistant: str,
    scope: str,
    session: str,
    max_tokens: int,
    llm: str | None,
    date: str | None,
    as_json: bool,
) -> None:
    """Add a turn of a conversation (what USER said, what ASSISTANT answered; - reads that one
    from stdin) to the session's short-term memory; past --max-tokens, the oldest turns are
    flushed whole into the day's log and compressed or promoted."""
    from memory.compact import command_decider
    from memory.shortterm import Policy, add_turn

    policy = Policy(max_tokens=max_tokens)
    decide = command_decider(llm) if llm is not None else None
    user = _text((user,)) if user == "-" else user
    assistant = _text((assistant,)) if assistant == "-" else assistant
    with ctx.open_store() as store:
        done = add_turn(
            store, scope, session, user, assistant, date=_date(date), policy=policy,
            decide=decide,
        )  # fmt: skip
    if as_json:
        emit_report(done)
        return
    if ctx.quiet:
        return
    note = f" (secret cut out: {', '.join(done.secrets)})" if done.secrets else ""
    click.echo(
        f"turn {done.turn} of session {session} in {scope}: {done.recent} recent turns, "
        f"{done.tokens:,} tokens{note}"
    )
    for f in done.flushed:
        click.echo(f"turn {f.turn} flushed to {f.log}: {f.decision} (by {f.by})")


@mem_group.command(name="short-term")
@scope_option
@session_option
@max_tokens_option
@llm_option
@date_option
@json_option
@pass_ctx
def mem_short_term(
    ctx: Ctx,
    scope: str,
    session: str,
    max_tokens: int,
    llm: str | None,
    date: str | None,
    as_json: bool,
) -> None:
    """Show a session's short-term memory after applying the policy now: turns past
    --max-tokens are flushed into the day's log (as 'cas mem turn' does on every turn)."""
    from memory.compact import command_decider
    from memory.session import turns_path
    from memory.shortterm import Policy, manage
    from memory.state import head, read_file

    decide = command_decider(llm) if llm is not None else None
    with ctx.open_store() as store:
        done = manage(
            store, scope, session, date=_date(date), policy=Policy(max_tokens=max_tokens),
            decide=decide,
        )  # fmt: skip
        data = read_file(store, head(store, scope), turns_path(session))
    if as_json:
        emit_report(done)
        return
    for f in done.flushed:
        warn(f"turn {f.turn} flushed to {f.log}: {f.decision} (by {f.by})")
    if data is None:
        raise NotFound("session", session, f"memory {scope!r} has no turns of it ('cas mem turn')")
    click.echo(data.decode("utf-8", "replace"), nl=False)


@mem_group.command(name="prune")
@scope_option
@now_option
@click.option("--dry-run", is_flag=True, help="Only list what would go.")
@json_option
@pass_ctx
def mem_prune(ctx: Ctx, scope: str, now: str, dry_run: bool, as_json: bool) -> None:
    """Apply SCOPE's retention rules at --now, as one new state journalling each thing dropped
    ('cas mem rollback' brings it back): daily logs past [memory] keep_days (90), and facts
    last used more than entity_days (7) ago unless used more than entity_uses (10) times."""
    from memory.ages import load_memory_config
    from memory.pruning import prune

    config = load_memory_config(project_root())
    with ctx.open_store(readonly=dry_run) as store:
        done = prune(store, scope, now, config, dry_run=dry_run)
    if as_json:
        emit_json(
            {
                "scope": done.scope,
                "now": done.now,
                "keep_days": done.keep_days,
                "entity_days": done.entity_days,
                "entity_uses": done.entity_uses,
                "dry_run": done.dry_run,
                "state": str(done.state) if done.state else None,
                "removed": [{"path": p, "age": age} for p, age in done.removed],
                "facts": [
                    {"key": f.key, "last_used": f.last, "days": f.days, "uses": f.count}
                    for f in done.facts
                ],
            }
        )
        return
    if ctx.quiet:
        return
    verb = "would " if dry_run else ""
    for line in done.lines():
        click.echo(verb + shown(line))
    if not done.removed and not done.facts:
        click.echo(
            f"{scope}: nothing past the {done.keep_days}-day retention and no stale fact at {now}"
        )


@mem_group.command(name="usage")
@scope_option
@json_option
@pass_ctx
def mem_usage(ctx: Ctx, scope: str, as_json: bool) -> None:
    """SCOPE's entities (its facts) with the last day each was used and how often; a fact
    never used is listed with 0 uses and the day it was set."""
    from memory.usage import table

    with ctx.open_store(readonly=True) as store:
        rows = table(store, scope)
    if as_json:
        emit_json(
            {
                "scope": scope,
                "entities": [
                    {"entity": r.entity, "last_used": r.last, "uses": r.count} for r in rows
                ],
            }
        )
        return
    for r in rows:
        click.echo(f"{shown(r.entity)}  last used {r.last or '-'}  {r.count} uses")
    if not rows:
        click.echo(f"{scope}: no facts and no uses counted")


@mem_group.group(name="fact", cls=CasGroup)
def fact_group() -> None:
    """Facts: one value per KEY, with every value it had."""


@fact_group.command(name="set")
@click.argument("key")
@click.argument("words", nargs=-1, required=True, metavar="VALUE")
@scope_option
@date_option
@pass_ctx
def fact_set(ctx: Ctx, key: str, words: tuple[str, ...], scope: str, date: str | None) -> None:
    """Set fact KEY of SCOPE to VALUE."""
    from memory import ops

    with ctx.open_store() as store:
        fact = ops.put_fact(store, scope, key, " ".join(words), date=_date(date))
    if not ctx.quiet:
        click.echo(f"{key} = {shown(fact.value or '')}")


@fact_group.command(name="delete")
@click.argument("key")
@scope_option
@date_option
@pass_ctx
def fact_delete(ctx: Ctx, key: str, scope: str, date: str | None) -> None:
    """Delete fact KEY of SCOPE (its history stays)."""
    from memory import ops

    with ctx.open_store() as store:
        ops.put_fact(store, scope, key, None, date=_date(date))
    if not ctx.quiet:
        click.echo(f"{key} deleted")


@fact_group.command(name="get")
@click.argument("key")
@scope_option
@pass_ctx
def fact_get(ctx: Ctx, key: str, scope: str) -> None:
    """Print the value of fact KEY of SCOPE (exit 1 when it has none)."""
    from memory import ops

    with ctx.open_store(readonly=True) as store:
        fact = ops.get_fact(store, scope, key)
    if fact.value is None:
        raise NotFound("fact", key, "it was deleted ('cas mem fact history' shows its values)")
    click.echo(fact.value)


@fact_group.command(name="history")
@click.argument("key")
@scope_option
@json_option
@pass_ctx
def fact_history(ctx: Ctx, key: str, scope: str, as_json: bool) -> None:
    """Every value fact KEY of SCOPE had, newest first."""
    from memory import ops

    with ctx.open_store(readonly=True) as store:
        fact = ops.get_fact(store, scope, key)
    if as_json:
        emit_json({"key": key, "value": fact.value,
                   "history": [{"date": d, "value": v} for d, v in fact.history]})  # fmt: skip
        return
    for date, value in fact.history:
        click.echo(f"{date}  {shown(value)}")


@fact_group.command(name="list")
@scope_option
@json_option
@pass_ctx
def fact_list(ctx: Ctx, scope: str, as_json: bool) -> None:
    """Every fact of SCOPE that holds a value."""
    from memory import ops

    with ctx.open_store(readonly=True) as store:
        found = ops.facts(store, scope)
    if as_json:
        emit_json({f.key: f.value for f in found})
        return
    for f in found:
        click.echo(f"{f.key} = {shown(f.value or '')}")


# --- the memory as a folder of Markdown (memory/folder.py) ---------------------------------------


def _folder_scope(ctx: click.Context, param: click.Parameter, text: str | None) -> str | None:
    return _scope(ctx, param, text) if text is not None else None


folder_scope_option = click.option(
    "--scope",
    default=None,
    metavar="SCOPE",
    callback=_folder_scope,
    help="Whose memory [default: the one the folder was exported from, else global].",
)
folder_argument = click.argument("folder", metavar="DIR", type=click.Path(path_type=str))


@mem_group.command(name="export")
@folder_argument
@scope_option
@click.option("--at", "at", metavar="DIGEST", help="An earlier state ('cas mem log').")
@click.option("--force", is_flag=True, help="Write into DIR even if it is not an export of it.")
@json_option
@pass_ctx
def mem_export(
    ctx: Ctx, folder: str, scope: str, at: str | None, force: bool, as_json: bool
) -> None:
    """Write SCOPE's memory to DIR as Markdown: MEMORY.md, DailyLogs/YYYY-MM-DD.md,
    facts/KEY.md (the journal stays in the store). DIR must be empty or an earlier export of
    it with no edits left to import, unless --force."""
    from memory.folder import export, exported_line

    with ctx.open_store(readonly=True) as store:
        done = export(store, scope, folder, at=_digest(at) if at else None, force=force)
    if as_json:
        emit_report(done)
    elif not ctx.quiet:
        click.echo(exported_line(done))


@mem_group.command(name="import")
@folder_argument
@folder_scope_option
@date_option
@click.option("--force", is_flag=True, help="Keep the folder's version of a file changed in both.")
@json_option
@pass_ctx
def mem_import(
    ctx: Ctx, folder: str, scope: str | None, date: str | None, force: bool, as_json: bool
) -> None:
    """Make the files of DIR one new state of the memory (each file added, edited or removed
    journalled, secrets cut out), then write DIR again from it. An unchanged folder makes no
    state; a file that is not a memory file stops it before anything is written."""
    from memory.folder import import_folder, imported_lines

    with ctx.open_store() as store:
        done = import_folder(store, folder, date=_date(date), scope=scope, force=force)
    if as_json:
        emit_report(done)
        return
    if ctx.quiet:
        return
    for line in imported_lines(done):
        click.echo(line)
    if not done.changes:
        click.echo(f"{done.scope}: {shown(folder)} holds no change; no new state")


@mem_group.command(name="watch")
@folder_argument
@folder_scope_option
@date_option
@pass_ctx
def mem_watch(ctx: Ctx, folder: str, scope: str | None, date: str | None) -> None:
    """Keep DIR and the memory in step until Ctrl-C or SIGTERM: every saved edit in DIR
    becomes a new state, searchable at once; a state made elsewhere is written to DIR. An
    empty (or missing) DIR gets the memory exported first; -q prints problems only."""
    import signal
    import threading

    from memory.folder import Watch

    quiet = ctx.quiet
    stop = threading.Event()

    def say(line: str) -> None:
        if not quiet:
            click.echo(line)

    def problem(line: str) -> None:
        from casapp.cli.context import warn

        warn(line)

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    with ctx.open_store() as store:
        watch = Watch(store, folder, scope, date=lambda: _date(date), report=say, problem=problem)
        before = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            say(f"{watch.scope}: watching {shown(folder)} (Ctrl-C to stop)")
            watch.run(stop)
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)


# --- one entry by its id (`memory.edits`) --------------------------------------------------------


def _cut_note(secrets: tuple[str, ...]) -> str:
    return f" (secret cut out: {', '.join(secrets)})" if secrets else ""


@mem_group.command(name="get")
@click.argument("ident", metavar="ID")
@scope_option
@click.option("--at", "at", metavar="DIGEST", help="An earlier state ('cas mem log').")
@json_option
@pass_ctx
def mem_get(ctx: Ctx, ident: str, scope: str, at: str | None, as_json: bool) -> None:
    """Print the entry of SCOPE that ID names: an entry's id (e-xxxxxx), DATE.N (the Nth entry
    of that day's log), MEMORY.N or fact:KEY (exit 1 when none is there)."""
    from memory import edits
    from memory.state import read_state

    with ctx.open_store(readonly=True) as store:
        state = read_state(store, scope, _digest(at)) if at is not None else None
        entry = edits.get(store, scope, ident, state)
    if as_json:
        emit_report(entry)
        return
    click.echo(entry.text)


@mem_group.command(name="edit")
@click.argument("ident", metavar="ID")
@click.argument("words", nargs=-1, metavar="TEXT|-")
@scope_option
@date_option
@json_option
@pass_ctx
def mem_edit(
    ctx: Ctx, ident: str, words: tuple[str, ...], scope: str, date: str | None, as_json: bool
) -> None:
    """Replace the text of the entry ID of SCOPE with TEXT (or stdin, with -); its id stays
    (an entry without one gets one). fact:KEY sets that fact."""
    from memory import edits

    edits.parse_id(ident)  # a malformed id before reading stdin
    text = _text(words)
    with ctx.open_store() as store:
        done = edits.edit(store, scope, ident, text, date=_date(date))
    if as_json:
        emit_report(done)
    elif not ctx.quiet:
        click.echo(f"edited {done.id} in {done.scope} {done.path}{_cut_note(done.secrets)}")


@mem_group.command(name="delete")
@click.argument("ident", metavar="ID")
@scope_option
@date_option
@json_option
@pass_ctx
def mem_delete(ctx: Ctx, ident: str, scope: str, date: str | None, as_json: bool) -> None:
    """Remove the entry ID from SCOPE's memory (a log left empty goes too); the history keeps
    it ('cas mem rollback'). fact:KEY deletes that fact."""
    from memory import edits

    with ctx.open_store() as store:
        done = edits.delete(store, scope, ident, date=_date(date))
    if as_json:
        emit_report(done)
    elif not ctx.quiet:
        click.echo(f"deleted {done.id} from {done.scope} {done.path}")


COMMANDS = [mem_group]
