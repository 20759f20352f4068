"""Commands that keep a store healthy: verify, gc, pin, unpin, pins."""

from __future__ import annotations

import re
from pathlib import Path

import click

from cas import roots as roots_mod
from cas.digest import Digest
from cas.display import echoed, human_bytes, one_line, shown
from cas.errors import StoreAccessError, StoreDamaged, UsageError, VerifyFailed
from cas.gc import DEFAULT_LEASE_WAIT_S, GcReport
from cas.locate import pack_digest
from cas.progress import Progress
from cas.store import Store
from cas.verify import VerifyReport, verify
from casapp.cli._common import json_option, pass_ctx, project_packs
from casapp.cli.context import Ctx, emit_json, emit_report, project_root, warn

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
_SUBSET = re.compile(r"(\d+)/(\d+)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``: 90s, 10m, 1h, 2d, 500ms, or a bare number of seconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise click.BadParameter(
            f"{echoed(text)} is not a duration: use forms like 0, 90s, 10m, 1h, 2d"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else parse_duration(value)


def _subset(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> tuple[int, int] | None:
    if value is None:
        return None
    match = _SUBSET.fullmatch(value.strip())
    if match is None or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise click.BadParameter(f"{echoed(value)}: expected N/T with 1 <= N <= T, e.g. 3/7")
    return int(match.group(1)), int(match.group(2))


roots_option = click.option(
    "--roots",
    "extra_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Also take every *.pack below DIR as a root, for this run (repeatable).",
)


def _open_for_verify(ctx: Ctx) -> Store:
    # Verification times are recorded when the store is writable; reading is enough to verify.
    try:
        return ctx.open_store()
    except StoreAccessError:
        return ctx.open_store(readonly=True)


@click.command(name="verify")
@click.argument("targets", nargs=-1, metavar="[MANIFEST|DIGEST]...")
@click.option("--all", "all_blobs", is_flag=True, help="Also check every blob in the store.")
@click.option(
    "--subset", metavar="N/T", callback=_subset, help="Check only slice N of T of the blobs."
)
@click.option(
    "--max-duration",
    metavar="DURATION",
    callback=_duration,
    help="Stop starting new blobs after this long (the stalest go first).",
)
@click.option(
    "--remote",
    metavar="NAME",
    help="Check the remote NAME instead: every blob its manifests reference is there.",
)
@click.option("--deep", is_flag=True, help="With --remote: download and re-hash every object.")
@roots_option
@json_option
@pass_ctx
def verify_cmd(
    ctx: Ctx,
    targets: tuple[str, ...],
    all_blobs: bool,
    subset: tuple[int, int] | None,
    max_duration: float | None,
    remote: str | None,
    deep: bool,
    extra_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Check that packs are whole: manifests decode, every blob they reference is present and
    re-hashes to its digest. No argument: every manifest under manifests/ (beside the store, of
    the project here, and in the recorded folders) and every pin.
    With --remote NAME, the same for a remote. Exit 1 with one line per problem."""
    if remote is not None:
        if targets or all_blobs or subset or max_duration is not None or extra_dirs:
            raise UsageError(
                "--remote checks a whole remote: drop MANIFEST, --all, --subset, "
                "--max-duration and --roots"
            )
        from casapp.cli.remote_cmds import remote_verify

        click.get_current_context().invoke(remote_verify, name=remote, deep=deep, as_json=as_json)
        return
    if deep:
        raise UsageError("--deep goes with --remote NAME (a local verify always re-hashes)")
    try:
        with _open_for_verify(ctx) as store, Progress("verifying", enabled=ctx.progress) as bar:
            report = verify(
                store,
                targets,
                all_blobs=all_blobs,
                extra_dirs=extra_dirs,
                project_dir=project_packs(),
                subset=subset,
                max_duration_s=max_duration,
                progress=bar.sink,
            )
    except StoreDamaged as exc:
        # Every problem the walk of the data file found, then the one-line error (exit 2).
        if as_json:
            emit_json({"ok": False, "damaged": list(exc.details), "problems": []})
        else:
            for line in exc.details:
                click.echo(f"-  damaged store: {one_line(line)}")
        raise
    if as_json:
        emit_report(report)
    else:
        for problem in report.problems:
            click.echo(one_line(problem.line()))
        click.echo(_verify_summary(report))
    if report.not_reached and not ctx.quiet and not as_json:
        warn(
            f"note: {report.not_reached} blobs not reached before the time limit; "
            "the next run starts with them"
        )
    if report.search_index not in ("sound", "absent") and not ctx.quiet and not as_json:
        warn(f"note: {report.search_index}")
    if report.problems:
        raise VerifyFailed(len(report.problems))


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _verify_summary(report: VerifyReport) -> str:
    parts = [
        f"verified {_n(report.checked, 'blob')} ({human_bytes(report.bytes_checked)}) of "
        f"{_n(report.manifests, 'manifest')} and {_n(report.pins, 'pin')} "
        f"in {report.seconds:.1f} s"
    ]
    if report.subset is not None:
        parts.append(
            f"slice {report.subset[0]}/{report.subset[1]} ({report.outside_subset} outside)"
        )
    if report.not_reached:
        parts.append(f"{report.not_reached} not reached (time limit)")
    verdict = "ok" if report.ok else _n(len(report.problems), "problem")
    return ", ".join(parts) + f": {verdict}"


@click.command(name="gc")
@click.option(
    "--grace",
    default="1h",
    callback=_duration,
    show_default=True,
    metavar="DURATION",
    help="Keep unreferenced blobs last referenced within this long (0 allowed).",
)
@click.option("--dry-run", is_flag=True, help="Report what would go; delete nothing.")
@click.option("--keep", multiple=True, metavar="DIGEST", help="Also keep DIGEST (repeatable).")
@click.option(
    "--remote",
    metavar="NAME",
    help="Collect on remote NAME instead: what its manifests do not reference, and repack.",
)
@click.option(
    "--compact", is_flag=True, help="Then give freed space back to the file system (exclusive)."
)
@click.option(
    "--lease-wait",
    default=f"{DEFAULT_LEASE_WAIT_S:.0f}s",
    callback=_duration,
    show_default=True,
    metavar="DURATION",
    help="How long to wait for packs in progress before refusing.",
)
@roots_option
@json_option
@pass_ctx
def gc_cmd(
    ctx: Ctx,
    grace: float,
    dry_run: bool,
    keep: tuple[str, ...],
    remote: str | None,
    compact: bool,
    lease_wait: float,
    extra_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Delete blobs no manifest, pin or --keep references, once older than the grace period."""
    kept = [Digest.parse(k) for k in keep]
    if remote is not None:
        if compact or extra_dirs:
            raise UsageError("--remote collects on the remote only: drop --compact and --roots")
        from casapp.cli.remote_cmds import remote_gc

        remote_gc(ctx, remote, grace=grace, dry_run=dry_run, keep=kept, as_json=as_json)
        return
    compacted: tuple[int, int] | None = None
    from casapp.project import Project

    with (
        ctx.open_store() as store,
        Project(project_root(), store) as project,
        Progress("gc", enabled=ctx.progress, stages=True) as bar,
    ):
        report = project.gc(
            grace_s=grace, dry_run=dry_run, keep=kept, extra_dirs=extra_dirs,
            lease_wait_s=lease_wait, progress=bar.sink,
        )  # fmt: skip
        bar.close()
        _print_gc(report, as_json=as_json, quiet=ctx.quiet)
        if compact and not dry_run:
            compacted = store.compact()
    if compacted is not None and not as_json:
        before, after = compacted
        click.echo(f"compacted: {human_bytes(before)} -> {human_bytes(after)}")
    if as_json:
        size = None if compacted is None else {"before": compacted[0], "after": compacted[1]}
        emit_report(report, compacted=size)


def _print_gc(report: GcReport, *, as_json: bool, quiet: bool) -> None:
    if as_json:
        return
    if report.dry_run:
        for digest in report.digests:
            click.echo(f"would prune {digest}")
    verb = "would prune" if report.dry_run else "pruned"
    click.echo(
        f"{verb} {_n(report.pruned, 'blob')} ({human_bytes(report.bytes_freed)}) and "
        f"{_n(report.chunks_pruned, 'chunk')} ({human_bytes(report.chunk_bytes_freed)}); "
        f"kept {report.reachable} reachable from {_n(report.manifests, 'manifest')} and "
        f"{_n(report.pins, 'pin')}, {report.kept_by_grace} unreferenced within the grace period"
    )
    if report.bytes_given_back:
        click.echo(f"gave {human_bytes(report.bytes_given_back)} of free pages back to the disk")
    if quiet:
        return
    if report.spared_late:
        warn(f"note: {report.spared_late} blobs were referenced or stored again while gc ran")
    if report.stale_leases:
        warn(f"note: cleared {report.stale_leases} stale leases of packs that died")
    if report.live_leases:
        warn(f"note: {report.live_leases} packs in progress: a real run would wait for them")


def _digest_of_target(target: str) -> Digest:
    """A digest, or the digest of a manifest file or of a pack of the project (`cas.locate`)."""
    return pack_digest(target, project_packs())


@click.command(name="pin")
@click.argument("name", required=False)
@click.argument("target", required=False, metavar="DIGEST|MANIFEST")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Instead: take every *.pack below DIR as a root from now on.",
)
@pass_ctx
def pin_cmd(ctx: Ctx, name: str | None, target: str | None, folder: Path | None) -> None:
    """Keep a blob (a pack's whole content, if it is a manifest) whatever gc finds: NAME DIGEST."""
    with ctx.open_store() as store:
        if folder is not None:
            if name or target:
                raise UsageError("give either NAME DIGEST or --dir DIR, not both")
            where = roots_mod.add_root_dir(store, folder)
            click.echo(f"root folder {shown(str(where))}")
            return
        if not name or not target:
            raise UsageError("usage: cas pin NAME DIGEST (or cas pin --dir DIR)")
        digest = _digest_of_target(target)
        old = roots_mod.pin(store, name, digest)
    was = f" (was {old})" if old is not None and old != digest else ""
    click.echo(f"pinned {shown(name)} {digest}{was}")


@click.command(name="unpin")
@click.argument("name", required=False)
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Instead: forget a root folder.",
)
@pass_ctx
def unpin_cmd(ctx: Ctx, name: str | None, folder: Path | None) -> None:
    """Forget a pin (the blob stays until a gc finds nothing else keeps it)."""
    with ctx.open_store() as store:
        if folder is not None:
            where = roots_mod.remove_root_dir(store, folder)
            click.echo(f"forgot root folder {shown(str(where))}")
            return
        if not name:
            raise UsageError("usage: cas unpin NAME (or cas unpin --dir DIR)")
        old = roots_mod.unpin(store, name)
    click.echo(f"unpinned {shown(name)} {old}")


@click.command(name="pins")
@json_option
@pass_ctx
def pins_cmd(ctx: Ctx, as_json: bool) -> None:
    """List pins and recorded root folders."""
    with ctx.open_store(readonly=True) as store:
        pinned = roots_mod.pins(store)
        dirs = roots_mod.recorded_dirs(store)
    names = sorted(pinned, key=str.encode)
    missing = [d for d in dirs if not d.is_dir()]
    if as_json:
        emit_json(
            {
                "pins": {n: str(pinned[n]) for n in names},
                "root_dirs": [str(d) for d in dirs],
                "missing_root_dirs": [str(d) for d in missing],
            }
        )
        return
    for n in names:
        click.echo(f"{pinned[n]}  {shown(n)}")
    for d in dirs:
        state = "  (missing: gc refuses until it is back or unpinned)" if d in missing else ""
        click.echo(f"dir  {shown(str(d))}{state}")
    if missing and not ctx.quiet:
        warn(
            "note: forget a folder that is gone for good with "
            f"'cas unpin --dir {shown(str(missing[0]))}'"
        )


COMMANDS = [verify_cmd, gc_cmd, pin_cmd, unpin_cmd, pins_cmd]
