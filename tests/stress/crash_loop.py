"""Workloads that try to break verify and gc: crashes and races.

* `write_pack`: a pack written the way ``cas pack`` writes one (blobs, then the manifest blob,
  then the file, atomically) without the packer, so these proofs do not depend on its policy.
* ``writer``: a loop standing in for concurrent packs, on changing files drawn from a small pool
  of versions (so it keeps re-putting content a gc may be about to prune), each pack under a
  `Lease` as ``cas pack`` holds one.
* `crash_loop`: SIGKILLs ``cas pack`` and ``cas gc --grace 0`` (sometimes ``--compact``) at random
  moments; after every kill the store must open and every manifest must verify.

    python tests/stress/crash_loop.py --iterations 300          # hundreds of kills
    python tests/stress/crash_loop.py writer STORE ROOT --seconds 15

tests/test_crash_race.py runs both for a bounded time.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cas import Digest, Store  # noqa: E402
from cas import manifest as mf  # noqa: E402
from cas.fsutil import atomic_write  # noqa: E402
from cas.lease import Lease  # noqa: E402
from cas.verify import verify  # noqa: E402


def write_pack(
    store: Store,
    root: Path,
    name: str,
    files: dict[str, bytes],
    *,
    summaries: dict[str, bytes] | None = None,
    lease: Lease | None = None,
) -> tuple[Path, Digest, mf.Manifest]:
    """Store ``files`` (and ``summaries`` of some of them, as MEDIUM entries), then the manifest
    blob, then write ``root/manifests/<name>.pack``: the order ``cas pack`` follows."""
    summaries = summaries or {}
    with store.batch() as batch:
        entries = []
        for path in sorted(files, key=str.encode):
            data = files[path]
            summary = batch.put(summaries[path]) if path in summaries else None
            entries.append(
                mf.Entry(
                    path=path,
                    digest=batch.put(data),
                    size=len(data),
                    tier="medium" if summary is not None else "high",
                    tokens=len(data) // 4,
                    summary=summary,
                )
            )
    manifest = mf.Manifest(
        scope=name,
        target=None,
        tokenizer="o200k_base",
        budget_target=1000,
        budget_max=1200,
        entries=tuple(entries),
        totals={"files": len(entries)},
    )
    data = mf.encode(manifest)
    store.put(data)
    if lease is not None:
        lease.check()
    path = root / "manifests" / f"{name}.pack"
    atomic_write(path, data)
    return path, Digest.of(data), manifest


def cas_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAS_")}
    env["PYTHONPATH"] = str(ROOT)
    env["CAS_NO_PROGRESS"] = "1"
    return env


def cas_argv(*args: str) -> list[str]:
    return [sys.executable, "-P", "-m", "cas", *args]


# --- the writer ----------------------------------------------------------------------------------


def run_writer(store_path: Path, root: Path, seconds: float, seed: int, at_least: int = 0) -> int:
    """Write packs in a loop for ``seconds``, and until it wrote ``at_least``; returns how many
    manifests it wrote."""
    rng = random.Random(seed)
    # A small pool of versions per file, so old content comes back after gc may have judged it
    # unreferenced: the case the in-transaction re-check exists for.
    pool = {f"src/f{i}.txt": [_text(rng, i, v) for v in range(4)] for i in range(24)}
    pool["big.bin"] = [rng.randbytes(20_000) for _ in range(3)]
    written = 0
    deadline = time.monotonic() + seconds
    with Store.at(store_path) as store:
        while time.monotonic() < deadline or written < at_least:
            name = f"w{rng.randrange(3)}"
            files = {p: rng.choice(versions) for p, versions in pool.items()}
            summaries = {"src/f0.txt": b"summary of " + files["src/f0.txt"][:20]}
            with Lease(store, "pack") as lease:
                write_pack(store, root, name, files, summaries=summaries, lease=lease)
            written += 1
            if rng.random() < 0.2:
                (root / "manifests" / f"w{rng.randrange(3)}.pack").unlink(missing_ok=True)
            time.sleep(rng.uniform(0, 0.03))
        # One last pack that stays, so the race always ends with a stand-in manifest to verify.
        files = {p: rng.choice(versions) for p, versions in pool.items()}
        with Lease(store, "pack") as lease:
            write_pack(store, root, "w0", files, lease=lease)
        written += 1
    return written


def _text(rng: random.Random, i: int, version: int) -> bytes:
    words = " ".join(f"w{rng.randrange(1000)}" for _ in range(200))
    return f"file {i} version {version}\n{words}\n".encode()


# --- the crash loop ------------------------------------------------------------------------------


@dataclass
class Stats:
    kills: int = 0  # processes still running when SIGKILL arrived
    finished: int = 0  # processes that were done before their kill time
    verified: int = 0
    used_cas_pack: bool = True
    log: list[str] = field(default_factory=list)


def make_repo(root: Path, rng: random.Random, nfiles: int = 200) -> None:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# crash loop\n\nA repository that changes all the time.\n")
    for i in range(nfiles):
        (root / "src" / f"f{i}.txt").write_bytes(_text(rng, i, 0))
    (root / "data").mkdir(exist_ok=True)
    for i in range(3):
        (root / "data" / f"big{i}.bin").write_bytes(rng.randbytes(40_000))


def mutate(root: Path, rng: random.Random, fraction: float = 0.4) -> None:
    files = sorted((root / "src").iterdir())
    for path in rng.sample(files, max(1, int(len(files) * fraction))):
        path.write_bytes(_text(rng, rng.randrange(10**6), rng.randrange(10**6)))
    big = root / "data" / f"big{rng.randrange(3)}.bin"
    data = bytearray(big.read_bytes())
    data[rng.randrange(len(data))] ^= 0xFF
    big.write_bytes(bytes(data))


def _pack_argv(use_cas_pack: bool, store: Path, root: Path) -> list[str]:
    if use_cas_pack:
        return cas_argv("--quiet", "pack")
    return [sys.executable, "-P", __file__, "standin", str(store), str(root)]


def _kill_at(argv: list[str], cwd: Path, delay: float) -> int:
    proc = subprocess.Popen(
        argv, cwd=cwd, env=cas_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
    stderr = proc.communicate(timeout=60)[1]
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(
            f"{' '.join(argv)} exited {proc.returncode}: {stderr.decode(errors='replace')}"
        )
    return proc.returncode


def _timed(argv: list[str], cwd: Path) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=cas_env(), capture_output=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: {done.stderr.decode(errors='replace')}")
    return time.monotonic() - start


def check_store(store_path: Path) -> None:
    """The store opens and every manifest (and pin) verifies."""
    with Store.at(store_path) as store:
        report = verify(store)
    if not report.ok:
        raise AssertionError("\n".join(p.line() for p in report.problems))


def crash_loop(
    workdir: Path,
    iterations: int,
    seed: int,
    log: Callable[[str], None] = print,
    *,
    min_kills: int = 0,
    ballast_blobs: int = 4000,
) -> Stats:
    """Up to ``iterations`` rounds of: change files, SIGKILL a pack, SIGKILL a gc, check the
    store; stops early once ``min_kills`` processes were killed mid-run (if given)."""
    rng = random.Random(seed)
    stats = Stats()
    root = workdir / "repo"
    make_repo(root, rng)
    store_path = root / ".cas"
    with Store.create(store_path, chunk_size=4096) as store:
        # Ballast: a pack of many small blobs, so gc's mark and sweep take long enough for
        # kills to land inside them rather than in the interpreter's start-up.
        ballast = {f"b/{i:05}": b"ballast %d\n" % i for i in range(ballast_blobs)}
        write_pack(store, root, "ballast", ballast)
    first = subprocess.run(
        cas_argv("--quiet", "pack"), cwd=root, env=cas_env(), capture_output=True, check=False
    )
    if first.returncode != 0:
        # `cas pack` is not usable in this tree: stand in for it with the same write order.
        stats.used_cas_pack = False
        log(f"cas pack failed ({first.stderr.decode(errors='replace').strip()}): stand-in used")
        _timed(_pack_argv(False, store_path, root), root)
    pack_argv = _pack_argv(stats.used_cas_pack, store_path, root)
    gc_argv = cas_argv("--quiet", "gc", "--grace", "0", "--lease-wait", "5s")
    # Kill times are spread over the part of a run after the interpreter has started, where
    # the store is read and written; durations are re-measured now and then as the store grows.
    startup = sorted(_timed(cas_argv("--version"), root) for _ in range(3))[1]
    typical = {"pack": 0.0, "gc": 0.0}

    def measure() -> None:
        mutate(root, rng)
        typical["pack"] = _timed(pack_argv, root)
        typical["gc"] = _timed(gc_argv, root)

    measure()
    log(f"startup {startup:.2f} s, pack {typical['pack']:.2f} s, gc {typical['gc']:.2f} s")
    for i in range(iterations):
        if i and i % 8 == 0:
            measure()
        mutate(root, rng)
        for kind in ("pack", "gc"):
            argv = pack_argv if kind == "pack" else gc_argv
            if kind == "gc" and rng.random() < 0.25:
                argv = [*argv, "--compact"]
            work = max(typical[kind] - startup, 0.02)
            code = _kill_at(argv, root, startup * 0.9 + rng.uniform(0, 1.05) * work)
            if code == -signal.SIGKILL:
                stats.kills += 1
            else:
                stats.finished += 1
            check_store(store_path)
            stats.verified += 1
        if (i + 1) % 10 == 0:
            log(f"{i + 1} rounds: {stats.kills} killed mid-run, {stats.finished} finished")
        if min_kills and stats.kills >= min_kills:
            break
    # Whatever the kills left, a full pack, gc and verify --all go through.
    _timed(pack_argv, root)
    _timed(cas_argv("--quiet", "gc", "--grace", "0"), root)
    done = subprocess.run(
        cas_argv("verify", "--all"), cwd=root, env=cas_env(), capture_output=True, check=False
    )
    if done.returncode != 0:
        raise AssertionError(done.stdout.decode() + done.stderr.decode())
    return stats


def _standin(store_path: Path, root: Path) -> None:
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".cas" not in p.parts and "manifests" not in p.parts
    }
    with Store.at(store_path) as store, Lease(store, "pack") as lease:
        write_pack(store, root, "repo", files, lease=lease)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["writer"]:
        p = argparse.ArgumentParser(prog="crash_loop.py writer")
        p.add_argument("store", type=Path)
        p.add_argument("root", type=Path)
        p.add_argument("--seconds", type=float, default=15.0)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--at-least", type=int, default=0, help="manifests, however long it takes")
        w = p.parse_args(args[1:])
        print(run_writer(w.store, w.root, w.seconds, w.seed, w.at_least))
        return 0
    if args[:1] == ["standin"]:
        _standin(Path(args[1]), Path(args[2]))
        return 0
    p = argparse.ArgumentParser(description="SIGKILL cas pack and cas gc; verify after each.")
    p.add_argument("--iterations", type=int, default=150, help="rounds (two kills each)")
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--workdir", type=Path)
    a = p.parse_args(args)
    print(f"seed {a.seed}")
    with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
        try:
            stats = crash_loop(Path(tmp), a.iterations, a.seed)
        except AssertionError as exc:
            print(f"FAILED (seed {a.seed}): {exc}", file=sys.stderr)
            return 1
    print(
        f"ok: {stats.kills} killed mid-run, {stats.finished} finished first, "
        f"{stats.verified} verifications passed (cas pack used: {stats.used_cas_pack})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
