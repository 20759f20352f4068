"""packer.embedding: the model read from the wordllama wheel, the same integers everywhere."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import cas.words
from packer import embedding
from packer.embedding import DIM, TOKENIZER_FILE, model, quantize, scores

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(model().folder / TOKENIZER_FILE))


@pytest.fixture
def real_tokenizer() -> Tokenizer:
    return _tokenizer()


def test_the_model_is_the_pinned_one_and_read_from_its_wheel() -> None:
    m = model()
    assert m.name == "wordllama-0.4.0.post1/l2_supercat_256"
    assert m.rows == 32000 and (m.folder / "weights").is_dir()


def test_words_tokenize_as_the_real_tokenizer_does(real_tokenizer: Tokenizer) -> None:
    """Every word of this repository's code, tokenized by cas and by the model's own
    tokenizer (the `tokenizers` library, reading the same file): the same ids."""
    m = model()
    words: set[str] = set()
    for path in sorted((ROOT / "packer").glob("*.py")) + sorted((ROOT / "cas").glob("*.py")):
        words.update(path.read_text(encoding="utf-8").split())
    words = {w for w in words if len(w) <= embedding.MAX_WORD and "<s>" not in w}
    assert len(words) > 5000
    wrong = [
        w for w in sorted(words)
        if list(m.tokens(w)) != real_tokenizer.encode(w, add_special_tokens=False).ids
    ]  # fmt: skip
    assert wrong == []


@settings(max_examples=300, deadline=None)
@given(word=st.text(min_size=1, max_size=20))
def test_any_word_tokenizes_as_the_real_tokenizer_does(word: str) -> None:
    tokenizer = _tokenizer()
    if word.split() != [word] or "<" in word:
        return  # one word at a time; special tokens are text to cas, markers to the tokenizer
    assert list(model().tokens(word)) == tokenizer.encode(word, add_special_tokens=False).ids


def test_a_vector_is_the_quantized_mean_the_model_defines() -> None:
    """The float mean of a text's token rows (what the model's own library computes) and the
    integer vector point the same way."""
    m = model()
    table = np.frombuffer(m._data, dtype="<f2", count=m.rows * DIM, offset=m._offset)
    table = table.reshape(m.rows, DIM).astype(np.float64)
    for text in ["the login page test fails now and then", "def parse(config): return x", "é"]:
        mean = table[m.ids(text)].mean(axis=0)
        ours = np.frombuffer(m.vector(text) or b"", dtype=np.int8).astype(np.float64)
        cosine = ours @ mean / np.linalg.norm(ours) / np.linalg.norm(mean)
        assert cosine > 0.999, (text, cosine)
        assert np.abs(ours).max() == 127
    assert m.vector("") is None and m.vector("   \n ") is None


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(st.text(max_size=80), min_size=1, max_size=12))
def test_bulk_vectors_are_exactly_the_one_by_one_vectors(texts: list[str]) -> None:
    m = model()
    assert m.vectors(texts) == [m.vector(t) for t in texts]


@settings(max_examples=50, deadline=None)
@given(texts=st.lists(st.text(max_size=60), min_size=1, max_size=8))
def test_bulk_sums_are_the_same_in_c_and_numpy(texts: list[str]) -> None:
    m = model()
    native = m.vectors(texts)
    saved = list(cas.words._NATIVE)
    cas.words._NATIVE[:] = [None]
    try:
        assert m.vectors(texts) == native
    finally:
        cas.words._NATIVE[:] = saved


vectors = st.binary(min_size=DIM, max_size=DIM)


@settings(max_examples=100, deadline=None)
@given(query=vectors, rows=st.lists(vectors, max_size=20))
def test_scores_are_the_same_in_c_and_numpy_and_bounded(query: bytes, rows: list[bytes]) -> None:
    matrix = b"".join(rows)
    native = list(scores(query, matrix))
    saved = list(cas.words._NATIVE)
    cas.words._NATIVE[:] = [None]
    try:
        assert list(scores(query, matrix)) == native
    finally:
        cas.words._NATIVE[:] = saved
    assert len(native) == len(rows)
    assert all(-1_000_000 <= s <= 1_000_000 for s in native)
    for row, s in zip(rows, native, strict=True):
        if row == query and any(query):
            assert s >= 999_999  # a vector is nearest to itself


@settings(max_examples=100, deadline=None)
@given(total=st.lists(st.integers(-(10**12), 10**12), min_size=DIM, max_size=DIM))
def test_quantize_rounds_in_integers(total: list[int]) -> None:
    got = quantize(total)
    top = max(abs(v) for v in total)
    if top == 0:
        assert got is None
        return
    assert got is not None
    values = np.frombuffer(got, dtype=np.int8).astype(int)
    assert values.max() == 127 or values.min() == -127
    for v, q in zip(total, values, strict=True):
        assert abs(q - 127 * v / top) <= 0.5 + 1e-9


def test_vectors_are_the_same_bytes_under_any_hash_seed() -> None:
    """Vectors and scores in fresh processes with other hash seeds: the same bytes."""
    script = (
        "from packer.embedding import model, scores\n"
        "m = model()\n"
        "v = m.vectors(['flaky sign-in spec', 'the login page test fails', 'x = 1'])\n"
        "q = m.vector('which test is unstable')\n"
        "print(b''.join(x or b'' for x in v).hex(), list(scores(q, b''.join(v))))\n"
    )
    outs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        proc = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        outs.add(proc.stdout)
    assert len(outs) == 1


def test_a_missing_model_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cas.errors import UsageError

    with pytest.raises(UsageError, match=r"cannot be read.*--mode lexical"):
        embedding.Model(tmp_path)


@settings(max_examples=300, deadline=None)
@given(word=st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=24))
def test_the_merges_are_the_same_in_c_and_python(word: str) -> None:
    m = model()
    m._load_vocabulary()
    piece = "\u2581" + word
    native = m._merge(piece)
    saved = list(cas.words._NATIVE)
    cas.words._NATIVE[:] = [None]
    try:
        assert m._merge(piece) == native
    finally:
        cas.words._NATIVE[:] = saved
