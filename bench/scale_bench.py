"""cas on real repositories of over 1,500 files, next to repomix and aider's repo map, same run.

    .venv/bin/python -m bench.scale_bench [PATH ...] [--repo NAME ...] [--runs K] [--queries Q]
                                          [--no-peers] [--out DIR]

The repositories are real projects nobody here wrote, fetched the way a fresh machine can and
cached under ``bench/.cache/`` (`bench/harness.py`): Django 5.1.4's sdist from PyPI (Python, also
a corpus of `bench/quality.py`), rxjs 7.8.2 from npm (its TypeScript sources and the JavaScript
and type declarations built from them) and gVisor's Go sources from Debian
(``golang-gvisor-gvisor-dev``). With PATH, those already unpacked trees instead, each named by
its folder. Each is copied into a work folder and committed once to a new git repository (aider
maps what git tracks; cas reads its history), with the bench's ``cas.toml`` (one scope, target
10,000, max 12,000 tokens) unless it has one. Then, in rounds, each command a fresh process:

* the peers, on the tree alone: ``repomix`` (default options) and ``aider --show-repo-map`` with
  a 12,000-token map, its cache removed after each run;
* cas: ``pack`` cold (an empty store, its search index included), the first ``search`` right
  after it, ``render`` of each pack, ``search`` for each of Q queries drawn from the names the
  tree defines, a ``pack`` after 1% of the files changed.

Prints one table (medians of the rounds; peak memory of each process and of it with its
workers; repomix's and aider's time over cas's) and, per repository, the goals of issue 22 that
apply, PASS or MISS. Exit 0 when everything ran (a MISS is a result), 1 when a command failed.
With ``--out DIR`` the work happens under DIR and ``results.json`` and ``table.txt`` are left
there.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from bench import pack_bench as pb
from bench.harness import (
    AIDER,
    MIB,
    REPOMIX,
    BenchError,
    Corpus,
    aider_env,
    aider_map_argv,
    drop_aider_files,
    ensure_aider,
    ensure_repomix,
    measure,
    note,
    text_table,
)

SCALE_FILES = 1_500  # a repository below this is not a measurement at scale (said, not refused)
AIDER_BUDGET = 12_000  # tokens: the max of the pack the bench's cas.toml asks for
AIDER_MAP_START = "Here are summaries"  # how aider's printed repo map begins
REPOS: tuple[Corpus, ...] = tuple(harness.corpus_named(n) for n in ("django", "rxjs", "gvisor"))


# --- one repository ------------------------------------------------------------------------------


@dataclass
class Repo:
    name: str
    source: Path
    what: str  # where it came from
    runner: pb.Runner | None = None
    rows: pb.Rows = field(default_factory=pb.Rows)
    aider: pb.Row = field(default_factory=lambda: pb.Row("aider --show-repo-map", "peer"))

    @property
    def tree(self) -> pb.Tree:
        assert self.runner is not None
        return self.runner.tree

    def shown(self) -> list[pb.Row]:
        rows = self.rows
        return [
            rows.cold,
            rows.stages["index"],
            rows.cold_search,
            rows.render,
            rows.search,
            rows.changed,
            rows.repomix,
            self.aider,
        ]


def prepare(repo: Repo, work: Path) -> None:
    """The repository copied under ``work`` and committed once to a new git repository."""
    folder = work / repo.name
    folder.mkdir()
    tree = pb.prepare_tree(repo.source, folder, 0, 0.0)
    harness.git_snapshot(tree.root)
    repo.runner = pb.Runner(folder, tree)


def aider_round(repo: Repo, exe: Path, i: int) -> None:
    """aider's repo map of the tree, from a cold start: its tag cache and home are removed."""
    r = repo.runner
    assert r is not None
    note(f"{repo.name}, round {i + 1}: aider --show-repo-map")
    home = r.work / "aider-home"
    home.mkdir()
    try:
        os.sync()
        proc = measure(aider_map_argv(exe, AIDER_BUDGET), aider_env(home), r.tree.root)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        drop_aider_files(r.tree.root)
    printed = proc.stdout.decode("utf-8", "replace")
    start = printed.find(AIDER_MAP_START)
    if start < 0:
        raise BenchError(f"aider printed no repo map of {repo.name}: {printed.strip()[-400:]}")
    repo.aider.add(proc)
    repo.aider.nbytes = r.tree.nbytes
    repo.aider.note = f"a map of {AIDER_BUDGET:,} tokens: {len(printed) - start:,} characters"


def cas_round(repo: Repo, i: int, queries: int) -> None:
    r = repo.runner
    assert r is not None
    rows = repo.rows
    pb.cold_pack(r, rows, i, queries)
    pb.render_packs(r, rows, i)
    if r.tree.queries:
        pb.search_round(r, rows, i)
    pb.changed_pack(r, rows, i)
    r.reset_cas()


def finish(repo: Repo) -> None:
    """Notes made once every round has run."""
    rows = repo.rows
    index = rows.stages["index"]
    if index.seconds:
        index.note = f"{100 * index.median / rows.cold.median:.0f}% of the cold pack; {index.note}"


# --- the table -----------------------------------------------------------------------------------

TITLES = ["repo", "row", "runs", "s", "range%", "cpu s", "RSS MiB", "tree MiB", "repomix/cas",
          "aider/cas", "note"]  # fmt: skip


def _ratio(peer: pb.Row, seconds: float | None) -> str:
    if seconds is None or not peer.measured:
        return "-"
    return f"{peer.median / seconds:.2f}x"


def _cells(repo: Repo, row: pb.Row) -> list[str]:
    label = f"  {row.label}" if row.kind == "stage" else row.label
    if not row.measured:
        return [repo.name, label, *["-"] * 8, row.missing or row.note]
    ours: float | None = None
    rows = repo.rows
    if row is rows.cold:
        ours = rows.cold.median
    elif row is rows.cold_search:
        ours = rows.cold_search.median
    return [
        repo.name,
        label,
        str(len(row.seconds)),
        harness.num(row.median, 3),
        harness.num(row.spread, 0),
        harness.num(sorted(row.cpu)[(len(row.cpu) - 1) // 2]) if row.cpu else "-",
        harness.num(row.peak_rss / MIB, 1) if row.peak_rss else "-",
        harness.num(max(row.tree) / MIB, 1) if row.tree else "-",
        _ratio(rows.repomix, ours),
        _ratio(repo.aider, ours),
        row.note,
    ]


def goals(repo: Repo) -> list[pb.Verdict]:
    """The goals of issue 22 that apply to a repository packed once from cold."""
    rows = repo.rows
    return [
        *pb.repomix_goals(rows),
        pb.changed_goal(rows),
        pb.fresh_search_goal(rows),
        pb.memory_within(repo.shown(), pb.RSS_LIMIT_MIB),
    ]


def header(repos: list[Repo], runs: int, peers: str) -> str:
    import cas

    lines = [
        f"cas scale benchmark: cas {cas.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores ({harness.cpu_model()}), {platform.system()} "
        f"{platform.release()}; peers: {peers}",
    ]
    for repo in repos:
        tree = repo.tree
        small = (
            f" (fewer than {SCALE_FILES:,} files: not at scale)" if tree.files < SCALE_FILES else ""
        )
        config = "the bench's cas.toml" if pb.BENCH_CONFIG in tree.description else "its cas.toml"
        lines.append(
            f"  {repo.name}: {repo.what}; {tree.files:,} files packed{small}, "
            f"{tree.nbytes / MIB:,.1f} MiB, with {config}; {len(tree.queries)} queries"
        )
    lines += [
        f"  runs: {runs} of every row, rounds interleaving the peers and cas; s = median wall "
        "time of the whole process; range% = (slowest - fastest) / median. 'cas search' is one "
        "number per query and round; 'cold pack + first search' a cold pack and one search right "
        "after it; 'cas render' every pack, one process each, added up.",
        "  RSS = peak ru_maxrss of the process; tree = the highest sum of VmRSS over the process "
        "and every process below it (ingest workers, git), polled every 5 ms. repomix/cas and "
        "aider/cas: the peer's median time over cas's (above 1: cas is faster).",
    ]
    wrap = textwrap.TextWrapper(width=100, subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join([lines[0], *(wrap.fill(line) for line in lines[1:])])


# --- the whole run -------------------------------------------------------------------------------


@dataclass
class Options:
    repos: list[tuple[str, Path | None]]  # name, and the tree when given (else fetched)
    runs: int
    queries: int
    peers: bool
    out: Path | None


def _source(name: str, given: Path | None) -> tuple[Path, str]:
    if given is not None:
        return given.resolve(), f"the tree at {given}"
    corpus = next(c for c in REPOS if c.name == name)
    return harness.fetch(corpus), f"{corpus.spec} ({corpus.source})"


def bench(opts: Options) -> tuple[str, dict[str, Any]]:
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)
    repos = [Repo(name, *_source(name, given)) for name, given in opts.repos]
    repomix: list[str] | None = None
    aider: Path | None = None
    missing = {"repomix": "skipped (--no-peers)", "aider": "skipped (--no-peers)"}
    if opts.peers:
        repomix, missing["repomix"] = ensure_repomix()
        aider, missing["aider"] = ensure_aider()
    work = Path(tempfile.mkdtemp(prefix="cas-scale-bench-", dir=opts.out))
    try:
        for repo in repos:
            prepare(repo, work)
            if repomix is None:
                repo.rows.repomix.missing = missing["repomix"]
            if aider is None:
                repo.aider.missing = missing["aider"]
        for i in range(opts.runs):
            for repo in repos:
                r = repo.runner
                assert r is not None
                if repomix is not None:
                    pb.repomix_round(r, repo.rows.repomix, repomix, i, [])
                if aider is not None:
                    aider_round(repo, aider, i)
                cas_round(repo, i, opts.queries)
        for repo in repos:
            finish(repo)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    peers = "none (--no-peers)" if not opts.peers else f"{REPOMIX}, {AIDER}"
    lines = [header(repos, opts.runs, peers), ""]
    lines += text_table(
        [TITLES, *(_cells(repo, row) for repo in repos for row in repo.shown())], left=2, note=True
    )
    results: dict[str, Any] = {"runs": opts.runs, "repos": []}
    for repo in repos:
        verdicts = goals(repo)
        lines += ["", f"Goals of issue 22 on {repo.name}:", *(v.line() for v in verdicts)]
        results["repos"].append(
            {
                "name": repo.name,
                "source": repo.what,
                "files": repo.tree.files,
                "bytes": repo.tree.nbytes,
                "queries": repo.tree.queries,
                "rows": [row.as_json() for row in repo.shown()],
                "targets": [{"text": v.text, "pass": v.passed} for v in verdicts],
            }
        )
    return "\n".join(lines), results


def parse_args(argv: Sequence[str]) -> Options:
    names = [c.name for c in REPOS]
    parser = harness.parser(__doc__)
    parser.add_argument("paths", nargs="*", type=Path, help="unpacked trees instead of the repos")
    parser.add_argument(
        "--repo", action="append", choices=names, help="only these repositories (repeatable)"
    )
    parser.add_argument("--runs", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--queries", type=int, default=10, help="searches a round (default 10)")
    parser.add_argument("--no-peers", action="store_true", help="skip repomix and aider")
    parser.add_argument("--out", type=Path, help="work here; leave results.json and table.txt")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.queries < 1:
        parser.error("--runs and --queries must be at least 1")
    if args.paths and args.repo:
        parser.error("give PATHs or --repo, not both")
    for path in args.paths:
        if not path.is_dir():
            parser.error(f"{path} is not a directory")
    given: list[tuple[str, Path | None]] = []
    for path in args.paths:
        name = path.resolve().name or "root"
        while name in {n for n, _ in given}:
            name += "'"
        given.append((name, path))
    if not given:
        given = [(name, None) for name in (args.repo or names)]
    return Options(given, args.runs, args.queries, not args.no_peers, args.out)


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    return harness.run_and_report(lambda: bench(opts), opts.out)


if __name__ == "__main__":
    sys.exit(main())
