"""The manifest format: canonical, validated, and never crashing on hostile bytes."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import manifest as mf
from cas.digest import Digest
from cas.errors import ManifestError

paths = st.lists(
    st.text(alphabet="abcXYZ_-.é/", min_size=1, max_size=12).filter(mf._valid_path),
    unique=True,
    max_size=8,
)


def make(entries_paths: list[str], tiers: list[str] | None = None) -> mf.Manifest:
    entries = []
    for i, p in enumerate(entries_paths):
        tier = tiers[i % len(tiers)] if tiers else "high"
        entries.append(
            mf.Entry(
                path=p,
                digest=Digest.of(p.encode()),
                size=len(p),
                tier=tier,
                tokens=len(p) * 3,
                summary=Digest.of(b"s" + p.encode()) if tier == "medium" else None,
                reason="because",
            )
        )
    return mf.Manifest(
        scope="core",
        target="claude",
        tokenizer="o200k_base",
        budget_target=10,
        budget_max=20,
        entries=tuple(entries),
        totals={"files": len(entries), "high": {"files": 1}},
    )


@given(paths, st.lists(st.sampled_from(["high", "medium", "low"]), min_size=1, max_size=3))
def test_round_trip_is_canonical(ps: list[str], tiers: list[str]) -> None:
    m = make(ps, tiers)
    data = mf.encode(m)
    back = mf.decode(data)
    assert mf.encode(back) == data
    assert [e.path for e in back.entries] == sorted(ps, key=lambda p: p.encode())


@given(st.permutations(["b", "a", "c/d", "c", "é", "Z"]))
def test_entry_order_does_not_change_bytes(order: list[str]) -> None:
    assert mf.encode(make(order)) == mf.encode(make(sorted(order)))


def _raw(m: mf.Manifest) -> dict:  # type: ignore[type-arg]
    return msgpack.unpackb(mf.encode(m), raw=False)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mangle", "problem"),
    [
        (lambda d: d.update(format=3), "format version 3 is not supported"),
        (lambda d: d.pop("scope"), "wrong keys"),
        (lambda d: d.update(extra=1), "wrong keys"),
        (lambda d: d.update(kind="huge"), "kind must be"),
        (lambda d: d["entries"][0].update(tier="top"), "tier must be"),
        (lambda d: d["entries"][0].update(path="/abs"), "not a relative POSIX path"),
        (lambda d: d["entries"][0].update(path="a/../b"), "not a relative POSIX path"),
        (lambda d: d["entries"].reverse(), "out of order"),
        (lambda d: d["entries"][0].update(digest=b"short"), "32-byte digest"),
        (lambda d: d["entries"][0].update(size=-1), "non-negative"),
        (lambda d: d["totals"].update(ratio=1.5), "integer"),
    ],
)
def test_invalid_manifests_name_the_problem(mangle: object, problem: str) -> None:
    d = _raw(make(["a", "b"]))
    mangle(d)  # type: ignore[operator]
    data = msgpack.packb(d, use_bin_type=True)
    with pytest.raises(ManifestError) as info:
        mf.decode(data, "x.pack")
    assert problem in str(info.value) and "x.pack" in str(info.value)


def test_non_canonical_bytes_are_refused() -> None:
    d = _raw(make(["a"]))
    reordered = dict(reversed(list(d.items())))
    with pytest.raises(ManifestError, match="canonical"):
        mf.decode(msgpack.packb(reordered, use_bin_type=True))


@pytest.mark.parametrize("data", [b"", b"\x00", b"garbage bytes", b"\xc1", b"\x91\x01"])
def test_garbage_is_a_manifest_error(data: bytes) -> None:
    with pytest.raises(ManifestError):
        mf.decode(data)


def test_truncated_manifest_is_a_manifest_error() -> None:
    data = mf.encode(make(["a", "b", "c"]))
    for cut in range(len(data)):
        with pytest.raises(ManifestError):
            mf.decode(data[:cut])


@given(st.binary(max_size=400))
@example(b"\xdd\xff\xff\xff\xff")  # an array header claiming 4 billion items
@example(b"\xdf\xff\xff\xff\xff")
def test_decoding_arbitrary_bytes_raises_only_manifest_errors(data: bytes) -> None:
    with contextlib.suppress(ManifestError):
        mf.decode(data)


@given(st.data())
def test_mutated_valid_manifests_raise_only_manifest_errors(data: st.DataObject) -> None:
    raw = bytearray(mf.encode(make(["a", "b/c", "d"], ["high", "medium", "low"])))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    with contextlib.suppress(ManifestError):
        mf.decode(bytes(raw))


def test_format_1_is_still_read_with_ratings_zero_and_low_entries_listed() -> None:
    m = make(["a", "b"])
    old = m._replace(format=1)
    data = mf.encode(old)
    back = mf.decode(data, "old.pack")
    assert back.format == 1
    assert all(e.rating == 0 for e in back.entries)
    assert [e.listed for e in back.entries] == [e.tier == "low" for e in back.entries]
    assert mf.encode(back) == data  # canonical in its own format


@pytest.mark.parametrize(
    ("mangle", "problem"),
    [
        (lambda e: e.update(rating=-1), "rating must be an integer"),
        (lambda e: e.update(rating=True), "rating must be an integer"),
        (lambda e: e.update(listed=1), "listed must be true or false"),
        (lambda e: e.update(listed=True, tier="high"), "only a low entry is listed"),
    ],
)
def test_rating_and_listed_are_checked(mangle: object, problem: str) -> None:
    d = _raw(make(["a", "b"]))
    mangle(d["entries"][0])  # type: ignore[operator]
    with pytest.raises(ManifestError) as info:
        mf.decode(msgpack.packb(d, use_bin_type=True), "x.pack")
    assert problem in str(info.value)
