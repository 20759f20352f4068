"""History from git's commits: which files changed recently and often, the same before and after
the working tree is committed, never from file times.

Every test builds a real repository with the real `git` binary in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packer.history import History, read_history

# These tests need the git binary (CI has it): without it they fail, they do not skip.
assert shutil.which("git"), "tests/test_history.py needs git on PATH"

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        env={**os.environ, **_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def commit(root: Path, message: str = "change") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    return root


def scanned(root: Path) -> frozenset[str]:
    """What a pack of ``root`` would hold: every file but .git/ and manifests/."""
    out = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith((".git/", "manifests/")):
            out.add(rel)
    return frozenset(out)


def history(root: Path, limit: int = 200) -> History:
    found = read_history(root, scanned(root), limit=limit)
    assert found is not None
    return found


def test_not_a_repository(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    assert read_history(tmp_path, {"a.py"}) is None


def test_no_git_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    commit(root)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert read_history(root, {"a.py"}) is None


def test_counts_and_positions(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    write(root, "b.py", "1")
    commit(root, "first")
    write(root, "a.py", "2")
    commit(root, "second")
    write(root, "a.py", "3")
    write(root, "c.py", "1")
    commit(root, "third")
    h = history(root)
    assert h.window == 3 and h.complete and not h.dirty
    assert h.changes == {"a.py": 3, "b.py": 1, "c.py": 1}
    assert h.newest == {"a.py": 0, "b.py": 2, "c.py": 0}
    assert h.reason("a.py") == "changed in 3 of the last 3 commits"
    assert h.reason("missing.py") is None


def test_commits_that_change_no_file_of_the_pack_are_skipped(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    commit(root)
    write(root, "manifests/repo.pack", "packed")
    commit(root, "Refresh this repository's packs")
    write(root, "gone.py", "1")
    commit(root)
    (root / "gone.py").unlink()
    commit(root, "remove it again")
    h = history(root)
    # Four commits, but only the first changes a file the pack holds now.
    assert h.window == 1 and h.changes == {"a.py": 1} and h.newest == {"a.py": 0}


def test_working_tree_is_the_newest_entry(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    write(root, "b.py", "1")
    commit(root)
    write(root, "a.py", "2")  # modified, not staged
    write(root, "new/c.py", "1")  # untracked
    write(root, ".gitignore", "ignored.py\n")
    write(root, "ignored.py", "1")  # ignored: not content
    h = read_history(root, scanned(root) - {"ignored.py"})
    assert h is not None
    assert h.dirty == {"a.py", "new/c.py", ".gitignore"}
    assert h.window == 2
    assert h.newest["a.py"] == 0 and h.newest["b.py"] == 1 and h.newest["new/c.py"] == 0
    assert h.reason("new/c.py") == "changed in the working tree"
    assert h.reason("a.py") == "changed in 1 of the last 1 commit (and in the working tree)"


def test_same_history_before_and_after_committing_the_working_tree(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    write(root, "b.py", "1")
    commit(root)
    write(root, "b.py", "2")
    commit(root)
    # A pack is made from a dirty working tree, then the tree is committed with the pack.
    write(root, "a.py", "2")
    write(root, "c.py", "new")
    before = history(root)
    write(root, "manifests/repo.pack", "the pack made just now")
    commit(root, "work and its pack")
    after = history(root)
    assert before.digest == after.digest
    assert (before.changes, before.newest) == (after.changes, after.newest)
    # A later commit of the packs alone changes nothing either.
    write(root, "manifests/repo.pack", "refreshed")
    commit(root, "Refresh this repository's packs")
    assert history(root).digest == after.digest


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.tuples(
            st.sets(st.sampled_from(["a.py", "b.py", "pkg/c.py", "d.md"]), max_size=3),
            st.booleans(),  # commit the step
            st.booleans(),  # touch manifests/ in that commit
        ),
        min_size=1,
        max_size=6,
    ),
    limit=st.integers(min_value=1, max_value=5),
)
def test_committing_never_changes_the_history(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[set[str], bool, bool]],
    limit: int,
) -> None:
    root = repo(tmp_path_factory.mktemp("h"))
    write(root, "a.py", "0")
    commit(root)
    for n, (files, do_commit, with_pack) in enumerate(steps):
        for rel in sorted(files):
            write(root, rel, f"{rel} {n}")
        if with_pack:
            write(root, "manifests/repo.pack", f"pack {n}")
        if do_commit:
            commit(root, f"step {n}")
    before = history(root, limit)
    write(root, "manifests/repo.pack", "the pack of this tree")
    commit(root, "commit the tree and its pack")
    after = history(root, limit)
    assert before.digest == after.digest
    assert before.changes == after.changes and before.newest == after.newest


def test_window_limit_and_complete(tmp_path: Path) -> None:
    root = repo(tmp_path)
    for n in range(6):
        write(root, f"f{n}.py", "1")
        commit(root)
    h = history(root, limit=4)
    assert h.window == 4 and h.complete
    assert set(h.changes) == {"f2.py", "f3.py", "f4.py", "f5.py"}


def test_shallow_clone_is_incomplete(tmp_path: Path) -> None:
    root = repo(tmp_path)
    for n in range(5):
        write(root, "a.py", str(n))
        commit(root)
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{root}", str(clone)],
        env={**os.environ, **_ENV},
        check=True,
    )
    shallow = history(clone, limit=10)
    assert not shallow.complete and shallow.window == 2
    # A window the shallow history holds entirely is complete, and equal to the full clone's.
    assert history(clone, limit=2).complete
    assert history(clone, limit=2).digest == history(root, limit=2).digest
    assert history(root, limit=10).complete


def test_a_subfolder_sees_its_own_history(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "other/x.py", "1")
    write(root, "proj/a.py", "1")
    commit(root)
    write(root, "other/x.py", "2")
    commit(root, "outside the project")
    write(root, "proj/b.py", "1")  # untracked, inside
    write(root, "other/y.py", "1")  # untracked, outside
    h = read_history(root / "proj", {"a.py", "b.py"})
    assert h is not None
    assert h.window == 2 and h.changes == {"a.py": 1, "b.py": 1} and h.dirty == {"b.py"}


def test_merges_count_on_the_first_parent_chain(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    commit(root)
    git(root, "checkout", "-q", "-b", "topic")
    write(root, "b.py", "1")
    commit(root, "topic 1")
    write(root, "b.py", "2")
    commit(root, "topic 2")
    git(root, "checkout", "-q", "main")
    write(root, "c.py", "1")
    commit(root, "main")
    git(root, "merge", "-q", "--no-ff", "--no-edit", "topic")
    h = history(root)
    # main's chain: the merge (b.py against its first parent), "main", the first commit.
    assert h.window == 3
    assert h.changes == {"a.py": 1, "b.py": 1, "c.py": 1}
    assert h.newest["b.py"] == 0


def test_renames_count_for_the_new_path_whatever_the_configuration(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "old.py", "same content\n" * 20)
    commit(root)
    git(root, "mv", "old.py", "new.py")
    commit(root, "rename")
    git(root, "config", "diff.renames", "true")
    first = history(root)
    git(root, "config", "diff.renames", "false")
    assert history(root).digest == first.digest
    assert first.changes == {"new.py": 1}


def test_environment_pointing_elsewhere_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    commit(root)
    other = repo(tmp_path / "o")
    write(other, "b.py", "1")
    commit(other)
    expected = history(root)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert history(root).digest == expected.digest


def test_no_commit_yet(tmp_path: Path) -> None:
    root = repo(tmp_path)
    write(root, "a.py", "1")
    h = history(root)
    assert h.window == 1 and h.dirty == {"a.py"} and h.complete
