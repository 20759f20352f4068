"""`cas textconv`, git's diff driver for packs, end to end: real git, real `cas` processes. In a
fresh repository `cas init` sets the driver up, and `git diff` and `git log -p` show a pack's
change as the changed entries' lines."""

from __future__ import annotations

from pathlib import Path

from cas import manifest as mf
from packer.difftext import manifest_text, short
from tests.conftest import run_cas
from tests.gitrepo import Repo

APP = (
    'def main() -> int:\n    """Run."""\n    return helper(1)\n\n\n'
    "def helper(x: int) -> int:\n    return x + 1\n"
)


def _project(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "proj")
    repo.write("src/app.py", APP)
    repo.write("README.md", "# Tool\n\nA small tool.\n")
    r = run_cas("init", cwd=repo.root)
    assert r.code == 0, r.err
    return repo


def _entry(root: Path, path: str) -> mf.Entry:
    entry = mf.decode((root / "manifests" / "repo.claude.pack").read_bytes()).entry(path)
    assert entry is not None and entry.digest is not None
    return entry


def test_git_diff_and_log_show_a_packs_change_as_lines(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    assert (repo.root / ".gitattributes").read_text() == "*.pack diff=cas\n"
    driver = repo.git("config", "--local", "--get", "diff.cas.textconv").strip()
    assert driver.endswith("textconv")
    assert run_cas("pack", cwd=repo.root).code == 0
    repo.commit("packs of the first version")
    old = _entry(repo.root, "src/app.py")
    repo.write("src/app.py", APP.replace("x + 1", "x + 2"))
    assert run_cas("pack", cwd=repo.root).code == 0
    new = _entry(repo.root, "src/app.py")
    assert old.digest != new.digest

    diff = repo.git("diff", "--", "manifests/repo.claude.pack")
    assert "Binary files" not in diff
    minus = [line for line in diff.splitlines() if line.startswith("-src/app.py  ")]
    plus = [line for line in diff.splitlines() if line.startswith("+src/app.py  ")]
    assert len(minus) == len(plus) == 1
    assert short(old.digest) in minus[0] and short(new.digest) in plus[0]  # type: ignore[arg-type]
    assert f"{new.tier} {new.tokens} tokens" in plus[0]
    # the budget did not move: its header line is context, not a change
    full = repo.git("diff", "-U100", "--", "manifests/repo.claude.pack").splitlines()
    assert " # budget: target 10000, max 12000" in full
    assert "Binary files" in repo.git("diff", "--no-textconv", "--", "manifests/repo.claude.pack")

    repo.commit("a change of the helper")
    log = repo.git("log", "-p", "-1", "--", "manifests/repo.claude.pack")
    assert f"+{plus[0][1:]}" in log.splitlines() and f"-{minus[0][1:]}" in log.splitlines()


def test_textconv_prints_the_manifest_text_and_never_breaks_a_diff(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    assert run_cas("pack", cwd=repo.root).code == 0
    pack = repo.root / "manifests" / "repo.common.pack"
    r = run_cas("textconv", pack, cwd=tmp_path)  # no store, no project needed
    assert r.code == 0 and r.out == manifest_text(pack.read_bytes())
    r = run_cas("textconv", "-", cwd=tmp_path, input=pack.read_bytes())
    assert r.code == 0 and r.out == manifest_text(pack.read_bytes())
    # git hands an empty side for an added or a deleted pack
    (tmp_path / "empty.pack").write_bytes(b"")
    r = run_cas("textconv", tmp_path / "empty.pack", cwd=tmp_path)
    assert (r.code, r.out) == (0, "")
    (tmp_path / "junk.pack").write_bytes(b"\x93not a manifest")
    r = run_cas("textconv", tmp_path / "junk.pack", cwd=tmp_path)
    assert r.code == 0 and r.out.startswith("# not a cas manifest (15 bytes, blake3:")
    assert str(tmp_path) not in r.out
    assert r.out.count("\n") == 1
    r = run_cas("textconv", tmp_path / "nosuch.pack", cwd=tmp_path)
    assert r.code == 2 and "Traceback" not in r.err


def test_a_driver_set_already_is_left_alone(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "proj")
    repo.git("config", "--local", "diff.cas.textconv", "my-own-textconv")
    r = run_cas("init", cwd=repo.root)
    assert r.code == 0, r.err
    assert "diff.cas.textconv is set already (my-own-textconv): left alone" in r.out
    assert repo.git("config", "--local", "--get", "diff.cas.textconv") == "my-own-textconv\n"
