"""One store, several projects: packs written outside the store's own manifests folder stay gc
roots, and verify checks the packs of the project it runs in.

A store is shared through ``CAS_STORE``, or found above a nested repository (a monorepo, a
submodule): ``cas pack`` then writes ``<project>/manifests``, which is not the folder beside the
store. Everything here runs the real ``cas`` command against real stores.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from cas import Store, roots
from cas.events import ProgressEvent
from cas.gc import collect
from tests.conftest import Result, run_cas
from tests.rawstore import age
from tests.stress.crash_loop import write_pack


def _ok(result: Result) -> None:
    assert result.code == 0, result.out + result.err


def _shared(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """The issue's setup: a store in s/, a project in a/ using it through CAS_STORE."""
    store_dir, project = tmp_path / "s", tmp_path / "a"
    env = {"CAS_STORE": str(store_dir / ".cas")}
    _ok(run_cas("init", "--store-only", store_dir, env=env))
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    return store_dir, project, env


def _blob_count(store_dir: Path) -> int:
    with Store.at(store_dir / ".cas", readonly=True) as store:
        return len(list(store.iterate()))


def test_a_pack_through_cas_store_survives_gc_beside_the_store(tmp_path: Path) -> None:
    store_dir, project, env = _shared(tmp_path)
    _ok(run_cas("pack", cwd=project, env=env))
    assert (project / "manifests" / "repo.pack").is_file()
    (store_dir / "manifests").mkdir()
    gc = run_cas("gc", "--grace", "0", cwd=store_dir, env=env)
    _ok(gc)
    assert gc.out.startswith("pruned 0 blobs") and "1 manifest" in gc.out
    _ok(run_cas("verify", cwd=project, env=env))
    rendered = run_cas("render", "repo", cwd=project, env=env)
    _ok(rendered)
    assert "x = 1" in rendered.out
    # The folder is recorded in the store, so every gc sees it, from anywhere.
    folder = (project / "manifests").resolve()
    assert f"dir  {folder}" in run_cas("pins", cwd=store_dir, env=env).out


def test_a_nested_repository_under_the_store_folder(tmp_path: Path) -> None:
    outer = tmp_path / "mono"
    _ok(run_cas("init", "--store-only", outer))
    (outer / "manifests").mkdir()
    inner = outer / "libs" / "sub"
    (inner / ".git").mkdir(parents=True)  # a submodule: its own project root
    (inner / "lib.py").write_text("def answer() -> int:\n    return 42\n")
    _ok(run_cas("pack", cwd=inner))  # the store is found above, in mono/.cas
    assert (inner / "manifests" / "repo.pack").is_file()
    assert not any((outer / "manifests").iterdir())
    assert not (inner / ".cas").exists()
    gc = run_cas("gc", "--grace", "0", cwd=outer)
    _ok(gc)
    assert gc.out.startswith("pruned 0 blobs")
    _ok(run_cas("verify", cwd=outer))  # the recorded folder is checked from the store's side
    _ok(run_cas("verify", cwd=inner))
    rendered = run_cas("render", "repo", cwd=inner)
    _ok(rendered)
    assert "return 42" in rendered.out


def test_packing_into_the_default_folder_records_nothing(tmp_path: Path) -> None:
    _ok(run_cas("init", "--store-only", tmp_path))
    (tmp_path / "a.py").write_text("x = 1\n")
    _ok(run_cas("pack", cwd=tmp_path))
    assert json.loads(run_cas("pins", "--json", cwd=tmp_path).out)["root_dirs"] == []


def test_pack_check_records_and_creates_nothing(tmp_path: Path) -> None:
    store_dir, project, env = _shared(tmp_path)
    r = run_cas("pack", "--check", cwd=project, env=env)
    assert r.code == 1  # nothing committed yet: stale
    assert not (project / "manifests").exists()
    assert json.loads(run_cas("pins", "--json", cwd=store_dir, env=env).out)["root_dirs"] == []


def test_verify_checks_the_packs_of_the_project_it_runs_in(tmp_path: Path) -> None:
    store_dir, project, env = _shared(tmp_path)
    _ok(run_cas("pack", cwd=project, env=env))
    # A pack made before its folder was recorded (an older cas): gc beside the store cannot
    # see it and prunes its blobs...
    _ok(run_cas("unpin", "--dir", project / "manifests", cwd=project, env=env))
    (store_dir / "manifests").mkdir()
    gc = run_cas("gc", "--grace", "0", cwd=store_dir, env=env)
    _ok(gc)
    assert gc.out.startswith("pruned 2 blobs")
    # ...and verify run in the project says so, naming the pack, instead of passing.
    r = run_cas("verify", cwd=project, env=env)
    assert r.code == 1
    assert "missing from the store" in r.out
    assert str(project / "manifests" / "repo.pack") in r.out
    assert run_cas("render", "repo", cwd=project, env=env).code == 1


def test_gc_inside_a_project_keeps_its_packs(tmp_path: Path) -> None:
    store_dir, project, env = _shared(tmp_path)
    _ok(run_cas("pack", cwd=project, env=env))
    _ok(run_cas("unpin", "--dir", project / "manifests", cwd=project, env=env))
    before = _blob_count(store_dir)
    gc = run_cas("gc", "--grace", "0", cwd=project, env=env)
    _ok(gc)
    assert gc.out.startswith("pruned 0 blobs")
    assert _blob_count(store_dir) == before
    _ok(run_cas("render", "repo", cwd=project, env=env))


def test_a_deleted_project_blocks_gc_until_it_is_forgotten(tmp_path: Path) -> None:
    store_dir, project, env = _shared(tmp_path)
    _ok(run_cas("pack", cwd=project, env=env))
    folder = (project / "manifests").resolve()
    shutil.rmtree(project)
    before = _blob_count(store_dir)
    gc = run_cas("gc", "--grace", "0", cwd=store_dir, env=env)
    assert gc.code == 1
    assert "nothing was deleted" in gc.err and f"cas unpin --dir {folder}" in gc.err
    assert _blob_count(store_dir) == before
    pins = run_cas("pins", cwd=store_dir, env=env)
    assert f"dir  {folder}  (missing" in pins.out and "cas unpin --dir" in pins.err
    listed = json.loads(run_cas("pins", "--json", cwd=store_dir, env=env).out)
    assert listed["missing_root_dirs"] == [str(folder)]
    verify = run_cas("verify", cwd=store_dir, env=env)
    assert verify.code == 1 and "recorded root folder is missing" in verify.out
    _ok(run_cas("unpin", "--dir", folder, cwd=store_dir, env=env))
    gc = run_cas("gc", "--grace", "0", cwd=store_dir, env=env)
    assert gc.code == 2 and "no roots" in gc.err  # nothing left to keep: gc says so
    (store_dir / "manifests").mkdir()
    gc = run_cas("gc", "--grace", "0", cwd=store_dir, env=env)
    _ok(gc)
    assert _blob_count(store_dir) == 0


def test_a_recorded_folder_missing_is_refused_from_inside_its_project_too(
    tmp_path: Path,
) -> None:
    """The project's own folder is optional to gc run there, but being recorded makes it
    required: its packs may be on a disk not mounted now, whatever folder gc runs in."""
    store_dir, project, env = _shared(tmp_path)
    _ok(run_cas("pack", cwd=project, env=env))
    shutil.rmtree(project / "manifests")
    before = _blob_count(store_dir)
    gc = run_cas("gc", "--grace", "0", cwd=project, env=env)
    assert gc.code == 1 and "recorded root folder is missing" in gc.err
    assert _blob_count(store_dir) == before


def test_a_folder_recorded_while_gc_runs_is_read_by_its_deleting_transaction(
    tmp_path: Path,
) -> None:
    """A pack records its folder, then writes its manifest, between gc's snapshot and the
    transaction that deletes (the lease is what orders them in real runs)."""
    (tmp_path / "s" / "manifests").mkdir(parents=True)
    elsewhere = tmp_path / "project"
    body = b"def kept() -> int:\n    return 1\n"
    with Store.create(tmp_path / "s" / ".cas") as store:
        digest = store.put(body)
        age(store, {digest}, 7200)  # old and unreferenced: a candidate of the gc below

        def late_pack() -> None:
            (elsewhere / "manifests").mkdir(parents=True)
            assert roots.keep_manifest_dir(store, elsewhere / "manifests") is not None
            write_pack(store, elsewhere, "late", {"kept.py": body})
            age(store, {digest}, 7200)

        def progress(event: ProgressEvent) -> None:
            if event.stage == "sweep":
                late_pack()

        report = collect(store, grace_ns=0, progress=progress)
        assert digest not in report.digests and store.has(digest)
        assert report.spared_late >= 1
        # Recording is idempotent, and the default folder is never recorded.
        assert roots.keep_manifest_dir(store, elsewhere / "manifests") is None
        assert roots.keep_manifest_dir(store, tmp_path / "s" / "manifests") is None


def test_a_project_whose_path_is_not_utf8(tmp_path: Path) -> None:
    """Folder names are bytes on Linux: recording one must not need it to be UTF-8."""
    store_dir, _project, env = _shared(tmp_path)
    project = tmp_path / os.fsdecode(b"proj\xff")
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    _ok(run_cas("pack", cwd=project, env=env))
    (store_dir / "manifests").mkdir()
    gc = run_cas("gc", "--grace", "0", cwd=store_dir, env=env)
    _ok(gc)
    assert gc.out.startswith("pruned 0 blobs")
    _ok(run_cas("verify", cwd=store_dir, env=env))
    with Store.at(store_dir / ".cas") as store:
        assert roots.recorded_dirs(store) == [(project / "manifests").resolve()]
        body = [d for d in store.iterate() if store.get(d) == b"x = 1\n"]
        store.delete(body)
    r = run_cas("verify", cwd=store_dir, env=env)
    assert r.code == 1 and "missing from the store" in r.out and "Traceback" not in r.err
    r = run_cas("pin", os.fsdecode(b"name\xfe"), str(body[0]), cwd=store_dir, env=env)
    assert r.code == 2 and "not valid UTF-8" in r.err
