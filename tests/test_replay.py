"""A pack run replayed (`packer.replay`): only when nothing it reads changed, and then exactly
what running it gives."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from conftest import run_cas
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

OLD = 1_600_000_000  # a file time far outside the racy window (`packer.scan.RACY_NS`)
FILES = {
    "src/app.py": "def main(argv):\n    return run(argv)\n",
    "src/run.py": "def run(argv):\n    return len(argv)\n",
    "docs/guide.md": "# Guide\n\nCall main.\n",
    "README.md": "# demo\n",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _age(root: Path) -> None:
    """Every file's times set far back: none is in the racy window."""
    for path in root.rglob("*"):
        if ".git" not in path.parts and ".cas" not in path.parts and path.is_file():
            os.utime(path, (OLD, OLD))


def _tree(root: Path, files: dict[str, str] = FILES) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 2000, max = 2400 }\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    _age(root)
    return root


def _pack(root: Path, *args: str) -> dict[str, Any]:
    r = run_cas("pack", "--json", *args, cwd=root)
    assert r.code == 0, r.err
    report: dict[str, Any] = json.loads(r.out)
    return report


def _same_report(a: dict[str, Any], b: dict[str, Any]) -> None:
    """What a run says, apart from how it went (times, what it read) and what it wrote."""
    for key in ("withheld", "redacted", "files", "stale", "notes"):
        assert a[key] == b[key], key
    strip = [{k: v for k, v in p.items() if k != "written"} for p in a["packs"]]
    assert strip == [{k: v for k, v in p.items() if k != "written"} for p in b["packs"]]


def _packs(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "manifests").glob("*.pack"))}


def test_an_unchanged_tree_is_replayed_and_says_what_the_run_said(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    first = _pack(root)
    assert first["replayed"] is False and first["packs"][0]["written"] is True
    again = _pack(root)
    assert again["replayed"] is True and again["packs"][0]["written"] is False
    _same_report(first, again)
    assert again["stat_hits"] == again["files"] == first["files"]
    checked = run_cas("pack", "--check", cwd=root)
    assert checked.code == 0 and "(up to date)" in checked.out
    # a search finds what the replayed pack holds: its bodies stay indexed
    found = run_cas("search", "run", "--json", cwd=root)
    assert found.code == 0 and json.loads(found.out)["hits"]


def test_a_manifest_file_that_differs_is_stale_and_made_again(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    _pack(root)
    made = _packs(root)
    (root / "manifests" / "repo.pack").write_bytes(b"not a manifest")
    stale = run_cas("pack", "--check", cwd=root)
    assert stale.code == 1 and "(stale)" in stale.out
    written = (root / "manifests" / "repo.pack").read_bytes()
    assert written == b"not a manifest"  # a check writes nothing
    again = _pack(root)
    assert again["replayed"] is True and again["packs"][0]["written"] is True
    assert _packs(root) == made
    (root / "manifests" / "repo.pack").unlink()
    assert _pack(root)["replayed"] is True and _packs(root) == made


def test_blobs_pruned_while_the_manifests_were_away_are_not_replayed(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    _pack(root)
    made = _packs(root)
    shutil.move(root / "manifests", tmp_path / "away")
    (root / "manifests").mkdir()  # empty: nothing is referenced now
    assert run_cas("gc", "--grace", "0", cwd=root).code == 0
    (root / "manifests").rmdir()
    shutil.move(tmp_path / "away", root / "manifests")
    again = _pack(root)
    assert again["replayed"] is False  # the record names blobs the store no longer holds
    assert _packs(root) == made
    assert run_cas("verify", cwd=root).code == 0


def test_a_file_changed_within_the_racy_window_is_never_replayed(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    (root / "src" / "run.py").write_text("def run(argv):\n    return 0\n")  # its time: now
    assert _pack(root)["replayed"] is False
    assert _pack(root)["replayed"] is False  # that run was not recorded either
    _age(root)
    assert _pack(root)["replayed"] is False  # its times moved: another input
    assert _pack(root)["replayed"] is True


_EDITS = st.sampled_from(
    ["change", "grow", "add", "remove", "rename", "touch", "budget", "commit", "ignore", "none"]
)


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_EDITS, min_size=1, max_size=3))
def test_after_any_edit_the_packs_are_those_a_fresh_run_makes(
    tmp_path_factory: Any, edits: list[str]
) -> None:
    """Whatever changed (a file's bytes, its size, a file added, removed or renamed, a time, the
    configuration, a commit, an ignore rule), the packs are byte for byte those a cold pack of
    the same tree makes in a store of its own, and a run is replayed only when nothing did."""
    base = tmp_path_factory.mktemp("replay")
    root = _tree(base / "t")
    _pack(root)
    for n, edit in enumerate(edits):
        app = root / "src" / "app.py"
        if edit == "change":  # the same size, other bytes
            app.write_text(app.read_text().replace("argv", "args"[: len("argv")].upper()))
        elif edit == "grow":
            app.write_text(app.read_text() + f"\n\ndef more_{n}():\n    return {n}\n")
        elif edit == "add":
            (root / "src" / f"new_{n}.py").write_text(f"def added_{n}():\n    return {n}\n")
        elif edit == "remove":
            (root / "docs" / "guide.md").unlink(missing_ok=True)
        elif edit == "rename" and (root / "README.md").exists():
            (root / "README.md").rename(root / f"README_{n}.md")
        elif edit == "touch":
            os.utime(app, (OLD + 3600 * (n + 1), OLD + 3600 * (n + 1)))
        elif edit == "budget":
            (root / "cas.toml").write_text(
                f"[pack]\nbudget = {{ target = {1000 + n}, max = {1400 + n} }}\n"
            )
        elif edit == "commit":
            _git(root, "add", "-A")
            _git(root, "commit", "-qm", f"edit {n}", "--allow-empty")
        elif edit == "ignore":
            (root / ".gitignore").write_text("docs/\n")
        if edit not in ("touch", "none"):
            _age(root)
        report = _pack(root)
        if edit == "none":
            assert report["replayed"] is True
        fresh = base / f"fresh-{n}"
        shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".cas", "manifests"))
        _pack(fresh)
        assert _packs(fresh) == _packs(root), (edits, n)


def test_a_record_of_another_shape_is_no_record(tmp_path: Path) -> None:
    """A run record that cannot be read as one (another layout, damage the frame does not
    catch) is passed over: the pack is made, and says nothing of it."""
    import msgpack

    from cas.cache import Cache
    from cas.store import Store
    from packer.replay import RUN_NS

    root = _tree(tmp_path / "t")
    made = _pack(root)
    bad = [
        msgpack.packb([1, [], [], [["repo"]], b""]),
        msgpack.packb([1, [], [], [["repo", None, "repo", "f", b"short", {}, {}, {}]], b""]),
        msgpack.packb("not a record"),
        b"\xc1",
    ]
    for value in bad:
        with Store.at(root / ".cas") as store:
            cache = Cache(store)
            keys = list(cache.preload(RUN_NS))
            assert keys  # the first run recorded itself
            for key in keys:
                cache.put(RUN_NS, key, value)
            cache.flush()
        again = _pack(root)
        assert again["replayed"] is False
        _same_report(made, again)
