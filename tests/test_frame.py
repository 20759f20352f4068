"""Frames (cas/frame.py): the format every stored byte goes through, and chunk indexes."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import frame
from cas.digest import Digest


@given(st.binary(max_size=20000), st.integers(min_value=1, max_value=19))
def test_frame_round_trip_and_size_bound(data: bytes, level: int) -> None:
    value = frame.encode(data, level)
    assert frame.decode(value) == data
    assert len(value) <= len(data) + frame.HEADER_SIZE
    assert frame.header(value).raw_size == len(data)


def test_incompressible_data_is_stored_raw() -> None:
    data = os.urandom(100_000)
    value = frame.encode(data, 3)
    assert frame.header(value).codec == frame.RAW
    assert len(value) == len(data) + frame.HEADER_SIZE


def test_compressible_data_is_zstd() -> None:
    value = frame.encode(b"abc" * 10_000, 3)
    assert frame.header(value).codec == frame.ZSTD
    assert len(value) < 1000


@pytest.mark.parametrize(
    "mangle",
    [
        lambda v: v[:5],  # shorter than a header
        lambda v: b"XX" + v[2:],  # bad magic
        lambda v: v[:2] + b"\x09" + v[3:],  # unknown version
        lambda v: v[:3] + b"\x07" + v[4:],  # unknown codec
        lambda v: v[:-3],  # truncated payload
        lambda v: v[:20] + bytes([v[20] ^ 0xFF]) + v[21:],  # flipped payload byte
    ],
)
def test_damaged_frames_raise_frame_error(mangle: object) -> None:
    value = frame.encode(b"hello world " * 500, 3)
    damaged = mangle(value)  # type: ignore[operator]
    with pytest.raises(frame.FrameError):
        frame.decode(damaged)


def test_chunk_index_round_trip_and_validation() -> None:
    chunks = [Digest.of(bytes([i])) for i in range(3)]
    value = frame.encode_index(10_000, 4096, chunks)
    assert frame.decode_index(value) == (10_000, 4096, chunks)
    with pytest.raises(frame.FrameError):
        frame.decode_index(value[:-1])
    with pytest.raises(frame.FrameError):
        frame.decode_index(frame.encode_index(100_000, 4096, chunks))


@given(
    raw=st.integers(1, 1 << 40),
    chunk_size=st.integers(1, 1 << 26),
)
def test_index_shape_agrees_with_decode_index(raw: int, chunk_size: int) -> None:
    count = -(-raw // chunk_size)
    if count > 2000:
        raw = chunk_size * 2000
        count = 2000
    chunks = [Digest.of(b"c")] * count
    value = frame.encode_index(raw, chunk_size, chunks)
    assert frame.index_shape(value) == (raw, chunk_size, count)
    assert frame.decode_index(value)[:2] == (raw, chunk_size)
    for broken in (value[:-1], value + b"\0" * 32, value[: frame.HEADER_SIZE + 4]):
        with pytest.raises(frame.FrameError):
            frame.index_shape(broken)
        with pytest.raises(frame.FrameError):
            frame.decode_index(broken)


# --- many frames decoded at once (verify's fast path) ------------------------------------------


@given(
    st.lists(
        st.tuples(
            st.binary(max_size=3000) | st.text(max_size=400).map(lambda t: (t * 7).encode()),
            st.sampled_from(["intact", "flip", "cut", "wrong size", "absent"]),
        ),
        max_size=12,
    )
)
def test_decode_many_is_decode_for_each_and_none_for_each_damaged(
    items: list[tuple[bytes, str]],
) -> None:
    frames: list[bytes | None] = []
    sizes: list[int] = []
    for data, how in items:
        value = frame.encode(data, 3)
        size = len(data)
        if how == "flip" and len(value) > frame.HEADER_SIZE:
            at = frame.HEADER_SIZE + (len(value) - frame.HEADER_SIZE) // 2
            value = value[:at] + bytes([value[at] ^ 0x55]) + value[at + 1 :]
        elif how == "cut":
            value = value[:-1]
        elif how == "wrong size":
            size += 1
        frames.append(None if how == "absent" else value)
        sizes.append(size)
    got = frame.decode_many(frames, sizes)
    assert len(got) == len(frames)
    for value, size, (data, how), out in zip(frames, sizes, items, got, strict=True):
        if how == "intact":
            assert out is not None and bytes(out) == data
        elif how in ("absent", "wrong size", "cut"):
            assert out is None
        else:
            # A flipped byte either breaks the frame or decodes to other bytes of the same
            # size (then only the digest finds it); never a wrong length, never an error.
            assert value is not None
            try:
                single: bytes | None = frame.decode(value)
            except frame.FrameError:
                single = None
            if single is not None and len(single) == size:
                assert out is not None and bytes(out) == single
            else:
                assert out is None


def test_decode_many_skips_chunk_indexes() -> None:
    chunks = [Digest.of(b"a"), Digest.of(b"b")]
    index = frame.encode_index(8, 4, chunks)
    plain = frame.encode(b"x" * 100, 3)
    assert frame.decode_many([index, plain], [8, 100]) == [None, b"x" * 100]
