"""How fast `cas pack` and `cas search` are, next to git, restic, repomix and grep on the same
tree, and to the limits.

    .venv/bin/python -m bench.pack_bench [PATH] [--files N] [--mb M] [--runs K] [--queries Q]
                                         [--quick] [--no-peers] [--out DIR]

Without PATH it generates a deterministic synthetic repository (bench/tree.py: 20,000 files and
300 MiB by default); with PATH it packs a copy of that directory (without .git, .cas and
manifests/), so the benchmark may change it. It writes a cas.toml with one scope and one target
unless the tree has a configuration. Then, in rounds, each command in a fresh process:

* cas: ``pack`` cold (an empty store, its search index included) and right after it the first
  ``search``; warm (nothing changed); ``search`` as a fresh process for each of Q queries drawn
  from the tree's own identifiers, and the same queries through one running ``cas mcp``; a pack
  after 1% of the files changed; ``render``; ``verify --all``; ``gc --grace 0`` with about half
  the store unreferenced; ``put -r``;
* peers: ``git add -A`` into an empty repository, ``restic backup`` into an empty repository,
  ``repomix`` (and ``repomix --compress``, once), ``grep -rlw`` for each query;
* limits: BLAKE3 and zstd alone over the bytes the store keeps.

Prints one table (medians of the rounds, peak RSS per process and summed over the process and
its workers) and the goals of issue 22, each PASS or MISS.
Exit 0 when every cas command ran (a MISS is a result), 1 when one failed. With ``--out DIR`` the
work happens under DIR and ``results.json`` and ``table.txt`` are left there.
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
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
QUERY_SEED = 7
SEARCH_K = 10  # files a search returns, on the command line and through the server
# Files a benchmark must not move or edit: they steer the pack itself.
CONFIG_NAMES = frozenset({"cas.toml", "pyproject.toml", ".gitignore", ".casignore"})
BENCH_CONFIG = "cas.toml written by the bench"
CAS_TOML = """\
# Written by bench/pack_bench.py: the whole tree in one scope, one target.
[scopes.repo]
roots = ["."]

[scopes.repo.targets.claude]
target = 10000
max = 12000
"""

# Goals (issue 22), set for the default tree of 20,000 files.
PACK_VS_REPOMIX = 2.0  # cold pack + render, repomix's time over ours
PACK_VS_REPOMIX_AIM = 5.0
PACK_SEARCH_VS_REPOMIX = 1.5  # cold pack + its first search
INGEST_VS_GIT = 2.0
WARM_SECONDS = 0.5
CHANGED_SECONDS = 1.0
SEARCH_FRESH_SECONDS = 0.150  # median over the queries
SEARCH_SERVED_SECONDS = 0.020
GC_SECONDS = 2.0  # per GC_BLOBS pruned
GC_BLOBS = 10_000
VERIFY_SHARE_OF_LIMIT = 0.5
RSS_LIMIT_MIB = 300  # the process and its workers together


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
    tree: list[int] = field(default_factory=list)  # summed over the process and its workers
    nbytes: int | None = None
    note: str = ""
    missing: str | None = None  # why there are no numbers

    def add(self, proc: Proc) -> None:
        self.seconds.append(proc.seconds)
        self.cpu.append(proc.cpu_seconds)
        self.add_memory(proc)

    def add_memory(self, proc: Proc) -> None:
        self.rss.append(proc.peak_rss)
        self.tree.append(proc.peak_tree)
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

    @property
    def peak_tree(self) -> int | None:
        """The highest memory of the row's processes with their workers (else of the process)."""
        return max(self.tree) if self.tree else self.peak_rss

    @property
    def worst(self) -> float:
        return max(self.seconds)

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "kind": self.kind,
            "seconds": self.seconds,
            "median_s": self.median if self.seconds else None,
            "cpu_s": self.cpu,
            "peak_rss": self.peak_rss,
            "peak_anon": max(self.anon) if self.anon else None,
            "peak_tree": self.peak_tree,
            "bytes": self.nbytes,
            "note": self.note,
            "missing": self.missing,
        }


def _num(value: float | None, digits: int = 2) -> str:
    return harness.num(value, digits)


def _cells(r: Row) -> list[str]:
    label = f"  {r.label}" if r.kind == "stage" else r.label
    if not r.measured:
        return [label, "-", "-", "-", "-", "-", "-", "-", "-", r.missing or r.note]
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
        _num(max(r.tree) / MIB, 1) if r.tree else "-",
        r.note,
    ]


TITLES = [
    "row", "runs", "s", "range%", "cpu s", "MiB/s", "RSS MiB", "anon MiB", "tree MiB", "note"
]  # fmt: skip


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
    queries: list[str] = field(default_factory=list)  # drawn from its identifiers


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
    ``top`` is not in a git work tree or is a folder that work tree ignores (a download cached
    under bench/.cache is a project of its own)."""
    try:
        ignored = subprocess.run(
            ["git", "-C", str(top), "check-ignore", "-q", str(top)],
            capture_output=True,
            check=False,
        )
        done = subprocess.run(
            ["git", "-C", str(top), "ls-files", "-z", "-c", "-o", "--exclude-standard"],
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if done.returncode != 0 or ignored.returncode == 0:
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
        description += f"; {BENCH_CONFIG} (one scope, target 10,000/12,000)"
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

    def measure(
        self,
        argv: Sequence[str | os.PathLike[str]],
        *,
        devnull: bool = False,
        ok: tuple[int, ...] = (0,),
    ) -> Proc:
        """One measured process in the tree, after a sync (no row pays for another's
        writeback). ``devnull``: its stdout goes to /dev/null (through ``exec``, so the measured
        process is still the command itself). ``ok``: the exit codes that are an answer."""
        os.sync()
        if devnull:
            argv = ["sh", "-c", 'exec "$@" >/dev/null', "sh", *argv]
        return measure(argv, self.env, self.tree.root, ok)

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
    ("index", "index: full-text search"),
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
    cold_search: Row = field(default_factory=lambda: Row("cas pack (cold) + first search", "cas"))
    warm: Row = field(default_factory=lambda: Row("cas pack (warm)", "cas"))
    search: Row = field(default_factory=lambda: Row("cas search (fresh process)", "cas"))
    served: Row = field(default_factory=lambda: Row("search through cas mcp", "cas"))
    changed: Row = field(default_factory=lambda: Row("cas pack (1% changed)", "cas"))
    render: Row = field(default_factory=lambda: Row("cas render", "cas"))
    verify: Row = field(default_factory=lambda: Row("cas verify --all", "cas"))
    gc: Row = field(default_factory=lambda: Row("cas gc --grace 0", "cas"))
    gc_pruned: list[int] = field(default_factory=list)
    put: Row = field(default_factory=lambda: Row("cas put -r", "cas"))
    git: Row = field(default_factory=lambda: Row("git add -A", "peer"))
    restic: Row = field(default_factory=lambda: Row("restic backup", "peer"))
    repomix: Row = field(default_factory=lambda: Row("repomix", "peer"))
    compress: Row = field(default_factory=lambda: Row("repomix --compress", "peer"))
    grep: Row = field(default_factory=lambda: Row("grep -rlw", "peer"))
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
            self.cold_search,
            self.warm,
            self.search,
            self.served,
            self.changed,
            self.render,
            self.verify,
            self.gc,
            self.put,
            self.git,
            self.restic,
            self.repomix,
            self.compress,
            self.grep,
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


def cold_pack(r: Runner, rows: Rows, i: int, queries: int) -> None:
    """A cold pack into an empty store, then its first search (a query drawn from the tree
    when the tree is packed for the first time)."""
    tree = r.tree
    r.reset_cas()
    note(f"round {i + 1}: cas pack (cold)")
    cold = r.measure([*r.cas, "pack", "--json"])
    report = _pack_json(cold)
    if not tree.packs:
        _learn_tree(r, report)
        tree.queries = draw_queries(tree.root, packed_files(tree), queries)
        rows.stages["index"].note = _index_size(tree.root)
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
    if tree.queries:
        note(f"round {i + 1}: cas search, the first after the cold pack")
        first = r.measure(search_argv(r, tree.queries[0]), ok=(0, 1))
        both = rows.cold_search
        both.seconds.append(cold.seconds + first.seconds)
        both.cpu.append(cold.cpu_seconds + first.cpu_seconds)
        both.add_memory(cold)
        both.add_memory(first)
        both.note = f"first search {first.seconds * 1000:,.0f} ms"
    else:
        rows.cold_search.missing = rows.search.missing = rows.served.missing = NO_QUERIES


def changed_pack(r: Runner, rows: Rows, i: int) -> None:
    """A pack after 1% of the files changed (a line added to each); they are put back after."""
    note(f"round {i + 1}: cas pack (1% changed)")
    chosen = treegen.pick(packed_files(r.tree), CHANGED_SHARE, CHANGE_SEED)
    edits = treegen.edit_files(r.tree.root, chosen, "pack_bench")
    try:
        changed = r.measure([*r.cas, "pack", "--json"])
    finally:
        edits.restore()
    rows.changed.add(changed)
    files = "file" if len(chosen) == 1 else "files"
    rows.changed.note = f"{len(chosen):,} {files} changed; {_stages(_pack_json(changed))}"


def render_packs(r: Runner, rows: Rows, i: int) -> None:
    """Every pack rendered, one process per pack; the row adds their times up."""
    note(f"round {i + 1}: cas render")
    procs = [r.measure([*r.cas, "render", name], devnull=True) for name in r.tree.packs]
    rows.render.seconds.append(sum(p.seconds for p in procs))
    rows.render.cpu.append(sum(p.cpu_seconds for p in procs))
    rows.render.rss.append(max(p.peak_rss for p in procs))
    rows.render.tree.append(max(p.peak_tree for p in procs))
    rows.render.anon += [p.peak_anon for p in procs if p.peak_anon is not None]
    rows.render.note = ", ".join(r.tree.packs) + " (markdown, lite)"


def cas_round(r: Runner, rows: Rows, i: int, available: dict[str, bool], queries: int) -> None:
    tree = r.tree
    cold_pack(r, rows, i, queries)

    note(f"round {i + 1}: cas pack (warm)")
    warm = r.measure([*r.cas, "pack", "--json"])
    rows.warm.add(warm)
    warm_report = _pack_json(warm)
    rows.warm.note = f"{warm_report['stat_hits']:,} stat hits; {_stages(warm_report)}"

    if tree.queries:
        search_round(r, rows, i)
        served_round(r, rows, i)

    changed_pack(r, rows, i)
    render_packs(r, rows, i)

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


# --- searches ------------------------------------------------------------------------------------

NO_QUERIES = "no identifiers to search for in this tree"
# A definition's name in the languages the packer summarizes, at the start of a line (so not a
# word of prose in a comment): what an agent would search for.
_DEFINED = re.compile(
    r"^[ \t]*(?:(?:export|pub(?:\([^)\n]*\))?|async|default|abstract|declare|public|static)\s+)*"
    r"(?:def|class|func|function|fn|struct|enum|trait|interface|type|module)\s+"
    r"(?:\([^)\n]*\)\s*)?([A-Za-z_][A-Za-z0-9_]{5,})",
    re.M,
)
_QUERY_FILES = 400  # files read for names, spread evenly over the tree
_QUERY_FILE_BYTES = 1 << 20


def draw_queries(root: Path, paths: Sequence[str], n: int, seed: int = QUERY_SEED) -> list[str]:
    """``n`` names defined in the tree (functions, classes, types of six characters or more),
    drawn with a fixed seed from up to 400 of ``paths`` spread evenly over their sorted order,
    so a tree gives the same queries on every machine."""
    ordered = sorted(paths, key=lambda p: p.encode())
    k = min(len(ordered), _QUERY_FILES)
    names: set[str] = set()
    for rel in (ordered[j * len(ordered) // k] for j in range(k)):
        path = root / rel
        try:
            if path.is_symlink() or path.stat().st_size > _QUERY_FILE_BYTES:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        names.update(_DEFINED.findall(text))
    return random.Random(seed).sample(sorted(names), min(n, len(names)))


def search_argv(r: Runner, query: str) -> list[str]:
    return [*r.cas, "search", query, "-k", str(SEARCH_K)]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def search_round(r: Runner, rows: Rows, i: int) -> None:
    """``cas search`` as a fresh process for each query."""
    note(f"round {i + 1}: cas search x {len(r.tree.queries)}, fresh processes")
    empty = 0
    for query in r.tree.queries:
        proc = r.measure(search_argv(r, query), ok=(0, 1))
        rows.search.add(proc)
        empty += not proc.stdout.strip()
    rows.search.note = (
        f"median of {len(rows.search.seconds)} ({len(r.tree.queries)} queries x {i + 1}); "
        f"worst {_ms(rows.search.worst)}" + (f"; {empty} found nothing" if empty else "")
    )


async def served(
    argv: list[str], env: dict[str, str], cwd: Path, queries: list[str], mode: str | None = None
) -> tuple[float, list[float]]:
    """One MCP server started with ``argv``, over stdio, asked ``search`` for each query (in
    ``mode``, or the server's default): the first call's time and each of the calls after it,
    as the client sees them."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd), env=env)

    async def call(session: ClientSession, query: str) -> float:
        started = time.perf_counter()
        asked: dict[str, object] = {"query": query, "k": SEARCH_K}
        if mode is not None:
            asked["mode"] = mode
        done = await session.call_tool("search", asked)
        seconds = time.perf_counter() - started
        if done.is_error:
            raise BenchError(f"search {query!r} through cas mcp failed: {done.content}")
        return seconds

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        first = await call(session, queries[0])
        return first, [await call(session, query) for query in queries]


def served_round(r: Runner, rows: Rows, i: int) -> None:
    """One ``cas mcp`` for the round, started through the launcher (so its memory is measured),
    asked every query after a first call; the row gets each call's time."""
    import anyio

    note(f"round {i + 1}: search x {len(r.tree.queries)} through one cas mcp")
    row = rows.served
    with tempfile.NamedTemporaryFile("r", encoding="ascii", suffix=".rusage") as report:
        argv = [*harness.launcher(Path(report.name)), *r.cas, "mcp"]
        first, times = anyio.run(served, argv, r.env, r.tree.root, r.tree.queries)
        usage = harness.read_usage(report.read())
    row.seconds += times
    if usage is not None:
        row.rss.append(usage.peak_rss)
        row.tree.append(usage.peak_tree)
        if usage.peak_anon is not None:
            row.anon.append(usage.peak_anon)
    row.note = (
        f"median of {len(row.seconds)} calls to one server a round; worst "
        f"{_ms(row.worst)}; its first call {_ms(first)}"
    )


def _index_size(root: Path) -> str:
    """The search index's size (its segments) next to the rest of the store's."""
    from cas.textindex import INDEX_DIR

    store = root / ".cas"
    index = store / INDEX_DIR
    if not index.is_dir():
        return "no index written"
    size = sum(p.stat().st_size for p in index.rglob("*") if p.is_file())
    rest = sum(p.stat().st_size for p in store.rglob("*") if p.is_file()) - size
    return f"index {size / MIB:,.1f} MiB, {100 * size / max(rest, 1):.0f}% of the store's size"


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
    rows.gc_pruned.append(done["pruned"])
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


def grep_round(r: Runner, rows: Rows, i: int) -> None:
    """The unranked peer of search: the files that hold each query as a word."""
    note(f"round {i + 1}: grep -rlw x {len(r.tree.queries)}")
    for query in r.tree.queries:
        argv = ["grep", "-rlw", "--exclude-dir=.cas", "--exclude-dir=.git", query, "."]
        rows.grep.add(r.measure(argv, ok=(0, 1)))
    rows.grep.note = f"median of {len(rows.grep.seconds)}; worst {_ms(rows.grep.worst)}"


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


def faster_than(text: str, ours: Row | None, seconds: float, peer: Row, factor: float) -> Verdict:
    """``text``: PASS when ``peer`` took at least ``factor`` times ``seconds`` (cas's time, from
    ``ours`` alone or a sum of rows)."""
    if not peer.measured or ours is None or not ours.measured:
        why = peer.missing or (ours.missing if ours is not None else None) or "not measured"
        return Verdict(f"{text}: {why}", None)
    ratio = peer.median / seconds
    return Verdict(
        f"{text}: {ratio:.2f}x ({seconds:.2f} s vs {peer.label} {peer.median:.2f} s)",
        ratio >= factor,
    )


def at_most(text: str, row: Row, limit: float, *, ms: bool = False) -> Verdict:
    """``text``: PASS when the row's median is at most ``limit`` seconds."""
    if not row.measured:
        return Verdict(f"{text}: {row.missing or 'not measured'}", None)
    shown = _ms(row.median) if ms else f"{row.median:.2f} s"
    return Verdict(f"{text}: {shown}", row.median <= limit)


def memory_within(rows: Iterable[Row], limit_mib: float) -> Verdict:
    """PASS when no cas row's processes (each with its workers) held more than ``limit_mib``."""
    cas_rows = [row for row in rows if row.kind == "cas" and row.peak_tree]
    text = f"peak RSS at most {limit_mib:g} MiB in every cas row, workers included"
    if not cas_rows:
        return Verdict(f"{text}: not measured", None)
    worst = max(cas_rows, key=lambda row: row.peak_tree or 0)
    peak = (worst.peak_tree or 0) / MIB
    alone = max(row.peak_rss or 0 for row in cas_rows) / MIB
    return Verdict(
        f"{text}: highest {peak:,.1f} MiB ({worst.label}); one process alone at most "
        f"{alone:,.1f} MiB",
        peak <= limit_mib,
    )


def repomix_goals(rows: Rows) -> list[Verdict]:
    """A cold pack with its render, and with its first search, against repomix."""
    return [
        faster_than(
            f"cold pack + render at least {PACK_VS_REPOMIX:g}x faster than repomix "
            f"(aim {PACK_VS_REPOMIX_AIM:g}x)",
            rows.render,
            rows.cold.median + rows.render.median if rows.render.measured else 0.0,
            rows.repomix,
            PACK_VS_REPOMIX,
        ),
        faster_than(
            f"cold pack + first search at least {PACK_SEARCH_VS_REPOMIX:g}x faster than repomix",
            rows.cold_search,
            rows.cold_search.median if rows.cold_search.measured else 0.0,
            rows.repomix,
            PACK_SEARCH_VS_REPOMIX,
        ),
    ]


def changed_goal(rows: Rows) -> Verdict:
    return at_most(
        f"pack after 1% of the files changed at most {CHANGED_SECONDS:g} s",
        rows.changed,
        CHANGED_SECONDS,
    )


def fresh_search_goal(rows: Rows) -> Verdict:
    return at_most(
        f"cas search, fresh process, at most {_ms(SEARCH_FRESH_SECONDS)} (median)",
        rows.search,
        SEARCH_FRESH_SECONDS,
        ms=True,
    )


def served_search_goal(rows: Rows) -> Verdict:
    return at_most(
        f"search through a running cas mcp at most {_ms(SEARCH_SERVED_SECONDS)} (median)",
        rows.served,
        SEARCH_SERVED_SECONDS,
        ms=True,
    )


def judge(rows: Rows) -> list[Verdict]:
    """One line per goal of issue 22."""
    out = repomix_goals(rows)
    ingest = rows.stages["ingest"]
    out.append(
        faster_than(
            f"ingest (hash, store, secret scan) at least {INGEST_VS_GIT:g}x faster than git add -A",
            ingest,
            ingest.median if ingest.measured else 0.0,
            rows.git,
            INGEST_VS_GIT,
        )
    )
    out.append(at_most(f"warm pack at most {WARM_SECONDS:g} s", rows.warm, WARM_SECONDS))
    out += [changed_goal(rows), fresh_search_goal(rows), served_search_goal(rows)]
    pruned = max(rows.gc_pruned, default=0)
    gc_limit = GC_SECONDS * max(1.0, pruned / GC_BLOBS)
    out.append(
        at_most(
            f"gc --grace 0 at most {GC_SECONDS:g} s per {GC_BLOBS:,} blobs pruned "
            f"({gc_limit:.2f} s for {pruned:,})",
            rows.gc,
            gc_limit,
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
    out.append(memory_within(rows.ordered(), RSS_LIMIT_MIB))
    out.append(Verdict(QUALITY_GOAL, None))
    return out


GOALS_TITLE = "Goals (issue 22, set for the default tree of 20,000 files):"
QUALITY_GOAL = "quality scores unchanged or better: measured by bench/quality.py, not here"


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
                _version(["grep", "--version"], env),
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
        f"  Search: {len(r.tree.queries)} queries, names defined in the tree (functions, "
        "classes, types), drawn with a fixed seed; each `cas search QUERY -k 10` a fresh "
        "process, grep -rlw QUERY a fresh process; 'search through cas mcp' = one `cas mcp` "
        "server a round asked the same queries over stdio (the MCP SDK's client), the time of "
        "each call after a first one; 'cold pack + first search' = a cold pack and, right "
        "after it, one search.",
        "  RSS = peak ru_maxrss of the process (os.wait4), the highest run; it counts LMDB's "
        f"mapped pages; floor {floor / MIB:.1f} MiB. anon = peak RssAnon, polled every 5 ms. "
        "tree = the highest sum of VmRSS over the process and every process below it (ingest "
        "workers, git), polled every 5 ms, at least RSS; pages they share count in each.",
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
    queries: int = 20


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
            peer_runs["grep"] = opts.runs
        else:
            for row in (rows.git, rows.restic, rows.repomix, rows.compress, rows.grep):
                row.missing = "skipped (--no-peers)"
        # Rounds interleave cas, the peers and the limits, so a slow spell of the machine
        # lands on every row alike. Peers run between cas rounds, on the tree without .cas.
        for i in range(opts.runs):
            cas_round(r, rows, i, available, opts.queries)
            if opts.peers:
                if tree.queries:
                    grep_round(r, rows, i)
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
                row.note = "; ".join(filter(None, [f"{row.median * share:.0f}% of the cold pack",
                                                   row.note]))  # fmt: skip
        for row in rows.work.values():
            row.note = "worker seconds" if row.label.startswith("  ingest") else "in the tier stage"
        verdicts = judge(rows)
        text = "\n".join(
            [
                header(r, opts.runs, peer_runs, startup, floor),
                "",
                *table_lines(rows.ordered()),
                "",
                GOALS_TITLE,
                *(v.line() for v in verdicts),
            ]
        )
        results = {
            "tree": tree.description,
            "files": tree.files,
            "bytes": tree.nbytes,
            "runs": opts.runs,
            "queries": tree.queries,
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
    parser.add_argument("--queries", type=int, default=20, help="searches a round (default 20)")
    parser.add_argument("--quick", action="store_true", help="2,000 files, 30 MiB, 1 round")
    parser.add_argument(
        "--no-peers", action="store_true", help="skip git, restic, repomix and grep"
    )
    parser.add_argument("--out", type=Path, help="work here; leave results.json and table.txt")
    args = parser.parse_args(argv)
    files = args.files if args.files is not None else (2_000 if args.quick else 20_000)
    mib = args.mb if args.mb is not None else (30.0 if args.quick else 300.0)
    runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    if files < 20 or mib <= 0 or runs < 1 or args.queries < 1:
        parser.error("--files must be at least 20, --mb positive, --runs and --queries at least 1")
    if args.path is not None and not args.path.is_dir():
        parser.error(f"{args.path} is not a directory")
    return Options(args.path, files, mib, runs, not args.no_peers, args.out, args.queries)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        if args[1:2] != ["limits"]:
            raise SystemExit(f"unknown child {args[1:2]}")
        print(json.dumps(child_limits(args[2], int(args[3]), int(args[4]))))
        return 0
    opts = parse_args(args)
    return harness.run_and_report(lambda: bench(opts), opts.out)


if __name__ == "__main__":
    sys.exit(main())
