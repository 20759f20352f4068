"""Shared fixtures: real stores in temporary directories and a real `cas` process runner."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from cas import Store

settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60
)
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=40
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

ROOT = Path(__file__).resolve().parent.parent
UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@dataclass
class Result:
    code: int
    out: str
    err: str
    stdout_bytes: bytes


def cas_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAS_")}
    env["PYTHONPATH"] = str(ROOT)
    env["CAS_NO_PROGRESS"] = "1"
    if extra:
        env.update(extra)
    return env


def run_cas(
    *args: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    preexec_fn: object = None,
    unprivileged: bool = False,
) -> Result:
    """Run ``cas ARGS``. With ``unprivileged``, root gives up its right to ignore file
    permissions (setpriv drops CAP_DAC_OVERRIDE and friends), so permission errors are real."""
    prefix = UNPRIVILEGED if unprivileged and os.geteuid() == 0 else []
    proc = subprocess.run(
        [*prefix, sys.executable, "-P", "-m", "cas", *map(os.fspath, args)],
        check=False,
        cwd=cwd,
        input=input,
        capture_output=True,
        env=cas_env(env),
        timeout=timeout,
        preexec_fn=preexec_fn,  # type: ignore[arg-type]
    )
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        proc.stdout,
    )


# The address space a capped `cas` process may reserve (`run_cas_capped`): a small pack
# reserves about 1.4 GiB (the store's 1 GiB initial map, the interpreter, the tokenizers), so a
# cap of twice the map stops a run that grows without bound long before the machine suffers.
MEMORY_CAP = 2 << 30
# What a process reserves also grows with the machine's cores (a thread pool of the BLAS numpy
# loads, one malloc arena per busy thread): held fixed, so the cap measures the pack alone.
CAPPED_ENV = {"OPENBLAS_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_cas_capped(*args: str, cwd: str | os.PathLike[str], timeout: float = 60) -> Result:
    """``run_cas`` with the child's address space capped at `MEMORY_CAP` and a timeout: a run
    that never ends fails with `subprocess.TimeoutExpired`, one that grows without bound as the
    one line of a MemoryError."""
    return run_cas(*args, cwd=cwd, timeout=timeout, env=CAPPED_ENV, preexec_fn=_cap_memory)


@pytest.fixture
def cas() -> object:
    return run_cas


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.create(tmp_path / ".cas") as s:
        yield s


@pytest.fixture
def small_store(tmp_path: Path) -> Iterator[Store]:
    """A store with a 4 KiB chunk size, so chunking is exercised with small data."""
    with Store.create(tmp_path / ".cas", chunk_size=4096) as s:
        yield s
