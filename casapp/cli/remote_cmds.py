"""Commands on remotes: remote add/list/remove/verify, push, pull.

boto3 is imported only by the commands that talk to a remote (through `cas.remote.sync`), so the
other commands do not pay for it at start-up.
"""

from __future__ import annotations

import click

from cas.digest import Digest
from cas.display import human_bytes, one_line, shown
from cas.errors import VerifyFailed
from cas.locate import pack_path
from cas.progress import Progress
from cas.remote.config import (
    OPTION,
    Remote,
    add_remote,
    choose_remote,
    list_remotes,
    make_remote,
    parse_setting,
    remove_remote,
)
from cas.store import Store
from casapp.cli._common import CasGroup, json_option, pass_ctx, project_packs
from casapp.cli.context import Ctx, emit_json, emit_report, project_root, warn

jobs_option = click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 64),
    default=8,
    show_default=True,
    help="Transfers in parallel.",
)


def _split(store: Store, args: tuple[str, ...]) -> tuple[Remote, list[str]]:
    """The remote (the first argument when it names one, else the only one configured) and the
    remaining arguments."""
    if args:
        known = {r.name: r for r in list_remotes(store)}
        if args[0] in known:
            return known[args[0]], list(args[1:])
    return choose_remote(store, None), list(args)


def _requests_line(requests: dict[str, int]) -> str:
    total = sum(requests.values())
    parts = ", ".join(f"{op} {n}" for op, n in requests.items())
    return f"{total} requests ({parts})" if parts else "0 requests"


def _rate(nbytes: int, seconds: float) -> str:
    return f"{human_bytes(nbytes)} in {seconds:.1f}s ({human_bytes(nbytes / max(seconds, 1e-3))}/s)"


@click.group(name="remote", cls=CasGroup)
def remote_group() -> None:
    """Remotes: S3-compatible object storage to push packs to and pull them from.

    Credentials are never stored: they come from the standard AWS chain (AWS_ACCESS_KEY_ID and
    AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws, instance roles)."""


@remote_group.command(name="add")
@click.argument("name")
@click.argument("url", metavar="s3://BUCKET[/PREFIX]")
@click.option("--endpoint", metavar="URL", help="An S3-compatible server (MinIO, SeaweedFS...).")
@click.option("--region", metavar="REGION", help="The bucket's region (default: the AWS chain's).")
@click.option("--profile", metavar="PROFILE", help="An AWS profile to take credentials from.")
@click.option(
    "--connect-timeout", metavar="SECONDS", help="Wait this long for a connection [default: 5s]."
)
@click.option(
    "--read-timeout", metavar="SECONDS", help="Wait this long for an answer [default: 15s]."
)
@click.option("--attempts", metavar="N", help="Tries per request [default: 3].")
@click.option(
    "--max-blob",
    metavar="SIZE",
    help="The largest blob to accept from this remote [default: 4GiB].",
)
@click.option(
    "--pack-size",
    metavar="SIZE",
    help="Fill the pack objects a push uploads to about this size [default: 16MiB].",
)
@click.option(
    "--lock-wait",
    metavar="SECONDS",
    help="Wait up to this long for a lock held by a gc (or, for a gc, by a push) [default: 0].",
)
@pass_ctx
def remote_add(
    ctx: Ctx,
    name: str,
    url: str,
    endpoint: str | None,
    region: str | None,
    profile: str | None,
    connect_timeout: str | None,
    read_timeout: str | None,
    attempts: str | None,
    max_blob: str | None,
    pack_size: str | None,
    lock_wait: str | None,
) -> None:
    """Add a remote called NAME at s3://BUCKET/PREFIX.

    Credentials never go in the URL or the endpoint: they come from the standard AWS chain.
    Each setting can be overridden for a run by CAS_REMOTE_CONNECT_TIMEOUT,
    CAS_REMOTE_READ_TIMEOUT, CAS_REMOTE_ATTEMPTS, CAS_REMOTE_MAX_BLOB, CAS_REMOTE_PACK_SIZE or
    CAS_REMOTE_LOCK_WAIT."""
    given = {
        key: None if text is None else parse_setting(key, text, OPTION[key])
        for key, text in (
            ("connect_timeout", connect_timeout),
            ("read_timeout", read_timeout),
            ("attempts", attempts),
            ("max_blob", max_blob),
            ("pack_size", pack_size),
            ("lock_wait", lock_wait),
        )
    }
    remote = make_remote(
        name,
        url,
        endpoint=endpoint,
        region=region,
        profile=profile,
        connect_timeout=given["connect_timeout"],
        read_timeout=given["read_timeout"],
        attempts=None if given["attempts"] is None else int(given["attempts"]),
        max_blob=None if given["max_blob"] is None else int(given["max_blob"]),
        pack_size=None if given["pack_size"] is None else int(given["pack_size"]),
        lock_wait=given["lock_wait"],
    )
    with ctx.open_store() as store:
        add_remote(store, remote)
    if not ctx.quiet:
        click.echo(f"added remote {shown(remote.name)} -> {shown(remote.url)}")


@remote_group.command(name="list")
@json_option
@pass_ctx
def remote_list(ctx: Ctx, as_json: bool) -> None:
    """List the configured remotes."""
    with ctx.open_store(readonly=True) as store:
        remotes = list_remotes(store)
    if as_json:
        emit_json([r.as_json() for r in remotes])
        return
    for r in remotes:
        fields = r.as_json()
        extra = [
            f"{key}={fields[key]}"
            for key in ("endpoint", "region", "profile", *OPTION)
            if fields.get(key) is not None
        ]
        click.echo("  ".join(shown(str(x)) for x in [r.name, r.url, *extra]))


@remote_group.command(name="remove")
@click.argument("name")
@pass_ctx
def remote_remove(ctx: Ctx, name: str) -> None:
    """Forget the remote NAME (nothing on the remote is touched)."""
    with ctx.open_store() as store:
        remove_remote(store, name)
    if not ctx.quiet:
        click.echo(f"removed remote {shown(name)}")


@remote_group.command(name="unlock")
@click.argument("name", required=False)
@pass_ctx
def remote_unlock(ctx: Ctx, name: str | None) -> None:
    """Remove every lock object of the remote: after a gc, push or pull was killed, when you
    know none is running (a dead process's lock also goes stale by itself in 10 minutes)."""
    from cas.remote.sync import unlock

    with ctx.open_store(readonly=True) as store:
        remote = choose_remote(store, name)
    removed = unlock(remote)
    if not ctx.quiet:
        click.echo(f"removed {removed} lock objects")


@remote_group.command(name="verify")
@click.argument("name", required=False)
@click.option("--deep", is_flag=True, help="Download and re-hash every blob and chunk.")
@jobs_option
@json_option
@pass_ctx
def remote_verify(ctx: Ctx, name: str | None, deep: bool, jobs: int, as_json: bool) -> None:
    """Check that every blob the remote's manifests reference is on the remote; exit 1 if not."""
    from cas.remote.sync import verify_remote

    with ctx.open_store(readonly=True) as store:
        remote = choose_remote(store, name)
        with Progress("verifying", enabled=ctx.progress) as bar:
            report = verify_remote(store, remote, deep, jobs=jobs, progress=bar.sink)
    if as_json:
        emit_report(report)
    else:
        for p in report.problems:
            click.echo(one_line(f"{p.kind:<8} {p.what}: {p.detail}"))
        depth = "deep" if deep else "listed"
        click.echo(
            f"remote {report.remote}: {report.manifests} manifests, {report.blobs} blobs, "
            f"{report.chunks} chunks checked ({depth}); {len(report.problems)} problems; "
            f"{_requests_line(report.requests)}"
        )
    if report.problems:
        raise VerifyFailed(len(report.problems))


def remote_gc(
    ctx: Ctx,
    name: str,
    *,
    grace: float,
    dry_run: bool,
    keep: list[Digest],
    as_json: bool,
    jobs: int = 8,
) -> None:
    """``cas gc --remote NAME``: what the remote's manifests do not reference goes, once older
    than the grace period; sparse packs are rewritten (see `cas.remote.gc`)."""
    from cas.remote.sync import collect_remote

    with ctx.open_store(readonly=True) as store:
        remote = choose_remote(store, name)
        with Progress("gc: copying", enabled=ctx.progress) as bar:
            report = collect_remote(
                store,
                remote,
                grace_s=grace,
                dry_run=dry_run,
                keep=keep,
                jobs=jobs,
                progress=bar.sink,
            )
    if as_json:
        emit_report(report)
        return
    verb = "would free" if dry_run else "freed"
    click.echo(
        f"remote {report.remote}: {verb} {human_bytes(report.bytes_freed)} of "
        f"{human_bytes(report.bytes_before)}: {report.packs_deleted} packs deleted, "
        f"{report.packs_repacked} repacked ({report.frames_copied} frames copied into "
        f"{report.packs_written} packs), {report.loose_deleted} loose objects deleted and "
        f"{report.loose_packed} packed; kept {report.live_blobs} blobs and {report.live_chunks} "
        f"chunks of {report.manifests} manifests, {report.kept_by_grace} objects within the "
        f"grace period; {_requests_line(report.requests)}"
    )
    if report.stale_locks and not ctx.quiet:
        warn(f"note: removed {report.stale_locks} stale locks of processes that died")


@click.command()
@click.argument("args", nargs=-1, metavar="[NAME] [MANIFEST]...")
@jobs_option
@json_option
@pass_ctx
def push(ctx: Ctx, args: tuple[str, ...], jobs: int, as_json: bool) -> None:
    """Upload packs and every blob they reach that the remote lacks.

    NAME is a configured remote (default: the only one). MANIFEST is a manifest file, a pack
    name under manifests/ of this project or a digest (default: every pack there)."""
    from casapp.project import Project

    with ctx.open_store() as store, Project(project_root(), store) as project:
        remote, specs = _split(store, args)
        with Progress("pushing", enabled=ctx.progress) as bar:
            report = project.push(remote.name, specs, jobs=jobs, progress=bar.sink)
    if as_json:
        emit_report(report)
        return
    for m in report.manifests:
        click.echo(f"{m['digest']}  {shown(m['name'])} ({m['status']})")
    if not ctx.quiet:
        click.echo(
            f"pushed to {report.remote} ({report.url}): {report.blobs_uploaded} blobs and "
            f"{report.chunks_uploaded} chunks uploaded in {report.packs_uploaded} packs, "
            f"{report.blobs_present} of "
            f"{report.blobs_referenced} blobs already there; "
            f"{_rate(report.bytes_uploaded, report.seconds)}; {_requests_line(report.requests)}"
        )


@click.command()
@click.argument("args", nargs=-1, metavar="[NAME] [MANIFEST]...")
@click.option("--all", "everything", is_flag=True, help="Every pack on the remote.")
@click.option("--force", is_flag=True, help="Replace local manifest files that differ.")
@jobs_option
@json_option
@pass_ctx
def pull(
    ctx: Ctx, args: tuple[str, ...], everything: bool, force: bool, jobs: int, as_json: bool
) -> None:
    """Download what the local store lacks, re-hashing every byte; exit 1 on anything bad.

    NAME is a configured remote (default: the only one). MANIFEST is a pack name on the remote,
    a digest, or a local manifest file (its blobs only). Default: the blobs of every pack in
    manifests/ of this project; --all: every pack on the remote, written there."""
    from casapp.project import Project

    folder = project_packs()
    with ctx.open_store() as store, Project(project_root(), store) as project:
        remote, specs = _split(store, args)
        with Progress("pulling", enabled=ctx.progress) as bar:
            report = project.pull(
                remote.name, specs, everything=everything, force=force, jobs=jobs,
                progress=bar.sink,
            )  # fmt: skip
    if as_json:
        emit_report(report)
        return
    for m in report.manifests:
        click.echo(f"{m['digest']}  {shown(m['name'])} ({m['status']})")
        if m["status"] == "kept-local":
            kept = shown(str(pack_path(folder, m["name"])))
            warn(f"{kept} differs from the remote's: kept (--force replaces)")
    if not ctx.quiet:
        click.echo(
            f"pulled from {report.remote} ({report.url}): {report.blobs_downloaded} blobs and "
            f"{report.chunks_downloaded} chunks downloaded, {report.blobs_present} of "
            f"{report.blobs_referenced} blobs already here; "
            f"{_rate(report.bytes_downloaded, report.seconds)}; {_requests_line(report.requests)}"
        )


COMMANDS = [remote_group, push, pull]
