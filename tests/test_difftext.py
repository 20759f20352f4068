"""A manifest as diff lines (`packer.difftext`, what `cas textconv` prints): a function of the
manifest's bytes, every entry on exactly one line of its own, and a change of one entry is a
change of its line alone."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import manifest as mf
from cas.digest import Digest
from cas.display import shown
from cas.errors import ManifestError
from packer.difftext import coarse, entry_line, header_lines, manifest_text, short

# Names with what a line diff must survive: spaces, newlines, tabs, quotes, non-ASCII.
paths = st.lists(
    st.text(alphabet="ab Z_-.é/\n\t\"'", min_size=1, max_size=10).filter(mf._valid_path),
    unique=True,
    max_size=8,
)


@st.composite
def manifests(draw: st.DrawFn) -> mf.Manifest:
    entries = []
    for p in sorted(draw(paths), key=lambda s: s.encode("utf-8")):
        tier = draw(st.sampled_from(mf.TIERS))
        withheld = draw(st.booleans()) and tier == "low"
        entries.append(
            mf.Entry(
                path=p,
                digest=None if withheld else Digest.of(p.encode()),
                size=draw(st.integers(0, 10**6)),
                tier=tier,
                tokens=draw(st.integers(0, 10**5)),
                summary=Digest.of(b"s" + p.encode()) if tier == "medium" else None,
                reason=draw(st.none() | st.text(alphabet="a b\n]", max_size=6)),
                rating=draw(st.integers(0, mf.MAX_RATING)),
                listed=tier == "low" and draw(st.booleans()),
            )
        )
    return mf.Manifest(
        scope="repo",
        target=draw(st.none() | st.sampled_from(["common", "claude"])),
        tokenizer="o200k_base",
        budget_target=draw(st.integers(1, 10**6)),
        budget_max=10**6,
        entries=tuple(entries),
        totals={"tokens": {"markdown": 12, "xml": 14}, "high": {"files": 1, "tokens": 5}},
    )


@given(manifests())
@example(mf.Manifest("repo", None, "o200k_base", 10, 12, ()))
def test_every_entry_is_one_line_and_the_text_is_a_function_of_the_bytes(m: mf.Manifest) -> None:
    data = mf.encode(m)
    text = manifest_text(data)
    assert text == manifest_text(bytes(data)) and text.endswith("\n")
    lines = text.splitlines()
    head = header_lines(m)
    assert lines[: len(head)] == head and all(line.startswith("# ") for line in head)
    body = lines[len(head) :]
    assert len(body) == len(m.entries)
    for e, line in zip(m.entries, body, strict=True):
        assert line == entry_line(e)
        assert line.startswith(shown(e.path) + "  ") and "\n" not in line
        assert f"{e.tier} {e.tokens} tokens" in line and f"rating {coarse(e.rating)}" in line
        assert (short(e.digest) if e.digest else "withheld") in line
    # no two entries share a line: a path is named once
    assert len(set(body)) == len(body)


@given(manifests(), st.data())
def test_a_change_of_one_entry_changes_its_line_only(m: mf.Manifest, data: st.DataObject) -> None:
    if not m.entries:
        return
    i = data.draw(st.integers(0, len(m.entries) - 1))
    changed = m.entries[i]._replace(tokens=m.entries[i].tokens + 1)
    other = m._replace(entries=(*m.entries[:i], changed, *m.entries[i + 1 :]))
    before = manifest_text(mf.encode(m)).splitlines()
    after = manifest_text(mf.encode(other)).splitlines()
    head = len(header_lines(m))
    differ = [j for j, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert differ == [head + i]


def test_a_medium_entry_names_its_summary_and_a_withheld_one_says_so() -> None:
    body, summary = Digest.of(b"body"), Digest.of(b"summary")
    line = entry_line(mf.Entry("src/a.py", body, 10, "medium", 7, summary=summary, reason="src"))
    want = f"src/a.py  medium 7 tokens  rating 0  {short(body)}  summary {short(summary)}  [src]"
    assert line == want
    assert short(body) == str(body)[: len("blake3:") + 12]
    line = entry_line(mf.Entry(".env", None, 3, "low", 0, reason="dotenv", listed=True))
    assert line == ".env  low 0 tokens  rating 0  withheld  listed  [dotenv]"


def test_a_load_names_its_query_and_sources() -> None:
    source = Digest.of(b"pack")
    m = mf.Manifest("load", None, "o200k_base", 100, 120, (), kind="load", query="why\nso",
                    sources=(("repo.claude", source),))  # fmt: skip
    head = header_lines(m)
    assert "# query: " + shown("why\nso") in head
    assert f"# source: repo.claude {short(source)}" in head


@given(st.integers(0, mf.MAX_RATING))
@example(9)
@example(10)
@example(95)
@example(949)
@example(999)
def test_a_coarse_rating_is_the_nearest_one_digit_value(rating: int) -> None:
    text = coarse(rating)
    if rating < 10:
        assert text == str(rating)
        return
    digit, exponent = (int(x) for x in text.removeprefix("~").split("e"))
    assert 1 <= digit <= 9
    value = digit * 10**exponent
    assert 2 * abs(value - rating) <= 10 ** (len(str(rating)) - 1)  # within half a unit


def test_coarse_ratings_by_example() -> None:
    assert [coarse(r) for r in (0, 9, 10, 14, 15, 4410, 951_000, 549_704)] == [
        "0", "9", "~1e1", "~1e1", "~2e1", "~4e3", "~1e6", "~5e5"
    ]  # fmt: skip


@pytest.mark.parametrize("data", [b"", b"\x00\x01", b"not msgpack at all"])
def test_bytes_that_are_not_a_manifest_raise_its_error(data: bytes) -> None:
    with pytest.raises(ManifestError):
        manifest_text(data)
