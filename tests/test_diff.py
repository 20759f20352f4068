"""packer.diff: what two packs differ in, per path, with token deltas."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cas.digest import Digest
from cas.manifest import Entry, Manifest
from packer.diff import diff


def _d(text: str) -> Digest:
    return Digest.of(text.encode())


def _pack(*entries: Entry, totals: dict[str, object] | None = None) -> Manifest:
    return Manifest(
        scope="repo",
        target=None,
        tokenizer="o200k_base",
        budget_target=1000,
        budget_max=1200,
        entries=tuple(sorted(entries, key=lambda e: e.path.encode())),
        totals=dict(totals or {}),
    )


def _e(path: str, body: str | None, tier: str = "high", tokens: int = 10, size: int = 5) -> Entry:
    return Entry(path, None if body is None else _d(body), size, tier, tokens)


def test_each_kind_of_change_is_named_once_in_path_order() -> None:
    old = _pack(
        _e("same.py", "s"),
        _e("gone.py", "g", tokens=7),
        _e("edited.py", "v1", tokens=10),
        _e("moved-tier.py", "m", "high", tokens=30),
        _e("both.py", "b1", "high", tokens=40),
    )
    new = _pack(
        _e("same.py", "s"),
        _e("edited.py", "v2", tokens=12),
        _e("moved-tier.py", "m", "medium", tokens=5),
        _e("both.py", "b2", "low", tokens=1),
        _e("fresh.py", "f", "medium", tokens=3),
    )
    got = diff(old, new)
    assert [(c.path, c.change) for c in got.changes] == [
        ("both.py", "changed+retiered"),
        ("edited.py", "changed"),
        ("fresh.py", "added"),
        ("gone.py", "removed"),
        ("moved-tier.py", "retiered"),
    ]
    by_path = {c.path: c for c in got.changes}
    assert (by_path["fresh.py"].old_tier, by_path["fresh.py"].new_tier) == (None, "medium")
    assert (by_path["gone.py"].old_tier, by_path["gone.py"].new_tier) == ("high", None)
    assert by_path["gone.py"].delta == -7 and by_path["fresh.py"].delta == 3
    assert by_path["edited.py"].delta == 2 and by_path["moved-tier.py"].delta == -25
    # a change of both kinds counts as each
    assert [c.path for c in got.by_kind("changed")] == ["both.py", "edited.py"]
    assert [c.path for c in got.by_kind("retiered")] == ["both.py", "moved-tier.py"]
    assert got.by_kind("added") == [by_path["fresh.py"]]


def test_paths_are_ordered_by_their_bytes() -> None:
    paths = ["Z.md", "a.md", "é.md", "z/a.md", "z.md"]
    got = diff(_pack(), _pack(*(_e(p, p) for p in paths)))
    assert [c.path for c in got.changes] == sorted(paths, key=str.encode)


def test_withheld_secrets_compare_by_size() -> None:
    old = _pack(_e("a.env", None, size=10), _e("b.env", None, size=10), _e("c.env", None))
    new = _pack(_e("a.env", None, size=10), _e("b.env", None, size=11), _e("c.env", "now kept"))
    assert [(c.path, c.change) for c in diff(old, new).changes] == [
        ("b.env", "changed"),
        ("c.env", "changed"),
    ]


def test_totals_are_the_rendered_tokens_when_the_pack_records_them() -> None:
    entries = (_e("a.py", "a", tokens=10), _e("b.py", "b", tokens=20))
    recorded = _pack(*entries, totals={"tokens": {"markdown": 99, "json": 120}})
    assert diff(recorded, recorded).old_tokens == 99
    assert diff(_pack(*entries), recorded).old_tokens == 30  # no record: the entries' sum
    odd = _pack(*entries, totals={"tokens": {"markdown": "many"}})
    assert diff(odd, odd).new_tokens == 30


_entries = st.dictionaries(
    st.sampled_from(["a.py", "b.py", "c/d.md", "e.txt", "f.rs", "g/h/i.go"]),
    st.tuples(
        st.sampled_from(["x", "y", None]),
        st.sampled_from(["high", "medium", "low"]),
        st.integers(0, 500),
    ),
)


def _from(rows: dict[str, tuple[str | None, str, int]]) -> Manifest:
    return _pack(*(_e(p, body, tier, tokens) for p, (body, tier, tokens) in rows.items()))


@given(_entries, _entries)
def test_a_diff_backwards_is_the_mirror_image(
    a: dict[str, tuple[str | None, str, int]], b: dict[str, tuple[str | None, str, int]]
) -> None:
    old, new = _from(a), _from(b)
    forward, backward = diff(old, new), diff(new, old)
    assert not diff(old, old).changes
    swap = {"added": "removed", "removed": "added"}
    assert [
        (c.path, swap.get(c.change, c.change), c.new_tier, c.old_tier) for c in forward.changes
    ] == [(c.path, c.change, c.old_tier, c.new_tier) for c in backward.changes]
    assert [c.delta for c in forward.changes] == [-c.delta for c in backward.changes]
    assert (forward.old_tokens, forward.new_tokens) == (backward.new_tokens, backward.old_tokens)
    # every path that differs in content or tier is listed, and nothing else
    differing = {
        p
        for p in a.keys() | b.keys()
        if p not in a or p not in b or a[p][0] != b[p][0] or a[p][1] != b[p][1]
    }
    assert {c.path for c in forward.changes} == differing
