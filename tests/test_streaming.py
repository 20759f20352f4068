"""Bounded-memory paths give the bytes the whole-buffer paths give: blobs put from pieces, and
manifests encoded one entry at a time."""

from __future__ import annotations

from collections.abc import Iterator

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Store
from cas import manifest as mf
from cas.batch import _rechunk
from cas.digest import Digest


@given(
    pieces=st.lists(st.binary(max_size=300), max_size=12),
    size=st.integers(min_value=1, max_value=128),
)
def test_rechunk_cuts_exact_chunks_and_pulls_only_what_it_needs(
    pieces: list[bytes], size: int
) -> None:
    pulled = 0

    def source() -> Iterator[bytes]:
        nonlocal pulled
        for piece in pieces:
            pulled += 1
            yield piece

    out: list[bytes] = []
    for chunk in _rechunk(source(), size):
        if len(chunk) == size:
            # A full chunk is handed out as soon as its bytes are in: the last piece pulled
            # holds some of them, no piece beyond was pulled.
            before_last = sum(len(p) for p in pieces[: pulled - 1])
            assert before_last < sum(len(c) for c in out) + len(chunk)
        out.append(chunk)
    assert b"".join(out) == b"".join(pieces)
    assert all(len(c) == size for c in out[:-1])
    assert not out or 0 < len(out[-1]) <= size


@pytest.mark.parametrize("length", [0, 100, 4096, 4097, 3 * 4096 + 5])
def test_put_pieces_stores_what_put_stores(small_store: Store, length: int) -> None:
    data = bytes(range(256)) * (length // 256) + b"x" * (length % 256)
    with small_store.batch() as batch:
        digest, size = batch.put_pieces(iter([data[:1000], data[1000:1001], data[1001:]]))
    assert (digest, size) == (Digest.of(data), len(data))
    assert small_store.get(digest) == data
    assert small_store.stat(digest).chunks == (0 if length <= 4096 else -(-length // 4096))


def test_put_pieces_that_raise_record_no_blob(small_store: Store) -> None:
    data = b"0123456789" * 2000

    def failing() -> Iterator[bytes]:
        yield data[:10_000]
        raise OSError("the file went away")

    with small_store.batch() as batch, pytest.raises(OSError):
        batch.put_pieces(failing())
    assert not small_store.has(Digest.of(data))
    assert not small_store.has(Digest.of(data[:10_000]))


_names = st.text(alphabet="abcdefgh/._-é", min_size=1, max_size=20).filter(
    lambda p: all(part not in ("", ".", "..") for part in p.split("/"))
)


@given(
    paths=st.lists(_names, unique=True, max_size=30),
    tiers=st.lists(st.sampled_from(["high", "low"]), min_size=30, max_size=30),
)
def test_streamed_manifest_encoding_is_the_canonical_msgpack(
    paths: list[str], tiers: list[str]
) -> None:
    entries = tuple(
        mf.Entry(
            path=p,
            digest=Digest.of(p.encode()),
            size=len(p) * 1000,
            tier=t,
            tokens=len(p),
            reason=None if t == "high" else "other",
        )
        for p, t in zip(paths, tiers, strict=False)
    )
    m = mf.Manifest(
        scope="repo", target="claude", tokenizer="o200k_base", budget_target=10,
        budget_max=12, entries=entries, totals={"files": len(entries), "high": {"files": 1}},
    )  # fmt: skip
    ordered = sorted(entries, key=lambda e: e.path.encode("utf-8"))
    objs = [mf._entry_obj(e, m.format) for e in ordered]
    whole = msgpack.packb(mf._canonical(m, objs), use_bin_type=True)
    assert mf.encode(m) == whole
    assert mf.decode(whole) == mf.decode(mf.encode(m))


def test_a_manifest_larger_than_an_encoding_piece_encodes_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mf, "_PIECE", 64)  # the step, not the mechanism
    entries = tuple(
        mf.Entry(path=f"f{i:04}", digest=None, size=i, tier="low", tokens=1, reason="secret")
        for i in range(300)
    )
    m = mf.Manifest("repo", None, "o200k_base", 10, 12, entries)
    data = mf.encode(m)
    assert mf.decode(data).entries == entries
    obj = mf._canonical(m, [mf._entry_obj(e, m.format) for e in entries])
    assert data == msgpack.packb(obj, use_bin_type=True)
