"""Starting a project (`casapp.newproject`, what `cas init` writes beside the store): the
design's targets in a commented cas.toml, the store kept out of git, the pack diff driver, and
nothing a user has overwritten."""

from __future__ import annotations

from pathlib import Path

from casapp.newproject import CAS_TOML, start_project
from packer.config import load_config
from tests.gitrepo import Repo


def test_a_new_folder_gets_every_file_and_the_config_reads_as_the_design_says(
    tmp_path: Path,
) -> None:
    started = start_project(tmp_path, textconv="cas textconv")
    assert started.written == ["cas.toml", ".gitignore", ".gitattributes"]
    assert (started.appended, started.left, started.driver) == ([], [], None)
    assert (tmp_path / ".gitignore").read_text() == ".cas/\n"
    assert (tmp_path / ".gitattributes").read_text() == "*.pack diff=cas\n"
    assert (tmp_path / "cas.toml").read_text() == CAS_TOML
    config = load_config(tmp_path)
    assert [s.name for s in config.scopes] == ["repo"]
    budgets = {t.name: (t.budget.target, t.budget.max) for t in config.scopes[0].targets}
    assert budgets == {"common": (2500, 3000), "chatgpt": (5000, 6000), "claude": (10000, 12000)}
    assert sum(line.startswith("#") for line in CAS_TOML.splitlines()) >= 10  # commented


def test_existing_files_are_never_overwritten_and_lines_are_appended_once(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text("[pack]\n")
    (tmp_path / ".gitignore").write_text("node_modules")  # no newline at the end
    (tmp_path / ".gitattributes").write_text("*.png binary\n")
    started = start_project(tmp_path, textconv="cas textconv")
    assert started.written == []
    assert started.appended == [".gitignore", ".gitattributes"]
    assert started.left == [("cas.toml", "exists")]
    assert (tmp_path / "cas.toml").read_text() == "[pack]\n"
    assert (tmp_path / ".gitignore").read_text() == "node_modules\n.cas/\n"
    assert (tmp_path / ".gitattributes").read_text() == "*.png binary\n*.pack diff=cas\n"
    again = start_project(tmp_path, textconv="cas textconv")
    assert again.written == again.appended == []
    assert [f for f, _why in again.left] == ["cas.toml", ".gitignore", ".gitattributes"]
    assert (tmp_path / ".gitignore").read_text() == "node_modules\n.cas/\n"


def test_a_store_ignored_another_way_is_not_ignored_twice(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("/.cas\n")
    start_project(tmp_path, textconv="cas textconv")
    assert (tmp_path / ".gitignore").read_text() == "/.cas\n"


def test_a_pyproject_with_tool_cas_keeps_its_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.cas.pack]\ntokenizer = 'o200k_base'\n")
    started = start_project(tmp_path, textconv="cas textconv")
    assert not (tmp_path / "cas.toml").exists()
    assert ("cas.toml", "pyproject.toml holds [tool.cas]") in started.left


def test_in_a_git_work_tree_the_driver_is_set_in_the_repositorys_config(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "proj")
    sub = repo.root / "sub"
    sub.mkdir()
    started = start_project(sub, textconv="cas textconv")
    assert started.driver == "cas textconv"
    assert repo.git("config", "--local", "--get", "diff.cas.textconv") == "cas textconv\n"
    assert start_project(sub, textconv="cas textconv").driver_note is None
    plain = tmp_path / "plain"
    plain.mkdir()
    assert start_project(plain, textconv="cas textconv").driver_note == "not a git work tree"
