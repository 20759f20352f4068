"""The Markdown face of a memory: how soon a saved edit is found by search under `cas mem watch`.

    .venv/bin/python -m bench.watch_bench [--days N] [--edits K]

A project whose global memory holds N days of logs (five entries a day) and a few facts is
exported and watched by a real ``cas mem watch`` process. Then K times: a new entry holding a
word found nowhere else is saved into one day's log (in place, or as editors save, a new file
renamed over the old), and the clock runs from the save until a search of the memory finds the
word: by words (``lexical``) and as ``cas mem search`` does by default (``auto``: words and
meaning), each polled every 10 ms from this process, which opens the same store. Last, K
entries are added by another writer (`memory.ops.remember`, as ``cas mem add``) and timed until
the watched folder holds them. The table shows the median and the slowest of each; the goal of
issue 26 is 2 s from the save to found (PASS or MISS).
"""

from __future__ import annotations

import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import harness

GOAL_SECONDS = 2.0
POLL = 0.01
WORDS = ("pack", "store", "search", "deploy", "index", "manifest", "budget", "agent", "cache")


def _fill(project: Path, days: int) -> None:
    from memory import MemoryManager

    rng = random.Random(26)
    with MemoryManager(project, create=False) as mem:
        for d in range(days):
            day = f"2026-{10 + d // 28:02d}-{1 + d % 28:02d}"
            for _ in range(5):
                mem.remember(" ".join(rng.choice(WORDS) for _ in range(12)), date=day)
        for key in ("db", "region", "runner"):
            mem.set_fact(key, " ".join(rng.choice(WORDS) for _ in range(3)), date="2026-10-01")
        mem.curate("Packs are judged by what an agent can answer", date="2026-10-01")


def _until(check: Callable[[], bool], start: float, what: str, limit: float = 30.0) -> float:
    while not check():
        if time.monotonic() - start > limit:
            raise harness.BenchError(f"{what}: not seen within {limit:.0f} s")
        time.sleep(POLL)
    return time.monotonic() - start


def _save(path: Path, data: bytes, atomic: bool) -> None:
    if atomic:  # as most editors save: a new file, renamed over the old one
        tmp = path.with_name(path.name + ".new~")
        tmp.write_bytes(data)
        tmp.replace(path)
    else:
        path.write_bytes(data)


def _measure(project: Path, face: Path, edits: int) -> dict[str, list[float]]:
    from cas import Store
    from cas.textindex import TextIndex
    from memory import ops
    from memory.search import search
    from memory.state import head

    times: dict[str, list[float]] = {"lexical": [], "auto": [], "back": []}
    logs = sorted((face / "DailyLogs").iterdir())
    rng = random.Random(2)
    back = face / "DailyLogs" / "2026-12-31.md"
    with Store.at(project / ".cas") as store:
        index = TextIndex.open(store.path)
        assert index is not None
        with index:

            def found(word: str, mode: str) -> bool:
                index.refresh()
                hits = search(store, index, "global", word, k=3, mode=mode)
                return any(word in text for h in hits for _n, text in h.snippet)

            def written(line: bytes) -> bool:
                return back.is_file() and line in back.read_bytes()

            for i in range(edits):
                for mode in ("lexical", "auto"):
                    word = "".join(rng.choice(string.ascii_lowercase) for _ in range(12))
                    log = logs[rng.randrange(len(logs))]
                    body = log.read_bytes() + f"- the {word} check\n".encode()
                    start = time.monotonic()
                    _save(log, body, atomic=i % 2 == 1)
                    times[mode].append(
                        _until(lambda w=word, m=mode: found(w, m), start, f"{word} ({mode})")
                    )
                before = head(store, "global").digest
                start = time.monotonic()
                done = ops.remember(store, "global", f"another writer {i}", date="2026-12-31")
                assert done.state != before
                line = f"- another writer {i} ^{done.id}\n".encode()
                times["back"].append(
                    _until(lambda x=line: written(x), start, f"{line!r} in the folder")
                )
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--days", type=int, default=60, help="days of logs in the memory")
    parser.add_argument("--edits", type=int, default=9, help="edits timed per row")
    args = parser.parse_args(argv)
    if args.days < 1 or args.edits < 1:
        parser.error("--days and --edits must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="cas-watch-bench-"))
    env = harness.clean_env()
    watch: subprocess.Popen[bytes] | None = None
    try:
        project = work / "project"
        project.mkdir()
        harness.run([*harness.CAS, "init", "--store-only"], cwd=project, env=env)
        _fill(project, args.days)
        face = work / "face"
        watch = subprocess.Popen(
            [*harness.CAS, "mem", "watch", str(face)],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert watch.stdout is not None
        started = time.monotonic()
        while "watching" not in watch.stdout.readline().decode():
            if watch.poll() is not None or time.monotonic() - started > 60:
                raise harness.BenchError("cas mem watch did not start")
        harness.note(f"watching {args.days} days of logs; timing {args.edits} edits per row")
        times = _measure(project, face, args.edits)
    except harness.BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    finally:
        if watch is not None:
            watch.terminate()
            said = watch.communicate(timeout=30)[1].decode("utf-8", "replace").strip()
            if said:
                print(f"bench: cas mem watch said: {said}", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
    if watch.returncode != 0:
        print(f"bench: error: cas mem watch ended with {watch.returncode}", file=sys.stderr)
        return 1

    rows = [
        ("save -> found, lexical", times["lexical"]),
        ("save -> found, auto (words and meaning)", times["auto"]),
        ("cas mem add -> in the folder", times["back"]),
    ]
    cells = [["row", "edits", "median s", "slowest s"]]
    for name, runs in rows:
        median = runs[harness.median_of(runs)]
        cells.append([name, str(len(runs)), harness.num(median, 3), harness.num(max(runs), 3)])
    print(f"watch benchmark: {args.days} days of logs, 5 entries a day\n")
    print("\n".join(harness.text_table(cells)))
    print()
    worst = max(runs[harness.median_of(runs)] for runs in (times["lexical"], times["auto"]))
    verdict = "PASS" if worst <= GOAL_SECONDS else "MISS"
    print(
        f"{verdict}: from a save to found by search, median {worst:.3f} s (goal {GOAL_SECONDS} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
