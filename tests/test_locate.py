"""cas.locate: where packs live and how one is named, and a pack named on the command line (a
file, a name, a digest) or a path in it.

The end-to-end test at the bottom runs the real ``cas`` with ``--store`` outside the project:
pack, gc (its roots), verify, pin, push and pull must all find the project's packs in the
same place, the project's ``manifests/``, never beside the store.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Digest, Store, locate
from cas import manifest as mf
from cas.errors import NotFound, ProblemError, UsageError
from cas.locate import PackFiles, load_pack, pack_entry
from tests.conftest import Result, run_cas
from tests.s3server import SeaweedS3, s3server

__all__ = ["s3server"]  # the session fixture, imported so pytest finds it here


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


# --- names and folders --------------------------------------------------------------------------

_PART = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True)


@given(scope=_PART, target=st.none() | _PART)
def test_a_pack_file_gives_back_the_name_it_was_made_from(scope: str, target: str | None) -> None:
    name = mf.pack_name(scope, target)
    assert locate.usable_pack_name(name)
    path = locate.pack_path(Path("/p/manifests"), name)
    assert path == Path("/p/manifests") / f"{name}.pack"
    assert locate.is_pack_file(path.name)
    assert locate.name_of(path) == name
    # A name given with its suffix names the same file.
    assert locate.pack_path("/p/manifests", f"{name}.pack") == path
    assert locate.file_name(locate.file_name(name)) == path.name


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "a\\b", "end.", "a b", "é", "x" * 201])
def test_a_name_that_cannot_be_a_file_name_is_refused(name: str) -> None:
    assert not locate.usable_pack_name(name)
    with pytest.raises(UsageError, match="not usable as a file name"):
        locate.check_pack_name(name, "somewhere")


def test_the_folders_are_anchored_on_a_project() -> None:
    assert locate.manifest_dir("/work/proj") == Path("/work/proj/manifests")
    # The store's own project: the folder holding its .cas.
    assert locate.store_manifest_dir("/srv/shared/.cas") == Path("/srv/shared/manifests")


def test_pack_files_are_the_packs_directly_in_the_folder_by_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    assert locate.pack_files(folder) == []  # no folder: no packs
    (folder / "sub").mkdir(parents=True)
    for name in ("b.pack", "B.pack", "a.x.pack", "notes.txt", "sub/deep.pack"):
        (folder / name).write_bytes(b"")
    (folder / "dir.pack").mkdir()
    assert locate.pack_names(folder) == ["B", "a.x", "b"]


# --- loading ------------------------------------------------------------------------------------


def test_a_pack_is_found_by_path_by_name_and_by_digest(project: Path, store: Store) -> None:
    folder = project / "manifests"
    path = folder / "core.pack"
    data = path.read_bytes()
    by_path = load_pack(str(path), folder, None)
    by_name = load_pack("core", folder, None)
    by_suffixed = load_pack("core.pack", folder, None)
    by_digest = load_pack(str(Digest.of(data)), folder, store)
    assert by_path.manifest == by_name.manifest == by_digest.manifest == mf.decode(data)
    assert by_path.digest == by_name.digest == by_digest.digest == Digest.of(data)
    assert by_path.source == by_name.source == by_suffixed.source == str(path)
    assert by_path.path == by_name.path == path and by_digest.path is None
    assert by_path.name == by_digest.name == "core"
    assert by_path.data == by_digest.data == data
    assert by_digest.source == str(Digest.of(data))
    assert locate.pack_digest("core", folder) == locate.pack_digest(str(path), folder)
    # a path wins over a name, wherever the command runs
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    assert load_pack(str(path), elsewhere, None).manifest.scope == "core"


def test_what_cannot_be_found_says_what_to_do(project: Path, store: Store) -> None:
    folder = project / "manifests"
    with pytest.raises(NotFound, match=r"packs in .*manifests: core, docs"):
        load_pack("nope", folder, store)
    with pytest.raises(NotFound, match="run 'cas pack' first"):
        load_pack("core", project / "elsewhere", store)  # no such folder
    missing = Digest.of(b"never stored")
    with pytest.raises(NotFound, match="no blob with that digest"):
        load_pack(str(missing), folder, store)
    with pytest.raises(NotFound, match="run 'cas init'"):
        load_pack(str(missing), folder, None)
    with pytest.raises(NotFound, match="packs in"):
        locate.pack_digest("nope", folder)


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_a_manifests_path_that_is_not_a_folder_is_named(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        (tmp_path / "manifests").write_text("not a folder\n")
    else:
        os.symlink(tmp_path / "gone", tmp_path / "manifests")
    with pytest.raises(NotFound) as caught:
        load_pack("core", tmp_path / "manifests", None)
    assert f"is a {kind}, not the folder 'cas pack' writes packs to" in str(caught.value)


def test_pack_files_are_read_again_only_when_they_change(project: Path, store: Store) -> None:
    """`PackFiles` keeps a file's bytes while its identity holds and each manifest decoded once
    per digest; a file rewritten, replaced by a rename or removed is read anew or forgotten."""
    folder = project / "manifests"
    path = folder / "core.pack"
    files = PackFiles()
    data, digest = files.read(path)
    assert files.read(path)[0] is data  # not read again
    first = load_pack("core", folder, store, files).manifest
    assert load_pack("core", folder, store, files).manifest is first  # decoded once
    # rewritten in place (its mtime set apart: a clock tick may be coarser than this test)
    before = path.stat()
    path.write_bytes((folder / "docs.pack").read_bytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert load_pack("core", folder, store, files).manifest.scope == "docs"
    assert digest not in files.digests()
    assert first not in files._manifests.values()  # what only the old bytes had is dropped
    # replaced by a rename
    (folder / "tmp").write_bytes(data)
    os.replace(folder / "tmp", path)
    assert files.read(path) == (data, digest)
    assert load_pack("core", folder, store, files).manifest.scope == "core"
    # removed: forgotten with what was kept under its digest
    files.read(folder / "docs.pack")
    path.unlink()
    files.retain(folder, locate.pack_files(folder))
    assert files.digests() == {Digest.of((folder / "docs.pack").read_bytes())}
    assert set(files._manifests) <= files.digests()
    # and a file that cannot be read is one line, as without a cache
    with pytest.raises(NotFound):
        load_pack("core", folder, store, files)


def test_a_path_in_a_pack_gives_its_body_or_its_summary(project: Path) -> None:
    found = load_pack("core", project / "manifests", None)
    m, source = found.manifest, found.source
    app = m.entry("src/app.py")
    assert app is not None and app.summary is not None
    assert pack_entry(m, source, "src/app.py") == app.digest
    assert pack_entry(m, source, "./src/app.py") == app.digest
    assert pack_entry(m, source, "src/app.py", summary=True) == app.summary
    with pytest.raises(NotFound, match="not summarized"):
        pack_entry(m, source, "README.md", summary=True)


def test_a_path_not_in_the_pack_suggests_the_same_file_name(project: Path) -> None:
    found = load_pack("core", project / "manifests", None)
    m, source = found.manifest, found.source
    with pytest.raises(NotFound) as caught:
        pack_entry(m, source, "lib/app.py")
    assert "did you mean src/app.py, tests/app.py?" in str(caught.value)
    with pytest.raises(NotFound) as caught:
        pack_entry(m, source, "nothing/like.it")
    assert f"'cas show {source}' lists every path" in str(caught.value)


def test_a_withheld_secret_has_no_body_to_give(project: Path) -> None:
    found = load_pack("core", project / "manifests", None)
    with pytest.raises(ProblemError, match="withheld as a secret"):
        pack_entry(found.manifest, found.source, ".env")


def test_no_other_module_spells_the_folder_or_the_suffix() -> None:
    """The layout is written once: no other module of cas/ or packer/ has a string constant
    that is the suffix or the folder as a path (messages and docs may name them; "manifests"
    alone is also a report's count)."""
    import ast

    from tests.conftest import ROOT

    offenders = []
    for package in ("cas", "packer"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "cas" / "locate.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in {
                    "manifests/",
                    ".pack",
                    "*.pack",
                }:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


# --- one anchor, end to end: --store outside the project --------------------------------------


def _ok(result: Result) -> Result:
    assert result.code == 0, result.out + result.err
    return result


def _blobs(store_dir: Path) -> set[Digest]:
    with Store.at(store_dir, readonly=True) as store:
        return set(store.iterate())


def test_with_the_store_outside_the_project_every_command_uses_the_projects_packs(
    s3server: SeaweedS3, tmp_path: Path
) -> None:
    env = s3server.env(tmp_path / "home")
    store = tmp_path / "elsewhere" / ".cas"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)  # the project root, found from the working directory
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def answer() -> int:\n    return 42\n")
    (project / "README.md").write_text("# proj\n\nA project packed into a store kept apart.\n")
    _ok(run_cas("init", "--store-only", store.parent, env=env))

    def cas(*args: str | os.PathLike[str], cwd: Path = project) -> Result:
        return run_cas("--store", store, *args, cwd=cwd, env=env)

    # pack writes to the project, never beside the store.
    report = json.loads(_ok(cas("pack", "--json")).out)
    (written,) = report["packs"]
    assert written["manifest"] == "manifests/repo.pack"
    assert (project / "manifests" / "repo.pack").is_file()
    assert not (store.parent / "manifests").exists()
    pack_digest = Digest.of((project / "manifests" / "repo.pack").read_bytes())
    kept = _blobs(store)
    # gc keeps what the pack needs, run from the project and from beside the store.
    for where in (project, store.parent):
        gc = json.loads(_ok(cas("gc", "--grace", "0", "--json", cwd=where)).out)
        assert gc["pruned"] == 0 and gc["manifests"] == 1, gc
    assert _blobs(store) == kept
    assert json.loads(_ok(cas("verify", "repo", "--json")).out)["manifests"] == 1
    _ok(cas("pin", "release", "repo"))
    assert json.loads(_ok(cas("pins", "--json")).out)["pins"] == {"release": str(pack_digest)}

    # push sends the project's packs; pull into another clone writes into that clone.
    bucket = f"s3://{s3server.bucket}/locate{uuid.uuid4().hex[:10]}"
    _ok(cas("remote", "add", "origin", bucket, "--endpoint", s3server.endpoint))
    pushed = json.loads(_ok(cas("push", "--json")).out)
    assert [(m["name"], m["digest"]) for m in pushed["manifests"]] == [("repo", str(pack_digest))]

    other_store = tmp_path / "other" / ".cas"
    clone = tmp_path / "clone"
    (clone / ".git").mkdir(parents=True)
    _ok(run_cas("init", "--store-only", other_store.parent, env=env))

    def cas2(*args: str | os.PathLike[str], cwd: Path = clone) -> Result:
        return run_cas("--store", other_store, *args, cwd=cwd, env=env)

    _ok(cas2("remote", "add", "origin", bucket, "--endpoint", s3server.endpoint))
    pulled = json.loads(_ok(cas2("pull", "--all", "--json")).out)
    assert [m["status"] for m in pulled["manifests"]] == ["written"]
    assert (clone / "manifests" / "repo.pack").read_bytes() == (
        project / "manifests" / "repo.pack"
    ).read_bytes()
    assert not (other_store.parent / "manifests").exists()
    # A bare pull reads the clone's packs: nothing more to fetch.
    again = json.loads(_ok(cas2("pull", "--json")).out)
    assert again["blobs_downloaded"] == 0 and again["blobs_referenced"] > 0
    # The clone's folder became a root of that store: a gc from anywhere keeps the pack.
    before = _blobs(other_store)
    gc = json.loads(_ok(cas2("gc", "--grace", "0", "--json", cwd=other_store.parent)).out)
    assert gc["pruned"] == 0 and gc["manifests"] == 1, gc
    assert _blobs(other_store) == before
    assert "return 42" in _ok(cas2("render", "repo", "--mode", "full")).out
    _ok(cas2("verify"))


def test_a_pin_that_holds_a_load_is_a_pack_by_its_name(tmp_path: Path) -> None:
    """`context/SCOPE/SESSION` and `load/mcp/N` name the loads they hold; a pin holding anything
    else, or another prefix, is no pack."""
    with Store.create(tmp_path / ".cas") as store:
        body = store.put(b"print('hi')\n")
        entry = mf.Entry("a.py", body, 12, "high", 4)
        load = mf.Manifest("context/user:a/s1", None, "o200k_base", 100, 100, (entry,), kind="load",
                           query="hi", sources=())  # fmt: skip
        data = mf.encode(load)
        digest = store.put(data)
        store.refs.pin("context/user:a/s1", digest)
        lite = store.put(mf.encode(load._replace(kind="lite", query=None)))
        store.refs.pin("load/mcp/1", lite)
        store.refs.pin("other/x", digest)
        found = load_pack("context/user:a/s1", tmp_path / "manifests", store)
        assert (found.name, found.digest, found.manifest.query) == (
            "context/user:a/s1",
            digest,
            "hi",
        )
        for name in ("load/mcp/1", "other/x", "context/user:a/s2"):
            with pytest.raises(NotFound):
                load_pack(name, tmp_path / "manifests", store)
