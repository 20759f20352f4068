"""memory.redaction: secrets cut from text as it is laid out and as its lines read joined; names
that hold one refused by kind; input repeated in an error line with them cut."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.errors import SecretInName
from memory.redaction import CLOSED, JOINED, LINES, Layout, cut, redacted, refuse_secret
from tests.secret_corpus import Values, pieces

ALNUM = string.ascii_letters + string.digits
# Planted at run time: no secret sits in the sources.
TOKEN = "gh" + "p_" + Values(random.Random(21)).pick(ALNUM, 36)
PASSWORD = Values(random.Random(22)).pick(ALNUM, 20)
ITEM = Layout("- ", "\n  ")


def leaked(secret: str, text: str) -> bool:
    return any(p in text for p in pieces(secret))


def test_a_secret_is_cut_out_and_every_other_line_kept() -> None:
    done = cut(f"the ci token\n{TOKEN}\nrotated monthly", ITEM)
    assert done.text == "the ci token\n[REDACTED: GitHub token]\nrotated monthly"
    assert done.kinds == ("GitHub token",)


@pytest.mark.parametrize("at", [4, 9, 20, 39])
def test_a_token_broken_at_a_line_end_is_found_whole_and_cut_with_its_break(at: int) -> None:
    done = cut(f"ci uses {TOKEN[:at]}\n{TOKEN[at:]} now", ITEM)
    assert done.text == "ci uses [REDACTED: GitHub token] now"


def test_an_assignment_split_over_lines_is_found_joined_with_a_space() -> None:
    p = "pass" + "word"
    done = cut(f'{p} =\n"{PASSWORD}"', LINES)
    assert done.text is not None and not leaked(PASSWORD, done.text)
    assert done.text.startswith(f'{p} =\n"[REDACTED: ')


def test_a_secret_with_no_exact_span_withholds_the_text_whole() -> None:
    # An escape hides the assignment: the scan finds it only unescaped, where no span maps back.
    p = "pass" + "word"
    done = cut(f'x = "{p}\\u003d{PASSWORD}"', ITEM)
    assert done.text is None and done.kinds


harmless = st.text(alphabet="abcdxyz019 .\n", max_size=200)  # spells no secret's name


@given(harmless, st.sampled_from([ITEM, LINES, JOINED, CLOSED, Layout("value: ", " ")]))
def test_text_without_a_secret_comes_back_as_it_was(text: str, layout: Layout) -> None:
    assert cut(text, layout).text == text


def test_a_name_holding_a_secret_is_refused_by_kind_and_never_shown() -> None:
    with pytest.raises(SecretInName) as refused:
        refuse_secret("fact key", ["deploy", f"facts/{TOKEN}.md"], "choose a key without it")
    msg = str(refused.value)
    assert "fact key" in msg and "GitHub token" in msg and not leaked(TOKEN, msg)
    refuse_secret("fact key", ["deploy", "facts/deploy.md"], "choose a key without it")


def test_input_repeated_in_an_error_line_has_its_secrets_cut() -> None:
    assert redacted(f"logs/{TOKEN}.md") == "logs/[REDACTED: GitHub token].md"
    assert redacted(f"{TOKEN[:12]}\n{TOKEN[12:]}") == "[REDACTED: GitHub token]"
    assert redacted("logs/2026-11-24.md") == "logs/2026-11-24.md"
