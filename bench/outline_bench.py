"""How fast files are read into outlines (`packer.summaries.outline`), per language, on real code.

    .venv/bin/python -m bench.outline_bench [--corpus NAME ...] [--repeat R]

Outlines every file of each corpus (bench/questions/corpora.toml's dev and test sets, fetched
like bench/quality.py does) and prints, per language the outline was read as: files, source
MiB, milliseconds per file (mean, median, 99th percentile, max), and MiB/s. Each language's first
file in the process also pays for compiling its tree-sitter query; that one-time cost is printed
in its own column and left out of the per-file numbers: every file is outlined once more than
``--repeat`` says, and the best of the runs after the first is kept, so neither that cost nor a
slow spell of a shared machine lands in the table.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

from bench import harness
from bench.harness import CORPORA, MIB, fetch, markdown_table
from packer.summaries import outline

MAX_BYTES = 8 * MIB  # the largest file a pack summarizes


def files_of(root: Path) -> list[tuple[str, str]]:
    """(relative path, text) of the corpus's text files, in path order."""
    out: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_BYTES:
                continue
            data = path.read_bytes()
            if b"\0" in data[:8192]:
                continue  # binary
            out.append((path.relative_to(root).as_posix(), data.decode("utf-8", "replace")))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--corpus", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    corpora = [
        c
        for c in CORPORA
        if c.set in ("dev", "test") and (not args.corpus or c.name in args.corpus)
    ]
    if not corpora:
        raise SystemExit("outline_bench: no corpus selected")
    times: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, int] = defaultdict(int)
    first: dict[str, float] = {}
    for corpus in corpora:
        for rel, text in files_of(fetch(corpus)):
            runs = []
            lang = ""
            for _ in range(max(args.repeat, 1) + 1):
                start = time.perf_counter()
                lang = outline(rel, text).lang
                runs.append(time.perf_counter() - start)
            best = min(runs[1:])
            if lang not in first:
                # The first file of a language compiled its query in its first run.
                first[lang] = runs[0] - best
            times[lang].append(best)
            sizes[lang] += len(text.encode("utf-8", "replace"))
    head = ("language", "files", "MiB", "ms/file", "median", "p99", "max", "MiB/s", "setup ms")
    rows = []
    for lang in sorted(times, key=lambda k: -sum(times[k])):
        t = sorted(times[lang])
        total = sum(t)
        rows.append(
            (
                lang,
                str(len(t)),
                f"{sizes[lang] / MIB:.2f}",
                f"{total / len(t) * 1000:.2f}",
                f"{statistics.median(t) * 1000:.2f}",
                f"{t[min(len(t) - 1, int(len(t) * 0.99))] * 1000:.1f}",
                f"{t[-1] * 1000:.1f}",
                f"{sizes[lang] / MIB / total:.2f}" if total else "-",
                f"{max(first.get(lang, 0.0), 0.0) * 1000:.0f}",
            )
        )
    print("corpora: " + ", ".join(c.name for c in corpora))
    print(markdown_table(rows, head))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
