"""Digests and frames: the two formats every stored byte goes through."""

from __future__ import annotations

import os

import blake3
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import frame
from cas.digest import Digest
from cas.errors import BadDigest


@given(st.binary(max_size=5000))
@example(b"")
@example(b"\0" * (1 << 20) + b"x")
def test_digest_is_blake3_of_content(data: bytes) -> None:
    assert bytes(Digest.of(data)) == blake3.blake3(data).digest()
    assert str(Digest.of(data)) == "blake3:" + blake3.blake3(data).hexdigest()


@given(st.binary(min_size=32, max_size=32))
def test_text_form_round_trips(raw: bytes) -> None:
    d = Digest(raw)
    assert Digest.parse(str(d)) == d
    assert str(d).startswith("blake3:") and len(str(d)) == 71


@pytest.mark.parametrize(
    "text",
    [
        "",
        "blake3:",
        "blake3:" + "a" * 63,
        "blake3:" + "a" * 65,
        "blake3:" + "A" * 64,  # uppercase is not the canonical form
        "sha256:" + "a" * 64,
        "a" * 64,  # bare hex: ambiguous about the algorithm
        " blake3:" + "a" * 64,
        "blake3:" + "g" * 64,
    ],
)
def test_malformed_digests_are_refused_with_the_expected_form(text: str) -> None:
    with pytest.raises(BadDigest) as info:
        Digest.parse(text)
    assert "expected 'blake3:' followed by 64 lowercase hex digits" in str(info.value)


@given(st.text(max_size=80))
def test_parse_accepts_only_the_canonical_form(text: str) -> None:
    ok = (
        text.startswith("blake3:")
        and len(text) == 71
        and all(c in "0123456789abcdef" for c in text[7:])
    )
    if ok:
        assert str(Digest.parse(text)) == text
    else:
        with pytest.raises(BadDigest):
            Digest.parse(text)


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
