"""packer.locate: a pack named on the command line (a file, a name, a digest), and a path in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cas import Digest, Store
from cas import manifest as mf
from cas.errors import NotFound, ProblemError
from packer.locate import load_pack, pack_entry


def _manifest(scope: str, store: Store) -> mf.Manifest:
    body = store.put(b"print('hi')\n")
    summary = store.put(b"def hi()")
    return mf.Manifest(
        scope=scope,
        target=None,
        tokenizer="o200k_base",
        budget_target=1000,
        budget_max=1200,
        entries=(
            mf.Entry(".env", None, 40, "low", 0, reason="secret"),
            mf.Entry("README.md", store.put(b"# hi\n"), 5, "high", 3),
            mf.Entry("src/app.py", body, 12, "medium", 4, summary=summary),
            mf.Entry("tests/app.py", store.put(b"test\n"), 5, "low", 2),
        ),
    )


@pytest.fixture
def project(tmp_path: Path, store: Store) -> Path:
    """A project whose manifests/ holds the packs 'core' and 'docs'; the store holds their
    bodies and the 'core' manifest blob."""
    (tmp_path / "manifests").mkdir()
    for scope in ("core", "docs"):
        data = mf.encode(_manifest(scope, store))
        (tmp_path / "manifests" / f"{scope}.pack").write_bytes(data)
    store.put((tmp_path / "manifests" / "core.pack").read_bytes())
    return tmp_path


def test_a_pack_is_found_by_path_by_name_and_by_digest(project: Path, store: Store) -> None:
    path = project / "manifests" / "core.pack"
    data = path.read_bytes()
    by_path = load_pack(str(path), project, None)
    by_name = load_pack("core", project, None)
    by_digest = load_pack(str(Digest.of(data)), project, store)
    assert by_path[0] == by_name[0] == by_digest[0] == mf.decode(data)
    assert by_path[1] == by_name[1] == by_digest[1] == Digest.of(data)
    assert by_path[2] == by_name[2] == str(path)
    assert by_digest[2] == str(Digest.of(data))
    # a path wins over a name, wherever the command runs
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    assert load_pack(str(path), elsewhere, None)[0].scope == "core"


def test_what_cannot_be_found_says_what_to_do(project: Path, store: Store) -> None:
    with pytest.raises(NotFound, match="packs here: core, docs"):
        load_pack("nope", project, store)
    with pytest.raises(NotFound, match="run 'cas pack' first"):
        load_pack("core", project / "manifests", store)  # no manifests/ folder there
    missing = Digest.of(b"never stored")
    with pytest.raises(NotFound, match="no blob with that digest"):
        load_pack(str(missing), project, store)
    with pytest.raises(NotFound, match="run 'cas init'"):
        load_pack(str(missing), project, None)


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_a_manifests_path_that_is_not_a_folder_is_named(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        (tmp_path / "manifests").write_text("not a folder\n")
    else:
        os.symlink(tmp_path / "gone", tmp_path / "manifests")
    with pytest.raises(NotFound) as caught:
        load_pack("core", tmp_path, None)
    assert f"is a {kind}, not the folder 'cas pack' writes packs to" in str(caught.value)


def test_a_path_in_a_pack_gives_its_body_or_its_summary(project: Path) -> None:
    m, _digest, source = load_pack("core", project, None)
    app = m.entry("src/app.py")
    assert app is not None and app.summary is not None
    assert pack_entry(m, source, "src/app.py") == app.digest
    assert pack_entry(m, source, "./src/app.py") == app.digest
    assert pack_entry(m, source, "src/app.py", summary=True) == app.summary
    with pytest.raises(NotFound, match="not summarized"):
        pack_entry(m, source, "README.md", summary=True)


def test_a_path_not_in_the_pack_suggests_the_same_file_name(project: Path) -> None:
    m, _digest, source = load_pack("core", project, None)
    with pytest.raises(NotFound) as caught:
        pack_entry(m, source, "lib/app.py")
    assert "did you mean src/app.py, tests/app.py?" in str(caught.value)
    with pytest.raises(NotFound) as caught:
        pack_entry(m, source, "nothing/like.it")
    assert f"'cas show {source}' lists every path" in str(caught.value)


def test_a_withheld_secret_has_no_body_to_give(project: Path) -> None:
    m, _digest, source = load_pack("core", project, None)
    with pytest.raises(ProblemError, match="withheld as a secret"):
        pack_entry(m, source, ".env")
