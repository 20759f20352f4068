"""How fast the rating is: the lexicon per language, history, and the rating itself.

    .venv/bin/python -m bench.rating_bench [PATH ...] [--files N] [--mb M] [--runs K]
                                           [--corpus NAME ...] [--no-synthetic] [--history]

Trees: the synthetic tree (bench/tree.py, 20,000 files and 300 MiB by default, written once
under ``bench/.cache/rating/``), the real projects named with ``--corpus`` (django by default;
fetched like bench/quality.py does), and any PATH. For each tree, in this process (CPU seconds,
best of ``--runs``):

* lexicon: `packer.lexicon.lex` over every file it reads, per language, in MB/s of source;
* cache: encoding and decoding every lexicon (what a warm pack reads back);
* rating: `packer.rating.rate` alone, on decoded lexicons, with the graph's size;
* history (``--history``, the synthetic tree and PATHs that are git repositories): the time of
  `packer.history.read_history`, wall and CPU seconds of this process and its git children (the
  synthetic tree becomes a repository once: committed, then 30 commits changing a file each).

Prints one table. The rating's budget is about a second of CPU on the 20,000-file tree; the
lexicon runs in the ingest workers and is cached by content, so it is paid once per file.
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections import defaultdict
from pathlib import Path

from bench import harness
from bench import tree as treegen
from bench.harness import best_of, fetch, text_table
from packer.history import read_history
from packer.lang import language_for
from packer.lexicon import Lexicon, decode, encode, lex, lexicon_language
from packer.rating import rate

CACHE = harness.CACHE / "rating"

Row = tuple[str, str, str, str, str]


def files_of(root: Path) -> list[tuple[str, bytes]]:
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink():
                out.append((path.relative_to(root).as_posix(), path.read_bytes()))
    return out


def bench_tree(label: str, root: Path, runs: int, history: bool) -> list[Row]:
    """The rows of one tree. ``history``: measure it (making a repository of the tree first
    when it has none)."""
    files = files_of(root)
    texts = [(rel, language_for(rel), data) for rel, data in files if b"\0" not in data[:8000]]
    per_lang: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # bytes, seconds
    lexicons: dict[str, Lexicon | None] = {}
    for _ in range(runs):
        seconds: dict[str, float] = defaultdict(float)
        for rel, lang, data in texts:
            which = lexicon_language(rel, lang)
            if which is None:
                continue
            start = time.process_time()
            lexicons[rel] = lex(rel, data, lang)
            seconds[which] += time.process_time() - start
        for which, s in seconds.items():
            known = per_lang[which][1]
            per_lang[which][1] = s if not known else min(known, s)
    for rel, lang, data in texts:
        which = lexicon_language(rel, lang)
        if which is not None:
            per_lang[which][0] += len(data)
    rows: list[Row] = []
    total_bytes = sum(b for b, _ in per_lang.values())
    total_s = sum(s for _, s in per_lang.values())
    rows.append(
        (
            label,
            "lexicon, all",
            f"{total_bytes / 1e6:.1f} MB",
            f"{total_s:.2f}",
            _rate(total_bytes, total_s),
        )
    )
    for which in sorted(per_lang, key=lambda w: -per_lang[w][0])[:8]:
        size, s = per_lang[which]
        rows.append((label, f"  {which}", f"{size / 1e6:.1f} MB", f"{s:.2f}", _rate(size, s)))
    encoded = {rel: encode(lx) for rel, lx in lexicons.items() if lx is not None}
    enc_s, _ = best_of(runs, lambda: [encode(lx) for lx in lexicons.values() if lx is not None])
    dec_s, decoded = best_of(runs, lambda: {rel: decode(b) for rel, b in encoded.items()})
    size = sum(len(b) for b in encoded.values())
    rows.append((label, "lexicons: encode", f"{size / 1e6:.1f} MB", f"{enc_s:.2f}", ""))
    rows.append((label, "lexicons: decode", f"{size / 1e6:.1f} MB", f"{dec_s:.2f}", ""))
    assert isinstance(decoded, dict)
    inputs = [(rel, language_for(rel), len(data), decoded.get(rel)) for rel, data in files]

    def read(path: str) -> str | None:
        try:
            return (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    rate_s, ratings = best_of(runs, lambda: rate(inputs, read=read))
    stats = getattr(ratings, "stats", {})
    shape = ", ".join(f"{k} {v:,}" for k, v in stats.items() if k != "files")
    rows.append((label, "rating", f"{len(files):,} files", f"{rate_s:.2f}", shape))
    if history:
        rows.append(_history_row(label, root, [rel for rel, _ in files]))
    return rows


def _rate(size: float, seconds: float) -> str:
    return f"{size / seconds / 1e6:.1f} MB/s" if seconds else ""


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    subprocess.run(["git", "-C", str(root), *args], env=env, check=True, capture_output=True)


def _history_row(label: str, root: Path, paths: list[str]) -> Row:
    if not (root / ".git").exists():
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "the tree")
        for k in range(30):
            target = root / paths[(k * 997) % len(paths)]
            with target.open("ab") as handle:
                handle.write(b"\n")
            _git(root, "commit", "-q", "--allow-empty", "-am", f"change {k}")
    wanted = frozenset(paths)
    start, cpu = time.perf_counter(), _cpu_with_children()
    found = read_history(root, wanted)
    wall, used = time.perf_counter() - start, _cpu_with_children() - cpu
    window = found.window if found is not None else 0
    return (label, "history", f"{window} entries", f"{used:.2f}", f"wall {wall:.2f} s")


def _cpu_with_children() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=float, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", action="append", default=None)
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--history", action="store_true")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    trees: list[tuple[str, Path]] = []
    history: set[str] = set()  # the trees whose history is measured
    if not args.no_synthetic:
        where = args.cache / f"tree-{args.files}-{args.mb:g}"
        done = where.with_name(where.name + ".done")
        if not done.exists():
            treegen.generate(where, args.files, int(args.mb * (1 << 20)))
            done.write_text("")
        trees.append((f"synthetic {args.files:,}", where))
        if args.history:
            history.add(str(where))
    for name in args.corpus if args.corpus is not None else ["django"]:
        try:
            trees.append((name, fetch(harness.corpus_named(name))))
        except KeyError as exc:
            parser.error(exc.args[0])
    trees += [(str(p), p) for p in args.paths]
    if args.history:
        history |= {str(p) for p in args.paths if (p / ".git").exists()}
    rows: list[Row] = []
    for label, root in trees:
        rows += bench_tree(label, root, args.runs, str(root) in history)
    titles = ("tree", "step", "size", "cpu s", "")
    print("\n".join(text_table([titles, *rows], left=5)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
