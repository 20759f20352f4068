"""Commands on blobs: init, put, get, has, stat, ls, info."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cas.digest import Digest
from cas.display import human_bytes, shown
from cas.errors import EXIT_PROBLEM, EXIT_USAGE, CorruptBlob, InputError, OutputError
from cas.fsutil import write_output
from cas.progress import Progress
from cas.store import DEFAULT_LEVEL, Store
from cas.tree import Skipped, regular_files
from casapp.cli._common import json_option, parse_digests, pass_ctx
from casapp.cli.context import Ctx, emit_json, warn

if TYPE_CHECKING:
    from casapp.newproject import Started


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--level",
    type=click.IntRange(1, 22),
    default=DEFAULT_LEVEL,
    show_default=True,
    help="zstd compression level for new blobs.",
)
@click.option(
    "--store-only", is_flag=True, help="Create the store and nothing else (no cas.toml, no git)."
)
@json_option
@pass_ctx
def init(ctx: Ctx, path: Path | None, level: int, store_only: bool, as_json: bool) -> None:
    """Create a store (default: .cas in the current directory, or --store) and start a project.

    In DIR (or the current directory) it writes a commented cas.toml, '.cas/' in .gitignore and
    '*.pack diff=cas' in .gitattributes, and in a git work tree sets the diff driver
    (diff.cas.textconv) in the repository's config; an existing file is never overwritten. With
    --store and no DIR, or --store-only, only the store is made."""
    from casapp.newproject import start_project

    where = (
        path / ".cas"
        if path is not None
        else (Path(ctx.store_opt) if ctx.store_opt else Path.cwd() / ".cas")
    )
    folder = None if store_only or (path is None and ctx.store_opt) else (path or Path.cwd())
    folder = folder.absolute() if folder is not None else None
    with Store.create(where, level=level) as store:
        started = start_project(folder) if folder is not None else None
        if as_json:
            emit_json({"store": str(store.path), "level": store.level} | _started_json(started))
        else:
            click.echo(f"initialized empty cas store in {shown(str(store.path))}")
            if started is not None and not ctx.quiet:
                _print_started(started)


def _started_json(started: Started | None) -> dict[str, object]:
    if started is None:
        return {}
    return {
        "project": str(started.folder),
        "written": started.written,
        "appended": started.appended,
        "left": [{"file": f, "why": why} for f, why in started.left],
        "diff_driver": started.driver,
    }


def _print_started(started: Started) -> None:
    if started.written:
        click.echo(f"wrote {', '.join(started.written)}")
    if started.appended:
        click.echo(f"appended a line to {', '.join(started.appended)}")
    for file, why in started.left:
        click.echo(f"left {file} alone ({why})")
    if started.driver is not None:
        click.echo(f"git shows packs as text: diff.cas.textconv = {shown(started.driver)}")
    elif started.driver_note is not None:
        click.echo(f"git diff driver not set: {shown(started.driver_note)}")


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("-r", "--recursive", is_flag=True, help="Store every regular file below each DIR.")
@json_option
@pass_ctx
def put(ctx: Ctx, paths: tuple[str, ...], recursive: bool, as_json: bool) -> None:
    """Store FILE... (or - for standard input) and print each digest.

    With -r, store every regular file below each DIR and print 'digest  path' lines."""
    with ctx.open_store() as store:
        if recursive:
            code = _put_recursive(ctx, store, paths, as_json)
        else:
            code = _put_files(store, paths, as_json)
    if code:
        sys.exit(code)


def _put_files(store: Store, paths: tuple[str, ...], as_json: bool) -> int:
    # Check every path first so that a typo in the last argument stores nothing.
    for p in paths:
        if p != "-" and not os.path.lexists(p):
            raise InputError(p, "no such file")
        if p != "-" and os.path.isdir(p):
            raise InputError(p, "is a directory", "use 'cas put -r' to store a directory's files")
    results: list[tuple[str, Digest]] = []
    with store.batch() as batch:
        for p in paths:
            digest = batch.put_stream(sys.stdin.buffer) if p == "-" else batch.put_file(p)
            results.append((p, digest))
    if as_json:
        emit_json([{"path": p, "digest": str(d)} for p, d in results])
    else:
        for _, d in results:
            click.echo(str(d))
    return 0


def _put_recursive(ctx: Ctx, store: Store, dirs: tuple[str, ...], as_json: bool) -> int:
    for d in dirs:
        if not os.path.isdir(d):
            problem = "no such directory" if not os.path.lexists(d) else "is not a directory"
            raise InputError(d, problem, "'cas put -r' takes directories")
    failures = 0
    skipped: list[Skipped] = []
    results: list[dict[str, str]] = []

    def files() -> list[str]:
        out: list[str] = []
        for d in dirs:
            for item in regular_files(d, skip=store.path):
                if isinstance(item, Skipped):
                    skipped.append(item)
                else:
                    out.append(item)
        return out

    todo = files()
    # Lines are printed once the batch has committed, so every digest shown is really stored.
    with Progress("storing", total=len(todo), enabled=ctx.progress) as bar, store.batch() as batch:
        for path, outcome in batch.put_files(todo, follow_symlinks=False):
            bar.advance()
            if isinstance(outcome, InputError):
                failures += 1
                warn(f"error: {_input_error(outcome)}")
                continue
            results.append({"path": os.fspath(path), "digest": str(outcome)})
    if not as_json:
        for row in results:
            click.echo(f"{row['digest']}  {shown(row['path'])}")
    for item in skipped:
        if not ctx.quiet:
            warn(f"skipped {shown(item.path)}: {item.reason}")
    if as_json:
        emit_json(
            {
                "stored": results,
                "failed": failures,
                "skipped": [{"path": s.path, "reason": s.reason} for s in skipped],
            }
        )
    return EXIT_USAGE if failures else 0


@click.command()
@click.argument("digest")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to FILE instead of stdout: a file is replaced only once the content verified; "
    "a device, FIFO or /dev/stdout is written in place; a symlink is followed.",
)
@click.option("--no-verify", is_flag=True, help="Skip re-hashing (faster, trusts the store).")
@pass_ctx
def get(ctx: Ctx, digest: str, output: Path | None, no_verify: bool) -> None:
    """Write a blob's content to stdout or FILE, streaming, re-hashing as it reads."""
    wanted_digest = Digest.parse(digest)
    with (
        ctx.open_store(readonly=True) as store,
        store.open(wanted_digest, verify=not no_verify) as reader,
    ):
        if output is None:
            out = sys.stdout.buffer
            try:
                for piece in reader.chunks():
                    out.write(piece)
                out.flush()
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise OutputError("the output", exc.strerror or str(exc)) from None
            return
        write_output(output, reader.chunks())


@click.command()
@click.argument("digests", nargs=-1, required=True)
@json_option
@pass_ctx
def has(ctx: Ctx, digests: tuple[str, ...], as_json: bool) -> None:
    """Tell which DIGESTs are in the store; exit 1 if any is missing."""
    parsed = parse_digests(digests)
    with ctx.open_store(readonly=True) as store:
        present = store.has_many(parsed)
    if as_json:
        emit_json([{"digest": str(d), "present": d in present} for d in parsed])
    else:
        for d in parsed:
            click.echo(f"{d}  {'present' if d in present else 'missing'}")
    if len(present) != len(set(parsed)):
        sys.exit(EXIT_PROBLEM)


@click.command()
@click.argument("digest")
@json_option
@pass_ctx
def stat(ctx: Ctx, digest: str, as_json: bool) -> None:
    """Show a blob's sizes, codec, chunks and times."""
    with ctx.open_store(readonly=True) as store:
        st = store.stat(Digest.parse(digest))
    fields = {
        "digest": str(st.digest),
        "raw_size": st.raw_size,
        "stored_size": st.stored_size,
        "codec": st.codec,
        "chunks": st.chunks,
        "first_stored_ns": st.first_stored_ns,
        "last_referenced_ns": st.last_referenced_ns,
    }
    if as_json:
        emit_json(fields)
    else:
        width = max(len(k) for k in fields)
        for key, value in fields.items():
            click.echo(f"{key:<{width}}  {value}")


@click.command(name="ls")
@json_option
@pass_ctx
def ls_cmd(ctx: Ctx, as_json: bool) -> None:
    """List every blob: digest, raw size, stored size (exit 1 if a metadata row is damaged)."""
    damaged: list[Digest] = []
    with ctx.open_store(readonly=True) as store:
        rows = store.iter_meta(damaged=damaged)
        if as_json:
            emit_json(
                [{"digest": str(d), "raw_size": r, "stored_size": s} for d, r, s, _f, _l in rows]
            )
        else:
            for d, raw, stored, _first, _last in rows:
                click.echo(f"{d}  {raw:>12}  {stored:>12}")
    if damaged:
        more = f" (and {len(damaged) - 1} more; 'cas verify --all' lists them)"
        raise CorruptBlob(
            str(damaged[0]), "its metadata record is damaged" + (more if len(damaged) > 1 else "")
        )


@click.command()
@json_option
@pass_ctx
def info(ctx: Ctx, as_json: bool) -> None:
    """Store totals: blobs, logical and stored bytes, dedup and compression ratios."""
    with ctx.open_store(readonly=True) as store:
        st = store.stats()
    report = {
        "store": st.path,
        "format": st.format,
        "chunk_size": st.chunk_size,
        "level": st.level,
        "blobs": st.blobs,
        "raw_bytes": st.raw_bytes,
        "stored_bytes": st.stored_bytes,
        "ingested_bytes": st.ingested_bytes,
        "ingested_count": st.ingested_count,
        "file_bytes": st.file_bytes,
        "disk_bytes": st.disk_bytes,
        "dedup_ratio": round(st.dedup_ratio, 4),
        "compression_ratio": round(st.compression_ratio, 4),
    }
    if as_json:
        emit_json(report)
        return
    click.echo(f"store              {shown(str(st.path))} (format {st.format})")
    click.echo(f"blobs              {st.blobs}")
    click.echo(f"logical bytes      {st.raw_bytes} ({human_bytes(st.raw_bytes)})")
    click.echo(f"stored bytes       {st.stored_bytes} ({human_bytes(st.stored_bytes)})")
    click.echo(
        f"file size          {st.file_bytes} ({human_bytes(st.file_bytes)}; "
        f"{human_bytes(st.disk_bytes)} on disk)"
    )
    click.echo(
        f"dedup ratio        {st.dedup_ratio:.2f}x "
        f"({st.ingested_count} puts, {human_bytes(st.ingested_bytes)} offered)"
    )
    click.echo(f"compression ratio  {st.compression_ratio:.2f}x (zstd level {st.level})")


COMMANDS = [init, put, get, has, stat, ls_cmd, info]


def _input_error(exc: InputError) -> str:
    """An unreadable input's line, its path shown safely (`cas.display.shown`)."""
    return f"{shown(exc.path)}: {exc.problem}" + (f" ({exc.hint})" if exc.hint else "")
