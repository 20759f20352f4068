"""packer.packing: the pack service and the packer's Python API (`make_pack`, `verify_manifest`,
`PackScope`, ``python -m packer``), against the command line on the same trees."""

from __future__ import annotations

import doctest
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import packer
from cas.errors import CasError, ConfigError, NotFound, StoreNotFound, UnknownName, UsageError
from cas.store import Store
from packer import PackScope, make_pack, verify_manifest
from packer import packing as packing_mod
from tests import rawstore
from tests.conftest import cas_env, run_cas


def _project(root: Path) -> Path:
    (root / "src" / "app").mkdir(parents=True)
    (root / "src" / "app" / "__init__.py").write_text(
        '"""The app."""\n\n\ndef main() -> int:\n    """Run it."""\n    return 0\n'
    )
    (root / "src" / "app" / "util.py").write_text("def helper(x):\n    return main() + x\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\nCall `main` to run the app.\n")
    (root / "README.md").write_text("# App\n\nSee docs/guide.md.\n")
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 900, max = 1000 }\n")
    return root


def test_the_module_examples_run(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    (project / "cas.toml").unlink()  # the examples show the default pack
    found = doctest.testmod(packing_mod, extraglobs={"project": str(project)})
    assert found.attempted >= 8 and found.failed == 0, found


def test_make_pack_writes_the_bytes_cas_pack_writes(tmp_path: Path) -> None:
    one, two = _project(tmp_path / "one"), tmp_path / "two"
    shutil.copytree(one, two)
    report = make_pack(one, notes=None)
    assert run_cas("pack", cwd=two).code == 0
    assert [r.path.name for r in report.results] == ["repo.pack"]
    assert (one / "manifests" / "repo.pack").read_bytes() == (
        two / "manifests" / "repo.pack"
    ).read_bytes()
    again = make_pack(one, notes=None)
    assert not any(r.written for r in again.results)
    assert str(again.results[0].digest) == str(report.results[0].digest)


def test_check_writes_nothing_and_names_the_stale_pack(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    make_pack(project, notes=None)
    before = (project / "manifests" / "repo.pack").read_bytes()
    (project / "src" / "app" / "new.py").write_text("def added():\n    return 1\n")
    report = make_pack(project, check=True, notes=None)
    assert report.stale == ["repo"]
    assert (project / "manifests" / "repo.pack").read_bytes() == before
    assert make_pack(project, notes=None).results[0].written
    assert make_pack(project, check=True, notes=None).stale == []


def test_a_pack_scope_is_packed_as_given_beside_the_named_ones(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    (project / "cas.toml").write_text(
        "[scopes.docs]\nroots = ['docs']\n\n[scopes.code]\nroots = ['src']\n"
    )
    readme = PackScope("top", include=("README.md",), budget=(300, 400))
    report = make_pack(project, ["docs", readme], notes=None)
    got = {r.path.name: [e.path for e in r.manifest.entries] for r in report.results}
    assert got == {"docs.pack": ["docs/guide.md"], "top.pack": ["README.md"]}
    assert [r.budget for r in report.results if r.path.name == "top.pack"] == [
        {"target": 300, "max": 400}
    ]
    targets = PackScope("code2", roots=("src",), targets=(("small", 200, 300), ("big", 800, 900)))
    names = sorted(r.path.name for r in make_pack(project, [targets], notes=None).results)
    assert names == ["code2.big.pack", "code2.small.pack"]


@pytest.mark.parametrize(
    ("scopes", "error", "words"),
    [
        ([PackScope("bad name!")], ConfigError, "scope name"),
        ([PackScope("a", roots=("../up",))], ConfigError, "inside the project root"),
        ([PackScope("a", include=("src/[",))], ConfigError, "include"),
        ([PackScope("a", budget=(500, 100))], ConfigError, "budget"),
        ([PackScope("a", budget=(0, 0))], ConfigError, "positive"),
        ([PackScope("a"), PackScope("a", roots=("src",))], ConfigError, "share a name"),
        (["nosuch"], UnknownName, "nosuch"),
    ],
)
def test_a_bad_scope_is_the_error_the_command_line_gives(
    tmp_path: Path, scopes: list[str | PackScope], error: type[CasError], words: str
) -> None:
    project = _project(tmp_path / "p")
    with pytest.raises(error) as raised:
        make_pack(project, scopes, notes=None)
    assert words in str(raised.value)
    assert not (project / "manifests").exists()


def test_a_project_that_is_not_there_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "project"
    for call in (
        lambda: make_pack(missing, notes=None),
        lambda: verify_manifest("repo", project=missing),
    ):
        with pytest.raises(UsageError, match="no such folder"):
            call()
    assert not (tmp_path / "gone").exists()


def test_verify_manifest_checks_one_pack_and_records_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    with pytest.raises(StoreNotFound):
        verify_manifest("repo", project=project)
    report = make_pack(project, notes=None)
    path = report.results[0].path
    for spec in (path, "repo", str(report.results[0].digest)):
        checked = verify_manifest(spec, project=project)
        assert checked.ok and checked.checked >= 4 and not checked.recorded, spec
    with pytest.raises(NotFound):
        verify_manifest("nosuch", project=project)
    # a body missing from the store is a problem of the report, not an exception
    entry = next(e for e in report.results[0].manifest.entries if e.path == "README.md")
    assert entry.digest is not None
    with Store.at(project / ".cas") as store:
        assert rawstore.delete(store, "blobs", bytes(entry.digest))
    damaged = verify_manifest(path, project=project, store=project / ".cas")
    assert not damaged.ok
    assert [(p.digest, p.what) for p in damaged.problems] == [
        (str(entry.digest), "missing from the store")
    ]


def test_an_open_store_is_used_and_left_open(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    with Store.create(tmp_path / "elsewhere") as store:
        report = make_pack(project, store=store, notes=None)
        assert store.has(report.results[0].digest)
        assert verify_manifest("repo", project=project, store=store).ok
        assert store.stats()  # still open
    assert not (project / ".cas").exists()


def test_notes_go_where_asked(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    make_pack(project, notes=None)
    index = project / ".cas" / "index"
    shutil.rmtree(index)
    index.write_text("not a folder")  # the search index cannot be opened: a note, no failure
    heard: list[str] = []
    (project / "src" / "app" / "new.py").write_text("def added():\n    return 1\n")
    report = make_pack(project, notes=heard.append)
    assert report.results[0].written
    assert heard and all("search index" in line for line in heard)


def test_python_dash_m_packer_is_cas_pack(tmp_path: Path) -> None:
    one, two = _project(tmp_path / "one"), tmp_path / "two"
    shutil.copytree(one, two)
    proc = subprocess.run(
        [sys.executable, "-P", "-m", "packer", "-q"],
        cwd=one, env=cas_env(), capture_output=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cli = run_cas("-q", "pack", cwd=two)
    assert proc.stdout.decode() == cli.out
    bad = subprocess.run(
        [sys.executable, "-P", "-m", "packer", "nosuch"],
        cwd=one, env=cas_env(), capture_output=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1 and b"nosuch" in bad.stderr


def test_the_api_names_are_exported_lazily() -> None:
    assert set(packer.__all__) == {"PackScope", "make_pack", "verify_manifest"}
    assert packer.make_pack is packing_mod.make_pack
    with pytest.raises(AttributeError):
        packer.nothing  # noqa: B018
    code = "import sys, packer.lexicon; print('packer.build' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], env=cas_env(), capture_output=True, check=True
    )
    assert out.stdout.strip() == b"False"
    assert os.fspath(Path(packer.__file__).parent / "py.typed")
