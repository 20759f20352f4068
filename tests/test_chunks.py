"""packer.chunks: how bodies are cut into passages for search by meaning."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from packer.chunks import MAX_PASSAGES, OVERLAP_WORDS, WINDOW_WORDS, kind_of, passages


def test_the_kind_follows_the_extension() -> None:
    assert kind_of("docs/guide.md") == "md" and kind_of("README.MARKDOWN") == "md"
    assert kind_of("src/app.py") == "text" and kind_of("notes.md/x") == "text"
    assert kind_of("Makefile") == "text" and kind_of(".md") == "md"


def test_a_daily_log_is_one_entry_a_passage_without_its_date() -> None:
    log = "# 2026-11-24\n\n- keep the format\n- the pull profile:\n  LMDB puts 0.5 s\n\n- third\n"
    got = passages("md", log)
    assert [(p.first, p.last, p.text) for p in got] == [
        (3, 3, "- keep the format"),
        (4, 5, "- the pull profile:\n  LMDB puts 0.5 s"),
        (7, 7, "- third"),
    ]


def test_an_entrys_id_is_not_read_with_its_words() -> None:
    log = "# 2026-11-24\n\n- keep the format ^e-3kq9ta\n- the pull: ^e-pm7q2x\n  0.5 s ^x\n"
    got = passages("md", log)
    assert [(p.first, p.last, p.text) for p in got] == [
        (3, 3, "- keep the format"),
        (4, 5, "- the pull:\n  0.5 s"),
    ]
    assert passages("text", "x = 1 ^e-3kq9ta\n")[0].text == "x = 1 ^e-3kq9ta"  # code: as it is


def test_a_section_carries_its_title_and_a_fence_hides_headings() -> None:
    doc = "# Install\n\nRun the setup.\n\n```\n# not a heading\n```\n\n## Use\nCall it.\n"
    got = passages("md", doc)
    assert [(p.first, p.last) for p in got] == [(3, 7), (10, 10)]
    assert got[0].text.startswith("Install\nRun the setup.") and "# not a heading" in got[0].text
    assert got[1].text == "Use\nCall it."
    # a heading with nothing under it is no passage
    assert passages("md", "# Empty\n\n## Also\n") == []


def test_long_text_is_cut_into_overlapping_windows_of_whole_lines() -> None:
    lines = [f"word{i} " * 10 for i in range(100)]  # 1,000 words
    got = passages("text", "\n".join(lines))
    assert len(got) > 1
    assert got[0].first == 1 and got[-1].last == 100
    for a, b in itertools.pairwise(got):
        assert b.first <= a.last  # they overlap ...
        assert b.first > a.first  # ... and go forward
        overlap = sum(len(lines[i - 1].split()) for i in range(b.first, a.last + 1))
        assert overlap >= OVERLAP_WORDS - 10
    for p in got:
        assert len(p.text.split()) <= WINDOW_WORDS + 10


def test_a_huge_body_gives_a_bounded_number_of_passages() -> None:
    got = passages("text", "\n".join(["a b c d e f g h i j"] * 200_000))
    assert len(got) <= MAX_PASSAGES


texts = st.lists(
    st.one_of(
        st.just(""),
        st.just("# Title"),
        st.just("- item"),
        st.just("  continued"),
        st.just("```"),
        st.text(alphabet="ab \t", max_size=30),
        st.text(max_size=20),
    ),
    max_size=60,
).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(text=texts, kind=st.sampled_from(["md", "text"]))
def test_every_passage_is_lines_of_the_text_with_a_word(text: str, kind: str) -> None:
    lines = text.split("\n")
    got = passages(kind, text)
    for p in got:
        assert 1 <= p.first <= p.last <= len(lines)
        own = "\n".join(lines[p.first - 1 : p.last])
        if kind == "md":  # a block reference at a line's end is not read
            own = re.sub(r" \^[A-Za-z0-9-]+$", "", own, flags=re.M)
        assert own.split() and own in p.text
        assert lines[p.first - 1].strip() and lines[p.last - 1].strip()
    if kind == "text":  # every line with a word is in some passage
        covered = {n for p in got for n in range(p.first, p.last + 1)}
        assert all(n in covered for n, line in enumerate(lines, 1) if line.split())
    assert got == passages(kind, text)
