"""How fast `cas pack` is, next to git, restic and repomix on the same tree, and to the limits.

    .venv/bin/python -m bench.pack_bench [PATH] [--files N] [--mb M] [--runs K] [--quick]
                                         [--no-peers] [--out DIR]

Without PATH it generates a deterministic synthetic repository (bench/tree.py: 20,000 files and
300 MiB by default); with PATH it packs a copy of that directory (without .git, .cas and
manifests/), so the benchmark may change it. It writes a cas.toml with one scope and one target
unless the tree has a configuration. Then, in rounds, each command in a fresh process:

* cas: ``pack`` cold (an empty store), warm (nothing changed), after 1% of the files changed;
  ``render``; ``verify --all``; ``gc --grace 0`` with about half the store unreferenced;
* peers: ``git add -A`` into an empty repository, ``restic backup`` into an empty repository,
  ``repomix`` (and ``repomix --compress``, once);
* limits: BLAKE3 and zstd alone over the bytes the store keeps.

Prints one table (medians of the rounds, peak RSS per process) and the targets, PASS or MISS.
Exit 0 when every cas command ran (a MISS is a result), 1 when one failed. With ``--out DIR`` the
work happens under DIR and ``results.json`` and ``table.txt`` are left there.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench import tree as treegen
from bench.harness import (
    MIB,
    REPOMIX,
    BenchError,
    Proc,
    clean_env,
    cpu_model,
    ensure_repomix,
    measure,
    note,
    text_table,
    version,
)

RESTIC_MISSING = "restic missing: apt-get install restic"
NOT_AVAILABLE = "not available yet"
CHANGED_SHARE = 0.01
GC_SHARE = 0.5
CHANGE_SEED, GC_SEED = 1, 2
# Files a benchmark must not move or edit: they steer the pack itself.
CONFIG_NAMES = frozenset({"cas.toml", "pyproject.toml", ".gitignore", ".casignore"})
CAS_TOML = """\
# Written by bench/pack_bench.py: the whole tree in one scope, one target.
[scopes.repo]
roots = ["."]

[scopes.repo.targets.claude]
target = 10000
max = 12000
"""

# Targets (issue 5).
INGEST_VS_GIT = 2.0
PACK_VS_REPOMIX = 5.0
WARM_VS_COLD = 20.0
WARM_SECONDS_PER_20K = 1.0
VERIFY_SHARE_OF_LIMIT = 0.5
RSS_LIMIT_MIB = 300


# --- the limits, run as a child process of this script ----------------------------------------


def _pieces(paths: Sequence[str], size: int) -> Iterator[bytes]:
    for path in paths:
        with open(path, "rb") as handle:
            while piece := handle.read(size):
                yield piece


def child_limits(list_file: str, level: int, chunk_size: int) -> dict[str, Any]:
    """BLAKE3 and zstd alone over the listed files, read from the page cache. Pieces are framed
    like the store's (one per file, one per chunk above the chunk size). blake3: one thread per
    core, reading included; zstd -3 and -d: one thread, the calls alone; verify limit: zstd -d
    then blake3 of each piece, one thread per core, over frames already in memory (only the
    frames are kept, so memory is the compressed size)."""
    import blake3
    import zstandard

    with open(list_file, encoding="utf-8") as handle:
        paths = [line.rstrip("\n") for line in handle if line.strip()]
    cores = os.cpu_count() or 1
    shares = [paths[i::cores] for i in range(cores)]

    def hash_files(part: list[str]) -> None:
        for path in part:
            with open(path, "rb") as handle:
                blake3.blake3(handle.read(), max_threads=blake3.blake3.AUTO).digest()

    start = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(hash_files, shares))
    b3 = time.perf_counter() - start

    cctx = zstandard.ZstdCompressor(level=level)
    frames: list[bytes] = []
    raw = 0
    compress = 0.0
    for piece in _pieces(paths, chunk_size):
        start = time.perf_counter()
        frames.append(cctx.compress(piece))
        compress += time.perf_counter() - start
        raw += len(piece)
    dctx = zstandard.ZstdDecompressor()
    start = time.perf_counter()
    for frame in frames:
        dctx.decompress(frame)
    decompress = time.perf_counter() - start

    def check(part: list[bytes]) -> None:
        local = zstandard.ZstdDecompressor()
        for frame in part:
            blake3.blake3(local.decompress(frame)).digest()

    start = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(check, [frames[i::cores] for i in range(cores)]))
    both = time.perf_counter() - start
    return {
        "threads": cores,
        "raw": raw,
        "packed": sum(len(f) for f in frames),
        "blake3": b3,
        "compress": compress,
        "decompress": decompress,
        "verify": both,
    }


# --- rows of the table --------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    kind: str  # cas | stage | peer | limit
    seconds: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    anon: list[int] = field(default_factory=list)
    nbytes: int | None = None
    note: str = ""
    missing: str | None = None  # why there are no numbers

    def add(self, proc: Proc) -> None:
        self.seconds.append(proc.seconds)
        self.cpu.append(proc.cpu_seconds)
        self.rss.append(proc.peak_rss)
        if proc.peak_anon is not None:
            self.anon.append(proc.peak_anon)

    @property
    def measured(self) -> bool:
        return bool(self.seconds) and self.missing is None

    @property
    def median(self) -> float:
        return statistics.median_low(self.seconds)

    @property
    def spread(self) -> float | None:
        if len(self.seconds) < 2 or self.median <= 0:
            return None
        return 100 * (max(self.seconds) - min(self.seconds)) / self.median

    @property
    def peak_rss(self) -> int | None:
        return max(self.rss) if self.rss else None

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "seconds": self.seconds,
            "median_s": self.median if self.seconds else None,
            "cpu_s": self.cpu,
            "peak_rss": self.peak_rss,
            "peak_anon": max(self.anon) if self.anon else None,
            "bytes": self.nbytes,
            "note": self.note,
            "missing": self.missing,
        }


def _num(value: float | None, digits: int = 2) -> str:
    return harness.num(value, digits)


def _cells(r: Row) -> list[str]:
    label = f"  {r.label}" if r.kind == "stage" else r.label
    if not r.measured:
        return [label, "-", "-", "-", "-", "-", "-", "-", r.missing or r.note]
    s = r.median
    mibs = r.nbytes / MIB / s if r.nbytes and s > 0 else None
    return [
        label,
        str(len(r.seconds)),
        _num(s, 3),
        _num(r.spread, 0),
        _num(statistics.median_low(r.cpu)) if r.cpu else "-",
        _num(mibs, 1),
        _num(max(r.rss) / MIB, 1) if r.rss else "-",
        _num(max(r.anon) / MIB, 1) if r.anon else "-",
        r.note,
    ]


TITLES = ["row", "runs", "s", "range%", "cpu s", "MiB/s", "RSS MiB", "anon MiB", "note"]


def table_lines(rows: Iterable[Row]) -> list[str]:
    return text_table([TITLES, *(_cells(r) for r in rows)], note=True)


# --- the tree -----------------------------------------------------------------------------------


@dataclass
class Tree:
    root: Path
    description: str
    files: int = 0  # regular files packed (set after the first cold pack)
    nbytes: int = 0
    packed: list[tuple[str, str]] = field(default_factory=list)  # (path, digest) stored
    packs: list[str] = field(default_factory=list)


def _has_config(root: Path) -> bool:
    if (root / "cas.toml").is_file():
        return True
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return False
    try:
        return "cas" in tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False


def _git_files(top: Path) -> list[str] | None:
    """The files git sees in ``top`` (tracked, and untracked but not ignored), or None when
    ``top`` is not in a git work tree."""
    try:
        done = subprocess.run(
            ["git", "-C", str(top), "ls-files", "-z", "-c", "-o", "--exclude-standard"],
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    names = [n.decode("utf-8", "surrogateescape") for n in done.stdout.split(b"\0") if n]
    return sorted({n for n in names if os.path.lexists(top / n)}, key=lambda n: n.encode())


def copy_tree(top: Path, root: Path) -> str:
    """Copy ``top`` to ``root`` without .git, the store and the manifests: in a git work tree
    only what git sees (so a virtualenv or node_modules it ignores stays behind)."""
    note(f"copying {top} to {root}")
    dropped = (".cas/", "manifests/")
    listed = _git_files(top)
    if listed is None:

        def skip(folder: str, names: list[str]) -> set[str]:
            out = {n for n in names if n == ".git"}
            if Path(folder).resolve() == top:
                out |= {n for n in names if n in (".cas", "manifests")}
            return out

        shutil.copytree(top, root, symlinks=True, ignore=skip)
        return f"a copy of {top} (without .git, .cas, manifests/)"
    for name in listed:
        if name.startswith(dropped):
            continue
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(top / name, target, follow_symlinks=False)
    return f"a copy of the files git sees in {top} (without .cas, manifests/)"


def prepare_tree(source: Path | None, work: Path, files: int, mib: float) -> Tree:
    root = work / "tree"
    if source is None:
        note(f"generating {files:,} files, about {mib:g} MiB, under {root}")
        made = treegen.generate(root, files, int(mib * MIB))
        kinds = ", ".join(
            f"{k} {n:,}" for k, (n, _) in sorted(made.by_kind.items(), key=lambda kv: -kv[1][0])
        )
        description = (
            f"synthetic tree (bench/tree.py, seed {treegen.SEED}): {made.files:,} files, "
            f"{made.bytes / MIB:,.1f} MiB ({kinds}); 1-8 MiB files: {len(made.big)}, "
            f"ignored by .gitignore: {len(made.ignored)}, planted secrets: {len(made.secrets)}"
        )
    else:
        description = copy_tree(source.resolve(), root)
    if not _has_config(root):
        (root / "cas.toml").write_text(CAS_TOML, encoding="utf-8")
        description += "; cas.toml written by the bench (one scope, target 10,000/12,000)"
    # Every file gets one old mtime, so no file is in the stat cache's racy window on the warm
    # run (a file modified within 2 s of a pack is re-read by the next one).
    treegen.set_fixed_mtimes(root)
    return Tree(root, description)


def packed_files(tree: Tree) -> list[str]:
    """Relative paths of the stored regular files a benchmark may edit or move."""
    return [
        p
        for p, _ in tree.packed
        if Path(p).name not in CONFIG_NAMES and not (tree.root / p).is_symlink()
    ]


# --- running ------------------------------------------------------------------------------------


class Runner:
    def __init__(self, work: Path, tree: Tree) -> None:
        self.work = work
        self.tree = tree
        home = work / "home"
        home.mkdir(exist_ok=True)
        self.env = clean_env(home, strip=("CAS_", "GIT_", "RESTIC_"))
        self.env["RESTIC_PASSWORD"] = "pack-bench"
        self.cas = [sys.executable, "-m", "cas", "-q"]

    def measure(self, argv: Sequence[str | os.PathLike[str]], *, devnull: bool = False) -> Proc:
        """One measured process in the tree, after a sync (no row pays for another's
        writeback). ``devnull``: its stdout goes to /dev/null (through ``exec``, so the measured
        process is still the command itself)."""
        os.sync()
        if devnull:
            argv = ["sh", "-c", 'exec "$@" >/dev/null', "sh", *argv]
        return measure(argv, self.env, self.tree.root)

    def run(self, argv: Sequence[str | os.PathLike[str]], cwd: Path | None = None) -> str:
        """A set-up step, not measured."""
        done = subprocess.run(
            [os.fspath(a) for a in argv],
            cwd=cwd or self.tree.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            shown = " ".join(os.fspath(a) for a in argv)
            raise BenchError(f"{shown} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def has_command(self, name: str) -> bool:
        argv = [*self.cas, name, "--help"]
        return subprocess.run(argv, env=self.env, capture_output=True, check=False).returncode == 0

    def reset_cas(self) -> None:
        for name in (".cas", "manifests"):
            shutil.rmtree(self.tree.root / name, ignore_errors=True)


# --- one round of cas commands ------------------------------------------------------------------

STAGES = (
    ("scan", "scan"),
    ("ingest", "ingest: hash, store, secret scan"),
    ("tier", "tier: summaries, tokens, budgets, manifest"),
    ("cache", "cache flush"),
)


@dataclass
class Rows:
    cold: Row = field(default_factory=lambda: Row("cas pack (cold)", "cas"))
    stages: dict[str, Row] = field(
        default_factory=lambda: {key: Row(label, "stage") for key, label in STAGES}
    )
    rest: Row = field(default_factory=lambda: Row("start-up, imports, exit", "stage"))
    # Steps inside the stages (cas pack --json "work"): seconds summed over worker threads.
    work: dict[str, Row] = field(default_factory=dict)
    warm: Row = field(default_factory=lambda: Row("cas pack (warm)", "cas"))
    changed: Row = field(default_factory=lambda: Row("cas pack (1% changed)", "cas"))
    render: Row = field(default_factory=lambda: Row("cas render", "cas"))
    verify: Row = field(default_factory=lambda: Row("cas verify --all", "cas"))
    gc: Row = field(default_factory=lambda: Row("cas gc --grace 0", "cas"))
    put: Row = field(default_factory=lambda: Row("cas put -r", "cas"))
    git: Row = field(default_factory=lambda: Row("git add -A", "peer"))
    restic: Row = field(default_factory=lambda: Row("restic backup", "peer"))
    repomix: Row = field(default_factory=lambda: Row("repomix", "peer"))
    compress: Row = field(default_factory=lambda: Row("repomix --compress", "peer"))
    b3: Row = field(default_factory=lambda: Row("blake3", "limit"))
    zstd: Row = field(default_factory=lambda: Row("zstd -3 (1 thread)", "limit"))
    unzstd: Row = field(default_factory=lambda: Row("zstd -d (1 thread)", "limit"))
    limit: Row = field(default_factory=lambda: Row("zstd -d + blake3", "limit"))

    def ordered(self) -> list[Row]:
        return [
            self.cold,
            *self.stages.values(),
            self.rest,
            *(self.work[key] for key in sorted(self.work)),
            self.warm,
            self.changed,
            self.render,
            self.verify,
            self.gc,
            self.put,
            self.git,
            self.restic,
            self.repomix,
            self.compress,
            self.b3,
            self.zstd,
            self.unzstd,
            self.limit,
        ]


def _pack_json(proc: Proc) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _stages(report: dict[str, Any]) -> str:
    """A pack's own stage times, for the note of a row without stage rows (last run's)."""
    timings: dict[str, float] = report["timings"]
    shown = ", ".join(f"{key} {timings[key]:.2f}" for key, _ in STAGES[:3] if key in timings)
    return f"{shown} s"


def _learn_tree(r: Runner, report: dict[str, Any]) -> None:
    """After the first cold pack: which files the store keeps (for edits and for the limits)."""
    tree = r.tree
    tree.packs = [p["name"] for p in report["packs"]]
    seen: dict[str, str] = {}
    for name in tree.packs:
        shown = json.loads(r.run([*r.cas, "show", name, "--json"]))
        for e in shown["entries"]:
            if e["digest"] is not None and e["path"] not in seen:
                seen[e["path"]] = e["digest"]
    tree.packed = sorted(seen.items(), key=lambda kv: kv[0].encode())
    regular = [(p, d) for p, d in tree.packed if not (tree.root / p).is_symlink()]
    tree.files = report["files"]
    tree.nbytes = sum((tree.root / p).stat().st_size for p, _ in regular)


def cas_round(r: Runner, rows: Rows, i: int, available: dict[str, bool]) -> None:
    tree = r.tree
    r.reset_cas()
    note(f"round {i + 1}: cas pack (cold)")
    cold = r.measure([*r.cas, "pack", "--json"])
    report = _pack_json(cold)
    if not tree.packs:
        _learn_tree(r, report)
    rows.cold.add(cold)
    rows.cold.nbytes = tree.nbytes
    mode = report.get("ingest_mode", "threads")
    hidden = len(report["withheld"]) + len(report.get("redacted", []))
    rows.cold.note = f"{report['files']:,} files, {hidden} withheld or redacted; {mode}"
    timings: dict[str, float] = report["timings"]
    for key, row in rows.stages.items():
        if key in timings:
            row.seconds.append(timings[key])
    rows.rest.seconds.append(max(0.0, cold.seconds - sum(timings.values())))
    for key, seconds in report.get("work", {}).items():
        rows.work.setdefault(key, Row(f"  {key}", "stage")).seconds.append(seconds)

    note(f"round {i + 1}: cas pack (warm)")
    warm = r.measure([*r.cas, "pack", "--json"])
    rows.warm.add(warm)
    warm_report = _pack_json(warm)
    rows.warm.note = f"{warm_report['stat_hits']:,} stat hits; {_stages(warm_report)}"

    note(f"round {i + 1}: cas pack (1% changed)")
    chosen = treegen.pick(packed_files(tree), CHANGED_SHARE, CHANGE_SEED)
    edits = treegen.edit_files(tree.root, chosen, "pack_bench")
    try:
        changed = r.measure([*r.cas, "pack", "--json"])
    finally:
        edits.restore()
    rows.changed.add(changed)
    files = "file" if len(chosen) == 1 else "files"
    rows.changed.note = f"{len(chosen):,} {files} changed; {_stages(_pack_json(changed))}"

    note(f"round {i + 1}: cas render")
    # One process per pack; the row adds their times up.
    procs = [r.measure([*r.cas, "render", name], devnull=True) for name in tree.packs]
    rows.render.seconds.append(sum(p.seconds for p in procs))
    rows.render.cpu.append(sum(p.cpu_seconds for p in procs))
    rows.render.rss.append(max(p.peak_rss for p in procs))
    rows.render.anon += [p.peak_anon for p in procs if p.peak_anon is not None]
    rows.render.note = ", ".join(tree.packs) + " (markdown, lite)"

    if available["verify"]:
        note(f"round {i + 1}: cas verify --all")
        verify = r.measure([*r.cas, "verify", "--all", "--json"])
        rows.verify.add(verify)
        checked = json.loads(verify.stdout)
        rows.verify.nbytes = checked["bytes_checked"]
        rows.verify.note = f"{checked['checked']:,} blobs"
    else:
        rows.verify.missing = NOT_AVAILABLE

    if available["gc"]:
        _gc_round(r, rows, i)
    else:
        rows.gc.missing = NOT_AVAILABLE
    r.reset_cas()

    note(f"round {i + 1}: cas put -r")
    store = r.work / "put-store"
    r.run([*r.cas, "--store", store, "init"], cwd=r.work)
    try:
        rows.put.add(r.measure([*r.cas, "--store", store, "put", "-r", tree.root]))
    finally:
        shutil.rmtree(store, ignore_errors=True)
    rows.put.nbytes = tree.nbytes
    rows.put.note = "the same tree into a new store: every file, no ignore rules, no secret scan"


def _gc_round(r: Runner, rows: Rows, i: int) -> None:
    """Half the files leave the tree and the pack is rebuilt: the manifests now reference about
    half of what the store holds. gc then prunes the rest; the files come back afterwards."""
    tree = r.tree
    away = r.work / "away"
    away.mkdir(exist_ok=True)
    moved = treegen.pick(packed_files(tree), GC_SHARE, GC_SEED)
    for n, rel in enumerate(moved):
        os.rename(tree.root / rel, away / str(n))
    try:
        note(f"round {i + 1}: cas pack without half the files (set-up for gc)")
        r.run([*r.cas, "pack"])
        note(f"round {i + 1}: cas gc --grace 0")
        gc = r.measure([*r.cas, "gc", "--grace", "0", "--json"])
    finally:
        for n, rel in enumerate(moved):
            os.rename(away / str(n), tree.root / rel)
    rows.gc.add(gc)
    done = json.loads(gc.stdout)
    held = done["pruned"] + done["reachable"] + done.get("kept_by_grace", 0)
    share = 100 * done["pruned"] / max(held, 1)
    rows.gc.note = f"pruned {done['pruned']:,} of {held:,} blobs ({share:.0f}%)"


# --- peers --------------------------------------------------------------------------------------


def git_round(r: Runner, rows: Rows, i: int) -> None:
    note(f"round {i + 1}: git add -A")
    repo = r.work / f"git-{i}"  # kept until the end: ext4 creates files slowly after deletes
    r.run(["git", "init", "-q", repo], cwd=r.work)
    proc = r.measure(
        ["git", f"--git-dir={repo / '.git'}", f"--work-tree={r.tree.root}", "add", "-A"]
    )
    rows.git.add(proc)
    rows.git.nbytes = r.tree.nbytes


def restic_round(r: Runner, rows: Rows, i: int) -> None:
    if shutil.which("restic") is None:
        rows.restic.missing = RESTIC_MISSING
        return
    note(f"round {i + 1}: restic backup")
    repo = r.work / f"restic-{i}"
    r.run(["restic", "--repo", repo, "init", "-q"], cwd=r.work)
    proc = r.measure(["restic", "--repo", repo, "backup", "-q", "."])
    rows.restic.add(proc)
    rows.restic.nbytes = r.tree.nbytes


def repomix_round(r: Runner, row: Row, command: list[str], i: int, extra: list[str]) -> None:
    note(f"round {i + 1}: {row.label}")
    out = r.work / "repomix-out.xml"
    proc = r.measure([*command, *extra, "--output", out])
    size = out.stat().st_size if out.exists() else 0
    out.unlink(missing_ok=True)
    row.add(proc)
    row.nbytes = r.tree.nbytes
    row.note = f"output {size / MIB:,.1f} MiB"


# --- limits -------------------------------------------------------------------------------------


def limit_round(r: Runner, rows: Rows, i: int) -> None:
    from cas.store import DEFAULT_CHUNK_SIZE, DEFAULT_LEVEL

    note(f"round {i + 1}: limits")
    tree = r.tree
    listing = r.work / "stored-files.txt"
    if not listing.exists():
        unique: dict[str, str] = {}
        for path, digest in tree.packed:
            if not (tree.root / path).is_symlink():
                unique.setdefault(digest, path)
        paths = sorted(unique.values(), key=lambda p: p.encode())
        listing.write_text("".join(f"{tree.root / p}\n" for p in paths), encoding="utf-8")
    me = [sys.executable, "-m", "bench.pack_bench", "--child", "limits"]
    proc = r.measure([*me, listing, str(DEFAULT_LEVEL), str(DEFAULT_CHUNK_SIZE)])
    got = json.loads(proc.stdout)
    threads = got["threads"]
    rows.b3.label = f"blake3 ({threads} threads)"
    rows.limit.label = f"zstd -d + blake3 ({threads} threads)"
    for row, key in (
        (rows.b3, "blake3"),
        (rows.zstd, "compress"),
        (rows.unzstd, "decompress"),
        (rows.limit, "verify"),
    ):
        row.seconds.append(got[key])
        row.nbytes = got["raw"]
    ratio = got["raw"] / max(got["packed"], 1)
    rows.zstd.note = f"ratio {ratio:.2f}x"
    rows.limit.note = "the verify limit"


# --- targets ------------------------------------------------------------------------------------


@dataclass
class Verdict:
    text: str
    passed: bool | None  # None: not measured

    def line(self) -> str:
        mark = {True: "PASS", False: "MISS", None: "SKIP"}[self.passed]
        return f"{mark}  {self.text}"


def _mibs(row: Row) -> float:
    return (row.nbytes or 0) / MIB / row.median


def judge(rows: Rows, files: int) -> list[Verdict]:
    out: list[Verdict] = []
    ingest = rows.stages["ingest"]
    for peer, factor, what in (
        (rows.git, INGEST_VS_GIT, f"at least {INGEST_VS_GIT:g}x faster than git add -A"),
        (rows.restic, 1.0, "faster than restic backup"),
    ):
        text = f"hash-and-store stage (ingest) {what}"
        if not (peer.measured and ingest.measured):
            out.append(Verdict(f"{text}: {peer.missing or 'not measured'}", None))
            continue
        ratio = peer.median / ingest.median
        out.append(
            Verdict(
                f"{text}: {ratio:.2f}x (ingest {ingest.median:.2f} s, "
                f"{peer.label} {peer.median:.2f} s)",
                ratio >= factor if factor > 1 else ratio > 1,
            )
        )
    text = f"cas put -r at least {INGEST_VS_GIT:g}x faster than git add -A"
    if rows.git.measured and rows.put.measured:
        ratio = rows.git.median / rows.put.median
        out.append(
            Verdict(
                f"{text}: {ratio:.2f}x ({rows.put.median:.2f} s vs {rows.git.median:.2f} s)",
                ratio >= INGEST_VS_GIT,
            )
        )
    else:
        out.append(Verdict(f"{text}: {rows.git.missing or 'not measured'}", None))
    text = f"cold pack + render at least {PACK_VS_REPOMIX:g}x faster than repomix"
    if rows.repomix.measured:
        ours = rows.cold.median + rows.render.median
        ratio = rows.repomix.median / ours
        out.append(
            Verdict(
                f"{text}: {ratio:.2f}x ({ours:.2f} s vs {rows.repomix.median:.2f} s)",
                ratio >= PACK_VS_REPOMIX,
            )
        )
    else:
        out.append(Verdict(f"{text}: {rows.repomix.missing or 'not measured'}", None))
    ratio = rows.cold.median / rows.warm.median
    out.append(
        Verdict(
            f"warm pack at least {WARM_VS_COLD:g}x faster than cold: {ratio:.1f}x "
            f"({rows.warm.median:.2f} s vs {rows.cold.median:.2f} s)",
            ratio >= WARM_VS_COLD,
        )
    )
    limit_s = WARM_SECONDS_PER_20K * max(1.0, files / 20_000)
    out.append(
        Verdict(
            f"warm pack under {limit_s:.2f} s ({WARM_SECONDS_PER_20K:g} s per 20,000 files, "
            f"{files:,} here): {rows.warm.median:.2f} s",
            rows.warm.median < limit_s,
        )
    )
    text = f"verify --all at least {VERIFY_SHARE_OF_LIMIT:g} of the zstd -d + blake3 limit"
    if rows.verify.measured and rows.limit.measured:
        share = _mibs(rows.verify) / _mibs(rows.limit)
        out.append(
            Verdict(
                f"{text}: {share:.2f} ({_mibs(rows.verify):,.0f} vs "
                f"{_mibs(rows.limit):,.0f} MiB/s)",
                share >= VERIFY_SHARE_OF_LIMIT,
            )
        )
    else:
        out.append(Verdict(f"{text}: {rows.verify.missing or 'not measured'}", None))
    cas_rows = [row for row in rows.ordered() if row.kind == "cas" and row.rss]
    worst = max(cas_rows, key=lambda row: row.peak_rss or 0)
    peak = (worst.peak_rss or 0) / MIB
    anon = max((max(row.anon) for row in cas_rows if row.anon), default=0) / MIB
    out.append(
        Verdict(
            f"peak RSS under {RSS_LIMIT_MIB} MiB in every cas command: highest {peak:.1f} MiB "
            f"({worst.label}); anonymous memory alone at most {anon:.1f} MiB",
            peak < RSS_LIMIT_MIB,
        )
    )
    return out


# --- the whole run ------------------------------------------------------------------------------


def _version(argv: list[str], env: dict[str, str]) -> str:
    return version(argv, env) or "missing"


def header(r: Runner, runs: int, peer_runs: dict[str, int], startup: float, floor: int) -> str:
    import cas

    cores = os.cpu_count()
    cpu = cpu_model()
    env = r.env

    peers = "none (--no-peers)"
    if peer_runs:
        peers = ", ".join(
            [
                _version(["git", "--version"], env),
                _version(["restic", "version"], env).split(" compiled")[0],
                f"node {_version(['node', '--version'], env)}",
                REPOMIX,
            ]
        )
    counts = ", ".join(f"{name} {n}" for name, n in peer_runs.items()) or "none"
    lines = [
        f"cas pack benchmark: cas {cas.__version__}, Python {platform.python_version()}, "
        f"{cores} cores ({cpu}), {platform.system()} {platform.release()}",
        f"  tree: {r.tree.description}",
        f"  packed: {r.tree.files:,} files, {r.tree.nbytes / MIB:,.1f} MiB stored; "
        f"packs: {', '.join(r.tree.packs)}; peers: {peers}",
        f"  runs: cas rows and limits {runs} each (a fresh empty store every run); peers: "
        f"{counts}. s = median wall time of the whole process (`cas --version` alone takes "
        f"{startup:.2f} s); range% = (slowest - fastest) / median.",
        "  Stage rows: the cold pack's own timings (cas pack --json), medians; "
        "'start-up, imports, exit' = wall time minus the stages. Indented rows are steps "
        "inside a stage: for ingest, seconds summed over its worker threads (which overlap "
        "each other and the commits, and include waits for the interpreter lock), so they "
        "show where the work goes, not wall time.",
        "  RSS = peak ru_maxrss of the process (os.wait4), the highest run; it counts LMDB's "
        f"mapped pages; floor {floor / MIB:.1f} MiB. anon = peak RssAnon, polled every 5 ms.",
        "  All reads come from the page cache (the tree was just written); sync runs before "
        "each measured process. MiB/s = stored bytes / s (verify: bytes checked).",
        "  Limits: over the bytes the store keeps, framed like the store (1 MiB chunks); "
        "blake3 one thread per core; zstd one thread; 'zstd -d + blake3' decompresses and "
        "hashes each frame, one thread per core: the verify limit.",
        "  git: add -A into an empty repository, no system or user config; restic: backup "
        "into an empty local repository; repomix: default options (xml), run with node.",
    ]
    wrap = textwrap.TextWrapper(width=100, subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join([lines[0], *(wrap.fill(line) for line in lines[1:])])


@dataclass
class Options:
    path: Path | None
    files: int
    mib: float
    runs: int
    peers: bool
    out: Path | None


def bench(opts: Options) -> tuple[str, dict[str, Any]]:
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cas-pack-bench-", dir=opts.out))
    try:
        tree = prepare_tree(opts.path, work, opts.files, opts.mib)
        r = Runner(work, tree)
        rows = Rows()
        available = {name: r.has_command(name) for name in ("verify", "gc")}
        startup = min(r.measure([*r.cas, "--version"]).seconds for _ in range(3))
        floor = r.measure(["true"]).peak_rss
        repomix: list[str] | None = None
        peer_runs: dict[str, int] = {}
        if opts.peers:
            repomix, why = ensure_repomix()
            if repomix is None:
                rows.repomix.missing = rows.compress.missing = why
            if shutil.which("restic") is None:
                print(RESTIC_MISSING, flush=True)
            peer_runs = {"git": opts.runs, "restic": opts.runs, "repomix": opts.runs}
            peer_runs["repomix --compress"] = 1
        else:
            for row in (rows.git, rows.restic, rows.repomix, rows.compress):
                row.missing = "skipped (--no-peers)"
        # Rounds interleave cas, the peers and the limits, so a slow spell of the machine
        # lands on every row alike. Peers run between cas rounds, on the tree without .cas.
        for i in range(opts.runs):
            cas_round(r, rows, i, available)
            if opts.peers:
                git_round(r, rows, i)
                restic_round(r, rows, i)
                if repomix is not None:
                    repomix_round(r, rows.repomix, repomix, i, [])
                    if i == 0:
                        repomix_round(r, rows.compress, repomix, i, ["--compress"])
            limit_round(r, rows, i)
        share = 100 / rows.cold.median
        for row in [*rows.stages.values(), rows.rest]:
            if row.seconds:
                row.note = f"{row.median * share:.0f}% of the cold pack"
        for row in rows.work.values():
            row.note = "worker seconds" if row.label.startswith("  ingest") else "in the tier stage"
        verdicts = judge(rows, tree.files)
        text = "\n".join(
            [
                header(r, opts.runs, peer_runs, startup, floor),
                "",
                *table_lines(rows.ordered()),
                "",
                *(v.line() for v in verdicts),
            ]
        )
        results = {
            "tree": tree.description,
            "files": tree.files,
            "bytes": tree.nbytes,
            "runs": opts.runs,
            "rows": [row.as_json() for row in rows.ordered()],
            "targets": [{"text": v.text, "pass": v.passed} for v in verdicts],
        }
        return text, results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv: Sequence[str]) -> Options:
    parser = harness.parser(__doc__)
    parser.add_argument("path", nargs="?", type=Path, help="pack a copy of this tree instead")
    parser.add_argument("--files", type=int, help="files in the synthetic tree (default 20,000)")
    parser.add_argument("--mb", type=float, help="MiB in the synthetic tree (default 300)")
    parser.add_argument("--runs", type=int, help="rounds; each row is their median (default 3)")
    parser.add_argument("--quick", action="store_true", help="2,000 files, 30 MiB, 1 round")
    parser.add_argument("--no-peers", action="store_true", help="skip git, restic and repomix")
    parser.add_argument("--out", type=Path, help="work here; leave results.json and table.txt")
    args = parser.parse_args(argv)
    files = args.files if args.files is not None else (2_000 if args.quick else 20_000)
    mib = args.mb if args.mb is not None else (30.0 if args.quick else 300.0)
    runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    if files < 20 or mib <= 0 or runs < 1:
        parser.error("--files must be at least 20, --mb positive, --runs at least 1")
    if args.path is not None and not args.path.is_dir():
        parser.error(f"{args.path} is not a directory")
    return Options(args.path, files, mib, runs, not args.no_peers, args.out)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        if args[1:2] != ["limits"]:
            raise SystemExit(f"unknown child {args[1:2]}")
        print(json.dumps(child_limits(args[2], int(args[3]), int(args[4]))))
        return 0
    opts = parse_args(args)
    started = time.perf_counter()
    try:
        text, results = bench(opts)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    print(text)
    note(f"done in {time.perf_counter() - started:.0f} s")
    if opts.out is not None:
        (opts.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", "utf-8")
        (opts.out / "table.txt").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
