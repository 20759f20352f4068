"""The folder tree of a pack and its squarified layout: the rectangles tile the canvas (inside
it, no overlap, no gap), every file has one, and each file's area follows its weight."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas.digest import Digest
from cas.manifest import Entry
from packer.treemap import (
    TIER_NAMES,
    Rect,
    folder_tree,
    layout,
    squarify,
    tier_of,
    weight_by,
)

DIGEST = Digest(bytes(32))


def entry(
    path: str, tokens: int = 1, size: int = 1, tier: str = "high", *, withheld: bool = False
) -> Entry:
    return Entry(path, None if withheld else DIGEST, size, tier, tokens)


def assert_tiles(rects: Sequence[Rect], canvas: Rect) -> None:
    """``rects`` lie inside ``canvas``, overlap nowhere and cover all of it."""
    for r in rects:
        assert r.w >= 0 and r.h >= 0
        if r.area:
            assert canvas.x <= r.x and r.x + r.w <= canvas.x + canvas.w
            assert canvas.y <= r.y and r.y + r.h <= canvas.y + canvas.h
    solid = [r for r in rects if r.area]
    assert sum(r.area for r in solid) == canvas.area
    # equal total area and no two overlapping: nothing is left uncovered
    by_x = sorted(solid)
    for i, a in enumerate(by_x):
        for b in by_x[i + 1 :]:
            if b.x >= a.x + a.w:
                break
            assert b.y >= a.y + a.h or a.y >= b.y + b.h, (a, b)


weights = st.lists(st.integers(1, 10_000), min_size=1, max_size=60).map(
    lambda ws: sorted(ws, reverse=True)
)
canvases = st.builds(
    Rect, st.integers(0, 50), st.integers(0, 50), st.integers(1, 1500), st.integers(1, 1000)
)


@given(weights, canvases)
@example([1], Rect(0, 0, 1, 1))
@example([5, 5, 5, 5], Rect(0, 0, 2, 2))
@example([10_000, 1, 1, 1], Rect(3, 4, 1200, 640))
def test_squarify_tiles_the_canvas_one_rectangle_per_weight(ws: list[int], canvas: Rect) -> None:
    rects = squarify(ws, canvas)
    assert len(rects) == len(ws)
    assert_tiles(rects, canvas)


@given(weights, st.integers(200, 1500), st.integers(200, 1000))
def test_squarify_areas_follow_the_weights_within_rounding(ws: list[int], w: int, h: int) -> None:
    canvas = Rect(0, 0, w, h)
    rects = squarify(ws, canvas)
    total = sum(ws)
    for weight, r in zip(ws, rects, strict=True):
        ideal = weight * canvas.area / total
        # each edge is placed by rounding (a running sum's, so rows do not drift): a rectangle
        # gains or loses at most a pixel-wide strip along its sides; one rounded away entirely
        # was thinner than a pixel
        slack = r.w + r.h + 2 if r.area else w + h
        assert abs(r.area - ideal) <= slack, (weight, r, ideal)


def test_squarify_is_near_square_for_equal_weights() -> None:
    rects = squarify([1] * 16, Rect(0, 0, 400, 400))
    assert sorted({(r.w, r.h) for r in rects}) == [(100, 100)]


def test_the_tree_counts_each_file_once_by_tier() -> None:
    entries = [
        entry("README.md", 10, 100),
        entry("src/a.py", 5, 50, "medium"),
        entry("src/deep/b.py", 0, 70, "low"),
        entry("src/deep/.env", 0, 9, "low", withheld=True),
    ]
    root = folder_tree(entries)
    assert [tier_of(e) for e in entries] == [0, 1, 2, 3]
    assert TIER_NAMES[tier_of(entries[3])] == "withheld"
    assert root.counts == [1, 1, 1, 1] and root.total_tokens == 15 and root.total_bytes == 229
    src = root.folders["src"]
    assert src.path == "src" and src.files == [1] and src.counts == [0, 1, 1, 1]
    deep = src.folders["deep"]
    assert deep.path == "src/deep" and deep.depth == 2 and deep.files == [2, 3]
    assert deep.sizes == [0, 0, 70, 9]


paths = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "<x>", 'q"', "é"]), min_size=1, max_size=4).map(
        "/".join
    ),
    min_size=1,
    max_size=40,
    unique=True,
)


@given(
    paths,
    st.lists(st.integers(0, 5000), min_size=40, max_size=40),
    st.sampled_from(["tokens", "bytes"]),
)
def test_a_layout_places_every_file_once_inside_its_folder(
    names: list[str], values: list[int], measure: str
) -> None:
    # a path cannot be both a file and a folder
    names = [p for p in names if not any(q.startswith(p + "/") for q in names)]
    names.sort(key=lambda s: s.encode())
    entries = [entry(p, values[i], values[-1 - i]) for i, p in enumerate(names)]
    root = folder_tree(entries)
    tm = layout(root, weight_by(measure, entries), 1200, 640)
    assert len(tm.files) == len(entries)
    assert_tiles(tm.files, Rect(0, 0, 1200, 640))
    rect_of = {f.path: r for f, r in tm.folders}
    assert tm.folders[0][0].path == "" and len(rect_of) == len(tm.folders)
    for i, e in enumerate(entries):
        folder = e.path.rpartition("/")[0]
        outer = rect_of[folder]
        r = tm.files[i]
        if r.area:
            assert outer.x <= r.x and r.x + r.w <= outer.x + outer.w
            assert outer.y <= r.y and r.y + r.h <= outer.y + outer.h
    # the same tree lays out the same
    assert layout(root, weight_by(measure, entries), 1200, 640) == tm


def test_weights_are_never_zero_and_the_measure_is_checked() -> None:
    entries = [entry("a", 0, 0), entry("b", 7, 9)]
    assert [weight_by("tokens", entries)(i) for i in range(2)] == [1, 7]
    assert [weight_by("bytes", entries)(i) for i in range(2)] == [1, 9]
    with pytest.raises(ValueError, match="tokens or bytes"):
        weight_by("lines", entries)
