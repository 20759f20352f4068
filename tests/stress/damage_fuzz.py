"""Damage a real store's data file at many places and run every reading command on each copy.

A populated store (packs, a pin, a chunked blob, a few hundred small blobs, so the file has meta,
branch, leaf and overflow pages) is built once. Each damage is applied to a fresh copy of its
data file: a bit flipped at an offset chosen inside each kind of page (meta fields, page
headers, node pointers and node headers, keys, values, overflow headers and bodies) or the file
truncated at an offset. Then every reading command runs on the copy. None may die of a signal,
print a traceback or an "internal error", or exit with anything but 0, 1 or 2.

The commands run inside one driver process, one damage after another, so a run of hundreds
costs one interpreter start-up; a driver killed by a signal is reported with the damage it was
on, and a new driver goes on with the next one.

    python tests/stress/damage_fuzz.py --count 2000 --seed 7     # a long run, prints a table

tests/test_damage.py runs a few hundred.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cas import datafile  # noqa: E402

CONFIG = """\
[pack]
budget = { target = 4000, max = 6000 }

[scopes.repo]
roots = ["."]

[scopes.repo.targets.claude]
target = 4000
max = 6000
"""


@dataclass(frozen=True, slots=True)
class Damage:
    kind: str  # "flip" or "truncate"
    offset: int
    bit: int = 0
    where: str = ""  # the kind of page and field, for the report

    def apply(self, data_file: Path) -> None:
        if self.kind == "truncate":
            os.truncate(data_file, self.offset)
            return
        with open(data_file, "r+b") as handle:
            handle.seek(self.offset)
            byte = handle.read(1)
            handle.seek(self.offset)
            handle.write(bytes([byte[0] ^ (1 << self.bit)]))


@dataclass(frozen=True, slots=True)
class Outcome:
    damage: int
    command: str
    code: int  # negative: killed by that signal
    err: str


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAS_")}
    env["PYTHONPATH"] = str(ROOT)
    env["CAS_NO_PROGRESS"] = "1"
    return env


def _cas(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "cas", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        check=True,
        text=True,
    )
    return proc.stdout


def build_project(root: Path, seed: int = 1) -> dict[str, str]:
    """A project with packs, a pin and a chunked blob; returns digests the commands use."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "cas.toml").write_text(CONFIG)
    for i in range(240):
        folder = root / f"pkg{i % 12}"
        folder.mkdir(exist_ok=True)
        body = "".join(
            f"def f{i}_{j}(x: int) -> int:\n    return x * {rng.randrange(1000)}\n\n"
            for j in range(rng.randrange(1, 40))
        )
        (folder / f"mod{i}.py").write_text(f'"""Module {i}."""\n\n{body}')
    for i in range(20):
        (root / f"notes{i}.md").write_text(f"# Note {i}\n\n" + "word " * rng.randrange(50, 900))
    (root / "blob.bin").write_bytes(rng.randbytes(3 << 20 | 12345))
    _cas("init", "--store-only", cwd=root)
    _cas("--quiet", "pack", cwd=root)
    big = _cas("put", "blob.bin", cwd=root).strip()
    small = _cas("put", "notes3.md", cwd=root).strip()
    _cas("pin", "keep", big, cwd=root)
    return {"big": big, "small": small}


def commands(digests: dict[str, str]) -> list[list[str]]:
    return [
        ["verify"],
        ["verify", "--all"],
        ["ls"],
        ["info"],
        ["get", digests["big"]],
        ["get", digests["small"]],
        ["stat", digests["big"]],
        ["render", "repo.claude"],
        ["show", "repo.claude"],
        ["pins"],
        ["gc", "--dry-run"],
        ["pack"],
    ]


def _pages(data: bytes, psize: int) -> Iterator[tuple[int, str]]:
    """(page number, kind) of every page, read from its header; overflow bodies as 'body'."""
    pgno = 0
    count = len(data) // psize
    while pgno < count:
        base = pgno * psize
        flags = struct.unpack_from("<H", data, base + 10)[0]
        if pgno < 2:
            yield pgno, "meta"
        elif flags == datafile.P_OVERFLOW:
            pages = struct.unpack_from("<I", data, base + 12)[0]
            yield pgno, "overflow"
            for body in range(pgno + 1, min(pgno + max(pages, 1), count)):
                yield body, "body"
            pgno += max(pages, 1)
            continue
        elif flags == datafile.P_BRANCH:
            yield pgno, "branch"
        elif flags == datafile.P_LEAF:
            yield pgno, "leaf"
        else:
            yield pgno, "free"
        pgno += 1


def _offsets_in(
    data: bytes, base: int, psize: int, kind: str, rng: random.Random
) -> list[tuple[int, str]]:
    """Offsets worth flipping in one page: its header, its node pointers and node headers (for
    branch and leaf pages), its keys and values; the meta fields of a meta page."""
    out = [(base + rng.randrange(16), f"{kind} page header")]
    if kind == "meta":
        out += [(base + rng.randrange(16, 152), "meta fields") for _ in range(4)]
        return out
    if kind in ("overflow", "body", "free"):
        out.append((base + rng.randrange(16, psize), f"{kind} page content"))
        return out
    lower = struct.unpack_from("<H", data, base + 12)[0]
    count = max(0, (min(lower, psize) - 16) // 2)
    if count:
        i = rng.randrange(count)
        out.append((base + 16 + 2 * i + rng.randrange(2), f"{kind} node pointer"))
        node = struct.unpack_from("<H", data, base + 16 + 2 * i)[0]
        if 16 <= node <= psize - 8:
            out.append((base + node + rng.randrange(8), f"{kind} node header"))
            ksize = struct.unpack_from("<H", data, base + node + 6)[0]
            if node + 8 + ksize < psize:
                out.append((base + node + 8 + rng.randrange(max(ksize, 1)), f"{kind} key/value"))
    return out


def plan(data_file: Path, count: int, seed: int) -> list[Damage]:
    """``count`` damages spread over the kinds of page the file holds, and truncations."""
    rng = random.Random(seed)
    data = data_file.read_bytes()
    psize = struct.unpack_from("<I", data, 40)[0]
    by_kind: dict[str, list[int]] = {}
    for pgno, kind in _pages(data, psize):
        by_kind.setdefault(kind, []).append(pgno)
    kinds = sorted(by_kind)
    damages: list[Damage] = []
    truncations = max(count // 8, 4)
    edges = [0, 100, psize, 2 * psize - 1, 2 * psize, len(data) - psize, len(data) - 1]
    for offset in edges + [rng.randrange(len(data)) for _ in range(truncations - len(edges))]:
        damages.append(Damage("truncate", max(0, offset), where="truncated"))
    for turn in range(count):
        if len(damages) >= count:
            break
        kind = kinds[turn % len(kinds)]
        pgno = rng.choice(by_kind[kind])
        for offset, where in _offsets_in(data, pgno * psize, psize, kind, rng):
            damages.append(Damage("flip", offset, rng.randrange(8), where))
    return damages[:count]


# --- the driver: one process, one damage after another ----------------------------------------


def drive(pristine: Path, work: Path, damages: list[Damage], cmds: list[list[str]]) -> None:
    """Run in a child process: print one JSON line per command, and 'start N' before each
    damage, so the parent knows where a signal struck."""
    from casapp.cli import main

    out = sys.stdout
    for number, damage in enumerate(damages):
        out.write(f"start {number}\n")
        out.flush()
        store = work / ".cas"
        shutil.rmtree(store, ignore_errors=True)
        shutil.copytree(pristine / ".cas", store, ignore=shutil.ignore_patterns("checked"))
        shutil.rmtree(work / "manifests", ignore_errors=True)
        shutil.copytree(pristine / "manifests", work / "manifests")
        damage.apply(store / "data.mdb")
        for cmd in cmds:
            err = io.StringIO()
            code = 0
            os.chdir(work)
            sink = io.TextIOWrapper(io.BytesIO())  # `cas get` writes to stdout's buffer
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(err):
                try:
                    main(["--quiet", *cmd])
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 2
            result = Outcome(number, " ".join(cmd), code, err.getvalue()[-2000:])
            out.write(json.dumps(asdict(result)) + "\n")
            out.flush()


def run(project: Path, damages: list[Damage], cmds: list[list[str]], work: Path) -> list[Outcome]:
    """Drive every damage; a driver that dies is recorded against its damage and replaced."""
    outcomes: list[Outcome] = []
    start = 0
    # The work copy must look like the project (config, sources) for pack and render.
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(project, work, ignore=shutil.ignore_patterns(".cas", "manifests"))
    while start < len(damages):
        spec = json.dumps(
            {
                "pristine": str(project),
                "work": str(work),
                "cmds": cmds,
                "damages": [asdict(d) for d in damages[start:]],
            }
        )
        proc = subprocess.run(
            [sys.executable, "-P", str(Path(__file__)), "drive"],
            input=spec,
            capture_output=True,
            text=True,
            env=_env(),
            check=False,
        )
        current = start - 1
        done_here: set[tuple[int, str]] = set()
        for line in proc.stdout.splitlines():
            if line.startswith("start "):
                current = start + int(line.split()[1])
                continue
            got = Outcome(**json.loads(line))
            got = Outcome(start + got.damage, got.command, got.code, got.err)
            outcomes.append(got)
            done_here.add((got.damage, got.command))
        if proc.returncode == 0:
            break
        # The driver died on damage `current`, in the first command without an outcome.
        current = max(current, start)
        finished = {c for d, c in done_here if d == current}
        crashed = next((" ".join(c) for c in cmds if " ".join(c) not in finished), "?")
        outcomes.append(Outcome(current, crashed, proc.returncode, proc.stderr[-2000:]))
        start = current + 1
    return outcomes


def bad(outcome: Outcome) -> str | None:
    """Why an outcome breaks the rule, or None."""
    if outcome.code < 0:
        return f"killed by {signal.Signals(-outcome.code).name}"
    if outcome.code not in (0, 1, 2):
        return f"exit {outcome.code}"
    if "Traceback" in outcome.err or "internal error" in outcome.err:
        return "traceback or internal error"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="fuzz", choices=["fuzz", "drive"])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.mode == "drive":
        spec = json.loads(sys.stdin.read())
        damages = [Damage(**d) for d in spec["damages"]]
        drive(Path(spec["pristine"]), Path(spec["work"]), damages, spec["cmds"])
        return
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        digests = build_project(project)
        damages = plan(project / ".cas" / "data.mdb", args.count, args.seed)
        outcomes = run(project, damages, commands(digests), Path(tmp) / "work")
    codes: Counter[tuple[str, str]] = Counter()
    failures = []
    for o in outcomes:
        why = bad(o)
        codes[(damages[o.damage].where, "BAD" if why else f"exit {o.code}")] += 1
        if why:
            failures.append((o, why))
    print(f"{len(damages)} damages x {len(commands(digests))} commands")
    print(f"{'where':<26} {'outcome':<8} {'runs':>6}")
    for (where, outcome), n in sorted(codes.items()):
        print(f"{where:<26} {outcome:<8} {n:>6}")
    for o, why in failures[:20]:
        d = damages[o.damage]
        print(f"FAIL {why}: {d} `cas {o.command}`: {o.err.strip()[-300:]}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
