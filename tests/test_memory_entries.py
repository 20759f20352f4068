"""memory.entries: daily logs and facts as text, and secrets cut out before anything is kept."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas.errors import SecretInName, UsageError
from memory.entries import (
    CURATED_ITEM,
    append_entry,
    check_date,
    check_key,
    clean,
    clean_line,
    curated_item,
    date_of,
    entries,
    fact_path,
    items,
    laid_out_entry,
    log_path,
    make_id,
    parse_fact,
    replace_item,
    set_fact,
    without_ids,
)
from packer.secrets import scan_secrets
from tests.secret_corpus import Values, pieces

lines = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40
).filter(lambda t: t.strip() == t and t)


@given(st.lists(st.lists(lines, min_size=1, max_size=3).map("\n".join), max_size=8))
def test_a_log_gives_back_every_entry_in_order(texts: list[str]) -> None:
    log = None
    for text in texts:
        log = append_entry(log, "2026-11-24", text)
    assert entries(log or b"") == texts
    if log is not None:
        assert log.startswith(b"# 2026-11-24\n\n- ")


def test_dates_are_calendar_dates_and_logs_are_found_by_theirs() -> None:
    assert check_date("2024-02-29") == "2024-02-29"
    for bad in ("2023-02-29", "2026-13-01", "26-11-24", "2026-11-24T10:00", "today"):
        with pytest.raises(UsageError, match="YYYY-MM-DD"):
            check_date(bad)
    assert date_of(log_path("2026-11-24")) == "2026-11-24"
    assert date_of("MEMORY.md") is None and date_of("logs/notes.md") is None


@given(st.lists(st.tuples(st.dates().map(str), st.one_of(st.none(), lines)), max_size=6))
@example([("2000-01-01", "(deleted)")])
@example([("2000-01-01", "\\(deleted)"), ("2000-01-02", None), ("2000-01-03", "\\\\(deleted)")])
def test_a_fact_keeps_every_value_it_had_newest_first(
    changes: list[tuple[str, str | None]],
) -> None:
    fact = None
    for date, value in changes:
        fact = set_fact(fact, "k", value, date)
        again = parse_fact("k", fact.render())
        assert again == fact
    if fact is not None:
        assert [d for d, _ in fact.history] == [d for d, _ in reversed(changes)]
        assert fact.value == (" ".join(changes[-1][1].split()) if changes[-1][1] else None)


def test_planted_secrets_are_cut_out_and_named_by_kind_only() -> None:
    vals = Values(random.Random(7))
    token = "ghp_" + vals.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)
    key_id = "AKIA" + vals.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    text = f"deploy with {token}\nand the key {key_id} for the bucket"
    cleaned = clean(text)
    assert token not in cleaned.text and key_id not in cleaned.text
    assert "[REDACTED: GitHub token]" in cleaned.text and "for the bucket" in cleaned.text
    assert "GitHub token" in cleaned.secrets
    assert clean("nothing secret here").secrets == ()


def test_empty_or_oversized_text_is_refused() -> None:
    with pytest.raises(UsageError, match="empty"):
        clean("  \n ")
    with pytest.raises(UsageError, match="over the limit"):
        clean("x" * (65 << 10))


# --- secrets split over lines (issue 21) ---------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
P = "pass" + "word"
# The issue's forms, each with its secret, in one line; split below at any point.
FORMS = {
    "assignment": lambda v: (f'{P} = "{v.pick(ALNUM, 20)}"', 12),
    "bearer": lambda v: (f"Authorization: Bearer {v.pick(ALNUM, 40)}", 22),
    "url": lambda v: (f"postgres://app:{v.pick(ALNUM, 20)}@host/db", 15),
    "token": lambda v: ("deploy with " + "gh" + "p_" + v.pick(ALNUM, 36), 12),
}
BREAKS = ["\n", "\r\n", "\n  ", " \n", "\n\n", " \n\t "]


def leaked(secret: str, data: bytes) -> bool:
    return any(p.encode() in data for p in pieces(secret))


@given(
    st.sampled_from(sorted(FORMS)),
    st.integers(0, 2**32 - 1),
    st.sampled_from(BREAKS),
    st.booleans(),
    st.data(),
)
def test_a_secret_split_over_lines_anywhere_is_never_stored(
    form: str, seed: int, brk: str, replace: bool, data: st.DataObject
) -> None:
    """The issue's forms with a line break put anywhere (or in place of a space): the stored
    fact file, log and curated memory hold no 8-character piece of the secret."""
    line, at = FORMS[form](Values(random.Random(seed)))
    secret = line[at:].rstrip('"').split("@")[0]
    assert scan_secrets(line.encode()), line  # whole, the scan finds it
    i = data.draw(st.integers(0, len(line)), label="split at")
    skip = 1 if replace and i < len(line) and line[i] == " " else 0
    text = line[:i] + brk + line[i + skip :]

    value = clean_line(text)
    assert "\n" not in value.text and value.secrets
    fact = set_fact(None, "db", value.text, "2026-11-24")
    assert not leaked(secret, fact.render()), fact.render()
    assert parse_fact("db", fact.render()) == fact  # what is read back is what was scanned

    entry = clean(text)
    log = append_entry(None, "2026-11-24", entry.text)
    assert not leaked(secret, log), log
    assert not leaked(secret, curated_item(clean(text, CURATED_ITEM).text))


def test_the_issues_fact_values_keep_their_words_and_lose_their_secrets() -> None:
    vals = Values(random.Random(31))
    pw = vals.pick(ALNUM, 20)
    assert clean_line(f'{P} =\n"{pw}"').text == (
        f"{P} = \"[REDACTED: high-entropy assignment to '{P}']\""
    )
    assert clean_line(f"postgres://app:{pw}\n@host/db").text == (
        "postgres://app:[REDACTED: password in URL] @host/db"
    )
    assert clean_line("postgres  16\n  on the big host").text == "postgres 16 on the big host"


def test_a_fact_key_holding_a_secret_is_refused_before_its_form_and_never_shown() -> None:
    token = "gh" + "p_" + Values(random.Random(32)).pick(ALNUM, 36)
    for key in (token, f"ci.{token}", f"{token}/x"):
        with pytest.raises(SecretInName, match=r"fact key holds a secret \(GitHub token\)") as e:
            fact_path(key)
        assert not leaked(token, str(e.value).encode())
    assert check_key("ci.token-2") == "ci.token-2"
    with pytest.raises(UsageError) as bad_date:
        check_date(token)
    assert "[REDACTED: GitHub token]" in str(bad_date.value)
    assert not leaked(token, str(bad_date.value).encode())


def test_a_fact_set_to_the_text_a_deletion_shows_stays_set() -> None:
    """The value line of a deleted fact reads "(deleted)": a fact set to that text is written
    with a backslash before it and read back as set, to exactly that text."""
    for text in ("(deleted)", "\\(deleted)", "(deleted) soon", "\\x"):
        fact = set_fact(None, "k", text, "2026-11-28")
        assert parse_fact("k", fact.render()).value == text
    gone = set_fact(fact, "k", None, "2026-11-29")
    assert b"value: (deleted)\n" in gone.render()
    assert parse_fact("k", gone.render()).value is None


@given(
    texts=st.lists(st.text(min_size=1, max_size=40), max_size=5),
    pick=st.integers(0, 10),
    new=st.text(min_size=1, max_size=40),
)
def test_entries_with_ids_read_back_and_one_is_replaced_leaving_every_other_entry(
    texts: list[str], pick: int, new: str
) -> None:
    """Each entry laid out with its id reads back as its text and id (`items`; `entries` and
    a memory pack's `without_ids` without the id); replacing or removing one leaves every other
    entry as it was, its id kept."""
    texts = [t.replace("\r", "").strip() for t in texts]
    texts = [t for t in texts if t]
    new = new.replace("\r", "").strip() or "x"
    if not texts:
        return
    ids = [make_id("2026-11-24", t, n) for n, t in enumerate(texts)]
    log: bytes | None = None
    plain: bytes | None = None
    for text, ident in zip(texts, ids, strict=True):
        log = append_entry(log, "2026-11-24", text, ident)
        plain = append_entry(plain, "2026-11-24", text)
    assert log is not None and plain is not None
    found = items(log)
    assert [(i.ident, i.text) for i in found] == list(zip(ids, texts, strict=True))
    assert entries(log) == entries(plain)
    assert without_ids(log.decode()) == plain.decode()
    item = found[pick % len(found)]
    after = items(replace_item(log, item, laid_out_entry(new, item.ident)))
    assert (after[item.index - 1].ident, after[item.index - 1].text) == (item.ident, new)
    others = [(i.ident, i.text) for i in found if i.index != item.index]
    assert [(i.ident, i.text) for i in after if i.index != item.index] == others
    assert [(i.ident, i.text) for i in items(replace_item(log, item, None))] == others
