"""Pricing: the bound an unread file enters the fit with."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Store, words
from cas.cache import Cache
from packer.fitting import HIGH, LOW
from packer.ingest import Fact
from packer.pricing import (
    _MIN_SYMBOL_COST,
    Candidate,
    Pricer,
    SymbolValues,
    _symbol_values,
    densest_summary,
    line_key,
)
from packer.summaries import outline
from packer.tokens import TokenCounter


def walked(
    head_value: int, head_cost: int, rated: list[int], fallback: int, copies: int
) -> tuple[int, int]:
    """The bound as its definition reads: every value in one list, best first, each taken
    while it raises the density of the summary so far."""
    inherited = [v * share // 100 for v in rated[:4] for share in (50, 40)]
    values = sorted([*rated, *inherited, *[fallback] * copies], reverse=True)
    best_value, best_cost = head_value, head_cost
    total_value, total_cost = head_value, head_cost
    for v in values:
        total_value += v
        total_cost += _MIN_SYMBOL_COST
        if total_value * best_cost > best_value * total_cost:
            best_value, best_cost = total_value, total_cost
        else:
            break
    return best_value, best_cost


values = st.integers(min_value=0, max_value=1 << 40)


@settings(max_examples=500)
@given(
    head_value=values,
    head_cost=st.integers(min_value=1, max_value=10_000),
    rated=st.lists(values, max_size=32).map(lambda v: sorted(v, reverse=True)),
    fallback=values,
    copies=st.integers(min_value=0, max_value=15),
)
def test_the_densest_summary_is_the_walk_through_every_value(
    head_value: int, head_cost: int, rated: list[int], fallback: int, copies: int
) -> None:
    assert densest_summary(head_value, head_cost, rated, fallback, copies) == walked(
        head_value, head_cost, rated, fallback, copies
    )


@given(rated=st.lists(st.integers(min_value=0, max_value=1000), max_size=8), fallback=values)
def test_ties_between_the_fallback_and_a_rating_change_nothing(
    rated: list[int], fallback: int
) -> None:
    rated = sorted([*rated, fallback], reverse=True)  # a rated value equal to the fallback
    for head in ((0, 1), (5, 3), (1000, 40)):
        assert densest_summary(*head, rated, fallback, 7) == walked(*head, rated, fallback, 7)


def test_a_dense_head_takes_no_symbol() -> None:
    assert densest_summary(1000, 10, [5, 4], 3, 15) == (1000, 10)


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_a_line_key_is_the_fnv_of_its_utf8_bytes(text: str) -> None:
    """Native where built, Python where not: the same key for the same line (a cache written by
    one is read by the other), lone surrogates included (a path that was not UTF-8 on disk)."""
    assert line_key(text) == words.key(text.encode("utf-8", "surrogatepass"))
    native = words.native_module()
    if native is not None:  # hypothesis draws no lone surrogate: the native key itself
        assert native.text_key(text) == words.key(text.encode("utf-8"))


def test_a_line_key_separates_lines_that_differ_by_a_byte() -> None:
    lines = [f"- `src/m{i}.py` source\n" for i in range(2000)]
    assert len({line_key(line) for line in lines}) == len(lines)
    assert line_key("- `a\udcff.py` source\n") != line_key("- `a.py` source\n")


def test_settling_keeps_the_lines_a_run_remembers(store: Store) -> None:
    # A run looks up most of the lines the runs before counted; settling then holds what is left
    # in a table of its own size, and the lines kept for the next run are the same.
    lines = [f"- `src/m{i}.py` (source)" for i in range(400)]

    def run(settle: bool) -> dict[int, int]:
        cache = Cache(store)
        pricer = Pricer(store, cache, TokenCounter(), {})
        counts = [pricer.line(text) for text in lines[:300]]
        if settle:
            pricer.settle()
            assert pricer._remembered is not None and len(pricer._remembered) == 100
        assert counts == [pricer.line(text) for text in lines[:300]]
        assert pricer.line(lines[350]) == TokenCounter().count(lines[350])
        return dict(pricer._lines)

    first = Pricer(store, Cache(store), TokenCounter(), {})
    for text in lines:
        first.line(text)
    first.remember()
    first.cache.flush()
    assert run(settle=True) == run(settle=False)
    assert len(run(settle=True)) == 301


RUST_NAMESAKES = """
pub struct Deserializer;
struct Access;

impl Deserializer {
    pub fn from_str(s: &str) -> Self { Deserializer }
}

impl de::SeqAccess for Access {
    fn next_element(&mut self) -> Option<u8> { None }
}

pub fn from_str(s: &str) -> Result<Deserializer> { Ok(Deserializer) }
"""


def _values(path: str, text: str, rated: dict[str, int], value: int = 1000) -> dict[str, int]:
    """Each symbol's value in the outline of ``text``, by name, for a file worth ``value`` whose
    rated names are ``rated``."""
    o = outline(path, text)
    cand = Candidate(
        path=path,
        fact=Fact(path, "file", len(text), None, text=True),
        ceiling=HIGH,
        floor=LOW,
        weight=0,
        reason="",
        rating=value,
        value=value,
        symbols=SymbolValues.of(rated),
    )
    return {s.name: v for s, v in zip(o.symbols, _symbol_values(cand, o), strict=True)}


def test_a_rated_name_goes_to_its_public_top_level_symbol_and_plumbing_gets_a_quarter() -> None:
    o = outline("src/de.rs", RUST_NAMESAKES)
    rated = {"from_str": 80_000, "next_element": 40_000, "Deserializer": 20_000}
    cand = Candidate(
        path="src/de.rs",
        fact=Fact("src/de.rs", "file", len(RUST_NAMESAKES), None, text=True),
        ceiling=HIGH,
        floor=LOW,
        weight=0,
        reason="",
        rating=1000,
        value=1000,
        symbols=SymbolValues.of(rated),
    )
    values = {
        (o.symbols[s.parent].lines[0] if s.parent >= 0 else "", s.lines[0]): v
        for s, v in zip(o.symbols, _symbol_values(cand, o), strict=True)
    }
    # The free function takes the name's rating, not the constructor of the same name before it.
    assert values["", "pub fn from_str(s: &str) -> Result<Deserializer> { ... }"] == 80_000
    assert values["impl Deserializer {", "  pub fn from_str(s: &str) -> Self { ... }"] < 80_000
    # A trait implementation's method on a private type: a quarter of what its name rates.
    assert values[
        "impl de::SeqAccess for Access {", "  fn next_element(&mut self) -> Option<u8> { ... }"
    ] == (40_000 // 4)


GO_MEMBERS = """package header

// IPv4 is an IPv4 header.
type IPv4 []byte

// Flags returns the flags field.
func (b IPv4) Flags() uint8 { return b[6] >> 5 }

// Parse reads a header.
func Parse(data []byte) IPv4 { return IPv4(data) }

// Sum adds.
func Sum(a, b int) int { return a + b }
"""


def test_a_go_member_is_worth_no_more_than_its_type_and_a_constructor_half_of_it() -> None:
    """A Go method is rated by its bare name (`x.Flags()` anywhere): it is worth no more than
    the type it belongs to; a function that returns the type is worth at least half of it."""
    rated = {"Flags": 90_000, "IPv4": 10_000, "Sum": 50_000}
    values = _values("header/ipv4.go", GO_MEMBERS, rated)
    assert values["IPv4"] == 10_000
    assert values["Flags"] == 10_000  # capped by its type
    assert values["Parse"] >= 5_000  # a constructor inherits half
    assert values["Sum"] == 50_000  # a free function keeps its own


PY_ALIAS = '''"""URL helpers."""
from functools import partial


def include(arg, namespace=None):
    return arg


def _path(route, view, kwargs=None, name=None, Pattern=None):
    return route


def _unused(x):
    return x


path = partial(_path, Pattern=object)
'''


def test_a_private_function_a_public_name_is_made_of_is_worth_that_name() -> None:
    """`path = partial(_path, ...)`: `_path`'s signature is `path`'s, so it is worth as much;
    a private function no public name is made of keeps its own value."""
    rated = {"path": 60_000, "include": 30_000, "_path": 100, "_unused": 100}
    values = _values("urls/conf.py", PY_ALIAS, rated)
    assert values["_path"] == values["path"] == 60_000
    assert values["_unused"] == 100


def test_a_configuration_s_keys_are_worth_more_than_its_table_headers() -> None:
    """In pyproject.toml the keys say what the project is; a header alone says little, and a
    tool's settings (`[tool.*]`) count as private."""
    text = '[project]\nname = "x"\nrequires-python = ">=3.9"\n\n[tool.ruff]\nline-length = 100\n'
    values = _values("pyproject.toml", text, {}, value=10_000)
    assert values["name"] == values["requires-python"] > values["project"]
    assert values["line-length"] < values["name"] and values["tool.ruff"] < values["project"]
