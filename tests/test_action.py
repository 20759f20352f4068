"""The GitHub Action (action.yml) run outside GitHub, every step for real (tests/actionrunner.py):
cas installed by pip from the action's own checkout into a venv of its own, then `cas pack
--check` and `cas verify` in a fresh checkout of a packed project, which has its manifests and
no store. Green when the packs are current; red, naming the pack, when a source changed and
nobody packed again.

Nothing is downloaded. The runner's machine here is one with cas's dependencies already
installed: the test venv's packages are on its PYTHONPATH, the action is given `pip-args:
--no-index --no-build-isolation`, so pip finds every dependency present and builds cas with the
setuptools present. The `python3` on PATH is the base interpreter (no venv), and `cas` is on no
PATH until the install step puts its venv there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.actionrunner import Run, Unsupported, holds, load, run_action, substitute
from tests.conftest import ROOT, run_cas
from tests.gitrepo import Repo

OFFLINE = "--no-index --no-build-isolation"


def action_checkout(dest: Path) -> Path:
    """What the runner checks out for `uses: OWNER/cas@REF`: the sources pip builds from
    (a copy, so the build's own files land there and not in this tree)."""
    dest.mkdir()
    for name in ("action.yml", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info")
    for package in ("cas", "packer", "memory", "casapp"):
        shutil.copytree(ROOT / package, dest / package, ignore=skip)
    return dest


def packed_project(tmp_path: Path, sub: str = "") -> tuple[Repo, Path]:
    """A project packed and committed (at ``sub`` in its repository), and a fresh clone of it:
    the workspace as `actions/checkout` leaves it."""
    origin = Repo(tmp_path / "origin")
    origin.write(".gitignore", ".cas/\n")
    origin.write(f"{sub}README.md", "# Shop\n\nCarts and orders: `src/cart.py`.\n")
    origin.write(
        f"{sub}src/cart.py", "def total(prices: list[int]) -> int:\n    return sum(prices)\n"
    )
    r = run_cas("pack", cwd=origin.root / sub if sub else origin.root)
    assert r.code == 0, r.err
    origin.commit("packed")
    workspace = tmp_path / "workspace"
    subprocess.run(
        ["git", "clone", "-q", str(origin.root), str(workspace)],
        env=origin.env,
        check=True,
        timeout=60,
    )
    assert not (workspace / sub / ".cas").exists()
    return origin, workspace


def runner_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "runner-bin"
    bin_dir.mkdir()
    # sys._base_executable: the interpreter this test venv was made from.
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "CAS_NO_PROGRESS": "1",
        "LANG": "C.UTF-8",
    }


def run(tmp_path: Path, workspace: Path, **inputs: str) -> Run:
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    return run_action(
        action_checkout(tmp_path / "action"),
        workspace,
        temp,
        inputs={"pip-args": OFFLINE, **inputs},
        env=runner_env(tmp_path),
    )


def test_a_packed_project_passes_every_step(tmp_path: Path) -> None:
    _, workspace = packed_project(tmp_path, sub="app/")
    done = run(tmp_path, workspace, **{"working-directory": "app", "args": "repo"})
    assert [(s.id, s.code) for s in done.steps] == [
        ("venv", 0),
        ("install", 0),
        ("check", 0),
        ("verify", 0),
    ], "\n".join(s.out + s.err for s in done.steps)
    assert done.ok
    # cas came from the action's checkout, into the action's venv
    installed = list((tmp_path / "runner-temp" / "cas-venv").glob("lib/python3*/site-packages/cas"))
    assert len(installed) == 1 and (installed[0] / "__init__.py").is_file()
    assert "cas, version 0.1.0" in done.step("install").out
    assert "manifests/repo.pack (up to date)" in done.step("check").out
    assert "1 manifest" in done.step("verify").out and ": ok" in done.step("verify").out


def test_a_stale_pack_fails_the_check_naming_it(tmp_path: Path) -> None:
    origin, _ = packed_project(tmp_path)
    origin.commit("edit without a pack", {"src/cart.py": "def total() -> int:\n    return 0\n"})
    workspace = tmp_path / "workspace-2"
    subprocess.run(
        ["git", "clone", "-q", str(origin.root), str(workspace)],
        env=origin.env,
        check=True,
        timeout=60,
    )
    done = run(tmp_path, workspace)
    check = done.step("check")
    assert check.code == 1
    assert "manifests/repo.pack is stale" in check.err
    assert done.step("verify").code is None  # a failed step ends the job
    assert not done.ok


def test_the_action_declares_what_the_readme_says() -> None:
    spec = load(ROOT)
    assert set(spec["inputs"]) == {"working-directory", "args", "verify", "pip-args"}
    assert [s["id"] for s in spec["runs"]["steps"]] == ["venv", "install", "check", "verify"]
    readme = (ROOT / "README.md").read_text("utf-8")
    for name in spec["inputs"]:
        assert f"`{name}`" in readme


@pytest.mark.parametrize(
    ("condition", "verify", "failed", "runs"),
    [
        ("inputs.verify == 'true'", "true", False, True),
        ("inputs.verify == 'true'", "false", False, False),
        ("inputs.verify == 'true'", "TRUE", False, True),
        ("${{ inputs.verify != 'true' }}", "false", False, True),
        ("inputs.verify == 'true'", "true", True, False),
        ("always()", "false", True, True),
        ("failure()", "false", False, False),
    ],
)
def test_conditions(condition: str, verify: str, failed: bool, runs: bool) -> None:
    assert holds(condition, {"verify": verify}, failed) is runs


def test_what_the_runner_does_not_know_it_refuses() -> None:
    assert substitute("a ${{ inputs.x }} b", {"x": "1"}) == "a 1 b"
    with pytest.raises(Unsupported):
        substitute("${{ github.token }}", {})
    with pytest.raises(Unsupported):
        holds("contains(inputs.x, 'y')", {"x": ""}, False)
