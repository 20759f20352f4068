"""Pack objects and index objects (cas/remote/packfile.py): exact round trips, strict reading."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Digest, frame
from cas.remote.packfile import (
    BLOB,
    CHUNK,
    ENTRY_SIZE,
    Entry,
    PackBuilder,
    TableError,
    decode_index,
    decode_table,
    encode_index,
    encode_table,
    pack_trailer,
)

digests = st.binary(min_size=32, max_size=32).map(Digest)
kinds = st.sampled_from([BLOB, CHUNK])


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Digest], list[Entry]]:
    packs = draw(st.lists(digests, min_size=1, max_size=5, unique=True))
    entries = draw(
        st.lists(
            st.builds(
                Entry,
                kinds,
                digests,
                st.integers(0, len(packs) - 1),
                st.integers(0, 1 << 40),
                st.integers(frame.HEADER_SIZE, 1 << 31),
            ),
            max_size=30,
        )
    )
    return packs, entries


@given(tables())
def test_a_table_reads_back_as_written_whatever_the_order(
    table: tuple[list[Digest], list[Entry]],
) -> None:
    packs, entries = table
    data = encode_table(packs, entries)
    got = decode_table(data)
    assert list(got.packs) == sorted(packs)
    # Each (kind, digest) once, in order, naming the same pack, offset and length as written.
    first: dict[tuple[int, Digest], Entry] = {}
    for e in entries:
        first.setdefault((e.kind, e.digest), e)
    assert [(e.kind, e.digest) for e in got.entries] == sorted(first)
    for e in got.entries:
        want = first[(e.kind, e.digest)]
        assert (got.packs[e.pack], e.offset, e.length) == (
            packs[want.pack],
            want.offset,
            want.length,
        )
    # Deterministic: the same entries in another order give the same bytes.
    assert encode_table(list(reversed(packs)), [
        Entry(e.kind, e.digest, len(packs) - 1 - e.pack, e.offset, e.length)
        for e in reversed(list(first.values()))
    ]) == data  # fmt: skip
    assert decode_index(encode_index(packs, entries)) == got


@given(tables(), st.data())
def test_a_cut_or_grown_table_is_refused(
    table: tuple[list[Digest], list[Entry]], data: st.DataObject
) -> None:
    raw = encode_table(*table)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(TableError):
        decode_table(raw[:cut])
    with pytest.raises(TableError):
        decode_table(raw + b"\0" * data.draw(st.integers(1, ENTRY_SIZE)))


def test_tables_out_of_order_or_out_of_range_are_refused() -> None:
    a, b = Digest(b"\1" * 32), Digest(b"\2" * 32)
    good = encode_table([a], [Entry(BLOB, a, 0, 0, 20), Entry(BLOB, b, 0, 20, 20)])
    decode_table(good)
    head = 16 + 32
    swapped = good[:head] + good[head + ENTRY_SIZE :] + good[head : head + ENTRY_SIZE]
    with pytest.raises(TableError, match="ascending"):
        decode_table(swapped)
    bad_pack = bytearray(good)
    bad_pack[head + 33 : head + 37] = (1).to_bytes(4, "big")
    with pytest.raises(TableError, match="names pack 1 of 1"):
        decode_table(bytes(bad_pack))
    bad_kind = bytearray(good)
    bad_kind[head + 32] = 7
    with pytest.raises(TableError, match="unknown kind"):
        decode_table(bytes(bad_kind))
    short = bytearray(good)
    short[head + 45 : head + 49] = (3).to_bytes(4, "big")
    with pytest.raises(TableError, match="shorter than a frame header"):
        decode_table(bytes(short))
    with pytest.raises(TableError, match="magic"):
        decode_table(b"X" + good[1:])


def test_an_index_object_declaring_too_much_is_refused_unread() -> None:
    huge = frame.encode(b"\0" * 100, 3)
    lying = huge[:4] + (1 << 40).to_bytes(8, "big") + huge[12:]
    with pytest.raises(TableError, match="over the limit"):
        decode_index(lying)
    with pytest.raises(TableError):
        decode_index(b"not a frame")


@given(st.lists(st.tuples(kinds, st.binary(min_size=0, max_size=300)), max_size=20))
def test_a_pack_lists_its_frames_where_they_lie(items: list[tuple[int, bytes]]) -> None:
    builder = PackBuilder()
    added: dict[tuple[int, Digest], bytes] = {}
    for kind, body in items:
        value = frame.encode(body, 3)
        digest = Digest.of(body)
        if (kind, digest) not in added:
            builder.add(kind, digest, value)
            added[(kind, digest)] = value
    name, data, entries = builder.seal()
    assert name == Digest.of(data)
    trailer = pack_trailer(data)
    assert {(e.kind, e.digest) for e in trailer.entries} == set(added)
    for e in trailer.entries:
        assert data[e.offset : e.offset + e.length] == added[(e.kind, e.digest)]
    assert [(e.kind, e.digest) for e in entries] == list(added)  # in the order added
    with pytest.raises(TableError):
        pack_trailer(data[:-1])
