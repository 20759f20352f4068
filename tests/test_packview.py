"""Pack views (`packer.packview`): what a search reads of a pack instead of its manifest, cached
by the manifest's digest, and the views a process keeps while pack files change under it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import manifest as mf
from cas.cache import Cache
from cas.digest import Digest
from cas.store import Store
from packer import packview
from packer.packview import PackView, Views, view_of

_PIECE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\\\0"),
    min_size=1,
    max_size=8,
).filter(lambda p: p not in (".", "..") and mf._valid_path(p))


@st.composite
def manifests(draw: st.DrawFn) -> mf.Manifest:
    """Valid manifests: files with and without bodies, symlinks, a load's sources."""
    paths = draw(
        st.sets(st.lists(_PIECE, min_size=1, max_size=3).map("/".join), max_size=12).map(
            lambda s: sorted((p for p in s if mf._valid_path(p)), key=lambda p: p.encode())
        )
    )
    entries = []
    for path in paths:
        withheld = draw(st.booleans()) and draw(st.booleans())
        entries.append(
            mf.Entry(
                path=path,
                digest=None if withheld else Digest.of(path.encode()),
                size=draw(st.integers(0, 1 << 20)),
                tier="low" if withheld else draw(st.sampled_from(mf.TIERS[::2])),
                tokens=draw(st.integers(0, 1000)),
                kind=draw(st.sampled_from(mf.ENTRY_KINDS)),
            )
        )
    kind = draw(st.sampled_from(("lite", "load")))
    sources: tuple[tuple[str, Digest], ...] = ()
    if kind == "load":
        sources = tuple(
            (name, Digest.of(name.encode()))
            for name in draw(st.lists(st.sampled_from(["repo", "memory/global", "mem.x"])))
        )
    m = mf.Manifest(
        scope=draw(st.sampled_from(["repo", "docs", "mem.global.common"])),
        target=draw(st.sampled_from([None, "claude"])),
        tokenizer="o200k_base",
        budget_target=1000,
        budget_max=1200,
        entries=tuple(entries),
        parent=draw(st.sampled_from([None, Digest.of(b"parent")])),
        kind=kind,
        query="where is it" if kind == "load" else None,
        sources=sources,
    )
    mf.encode(m)  # a manifest a writer could write
    return m


def same(a: PackView, b: PackView) -> None:
    assert (a.digest, a.head, a.paths, a.digests) == (b.digest, b.head, b.paths, b.digests)


@given(manifests())
def test_a_view_holds_the_head_and_the_files_with_a_body_and_survives_its_bytes(
    m: mf.Manifest,
) -> None:
    digest = Digest.of(mf.encode(m))
    view = view_of(m, digest)
    files = [e for e in m.entries if e.digest is not None and e.kind == "file"]
    assert view.paths == [e.path for e in files]
    assert view.digests == [bytes(e.digest) for e in files if e.digest is not None]
    assert view.head == mf.Manifest(
        m.scope, m.target, m.tokenizer, m.budget_target, m.budget_max, (),
        parent=m.parent, kind=m.kind, query=m.query, sources=m.sources,
    )  # fmt: skip
    assert view.name == m.name
    decoded = packview.decode(packview.encode(view), digest)
    assert decoded is not None
    same(decoded, view)


@pytest.mark.parametrize("data", [b"", b"\x93\x01\x02", b"\xc1", b"\x93\xa1a\xa1b\x90"])
def test_bytes_that_are_no_view_are_a_miss(data: bytes) -> None:
    assert packview.decode(data, Digest.of(data)) is None


def write_pack(folder: Path, name: str, m: mf.Manifest, store: Store) -> Digest:
    """A pack file as `cas pack` leaves it: written by rename, recorded valid, its view cached."""
    data = mf.encode(m)
    digest = Digest.of(data)
    cache = Cache(store)
    cache.put(mf.VALID_NS, bytes(digest), b"")
    packview.remember(cache, m, digest)
    cache.flush()
    folder.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, folder / f"{name}.pack")
    return digest


def pack_of(files: dict[str, bytes], scope: str = "repo") -> mf.Manifest:
    entries = tuple(
        mf.Entry(path=p, digest=Digest.of(b), size=len(b), tier="high", tokens=1)
        for p, b in sorted(files.items(), key=lambda kv: kv[0].encode())
    )
    return mf.Manifest(scope, None, "o200k_base", 100, 100, entries)


def test_a_packs_view_comes_from_the_cache_without_decoding(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    digest = write_pack(folder, "repo", pack_of({"a.py": b"alpha"}), store)
    views = Views(store)
    [(name, view)] = views.in_folder(folder)
    assert name == "repo" and view.digest == digest and view.paths == ["a.py"]
    assert views._cache.hits == 1 and views._cache.misses == 0
    assert views.files._manifests == {}  # nothing was decoded


def test_a_written_pack_leaves_the_index_of_its_paths_words_which_a_change_of_content_reuses(
    store: Store, tmp_path: Path
) -> None:
    from packer import pathwords

    folder = tmp_path / "manifests"
    write_pack(folder, "repo", pack_of({"src/Router.py": b"a", "docs/route.md": b"b"}), store)
    views = Views(store)
    [(_, view)] = views.in_folder(folder)
    index = views.path_index(view)
    assert index is not None and views.path_index(view) is index  # read once
    assert [view.paths[at] for at in index.hits("router")] == ["src/Router.py"]
    assert [view.paths[at] for at in index.hits("py")] == ["src/Router.py"]
    assert list(index.hits("nowhere")) == []
    # the same paths, other contents: the index already there is not made again
    before = Cache(store).get(pathwords.PATH_INDEX_NS, pathwords.paths_key(view.paths))
    write_pack(folder, "repo", pack_of({"src/Router.py": b"c", "docs/route.md": b"d"}), store)
    [(_, second)] = views.in_folder(folder)
    assert second.digest != view.digest and second.paths == view.paths
    assert views._path_indexes == {}  # the old view's is forgotten with it
    assert views.path_index(second) is not None
    assert Cache(store).get(pathwords.PATH_INDEX_NS, pathwords.paths_key(second.paths)) == before
    # other paths: none cached for them (a pack file from elsewhere): a search goes through them
    m = pack_of({"lib/x.go": b"x"})
    (folder / "repo.pack").write_bytes(mf.encode(m))
    [(_, third)] = views.in_folder(folder)
    assert views.path_index(third) is None


def test_a_pack_without_a_cached_view_is_decoded(store: Store, tmp_path: Path) -> None:
    """A pack made by an older cas or pulled (no view in the cache): decoded, view made."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    m = pack_of({"a.py": b"alpha", "b.py": b"beta"})
    (folder / "repo.pack").write_bytes(mf.encode(m))
    [(_, view)] = Views(store).in_folder(folder)
    same(view, view_of(m, Digest.of(mf.encode(m))))


def test_views_follow_pack_files_that_change_appear_and_go(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    write_pack(folder, "repo", pack_of({"a.py": b"alpha"}), store)
    views = Views(store)
    first = dict(views.in_folder(folder))["repo"]
    assert dict(views.in_folder(folder))["repo"] is first  # unchanged: the same view, kept
    # replaced (a new pack renamed over it)
    write_pack(folder, "repo", pack_of({"a.py": b"alpha 2"}), store)
    second = dict(views.in_folder(folder))["repo"]
    assert second.digests == [bytes(Digest.of(b"alpha 2"))]
    # another appears
    write_pack(folder, "docs", pack_of({"d.md": b"doc"}, "docs"), store)
    assert [n for n, _ in views.in_folder(folder)] == ["docs", "repo"]
    # rewritten in place, same size, same inode: its times move, so it is read again (the
    # mtime is set apart explicitly: a clock tick may be coarser than this test is fast)
    same_size = mf.encode(pack_of({"a.py": b"alpha 3"}))
    before = (folder / "repo.pack").stat()
    assert len(same_size) == before.st_size
    with open(folder / "repo.pack", "r+b") as handle:
        handle.write(same_size)
    os.utime(folder / "repo.pack", ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    third = dict(views.in_folder(folder))["repo"]
    assert third.digests == [bytes(Digest.of(b"alpha 3"))]
    # removed: gone, and its views forgotten
    (folder / "docs.pack").unlink()
    assert [n for n, _ in views.in_folder(folder)] == ["repo"]
    assert set(views._views) == {third.digest}
