"""A body's search terms: what they are, and the C and Python halves giving the same ones."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import words
from cas.words import (
    MAX_WINDOWS,
    NESTED_DEF,
    TOP_DEF,
    WINDOW,
    index_terms,
    key,
    python_terms,
    split_name,
    width,
)

NATIVE = words.native_module()

PY = b'''import os.path


def with_context(value):
    """Wrap VALUE in Gr\xc3\xb6\xc3\x9fe."""
    limit: int = 3
    return os.path.join(value, "x")


class HTTPServerError(Exception):
    pass

export const router = makeRouter()
func (r *Mux) HandleFunc(p string) {}
macro_rules! my_vec {}
'''


def _has(data: bytes, term: bytes) -> bool:
    return key(term) in python_terms(words.prepared(data)).pairs()


@pytest.mark.parametrize(
    "term",
    [
        b"with_context",  # a word, lowercased
        b"with",  # the words of a compound
        b"context",
        b"httpservererror",
        b"http",
        b"server",
        b"os.path",  # dotted names
        b"path.join",
        b"os.path.join",
        "größe".encode(),  # another script, lowercased by Python's rules
        TOP_DEF + b"with_context",  # definitions at the top level
        TOP_DEF + b"httpservererror",
        TOP_DEF + b"router",
        TOP_DEF + b"handlefunc",
        TOP_DEF + b"my_vec",
        NESTED_DEF + b"limit",  # an indented assignment
    ],
)
def test_terms_of_a_body(term: bytes) -> None:
    assert _has(PY, term)


@pytest.mark.parametrize(
    "term",
    [
        b"path.os",  # a dotted name keeps its order
        b"value.x",  # not joined by a dot
        TOP_DEF + b"value",  # a parameter defines nothing
        NESTED_DEF + b"with_context",
        TOP_DEF + b"const",  # a keyword is not the name it declares
        TOP_DEF + b"makerouter",
    ],
)
def test_terms_a_body_does_not_have(term: bytes) -> None:
    assert not _has(PY, term)


def test_windows_cover_every_line_in_at_most_32() -> None:
    lines = [f"line_{i} word{i}" for i in range(1, 2 * WINDOW + 6)]
    body = ("\n".join(lines) + "\n").encode()
    found = python_terms(body).pairs()
    assert found[key(b"line_1")] == 1
    assert found[key(f"line_{WINDOW + 1}".encode())] == 2
    assert found[key(f"line_{len(lines)}".encode())] == 4
    many = b"\n".join(b"w%d" % i for i in range(10_000))
    terms = python_terms(many)
    assert terms.lines == 10_000 and terms.width == width(10_000) == 313
    assert max(terms.masks) < 1 << MAX_WINDOWS
    assert terms.pairs()[key(b"w9999")] == 1 << (9999 // 313)


def test_split_name() -> None:
    assert split_name("with_context") == ("with", "context")
    assert split_name("HTTPServerError") == ("http", "server", "error")
    assert split_name("NewRouter") == ("new", "router")
    assert split_name("parse2") == ("parse", "2")
    assert split_name("__init__") == ("init",)


# Pieces that exercise every rule: separators of dotted names, definition keywords, modifiers,
# indentation, receivers, assignments and comparisons, other scripts, invalid UTF-8.
_PIECES = [
    "a", "B", "_", ".", "::", ":", "=", "==", " ", "\t", "\n", "(", ")", "!", "1", "x9",
    "def ", "class ", "func ", "fn", "macro_rules", "export ", "pub ", "const ", "let ",
    "HTTPServer", "Foo", "bar_baz", "os.path.join", "ö", "日本", "\x00", "é_x", "interface ",
]  # fmt: skip


def test_the_native_half_is_built() -> None:
    """The project's install compiles cas/_words.c (a C compiler is part of the machine this
    project is tested on); the tests below compare it with the Python."""
    assert NATIVE is not None


@pytest.mark.skipif(NATIVE is None, reason="cas._words was not built on this machine")
@given(st.lists(st.sampled_from(_PIECES), max_size=80), st.binary(max_size=8))
@example(["def ", "with_context", "(", ")"], b"")
@example(["  ", "x", " ", ":", " ", "int", " ", "=", " ", "1"], b"")
@example(["a", ".", "b", ".", "c", ".", "d", ".", "e"], b"\xff")
def test_native_and_python_agree(pieces: list[str], tail: bytes) -> None:
    data = "".join(pieces).encode("utf-8") + tail
    native, python = index_terms(data), python_terms(words.prepared(data))
    assert native.pairs() == python.pairs()
    assert (native.lines, native.width) == (python.lines, python.width)


@pytest.mark.skipif(NATIVE is None, reason="cas._words was not built on this machine")
@given(st.binary(max_size=400))
def test_native_and_python_agree_on_any_bytes(data: bytes) -> None:
    assert index_terms(data).pairs() == python_terms(words.prepared(data)).pairs()


@given(
    st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 40), max_size=200),
    st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 40), max_size=30),
)
def test_places_are_where_the_numbers_are_among_the_wanted(
    numbers: list[int], wanted: list[int]
) -> None:
    """`places` (a search finding the paths of the bodies defining a name): the places of the
    numbers that are among the wanted ones, ascending; bytes of any length end at the last
    whole number."""
    from array import array

    assert NATIVE is not None
    raw = NATIVE.places(array("I", numbers).tobytes() + b"\x01", array("I", wanted).tobytes())
    got = array("I")
    got.frombytes(raw)
    keep = set(wanted)
    assert list(got) == [at for at, number in enumerate(numbers) if number in keep]
