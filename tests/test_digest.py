"""Digests (cas/digest.py): BLAKE3 of the content, one canonical text form."""

from __future__ import annotations

import blake3
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

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
