"""Token counts: exact against one encode call, at any length, for both encodings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import bpe_openai
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas.errors import UsageError
from packer import tokens
from packer.tokens import SUPPORTED_ENCODINGS, TokenCounter, split_text

ENCODINGS = {name: bpe_openai.get_encoding(name) for name in SUPPORTED_ENCODINGS}

# Fragments chosen to sit on every edge of the pre-tokenizer regexes: newline runs, "\n/" (o200k
# glues it to punctuation), contractions, case changes, digit runs, marks, Unicode whitespace
# (NBSP, U+2028, ideographic space, U+0085, U+001C which Python calls space and the tokenizer
# does not), CJK, emoji, special-token text.
FRAGMENTS = [
    "the", " quick", "Brown", "camelCase", "HTTPServer", "don't", "WE'LL", "'s", "x",
    "0", "12", "123456", "3.14", "Ⅻ", "²",
    " ", "  ", "\t", "\n", "\n\n", " \n", "\r\n", "\r", "\f", "\u00a0", "\u2028", "\u3000",
    "\x85", "\x1c",
    "/", "\n/", "!\n/", "!", ".", ",", ";", "=", "==", "(", ")", "{", "}", "[", '"', "'", "-",
    "_", "#", "*", "+", "//", "->",
    "é", "e\u0301", "ü", "中文", "。", "日本語", "😀", "👍🏽", "\U000f0000",
    "<|endoftext|>", "<|endofprompt|>",
]  # fmt: skip

texts = st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join)
encodings = st.sampled_from(SUPPORTED_ENCODINGS)


def single_call(name: str, text: str) -> int:
    return len(ENCODINGS[name].encode_ordinary(text))


def backend_count(name: str, text: str) -> int | None:
    """The Rust tokenizer's own count, which has no length limit: an oracle for huge texts."""
    backend = getattr(ENCODINGS[name], "_backend", None)
    count = getattr(backend, "count", None)
    return None if count is None else int(count(text))


@given(text=texts, name=encodings, piece=st.integers(1, 12))
@example(text="a\n/b", name="o200k_base", piece=1)
@example(text="!\n/x", name="o200k_base", piece=2)
@example(text="don't stop", name="o200k_base", piece=3)
@example(text="x  \n\nfoo", name="cl100k_base", piece=4)
@example(text="1234567", name="cl100k_base", piece=2)
def test_count_matches_one_call_with_tiny_pieces(text: str, name: str, piece: int) -> None:
    assert TokenCounter(name, piece_chars=piece).count(text) == single_call(name, text)


@given(text=texts, name=encodings)
def test_every_exact_cut_preserves_the_count(text: str, name: str) -> None:
    """The rules behind every cut, checked one position at a time: prefix + suffix == whole."""
    whole = single_call(name, text)
    for i in range(1, len(text)):
        if tokens._last_cut(text, i, i) == i:
            assert single_call(name, text[:i]) + single_call(name, text[i:]) == whole, i


@given(text=texts, piece=st.integers(1, 20), reach=st.integers(1, 40))
def test_split_text_covers_the_text_in_bounded_pieces(text: str, piece: int, reach: int) -> None:
    pieces = list(split_text(text, piece, reach))
    assert "".join(pieces) == text
    assert all(pieces)
    assert all(len(p) <= max(piece, reach) for p in pieces)


def test_rule_two_and_three_cut_lines_without_newlines() -> None:
    line = "alpha beta=gamma(12)+delta;" * 40
    counter = TokenCounter("o200k_base", piece_chars=16)
    assert line.count("\n") == 0
    assert len(list(split_text(line, 16, 16))) > 40
    assert counter.count(line) == single_call("o200k_base", line)
    digits_and_punct = "=1;" * 300  # no letters, no spaces: only digit/non-digit cuts
    assert len(list(split_text(digits_and_punct, 10, 10))) > 50
    assert TokenCounter("cl100k_base", piece_chars=10).count(digits_and_punct) == single_call(
        "cl100k_base", digits_and_punct
    )


def test_whitespace_tests_err_on_the_safe_side() -> None:
    # Unicode White_Space, which the tokenizer's \s means; the cut rules use Python's \s.
    white_space = [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)]
    white_space += [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
    assert all(chr(c).isspace() for c in white_space)


def test_special_token_text_is_counted_not_rejected() -> None:
    text = "before <|endoftext|> after <|endofprompt|>"
    for name in SUPPORTED_ENCODINGS:
        n = TokenCounter(name).count(text)
        assert n == single_call(name, text)
        assert n > 6  # the special tokens are spelled out, not one id each


def test_three_megabytes_count_exactly() -> None:
    paragraph = (
        "def handler(request):\n    return {'status': 200, 'body': request.text}\n\n"
        "Les données sont stockées une fois. 数据只存储一次。 😀\n"
    )
    text = (paragraph * (3_000_000 // len(paragraph) + 1))[:3_000_000]
    counter = TokenCounter("o200k_base")
    got = counter.count(text)
    # Independent of the cut rules: the paragraph's own count times the repetitions, and the
    # tokenizer's unlimited count where the backend offers one.
    reps, tail = divmod(len(text), len(paragraph))
    assert paragraph.endswith("\n") and not paragraph[0].isspace()
    expected = reps * single_call("o200k_base", paragraph)
    expected += single_call("o200k_base", paragraph[:tail])
    assert got == expected
    oracle = backend_count("o200k_base", text)
    if oracle is not None:
        assert got == oracle


def test_one_long_line_without_newlines_counts_exactly() -> None:
    text = "".join(f"k{i}=v{i * 7};" for i in range(150_000))  # ~2 MB, no spaces, no newlines
    assert len(text) > 1_500_000
    oracle = backend_count("cl100k_base", text)
    if oracle is None:
        pytest.skip("bpe_openai backend has no unlimited count")
    assert TokenCounter("cl100k_base").count(text) == oracle


def test_pieces_over_the_token_limit_are_recounted_smaller() -> None:
    # U+F0000 costs 4 tokens: 120k characters are 300k tokens, over the 200k per-call limit.
    text = " \U000f0000" * 60_000
    unit = single_call("o200k_base", " \U000f0000")
    assert unit * 60_000 > 200_000
    assert TokenCounter("o200k_base").count(text) == unit * 60_000


def test_lone_surrogates_are_repaired_before_cutting() -> None:
    text = "a \ud83d\ude00 b\ud800 c"  # a pair the library joins, then a lone half
    for piece in (1, 2, 3):
        assert TokenCounter("o200k_base", piece_chars=piece).count(text) == single_call(
            "o200k_base", text
        )


def test_inexact_cuts_inside_one_pretoken_stay_close() -> None:
    # Documented limit: with no exact cut in reach, a cut falls inside a pre-token, and the count
    # drifts by at most 1.5 tokens per cut on these runs (measured, not a theorem).
    for text in ("=" * 5000, " " * 5000, "xyz" * 2000, "-" * 5000):
        pieces = list(split_text(text, 100, 100))
        cuts = len(pieces) - 1
        for name in SUPPORTED_ENCODINGS:
            total = sum(single_call(name, p) for p in pieces)
            assert abs(total - single_call(name, text)) <= 1.5 * cuts


def test_cl100k_and_o200k_both_work_and_differ() -> None:
    o200k = TokenCounter("o200k_base")
    cl100k = TokenCounter("cl100k_base")
    assert (o200k.name, cl100k.name) == ("o200k_base", "cl100k_base")
    assert cl100k.count("hello world") == 2
    text = "日本語のテキストはトークンが違う"
    assert o200k.count(text) != cl100k.count(text)
    assert o200k.count("") == 0


def test_unknown_encoding_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"unknown tokenizer 'gpt2'.*o200k_base, cl100k_base"):
        TokenCounter("gpt2")


def test_counter_is_shared_safely_between_threads() -> None:
    counter = TokenCounter("o200k_base", piece_chars=50)
    inputs = [f"line {i}: {'word ' * i}\n" * 30 for i in range(64)]
    expected = [single_call("o200k_base", t) for t in inputs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(counter.count, inputs)) == expected


_ONE_COUNTER = {name: TokenCounter(name, piece_chars=64) for name in SUPPORTED_ENCODINGS}


@given(text=texts | st.just("a \ud83d\ude00 b\ud800 c"), name=encodings)
def test_a_counter_that_has_counted_counts_the_same(text: str, name: str) -> None:
    """After its first count a counter calls the tokenizer straight for a short text: the same
    count as one call, repaired text and pieces included, and a copy of it (to a worker) too."""
    import pickle

    counter = _ONE_COUNTER[name]
    counter.count("warm")
    assert counter.count(text) == single_call(name, text)
    copy = pickle.loads(pickle.dumps(counter))
    assert copy.count(text) == single_call(name, text)
