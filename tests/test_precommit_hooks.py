"""The hooks of .pre-commit-hooks.yaml run by the real pre-commit (`pre-commit try-repo`) in a
fresh git project that commits its packs: green when the packs are current and the store holds
them; `cas-pack-check` red, naming the pack, once a source changed and nobody packed again;
`cas-verify` red when the store lacks what a pack names. Installed as the project's git hook
(`pre-commit install`), they refuse a commit whose pack is stale.

The hooks are `language: system`: pre-commit runs the `cas` on PATH (here the test venv's) and
installs nothing. Nothing reaches the network: pre-commit's home is a temporary folder, git may
use local paths only (GIT_ALLOW_PROTOCOL=file), and any HTTP goes to a closed port.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, run_cas
from tests.gitrepo import Repo

HOOKS = ROOT / ".pre-commit-hooks.yaml"


def hooks_repo(tmp_path: Path) -> Path:
    """A repository holding this project's hooks file, as `try-repo` takes one."""
    repo = Repo(tmp_path / "hooks")
    shutil.copy2(HOOKS, repo.root / HOOKS.name)
    repo.commit("hooks")
    return repo.root


@pytest.fixture
def project(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "project")
    repo.write(".gitignore", ".cas/\n")
    repo.write("README.md", "# Shop\n\nCarts and orders: `src/cart.py`.\n")
    repo.write("src/cart.py", "def total(prices: list[int]) -> int:\n    return sum(prices)\n")
    r = run_cas("pack", cwd=repo.root)
    assert r.code == 0, r.err
    repo.commit("packed")
    return repo


def hook_env(project: Repo) -> dict[str, str]:
    """The project's git environment, with this venv's `cas` on PATH and no network."""
    home = project.root.parent / "pre-commit-home"
    env = {k: v for k, v in project.env.items() if not k.startswith(("CAS_", "PRE_COMMIT"))}
    env.pop("PYTHONPATH", None)
    env.update(
        PRE_COMMIT_HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        GIT_ALLOW_PROTOCOL="file",
        CAS_NO_PROGRESS="1",
        **dict.fromkeys(
            ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"), "http://127.0.0.1:9"
        ),
    )
    return env


def try_repo(project: Repo, hooks: Path, *hook: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), *hook, "--all-files"],
        cwd=project.root,
        env=hook_env(project),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_hooks_file_runs_cas_from_path_and_installs_nothing() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text("utf-8"))}
    assert set(hooks) == {"cas-pack-check", "cas-verify"}
    assert hooks["cas-pack-check"]["entry"] == "cas pack --check"
    assert hooks["cas-verify"]["entry"] == "cas verify"
    for hook in hooks.values():
        assert hook["language"] == "system"
        assert hook["pass_filenames"] is False and hook["always_run"] is True


def test_green_on_a_packed_project(project: Repo, tmp_path: Path) -> None:
    hooks = hooks_repo(tmp_path)
    for hook in ("cas-pack-check", "cas-verify"):
        done = try_repo(project, hooks, hook)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Passed" in done.stdout and "Failed" not in done.stdout
    done = try_repo(project, hooks)  # both at once
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cas packs are current" in done.stdout and "cas packs verify" in done.stdout


def test_red_on_a_stale_pack_naming_it(project: Repo, tmp_path: Path) -> None:
    hooks = hooks_repo(tmp_path)
    project.write("src/cart.py", "def total() -> int:\n    return 0\n")
    project.git("add", "-A")
    done = try_repo(project, hooks, "cas-pack-check")
    assert done.returncode == 1
    assert "Failed" in done.stdout
    assert "manifests/repo.pack is stale: run 'cas pack' and commit it" in done.stdout
    # the store still holds every blob of the committed pack
    assert try_repo(project, hooks, "cas-verify").returncode == 0
    # packed again, the check passes
    assert run_cas("pack", cwd=project.root).code == 0
    assert try_repo(project, hooks, "cas-pack-check").returncode == 0


def test_red_when_the_store_lacks_what_a_pack_names(project: Repo, tmp_path: Path) -> None:
    hooks = hooks_repo(tmp_path)
    shutil.rmtree(project.root / ".cas")
    assert run_cas("init", "--store-only", cwd=project.root).code == 0  # an empty store
    done = try_repo(project, hooks, "cas-verify")
    assert done.returncode == 1
    assert "missing from the store" in done.stdout and "repo.pack" in done.stdout


def test_installed_as_a_git_hook_a_commit_with_a_stale_pack_is_refused(
    project: Repo, tmp_path: Path
) -> None:
    hooks = hooks_repo(tmp_path)
    rev = subprocess.run(
        ["git", "-C", str(hooks), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    project.write(
        ".pre-commit-config.yaml",
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
        "      - id: cas-pack-check\n      - id: cas-verify\n",
    )
    assert run_cas("-q", "pack", cwd=project.root).code == 0
    project.commit("pre-commit configured")
    env = hook_env(project)
    subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=project.root,
        env=env,
        capture_output=True,
        check=True,
        timeout=60,
    )

    def commit(message: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "commit", "-q", "-m", message],
            cwd=project.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    project.write("src/cart.py", "def total() -> int:\n    return 0\n")
    project.git("add", "-A")
    refused = commit("an edit without a pack")
    assert refused.returncode == 1
    assert "manifests/repo.pack is stale" in refused.stdout + refused.stderr
    assert run_cas("-q", "pack", cwd=project.root).code == 0
    project.git("add", "-A")
    done = commit("an edit with its pack")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cas packs are current" in done.stdout + done.stderr
