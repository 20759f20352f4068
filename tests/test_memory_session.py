"""memory.session: a session's turns, its ledger and the summary of the last sessions as text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas.errors import UsageError
from memory.session import (
    Given,
    Ledger,
    Turn,
    Turns,
    check_session,
    is_ledger,
    ledger_path,
    next_session,
    parse_ledger,
    parse_turns,
    session_of,
    summary,
    turns_path,
)

DATE = st.dates().map(lambda d: d.isoformat())
# A message as the short-term memory stores it: stripped, newlines only as \n, not empty.
LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
MESSAGE = st.lists(LINE, min_size=1, max_size=5).map("\n".join).map(str.strip).filter(bool)


@st.composite
def turn_lists(draw: st.DrawFn) -> Turns:
    n = draw(st.integers(0, 5))
    start = draw(st.integers(1, 50))
    recent = tuple(Turn(start + i, draw(DATE), draw(MESSAGE), draw(MESSAGE)) for i in range(n))
    earlier = tuple(
        (i + 1, draw(DATE), draw(LINE.map(lambda s: " ".join(s.split())).filter(bool)))
        for i in range(draw(st.integers(0, 3)))
    )
    return Turns("s1", recent, earlier)


@settings(max_examples=150, deadline=None)
@given(turn_lists())
def test_turns_read_back_exactly_as_they_were_laid_out(turns: Turns) -> None:
    data = turns.render()
    assert parse_turns("s1", data) == turns
    assert parse_turns("s1", data).render() == data


def test_a_turn_reads_as_markdown_with_its_lines_indented() -> None:
    turns = Turns("s2", (Turn(3, "2026-11-29", "why?\n\nbecause", "## Turn 9 (2026-01-01)"),))
    assert turns.render().decode() == (
        "# Session s2\n\n## Turn 3 (2026-11-29)\n\n- user: why?\n  \n  because\n"
        "- assistant: ## Turn 9 (2026-01-01)\n"
    )
    assert parse_turns("s2", None) == Turns("s2")


PATHS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(PATHS, st.tuples(st.booleans(), st.integers(1, 99)), max_size=6),
    st.lists(st.sampled_from(["testing", "storage", "gc"]), unique=True),
    st.integers(0, 999),
)
def test_a_ledger_reads_back_exactly(
    files: dict[str, tuple[bool, int]], domains: list[str], turns: int
) -> None:
    given = {p: Given(p, "blake3:" + "ab" * 32, full, turn) for p, (full, turn) in files.items()}
    ledger = Ledger(
        "s7", turns=turns, contexts=turns // 2, first="2026-11-01", last="2026-11-29",
        began="how is a pack fitted?", asked="and gc?", domains=tuple(domains), given=given,
    )  # fmt: skip
    assert parse_ledger("s7", ledger.render()) == ledger
    assert parse_ledger("s7", None) == Ledger("s7")


def test_session_ids_paths_and_the_next_free_one() -> None:
    assert check_session("s1") == "s1"
    for bad in ("", "a b", "-x", "x" * 65, "../up"):
        with pytest.raises(UsageError, match="letters, digits"):
            check_session(bad)
    assert turns_path("s3") == "sessions/s3/turns.md"
    assert session_of(ledger_path("chat.7")) == "chat.7"
    assert is_ledger("sessions/s3/ledger.md") and not is_ledger("sessions/s3/turns.md")
    assert session_of("logs/2026-11-29.md") is None
    assert next_session([]) == "s1"
    used = ["sessions/s1/turns.md", "sessions/s9/ledger.md", "sessions/x/turns.md", "MEMORY.md"]
    assert next_session(used) == "s10"


def test_the_summary_names_the_last_sessions_newest_first() -> None:
    def led(ident: str, first: str, last: str, turns: int) -> Ledger:
        return Ledger(
            ident, turns=turns, first=first, last=last, began=f"began {ident}",
            asked=f"asked {ident}", domains=("testing",),
            given={"src/a.py": Given("src/a.py", "blake3:" + "0" * 64, True, 1)},
        )  # fmt: skip

    assert summary([Ledger("s1")]) is None  # no session had a turn
    ledgers = [
        led("s1", "2026-11-01", "2026-11-02", 4),
        led("s2", "2026-11-03", "2026-11-03", 1),
        led("s3", "2026-11-05", "2026-11-09", 12),
        led("s4", "2026-11-04", "2026-11-10", 2),
    ]
    text = (summary(ledgers) or b"").decode()
    heads = [line for line in text.split("\n") if line.startswith("## ")]
    assert heads == [
        "## Session s4 (2026-11-04 to 2026-11-10, 2 turns)",
        "## Session s3 (2026-11-05 to 2026-11-09, 12 turns)",
        "## Session s2 (2026-11-03, 1 turn)",
    ]
    assert "- began with: began s4" in text and "- last asked: asked s4" in text
    assert "- domains loaded: testing" in text and "- files given: src/a.py" in text
    assert text.endswith("(1 earlier session not shown)\n")
    assert summary(list(reversed(ledgers))) == summary(ledgers)  # order of reading: no matter
