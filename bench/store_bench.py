"""Throughput and peak memory of the store, next to git and to the hashing/compression limits.

    .venv/bin/python -m bench.store_bench [--quick] [--files N] [--big-mib M] [--repeat R]
                                          [--out DIR]

Generates a tree of small text-like files and one big semi-compressible file, then measures, each
in a fresh process: ``cas put -r`` and a Store API get of the tree, ``cas put`` and ``cas get -o``
of the big file, ``cas verify --all`` and ``cas get -o`` as the first command after a put of it,
``cas pack`` (cold and warm) of a project holding a file of random bytes as large, ``git add -A``
of the tree and of the big file, and the limits (BLAKE3 and zstd alone on the same bytes).
Prints one table; with ``--out`` also writes ``results.json`` there. Exit 0 when every command ran
(a MISSed target is a result, not a failure), 1 when a measured command failed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import (
    MIB,
    BenchError,
    Proc,
    clean_env,
    cpu_model,
    measure,
    median_of,
    note,
    text_table,
    version,
)
from bench.harness import num as _num

SMALL_FILE_SIZE = 4096
FILES_PER_DIR = 50
DIRS_PER_PACKAGE = 20
SEED = 20240601
TARGET_SPEEDUP = 2.0
TARGET_RSS_MIB = 150
# The README's promise for every command, whatever the size of one file: the process and its
# worker processes together.
TARGET_ANY_RSS_MIB = 300
# The big file interleaves 64 KiB pieces of text and of random bytes: about 2x under zstd, and
# no two 1 MiB chunks alike, so dedup cannot flatter the numbers.
BIG_PIECE = 64 << 10
BIG_RANDOM_SHARE = 0.25
TEXT_POOL_BYTES = 8 * MIB


# --- content ------------------------------------------------------------------------------------


def vocabulary(rng: random.Random, size: int = 2000) -> list[str]:
    """Pronounceable-ish identifiers with English letter frequencies."""
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    weights = [12, 9, 8, 7.5, 7, 6.7, 6.3, 6, 6, 4.3, 4, 2.8, 2.7, 2.4, 2.2, 2, 2, 1.9, 1.5]
    weights += [1, 0.8, 0.8, 0.15, 0.15, 0.1, 0.07]
    lengths = [2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 8, 9, 10, 11]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(letters, weights, k=rng.choice(lengths))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


def code_lines(rng: random.Random, count: int) -> list[str]:
    """Lines shaped like Python source over a Zipf-weighted vocabulary: zstd -3 gets about 3x on
    a 4 KiB file of them, as it does on real source code."""
    words = vocabulary(rng)
    cum = list(itertools.accumulate(1 / (rank + 1) ** 1.15 for rank in range(len(words))))
    lines: list[str] = []
    for _ in range(count):
        indent = "    " * rng.choice((0, 1, 1, 2, 2, 2, 3, 3, 4))
        w = rng.choices(words, cum_weights=cum, k=rng.randint(3, 9))
        shape = rng.random()
        if shape < 0.3:
            line = f"{w[0]}_{w[1]} = {w[2]}({', '.join(w[3:])})"
        elif shape < 0.5:
            line = f"if {w[0]}.{w[1]} is not None:"
        elif shape < 0.6:
            line = f"# {' '.join(w)}"
        elif shape < 0.8:
            line = f"return self.{w[0]}({', '.join(w[1:])})"
        else:
            line = f"def {w[0]}_{w[1]}(self, {', '.join(w[2:])}) -> None:"
        lines.append(f"{indent}{line}\n")
    return lines


def text_piece(rng: random.Random, lines: Sequence[str], size: int) -> bytes:
    parts: list[str] = []
    total = 0
    while total < size:
        line = lines[rng.randrange(len(lines))]
        parts.append(line)
        total += len(line)
    return "".join(parts).encode()[:size]


def write_tree(root: Path, count: int, rng: random.Random, lines: Sequence[str]) -> int:
    """``count`` distinct 4 KiB files, 50 to a folder, two folder levels deep."""
    for i in range(count):
        package, module = divmod(i // FILES_PER_DIR, DIRS_PER_PACKAGE)
        folder = root / f"pkg{package:03d}" / f"mod{module:02d}"
        if i % FILES_PER_DIR == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:06d}.py").write_bytes(text_piece(rng, lines, SMALL_FILE_SIZE))
    return count * SMALL_FILE_SIZE


def write_big(path: Path, nbytes: int, rng: random.Random, lines: Sequence[str]) -> None:
    """Stream ``nbytes`` of semi-compressible content to ``path``, one MiB in memory at a time."""
    pool = text_piece(rng, lines, TEXT_POOL_BYTES)
    with path.open("wb") as out:
        left = nbytes
        while left:
            block = bytearray()
            while len(block) < min(MIB, left):
                if rng.random() < BIG_RANDOM_SHARE:
                    block += rng.randbytes(BIG_PIECE)
                else:
                    start = rng.randrange(len(pool) - BIG_PIECE)
                    block += pool[start : start + BIG_PIECE]
            del block[left:]
            out.write(block)
            left -= len(block)


def tree_files(root: str) -> list[str]:
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        found.extend(os.path.join(folder, n) for n in sorted(names))
    return found


def one_or_all(path: str) -> list[str]:
    return tree_files(path) if os.path.isdir(path) else [path]


# --- the limits, run as child processes of this script --------------------------------------


def limit_blake3(path: str) -> dict[str, Any]:
    """BLAKE3 alone, reading from page cache: a big file through blake3's mmap reader on all
    threads; a tree split across one thread per core (a 4 KiB hash is too short to split)."""
    import blake3

    files = one_or_all(path)
    cores = os.cpu_count() or 1
    start = time.perf_counter()
    if len(files) == 1:
        h = blake3.blake3(max_threads=blake3.blake3.AUTO)
        h.update_mmap(files[0])
        h.digest()
    else:

        def work(part: list[str]) -> None:
            for name in part:
                with open(name, "rb") as handle:
                    blake3.blake3(handle.read(), max_threads=blake3.blake3.AUTO).digest()

        with ThreadPoolExecutor(cores) as pool:
            list(pool.map(work, [files[i::cores] for i in range(cores)]))
    return {"seconds": time.perf_counter() - start, "threads": cores}


def limit_zstd(path: str, level: int, chunk_size: int) -> dict[str, Any]:
    """zstd alone, one thread, framed like the store: one frame per small file, one per chunk of
    a big file. Compression time includes reading from page cache; decompression time is the
    decompression calls alone."""
    import zstandard

    cctx = zstandard.ZstdCompressor(level=level)
    dctx = zstandard.ZstdDecompressor()
    compress = decompress = 0.0
    raw = packed = 0

    def pieces() -> Iterator[bytes]:
        for name in one_or_all(path):
            with open(name, "rb") as handle:
                while piece := handle.read(chunk_size):
                    yield piece

    source = pieces()
    while True:
        t0 = time.perf_counter()
        piece = next(source, None)
        if piece is None:
            break
        frame = cctx.compress(piece)
        t1 = time.perf_counter()
        back = dctx.decompress(frame, max_output_size=len(piece))
        t2 = time.perf_counter()
        if len(back) != len(piece):
            raise BenchError("zstd round trip lost bytes")
        compress += t1 - t0
        decompress += t2 - t1
        raw += len(piece)
        packed += len(frame)
    return {"compress": compress, "decompress": decompress, "raw": raw, "packed": packed}


def child_get_many(store_path: str, digest_list: str) -> dict[str, Any]:
    """Get every listed digest through the Store API, re-hashing (verify on, the default)."""
    from cas import Digest, Store

    with open(digest_list, encoding="ascii") as handle:
        digests = [Digest.parse(line.strip()) for line in handle if line.strip()]
    total = 0
    with Store.at(store_path, readonly=True) as store:
        for digest in digests:
            total += len(store.get(digest))
    return {"count": len(digests), "bytes": total}


def run_child(argv: list[str]) -> None:
    kind, *rest = argv
    if kind == "blake3":
        result = limit_blake3(rest[0])
    elif kind == "zstd":
        result = limit_zstd(rest[0], int(rest[1]), int(rest[2]))
    elif kind == "get-many":
        result = child_get_many(rest[0], rest[1])
    else:
        raise SystemExit(f"unknown child {kind!r}")
    print(json.dumps(result))


# --- rows and the table -------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    data: str
    kind: str  # "cas", "git" or "limit"
    nbytes: int
    files: int
    runs: list[float]  # seconds of every run; the row reports the median one
    cpu_seconds: float | None = None
    peak_rss: int | None = None
    peak_anon: int | None = None
    peak_tree: int | None = None  # the process and its children together
    git_over_cas: float | None = None
    cas_over_blake3: float | None = None
    cas_over_zstd: float | None = None

    @classmethod
    def of(cls, name: str, data: str, kind: str, size: tuple[int, int], runs: list[Proc]) -> Row:
        """Times from the median run; memory from the highest run (a peak is a worst case)."""
        mid = runs[median_of([p.seconds for p in runs])]
        anon = [p.peak_anon for p in runs if p.peak_anon is not None]
        tree = [p.peak_tree for p in runs if p.peak_tree is not None]
        return cls(
            name,
            data,
            kind,
            *size,
            runs=[p.seconds for p in runs],
            cpu_seconds=mid.cpu_seconds,
            peak_rss=max(p.peak_rss for p in runs),
            peak_anon=max(anon) if anon else None,
            peak_tree=max(tree) if tree else None,
        )

    @property
    def seconds(self) -> float:
        return self.runs[median_of(self.runs)]

    @property
    def spread(self) -> float | None:
        """(slowest - fastest) / median, in percent: how noisy this row was."""
        if len(self.runs) < 2:
            return None
        return 100 * (max(self.runs) - min(self.runs)) / self.seconds

    @property
    def mib_per_s(self) -> float:
        return self.nbytes / MIB / self.seconds

    @property
    def files_per_s(self) -> float:
        return self.files / self.seconds

    def as_json(self) -> dict[str, Any]:
        extra = {"seconds": self.seconds, "mib_per_s": self.mib_per_s}
        return {**asdict(self), **extra, "files_per_s": self.files_per_s}


@dataclass
class Report:
    machine: dict[str, Any]
    params: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)

    def row(self, name: str, data: str) -> Row:
        return next(r for r in self.rows if r.name.startswith(name) and r.data == data)

    def as_json(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "params": self.params,
            "rows": [r.as_json() for r in self.rows],
            "targets": self.targets,
        }


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:,.1f}"


def _size(nbytes: int) -> str:
    return f"{nbytes / MIB:,.1f} MiB" if nbytes < (1 << 30) else f"{nbytes / (1 << 30):,.2f} GiB"


COLUMNS = (
    ("row", lambda r: r.name),
    ("data", lambda r: r.data),
    ("size", lambda r: _size(r.nbytes)),
    ("s", lambda r: _num(r.seconds, 2)),
    ("range%", lambda r: _num(r.spread, 0)),
    ("cpu s", lambda r: _num(r.cpu_seconds, 2)),
    ("MiB/s", lambda r: _num(r.mib_per_s)),
    ("files/s", lambda r: _num(r.files_per_s, 0) if r.files > 1 else "-"),
    ("RSS MiB", lambda r: _mib(r.peak_rss)),
    ("anon MiB", lambda r: _mib(r.peak_anon)),
    ("+kids MiB", lambda r: _mib(r.peak_tree)),
    ("git/cas", lambda r: _num(r.git_over_cas, 2)),
    ("cas/b3", lambda r: _num(r.cas_over_blake3, 2)),
    ("cas/zstd", lambda r: _num(r.cas_over_zstd, 2)),
)


def render(report: Report) -> str:
    m, p = report.machine, report.params
    out = [
        f"cas store benchmark: cas {m['cas']}, Python {m['python']}, {m['cores']} cores "
        f"({m['cpu']}), {m['platform']}",
        f"  store: chunk size {p['chunk_size'] // 1024} KiB, zstd level {p['level']}, "
        f"batch flush at {p['flush_mib']} MiB; "
        f"blake3 {m['blake3']}, zstandard {m['zstandard']}, lmdb {m['lmdb']}, {m['git']}",
        f"  tree: {p['files']:,} files x 4 KiB of generated Python-like text, zstd -{p['level']} "
        f"ratio {p['tree_ratio']:.2f}x; big: one {_size(p['big_bytes'])} file of text and "
        f"random 64 KiB pieces, ratio {p['big_ratio']:.2f}x; seed {p['seed']}",
        "  Every row reads files this run just wrote, so all reads come from the page cache "
        "(nothing is dropped); sync runs before each measured process so no row pays for "
        "another's writeback.",
        f"  Each row: {p['repeat']} runs, each in a fresh process; times are the median run, "
        "range% = (slowest - fastest) / median, memory is the highest run.",
        "  s = wall time of the whole process (cas rows include interpreter start-up: "
        f"`cas --version` takes {p['startup_s']:.2f} s); limit rows time only the work inside.",
        "  RSS = ru_maxrss from os.wait4 of that process; it counts LMDB's file-backed map pages; "
        f"floor {p['rss_floor'] / MIB:.1f} MiB (what `true` shows, started the same way).",
        "  anon = peak RssAnon (heap and other private memory), polled every 5 ms; +kids = the "
        "peak of the summed RSS of the process and its children (worker processes), polled "
        "every 5 ms (pages shared between them count once per process).",
        "  'after put' rows: the first command on a store right after `cas put` of the big file "
        "(it walks the data file the put changed); `cas pack` rows: a project holding a README "
        "and a file of random bytes the size of the big file, cold (an empty store) and warm "
        "(nothing changed).",
        "  git/cas = git seconds / cas seconds (>1: cas faster); cas/b3, cas/zstd = cas MiB/s / "
        "limit MiB/s on the same bytes (zstd: compress for puts, decompress for gets).",
        "  Limits: blake3 on all cores (tree: one thread per core; big: mmap, max_threads=AUTO); "
        "zstd on one thread like the store, one frame per file or per 1 MiB chunk.",
        "  git: git add -A into an empty repository with git's defaults (GIT_CONFIG_NOSYSTEM=1 and "
        "an empty HOME, so no system or user config).",
        "",
        *text_table(
            [[t for t, _ in COLUMNS], *([show(r) for _, show in COLUMNS] for r in report.rows)],
            left=2,
        ),
        "",
    ]
    for t in report.targets:
        out.append(f"{'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['measured']}")
    return "\n".join(out)


# --- the run ------------------------------------------------------------------------------------


def machine_facts(env: dict[str, str]) -> dict[str, Any]:
    import blake3
    import lmdb
    import zstandard

    import cas

    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.release()}",
        "cas": cas.__version__,
        "blake3": blake3.__version__,
        "zstandard": zstandard.__version__,
        "lmdb": lmdb.__version__,
        "git": version(["git", "--version"], env) or "unknown",
    }


@dataclass
class Workload:
    tree: Path
    big: Path
    files: int
    tree_bytes: int
    big_bytes: int

    def inputs(self) -> tuple[tuple[str, Path, int, int], ...]:
        """(label, path, file count, bytes) of the tree and of the big file."""
        return (
            ("tree", self.tree, self.files, self.tree_bytes),
            ("big", self.big, 1, self.big_bytes),
        )


def make_workload(work: Path, files: int, big_mib: int) -> Workload:
    tree, big = work / "tree", work / "big" / "big.bin"
    tree.mkdir()
    big.parent.mkdir()
    rng = random.Random(SEED)
    lines = code_lines(rng, 50_000)
    note(f"writing {files:,} files of 4 KiB and a {big_mib} MiB file under {work}")
    tree_bytes = write_tree(tree, files, rng, lines)
    write_big(big, big_mib * MIB, rng, lines)
    return Workload(tree, big, files, tree_bytes, big_mib * MIB)


class Bench:
    """Runs commands in ``work`` with a clean environment, ``repeat`` times each."""

    def __init__(self, work: Path, repeat: int) -> None:
        self.work = work
        self.repeat = repeat
        home = work / "home"
        home.mkdir()
        self.env = clean_env(home, strip=("CAS_", "GIT_"))
        self.cas = [sys.executable, "-m", "cas"]
        self.me = [sys.executable, "-m", "bench.store_bench"]

    def once(self, argv: Sequence[str | os.PathLike[str]]) -> Proc:
        return measure(argv, self.env, self.work)

    def runs(self, label: str, one: Callable[[int], Proc]) -> list[Proc]:
        """``one(i)`` for each run i, after a sync, so that writeback of earlier steps (the
        generated data, an earlier store) does not land in the measured process."""
        done: list[Proc] = []
        for i in range(self.repeat):
            note(f"{label} ({i + 1}/{self.repeat})")
            os.sync()
            done.append(one(i))
        return done

    def child(self, kind: str, *args: str | os.PathLike[str]) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.once([*self.me, "--child", kind, *args]).stdout)
        return result


def cas_rows(b: Bench, w: Workload) -> list[Row]:
    def init(store: Path) -> Path:
        b.once([*b.cas, "--store", store, "init"])
        return store

    listings: list[list[list[str]]] = []

    def put_tree(i: int) -> Proc:
        store = init(b.work / f"store-tree-{i}")
        p = b.once([*b.cas, "--store", store, "put", "-r", w.tree])
        listing = [line.split("  ", 1) for line in p.stdout.decode().splitlines() if line]
        if len(listing) != w.files:
            raise BenchError(f"cas put -r listed {len(listing)} files, expected {w.files}")
        listings.append(listing)
        return p

    rows = [
        Row.of("cas put -r", "tree", "cas", (w.tree_bytes, w.files), b.runs("cas put -r", put_tree))
    ]
    digests = b.work / "digests.txt"
    digests.write_text("".join(f"{d}\n" for d, _ in listings[0]), encoding="ascii")

    def get_tree(_i: int) -> Proc:
        p = b.once([*b.me, "--child", "get-many", b.work / "store-tree-0", digests])
        if json.loads(p.stdout)["bytes"] != w.tree_bytes:
            raise BenchError(f"Store.get did not return the {w.tree_bytes} bytes put")
        return p

    rows.append(
        Row.of(
            "cas get (Store.get)",
            "tree",
            "cas",
            (w.tree_bytes, w.files),
            b.runs("Store.get", get_tree),
        )
    )

    big_digests: set[str] = set()

    def put_big(i: int) -> Proc:
        store = init(b.work / f"store-big-{i}")
        p = b.once([*b.cas, "--store", store, "put", w.big])
        big_digests.add(p.stdout.decode().strip())
        return p

    rows.append(
        Row.of("cas put FILE", "big", "cas", (w.big_bytes, 1), b.runs("cas put FILE", put_big))
    )
    if len(big_digests) != 1:
        raise BenchError(f"cas put gave different digests for the same file: {big_digests}")
    digest = big_digests.pop()

    def get_big(_i: int) -> Proc:
        copy = b.work / "big.out"
        p = b.once([*b.cas, "--store", b.work / "store-big-0", "get", digest, "-o", copy])
        size = copy.stat().st_size
        copy.unlink()
        if size != w.big_bytes:
            raise BenchError(f"cas get wrote {size} bytes, expected {w.big_bytes}")
        return p

    rows.append(
        Row.of(
            "cas get -o FILE", "big", "cas", (w.big_bytes, 1), b.runs("cas get -o FILE", get_big)
        )
    )
    rows += after_put_rows(b, w, init, digest)
    rows += pack_rows(b, w)
    return rows


def after_put_rows(b: Bench, w: Workload, init: Callable[[Path], Path], digest: str) -> list[Row]:
    """`cas verify --all` and `cas get -o` as the first command on a store right after `cas put`
    of the big file: each run puts into a new store (not measured), then measures one command,
    then deletes the store."""

    def first_after_put(command: str, i: int) -> Proc:
        store = init(b.work / f"store-after-put-{command}-{i}")
        try:
            b.once([*b.cas, "--store", store, "put", w.big])
            if command == "verify":
                return b.once([*b.cas, "--store", store, "verify", "--all"])
            copy = b.work / "big.out"
            p = b.once([*b.cas, "--store", store, "get", digest, "-o", copy])
            copy.unlink()
            return p
        finally:
            shutil.rmtree(store, ignore_errors=True)

    size = (w.big_bytes, 1)
    return [
        Row.of(
            "cas verify --all after put",
            "big",
            "cas",
            size,
            b.runs("cas verify --all after put", lambda i: first_after_put("verify", i)),
        ),
        Row.of(
            "cas get -o after put",
            "big",
            "cas",
            size,
            b.runs("cas get -o after put", lambda i: first_after_put("get", i)),
        ),
    ]


def pack_rows(b: Bench, w: Workload) -> list[Row]:
    """`cas pack` of a project holding a README and a file of random bytes as large as the big
    file (the big file itself holds, by chance, what the secret scan takes for a password, so a
    pack would withhold it and store nothing): cold, each run into an empty store; warm, each
    run over the first run's store, nothing changed."""
    project = b.work / "project"
    project.mkdir()
    (project / "README.md").write_text("# A project with one big file\n", encoding="utf-8")
    rng = random.Random(SEED)
    with (project / "data.bin").open("wb") as out:
        for start in range(0, w.big_bytes, 16 * MIB):
            out.write(rng.randbytes(min(16 * MIB, w.big_bytes - start)))
    size = (w.big_bytes, 2)

    def cold(i: int) -> Proc:
        store = b.work / f"store-pack-{i}"
        b.once([*b.cas, "--store", store, "init"])
        p = measure([*b.cas, "--store", store, "pack", "--json"], b.env, project)
        if json.loads(p.stdout)["withheld"]:
            raise BenchError("cas pack withheld the big file: nothing of it was stored")
        return p

    rows = [Row.of("cas pack, cold", "big", "cas", size, b.runs("cas pack, cold", cold))]

    def warm(_i: int) -> Proc:
        return measure([*b.cas, "--store", b.work / "store-pack-0", "pack"], b.env, project)

    rows.append(Row.of("cas pack, warm", "big", "cas", size, b.runs("cas pack, warm", warm)))
    for i in range(1, b.repeat):
        shutil.rmtree(b.work / f"store-pack-{i}", ignore_errors=True)
    return rows


def git_rows(b: Bench, w: Workload) -> list[Row]:
    """git add -A of the same bytes, each run into a new repository kept outside the tree (old
    ones are kept until the end: ext4 is slow to create files for minutes after mass deletes)."""
    rows = []
    for data, path, count, nbytes in w.inputs():
        where = path if path.is_dir() else path.parent

        def add(i: int, data: str = data, where: Path = where) -> Proc:
            repo = b.work / f"git-{data}-{i}"
            b.once(["git", "init", "-q", repo])
            return b.once(
                ["git", f"--git-dir={repo / '.git'}", f"--work-tree={where}", "add", "-A"]
            )

        rows.append(
            Row.of("git add -A", data, "git", (nbytes, count), b.runs(f"git add -A {data}", add))
        )
    return rows


def limit_rows(
    b: Bench, w: Workload, level: int, chunk_size: int
) -> tuple[list[Row], dict[str, float]]:
    rows: list[Row] = []
    ratios: dict[str, float] = {}
    for data, path, count, nbytes in w.inputs():
        size = (nbytes, count)
        hashes, zstds = [], []
        for i in range(b.repeat):
            note(f"limits on {data} ({i + 1}/{b.repeat})")
            os.sync()
            hashes.append(b.child("blake3", path))
            zstds.append(b.child("zstd", path, str(level), str(chunk_size)))
        threads = hashes[0]["threads"]
        rows.append(
            Row(f"blake3 ({threads} threads)", data, "limit", *size, [h["seconds"] for h in hashes])
        )
        rows.append(
            Row(f"zstd -{level} (1 thread)", data, "limit", *size, [z["compress"] for z in zstds])
        )
        rows.append(
            Row("zstd -d (1 thread)", data, "limit", *size, [z["decompress"] for z in zstds])
        )
        ratios[data] = zstds[0]["raw"] / zstds[0]["packed"]
    return rows, ratios


def compare(report: Report) -> None:
    """Fill the ratio columns and judge the targets."""
    for data in ("tree", "big"):
        git = report.row("git add -A", data)
        b3 = report.row("blake3", data)
        comp = report.row(f"zstd -{report.params['level']}", data)
        decomp = report.row("zstd -d", data)
        for r in report.rows:
            if r.kind != "cas" or r.data != data or r.name.startswith("cas pack"):
                continue  # (a pack does far more than store the bytes: no limit applies)
            is_put = r.name.startswith("cas put")
            if is_put:
                r.git_over_cas = git.seconds / r.seconds
            r.cas_over_blake3 = r.mib_per_s / b3.mib_per_s
            r.cas_over_zstd = r.mib_per_s / (comp if is_put else decomp).mib_per_s
    speedup = report.row("cas put -r", "tree").git_over_cas or 0.0
    report.targets.append(
        {
            "target": f"cas put -r at least {TARGET_SPEEDUP:g}x faster than git add -A on the "
            "small-file tree",
            "pass": speedup >= TARGET_SPEEDUP,
            "measured": f"{speedup:.2f}x",
        }
    )
    put, get = report.row("cas put FILE", "big"), report.row("cas get -o FILE", "big")
    worst = max(put.peak_rss or 0, get.peak_rss or 0)
    judged = [r for r in report.rows if r.kind == "cas" and r.data == "big"]
    worst_row = max(judged, key=lambda r: r.peak_tree or r.peak_rss or 0)
    worst_any = worst_row.peak_tree or worst_row.peak_rss
    report.targets.append(
        {
            "target": f"peak RSS, with worker processes, under {TARGET_ANY_RSS_MIB} MiB in every "
            "command on the big file (put, get, verify --all and get right after a put, "
            "pack cold and warm)",
            "pass": worst_any is not None and worst_any < TARGET_ANY_RSS_MIB * MIB,
            "measured": ", ".join(f"{r.name} {_mib(r.peak_tree or r.peak_rss)}" for r in judged)
            + " MiB",
        }
    )
    report.targets.append(
        {
            "target": f"peak RSS under {TARGET_RSS_MIB} MiB to put and to get the big file",
            "pass": worst < TARGET_RSS_MIB * MIB,
            "measured": f"put {_mib(put.peak_rss)} MiB, get {_mib(get.peak_rss)} MiB "
            f"(anon only: put {_mib(put.peak_anon)}, get {_mib(get.peak_anon)})",
        }
    )


def run(files: int, big_mib: int, repeat: int, out_dir: Path | None) -> Report:
    from cas.batch import FLUSH_BYTES
    from cas.store import DEFAULT_CHUNK_SIZE, DEFAULT_LEVEL

    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cas-bench-", dir=out_dir))
    try:
        b = Bench(work, repeat)
        w = make_workload(work, files, big_mib)
        report = Report(
            machine=machine_facts(b.env),
            params={
                "files": files,
                "tree_bytes": w.tree_bytes,
                "big_bytes": w.big_bytes,
                "repeat": repeat,
                "chunk_size": DEFAULT_CHUNK_SIZE,
                "level": DEFAULT_LEVEL,
                "flush_mib": FLUSH_BYTES // MIB,
                "seed": SEED,
                "startup_s": min(b.once([*b.cas, "--version"]).seconds for _ in range(3)),
                "rss_floor": b.once(["true"]).peak_rss,
            },
        )
        report.rows += cas_rows(b, w)
        report.rows += git_rows(b, w)
        limits, ratios = limit_rows(b, w, DEFAULT_LEVEL, DEFAULT_CHUNK_SIZE)
        report.rows += limits
        report.params["tree_ratio"], report.params["big_ratio"] = ratios["tree"], ratios["big"]
        compare(report)
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = harness.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 files and a 64 MiB big file")
    parser.add_argument("--files", type=int, help="small files in the tree (default 20,000)")
    parser.add_argument("--big-mib", type=int, help="size of the big file in MiB (default 1024)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (default 3)")
    parser.add_argument("--out", type=Path, help="work here and write results.json here")
    args = parser.parse_args(argv)
    if args.files is None:
        args.files = 2_000 if args.quick else 20_000
    if args.big_mib is None:
        args.big_mib = 64 if args.quick else 1024
    if args.files < 1 or args.big_mib < 2 or args.repeat < 1:
        parser.error("--files and --repeat must be at least 1, --big-mib at least 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--child"]:
        run_child(args_in[1:])
        return 0
    args = parse_args(args_in)
    try:
        report = run(args.files, args.big_mib, args.repeat, args.out)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    print(render(report))
    if args.out is not None:
        text = json.dumps(report.as_json(), indent=2) + "\n"
        (args.out / "results.json").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
