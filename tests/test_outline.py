"""The outline model: what a render shows for a choice of symbols, and the cache encoding."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from packer.outline import KINDS, Outline, Symbol, decode, encode, render

OUTLINE = Outline(
    "python",
    120,
    ('"""Boxes."""',),
    (
        Symbol("imports", "import", ("imports: os",), -1, False, 1),
        Symbol("Box", "class", ("class Box:", '    """A box."""'), -1, True, 3),
        Symbol("open", "method", ("    def open(self) -> bytes: ...",), 1, True, 5),
        Symbol("_seal", "method", ("    def _seal(self): ...",), 1, False, 9),
        Symbol("LIMIT", "constant", ("LIMIT = 10",), -1, True, 20),
    ),
)


def test_render_all_symbols() -> None:
    assert render(OUTLINE) == (
        "# summary (python, 120 lines)\n"
        '"""Boxes."""\n'
        "imports: os\n"
        "class Box:\n"
        '    """A box."""\n'
        "    def open(self) -> bytes: ...\n"
        "    def _seal(self): ...\n"
        "LIMIT = 10\n"
    )


def test_a_kept_member_brings_its_class_and_the_rest_is_counted() -> None:
    assert render(OUTLINE, [2]) == (
        "# summary (python, 120 lines)\n"
        '"""Boxes."""\n'
        "class Box:\n"
        '    """A box."""\n'
        "    def open(self) -> bytes: ...\n"
        "... (3 more symbols not shown)\n"
    )
    # Nothing kept: the header and the head only, never a cut line.
    assert render(OUTLINE, []) == (
        '# summary (python, 120 lines)\n"""Boxes."""\n... (5 more symbols not shown)\n'
    )
    assert OUTLINE.closure([3, 4, 99, -1]) == [1, 3, 4]


def test_header_counts_lines() -> None:
    assert Outline("text", 1).header() == "# summary (text, 1 line)"
    assert render(Outline("text", 0)) == "# summary (text, 0 lines)\n"


symbols = st.lists(
    st.tuples(
        st.text(max_size=8),
        st.sampled_from(KINDS),
        st.lists(st.text(max_size=12), max_size=3),
        st.integers(min_value=-1, max_value=30),
        st.booleans(),
        st.integers(min_value=0, max_value=10_000),
    ),
    max_size=12,
)


@given(lang=st.text(max_size=6), lines=st.integers(0, 10**6), head=st.lists(st.text()), s=symbols)
def test_encode_decode_round_trip(
    lang: str, lines: int, head: list[str], s: list[tuple[str, str, list[str], int, bool, int]]
) -> None:
    made = Outline(
        lang,
        lines,
        tuple(head),
        tuple(
            Symbol(n, k, tuple(ls), p if p < i else -1, e, ln)
            for i, (n, k, ls, p, e, ln) in enumerate(s)
        ),
    )
    assert decode(encode(made)) == made


@given(st.binary(max_size=64))
def test_decode_refuses_bytes_that_are_not_an_outline(data: bytes) -> None:
    found = decode(data)
    assert found is None or isinstance(found, Outline)


def test_decode_refuses_a_parent_after_its_member() -> None:
    bad = Outline("go", 1, (), (Symbol("a", "field", ("a",), 1), Symbol("b", "class", ("b",))))
    assert decode(encode(bad)) is None
    assert decode(b"\x93\x01\x02") is None
