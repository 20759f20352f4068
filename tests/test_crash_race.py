"""Proofs under crashes and races, with real processes (the workloads: tests/stress/crash_loop.py).

* Crash: ``cas pack`` and ``cas gc --grace 0`` (a quarter of them ``--compact``) are SIGKILLed at
  random moments at least 30 times; after every kill the store opens and every manifest
  verifies, and at the end a full pack, gc and ``verify --all`` go through.
* Race: real ``cas pack`` runs, packs written by a stand-in under a lease, a ``cas put -r`` loop
  and a ``cas gc --grace 0`` loop run side by side on changing files; afterwards every manifest
  verifies and so does every blob.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cas import Store
from cas.verify import verify
from tests.conftest import cas_env
from tests.stress.crash_loop import ROOT, crash_loop

WRITER = ROOT / "tests" / "stress" / "crash_loop.py"


@pytest.mark.slow
def test_sigkill_pack_and_gc_at_random_moments(tmp_path: Path) -> None:
    seed = int(os.environ.get("CAS_CRASH_SEED", random.randrange(1 << 30)))
    lines: list[str] = []
    stats = crash_loop(tmp_path, iterations=28, seed=seed, log=lines.append, min_kills=20)
    assert stats.kills >= 20, (seed, lines)
    assert stats.verified >= stats.kills
    assert stats.used_cas_pack, lines


def _cas(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "cas", *args],
        cwd=cwd,
        env=cas_env(),
        capture_output=True,
        check=False,
        timeout=60,
    )


@pytest.mark.slow
def test_packs_puts_and_gc_side_by_side(tmp_path: Path) -> None:
    # Every loop runs for `seconds` and then on until the race has had its minimum of each kind
    # of run: on a loaded machine that takes longer, never less.
    seconds = 12.0
    least = {"gcs": 5, "packs": 3, "puts": 1}
    rng = random.Random(int(os.environ.get("CAS_RACE_SEED", random.randrange(1 << 30))))
    (tmp_path / "manifests").mkdir()
    Store.create(tmp_path / ".cas", chunk_size=4096).close()
    loose = tmp_path / "loose"
    loose.mkdir()
    # The project `cas pack` packs: one scope over proj/, whose files change between runs.
    (tmp_path / "cas.toml").write_text(
        '[pack]\nbudget = { target = 200000, max = 240000 }\n\n[scopes.real]\nroots = ["proj"]\n'
    )
    proj = tmp_path / "proj"
    proj.mkdir()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-P",
            str(WRITER),
            "writer",
            str(tmp_path / ".cas"),
            str(tmp_path),
            "--seconds",
            str(seconds),
            "--seed",
            str(rng.randrange(1 << 30)),
            "--at-least",
            "20",
        ],
        env=cas_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pruned = gcs = refused = 0
    puts: list[int] = []
    deadline = time.monotonic() + seconds
    packs: list[tuple[int, str]] = []

    def going() -> bool:
        counts = {"gcs": gcs, "packs": len(packs), "puts": len(puts)}
        return time.monotonic() < deadline or any(counts[k] < n for k, n in least.items())

    def put_loop() -> None:
        # Small files only: a put that re-stores content gc just pruned writes it again.
        local = random.Random(rng.randrange(1 << 30))
        while going():
            for i in range(20):
                (loose / f"f{i}.txt").write_bytes(b"loose %d %d\n" % (i, local.randrange(6)))
            puts.append(_cas("put", "-r", "-q", str(loose), cwd=tmp_path).returncode)

    def pack_loop() -> None:
        local = random.Random(rng.randrange(1 << 30))
        while going():
            for i in range(12):
                version = local.randrange(4)
                (proj / f"m{i}.py").write_text(f"def f{i}():\n    return {version}\n" * (i + 1))
            done = _cas("--quiet", "pack", cwd=tmp_path)
            packs.append((done.returncode, done.stderr.decode()))

    putter = threading.Thread(target=put_loop)
    putter.start()
    packer = threading.Thread(target=pack_loop)
    packer.start()
    try:
        while going():
            gc = _cas("gc", "--grace", "0", "--lease-wait", "1s", "--json", cwd=tmp_path)
            if gc.returncode == 1 and b"still in progress" in gc.stderr:
                refused += 1  # the writer held its lease throughout the wait
                continue
            assert gc.returncode == 0, gc.stderr.decode()
            pruned += json.loads(gc.stdout)["pruned"]
            gcs += 1
    finally:
        putter.join()
        packer.join()
        out, err = writer.communicate(timeout=600)
    assert puts and set(puts) == {0}, puts
    assert len(packs) >= 3 and {code for code, _err in packs} == {0}, packs
    assert writer.returncode == 0, err.decode()
    written = int(out.decode().strip().splitlines()[-1])
    print(
        f"race: {written} + {len(packs)} packs, {len(puts)} puts, "
        f"{gcs} gcs pruning {pruned}, {refused} refused"
    )
    assert written >= 20 and gcs >= 5 and pruned > 0, (written, gcs, refused, pruned, puts)
    with Store.at(tmp_path / ".cas") as store:
        report = verify(store, all_blobs=True)
        assert report.ok, [p.line() for p in report.problems]
        assert report.manifests >= 2  # the stand-in's and cas pack's
        assert (tmp_path / "manifests" / "real.pack").is_file()
    assert _cas("verify", cwd=tmp_path).returncode == 0
