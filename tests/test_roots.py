"""cas.roots: the roots gc keeps and verify checks (manifest folders and files, pins, --keep)."""

from __future__ import annotations

import os
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store, roots
from cas import manifest as mf
from cas.errors import BlobNotFound, NotFound, UsageError
from tests import rawstore
from tests.stress.crash_loop import write_pack


def _manifest_files(store: Store, *dirs: roots.RootDir) -> list[str]:
    files, problems = roots.manifest_files(store, list(dirs))
    assert not problems, problems
    return [label for label, _path in files]


# --- folders ------------------------------------------------------------------------------------


def test_the_default_folder_is_beside_the_store(store: Store) -> None:
    assert roots.default_dir(store) == store.path.parent / "manifests"


def test_each_folder_counts_once_under_the_first_kind_that_names_it(
    tmp_path: Path, store: Store
) -> None:
    default = roots.default_dir(store)
    default.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(other, tmp_path / "alias")
    roots.add_root_dir(store, other)
    dirs = roots.manifest_dirs(store, [tmp_path / "alias", other], project=default)
    assert [(d.path, d.kind, d.recorded) for d in dirs] == [
        (default, "default", False),
        (other.resolve(), "recorded", True),
    ]
    # a recorded folder the project also names is the project's, and still recorded
    project = roots.manifest_dirs(store, project=other)
    assert [(d.kind, d.recorded) for d in project] == [("default", False), ("project", True)]


def test_packs_are_found_below_each_folder_once(tmp_path: Path, store: Store) -> None:
    default = roots.default_dir(store)
    (default / "nested").mkdir(parents=True)
    for rel in ("a.pack", "nested/b.pack", "notes.txt"):
        (default / rel).write_bytes(b"x")
    (default / "dir.pack").mkdir()  # a folder with a pack's name is no pack
    assert _manifest_files(store, roots.RootDir(default, "default")) == ["a.pack", "nested/b.pack"]
    # a folder inside another: its packs are listed once, under the first folder
    inner = roots.RootDir(default / "nested", "extra")
    assert _manifest_files(store, roots.RootDir(default, "default"), inner) == [
        "a.pack",
        "nested/b.pack",
    ]
    assert _manifest_files(store, inner) == [str(default / "nested" / "b.pack")]


@pytest.mark.parametrize(
    ("kind", "recorded", "problem"),
    [
        ("default", False, None),
        ("project", False, None),
        ("extra", False, "root folder is missing"),
        ("recorded", True, "recorded root folder is missing"),
    ],
)
def test_a_missing_folder_is_a_problem_only_when_someone_named_it(
    tmp_path: Path, store: Store, kind: str, recorded: bool, problem: str | None
) -> None:
    folder = roots.RootDir(tmp_path / "gone", kind, recorded=recorded)
    files, problems = roots.manifest_files(store, [folder])
    assert files == []
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0][1].startswith(problem)


def test_what_is_not_a_folder_is_always_a_problem(tmp_path: Path, store: Store) -> None:
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    os.symlink(tmp_path / "file", tmp_path / "to-file")
    found = {
        name: roots.RootDir(tmp_path / name, "default").missing_problem()
        for name in ("file", "dangling", "to-file")
    }
    assert found == {
        "file": "is not a directory",
        "dangling": f"is a symlink to {tmp_path / 'nowhere'}, which does not exist",
        "to-file": f"is a symlink to {tmp_path / 'file'}, which is not a directory",
    }


def test_recorded_folders_are_added_once_and_forgotten_by_either_name(
    tmp_path: Path, store: Store
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    with pytest.raises(UsageError, match="not a directory"):
        roots.add_root_dir(store, tmp_path / "absent")
    assert roots.add_root_dir(store, tmp_path / "link") == real
    roots.add_root_dir(store, real)
    assert roots.recorded_dirs(store) == [real]
    # a writer about to write packs there: recorded already, or the default, means nothing to do
    assert roots.keep_manifest_dir(store, real) is None
    roots.default_dir(store).mkdir()
    assert roots.keep_manifest_dir(store, roots.default_dir(store)) is None
    assert roots.recorded_dirs(store) == [real]
    # a folder that is gone no longer resolves to what was recorded: its recorded name works
    (tmp_path / "link").unlink()
    real.rmdir()
    assert roots.remove_root_dir(store, real) == real
    assert roots.recorded_dirs(store) == []
    with pytest.raises(NotFound, match="root folder"):
        roots.remove_root_dir(store, real)


def test_a_folder_whose_name_is_not_utf8_is_recorded_as_it_is(tmp_path: Path) -> None:
    odd = tmp_path / os.fsdecode(b"caf\xe9")
    odd.mkdir()
    with Store.create(tmp_path / ".cas") as store:
        assert roots.keep_manifest_dir(store, odd) == odd
        assert roots.recorded_dirs(store) == [odd]
    with Store.at(tmp_path / ".cas", readonly=True) as again:
        assert roots.recorded_dirs(again) == [odd]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), max_size=12))
def test_recorded_folders_behave_as_a_set(ops: list[tuple[bool, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, Store.create(Path(tmp) / ".cas") as store:
        folders = [Path(tmp) / name for name in ("b", "a", "é", "a b")]
        for folder in folders:
            folder.mkdir()
        model: set[Path] = set()
        for add, i in ops:
            if add:
                roots.add_root_dir(store, folders[i])
                model.add(folders[i])
            elif folders[i] in model:
                roots.remove_root_dir(store, folders[i])
                model.discard(folders[i])
            else:
                with pytest.raises(NotFound):
                    roots.remove_root_dir(store, folders[i])
        assert roots.recorded_dirs(store) == sorted(model, key=os.fsencode)


# --- manifests ----------------------------------------------------------------------------------


def test_a_manifest_file_is_read_decoded_and_remembered(tmp_path: Path, store: Store) -> None:
    path, digest, manifest = write_pack(store, tmp_path, "p", {"a.txt": b"a\n", "b.txt": b"b\n"})
    known: dict[Digest, mf.Manifest] = {}
    root = roots.read_manifest("p.pack", path, known)
    assert (root.digest, root.manifest, root.problem) == (digest, manifest, None)
    assert root.references() == manifest.digests()
    assert known == {digest: manifest}
    path.write_bytes(b"\x89 not a manifest")
    bad = roots.read_manifest("p.pack", path)
    assert bad.manifest is None and bad.problem is not None
    assert bad.problem.startswith("not a valid manifest")
    path.unlink()  # removed since it was listed: no longer a root, and no problem
    assert roots.read_manifest("p.pack", path) == roots.RootManifest("p.pack", path, None, None)


def test_a_blob_is_a_manifest_root_only_if_it_decodes_as_one(tmp_path: Path, store: Store) -> None:
    _path, digest, manifest = write_pack(store, tmp_path, "p", {"a.txt": b"a\n"})
    as_root = roots.manifest_blob(store, digest, "pin:p")
    assert as_root is not None and as_root.manifest == manifest
    assert roots.manifest_blob(store, store.put(b"plain text"), "pin:t") is None
    assert roots.manifest_blob(store, store.put(b"\x89 like a manifest"), "pin:u") is None
    missing = roots.manifest_blob(store, Digest.of(b"gone"), "pin:g")
    assert missing is not None and missing.problem == "not in the store"
    rawstore.change(store, "blobs", digest, lambda v: v[:-1] + bytes([v[-1] ^ 1]))
    corrupt = roots.manifest_blob(store, digest, "pin:p")
    assert corrupt is not None and corrupt.problem is not None
    assert corrupt.problem.startswith("corrupt in the store")


# --- pins ---------------------------------------------------------------------------------------


def test_pins_are_names_for_present_blobs(store: Store) -> None:
    first = store.put(b"release 1")
    second = store.put(b"release 2")
    assert roots.pin(store, "release", first) is None
    assert roots.pin(store, "release", second) == first  # replaced: the old digest comes back
    with pytest.raises(BlobNotFound):
        roots.pin(store, "ghost", Digest.of(b"never stored"))
    assert roots.pins(store) == {"release": second}
    assert roots.unpin(store, "release") == second
    assert roots.pins(store) == {}
    with pytest.raises(NotFound, match="'cas pins' lists them"):
        roots.unpin(store, "release")


def test_pin_names_are_normalized_and_checked(store: Store) -> None:
    d = store.put(b"x")
    decomposed = unicodedata.normalize("NFD", "café")
    roots.pin(store, decomposed, d)
    assert list(roots.pins(store)) == ["café"]  # NFC, as typed on any keyboard
    assert roots.unpin(store, "café") == d
    for bad in ("", "   ", "tab\there", "x" * 201):
        with pytest.raises(UsageError):
            roots.pin(store, bad, d)
    assert roots.pins(store) == {}


def test_a_transaction_sees_the_pins_and_folders_the_store_sees(
    tmp_path: Path, store: Store
) -> None:
    roots.pin(store, "keep", store.put(b"kept"))
    roots.add_root_dir(store, tmp_path)
    seen = store.update(lambda u: (roots.pins(u), roots.recorded_dirs(u)))
    assert seen == (roots.pins(store), roots.recorded_dirs(store))


# --- all of it ----------------------------------------------------------------------------------


def test_every_root_together(tmp_path: Path, store: Store) -> None:
    _p, v1, m1 = write_pack(store, tmp_path, "v1", {"lib.py": b"old\n", "a.txt": b"a\n"})
    elsewhere = tmp_path / "other"
    (elsewhere / "manifests").mkdir(parents=True)
    _p2, v2, m2 = write_pack(store, elsewhere, "v2", {"lib.py": b"new\n"})
    released = tmp_path / "released.pack"
    (tmp_path / "manifests" / "v1.pack").rename(released)  # v1 kept only by its pin
    roots.pin(store, "release-1", v1)
    loose = store.put(b"pinned, not a manifest")
    roots.pin(store, "loose", loose)
    keep = Digest.of(b"kept for one run")
    found = roots.load(store, extra_dirs=[elsewhere / "manifests"], keep=[keep])
    assert not found.problems
    assert found.pins == {"loose": loose, "release-1": v1}
    assert found.referenced() == {v1, v2, loose} | m1.digests() | m2.digests()
    assert found.reachable() == found.referenced() | {keep}
    referrers = found.referrers()
    assert referrers[v1] == ["pin:release-1"]
    assert referrers[v2] == [str(elsewhere / "manifests" / "v2.pack")]
    assert referrers[keep] == ["--keep"]
    assert referrers[Digest.of(b"a\n")] == ["pin:release-1"]
