"""`cas.remote.objects`: planning the ranged GETs that read frames out of pack objects."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cas.digest import Digest
from cas.remote.objects import MERGE_GAP, RANGE_MAX, Place, chunks_in_use_order, plan_ranges

PACKS = [Digest.of(bytes([i])) for i in range(3)]

places = st.lists(
    st.tuples(
        st.sampled_from(PACKS),
        st.integers(0, 3 * RANGE_MAX),
        st.integers(1, RANGE_MAX + RANGE_MAX // 2),
    ),
    max_size=40,
)


@given(places)
def test_ranges_read_every_frame_once_in_order_within_bounds(
    found: list[tuple[Digest, int, int]],
) -> None:
    wanted = [(Digest.of(i.to_bytes(4, "big")), Place(*p)) for i, p in enumerate(found)]
    ranges = plan_ranges(wanted)
    # Every frame once, in the order asked for.
    assert [f[0] for r in ranges for f in r.frames] == [d for d, _ in wanted]
    where = dict(wanted)
    for r in ranges:
        assert r.frames
        for digest, offset, length in r.frames:
            place = where[digest]
            assert (place.pack, place.offset, place.length) == (r.pack, offset, length)
            assert r.start <= offset and offset + length <= r.end
        # Tight: the range starts at its first frame and ends where its farthest one ends.
        assert r.start == r.frames[0][1]
        assert r.end == max(o + n for _, o, n in r.frames)
        # Within the size bound, unless it is one frame larger than the bound by itself.
        assert r.end - r.start <= RANGE_MAX or len(r.frames) == 1


def test_neighbours_merge_and_gaps_split() -> None:
    p = PACKS[0]
    d = [Digest.of(bytes([9, i])) for i in range(5)]
    ranges = plan_ranges(
        [
            (d[0], Place(p, 0, 100)),
            (d[1], Place(p, 100, 100)),  # adjacent: merged
            (d[2], Place(p, 200 + MERGE_GAP, 10)),  # a gap of exactly MERGE_GAP: merged
            (d[3], Place(p, 50_000_000, 10)),  # far away: a range of its own
            (d[4], Place(PACKS[1], 50_000_010, 10)),  # another pack: its own
        ]
    )
    assert [(r.pack, r.start, r.end, len(r.frames)) for r in ranges] == [
        (p, 0, 210 + MERGE_GAP, 3),
        (p, 50_000_000, 50_000_010, 1),
        (PACKS[1], 50_000_010, 50_000_020, 1),
    ]
    # A frame before the range's start is never read by extending it backwards.
    back = plan_ranges([(d[0], Place(p, 1000, 10)), (d[1], Place(p, 0, 10))])
    assert len(back) == 2


digests = st.integers(0, 30).map(lambda i: Digest.of(i.to_bytes(2, "big")))


@given(st.lists(st.lists(digests, max_size=8), max_size=6), st.sets(digests, max_size=20))
def test_chunks_go_in_order_of_first_use_then_by_digest(
    lists: list[list[Digest]], send: set[Digest]
) -> None:
    order = chunks_in_use_order(lists, send)
    assert sorted(order) == sorted(send)  # each chunk to send once, nothing else
    used = [c for listed in lists for c in listed if c in send]
    first_use = list(dict.fromkeys(used))
    assert order[: len(first_use)] == first_use
    assert order[len(first_use) :] == sorted(send - set(used))
