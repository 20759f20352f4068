"""cas as a package: the distribution is `cas-packs` (`cas` on PyPI is another project), the
command and the import packages are `cas`. A wheel builds from the sources and, installed in a
fresh venv, gives a `cas` that runs.

Nothing is downloaded: the wheel is built with the setuptools of the test venv
(`--no-build-isolation`), and the fresh venv installs it with `--no-index`, its dependencies
found already installed (the test venv's packages on PYTHONPATH), as a machine that has them.
"""

from __future__ import annotations

import email
import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import cas
from tests.conftest import ROOT, run_cas

DIST = "cas-packs"


def sources(dest: Path) -> Path:
    """The files a build reads, copied, so the build's own files land there, not in this tree."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    for package in ("cas", "packer", "memory", "casapp"):
        shutil.copytree(ROOT / package, dest / package, ignore=skip)
    return dest


def pip(python: str | Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_distribution_is_cas_packs_and_the_command_cas() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["name"] == DIST
    assert project["scripts"] == {"cas": "cas.__main__:run"}
    assert importlib.metadata.version(DIST) == cas.__version__ == project["version"]
    r = run_cas("--version")
    assert r.code == 0 and r.out == f"cas, version {cas.__version__}\n"


def test_a_wheel_builds_and_installs_offline_into_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    pip(
        sys.executable,
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-index",
        "--no-build-isolation",
        "-w",
        str(dist),
        str(sources(tmp_path / "src")),
    )
    (wheel,) = dist.glob("*.whl")
    assert re.fullmatch(rf"cas_packs-{re.escape(cas.__version__)}-.+\.whl", wheel.name)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = f"cas_packs-{cas.__version__}.dist-info"
        meta = email.message_from_bytes(z.read(f"{info}/METADATA"))
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert meta["Name"] == DIST
    required = {re.split(r"[<>=!;\s\[]", r, maxsplit=1)[0] for r in meta.get_all("Requires-Dist")}
    assert {"blake3", "lmdb", "click", "mcp"} <= required
    assert "[console_scripts]\ncas = cas.__main__:run" in entry_points
    for package in ("cas", "packer", "memory", "casapp"):
        assert f"{package}/__init__.py" in names and f"{package}/py.typed" in names
    assert any(n.startswith("packer/summaries/queries/") and n.endswith(".scm") for n in names)
    assert not any(n.startswith("tests/") for n in names)

    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": sysconfig.get_paths()["purelib"],  # the dependencies, already installed
        "CAS_NO_PROGRESS": "1",
    }
    pip(venv / "bin" / "python", "install", "--quiet", "--no-index", str(wheel), env=env)
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("def main() -> None:\n    pass\n")
    for args, expected in (
        (["--version"], f"cas, version {cas.__version__}\n"),
        (["-q", "pack"], ""),
        (["verify"], "verified"),
    ):
        done = subprocess.run(
            [str(venv / "bin" / "cas"), *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(expected)
    # that cas is the wheel's, not this tree's
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import cas; print(cas.__file__)"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert Path(done.stdout.strip()).is_relative_to(venv)
