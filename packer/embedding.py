"""The embedding model: a text's meaning as a vector of 256 small integers, the same integers on
every machine.

The model is a static embedding: a table of one 256-wide row per token of a 32,000-piece
vocabulary, trained so that the mean of a text's token rows places texts of like meaning near
each other (cosine). The table and the vocabulary ship inside the ``wordllama`` wheel
(`model_name`), so nothing is downloaded at install or run time; cas reads the two files itself
(the tokenizer's vocabulary and merges from its JSON, the table from its safetensors file) and
does not import that package.

A text is cut at white space into words; each word is tokenized as the model's tokenizer does
a word after a space (``▁`` + the word, byte-pair merges by rank, in C where it was built,
`cas._words.bpe`; unknown characters as their UTF-8 bytes: the tests compare it with the real
tokenizer), and its tokens' rows are summed.
Cosine ignores the division of the mean, so the sum is the vector. Words longer than
`MAX_WORD` characters (a hash, a base64 run) carry no meaning and are skipped.

Determinism (DETERMINISM.md, "Meaning"): the table is stored as float16; every float16 value
times 2**24 is an integer, so rows are read as exact integers and a text's sum is exact,
whatever order it is added in. The sum becomes 256 signed bytes by integer rounding
(`quantize`); two vectors compare by an exact integer dot product and norms, then one square
root, one division and one product, each correctly rounded (IEEE), so every machine gets the
same scores (`scores`).

A query is embedded without numpy (a few rows read from the mapped file), and scored in C where
it was built (`cas._words.cosines`): a fresh ``cas search`` pays for neither numpy's import
nor the table. Bodies are embedded in bulk (`Model.vectors`): the table converted once to
int32, each text's rows summed in C (`cas._words.row_sums`) or by numpy.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import re
import struct
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from cas.errors import UsageError
from cas.words import native_module

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DIM", "Model", "model", "quantize", "scores"]

DIM: Final = 256
PACKAGE: Final = "wordllama"
TOKENIZER_FILE: Final = "tokenizers/l2_supercat_tokenizer_config.json"
TABLE_FILE: Final = "weights/l2_supercat_256.safetensors"
VERSION_FILE: Final = "_version.py"
TABLE_KEY: Final = "embedding.weight"
MAX_WORD: Final = 64
WORDS_KEPT: Final = 200_000  # words whose tokens a process keeps (about 25 MiB)
_SPACE: Final = "\u2581"  # the tokenizer's mark of a word's start
_EXACT: Final = 1 << 24  # float16 times this is an integer, for every float16
_ROW = struct.Struct(f"<{DIM}e")
_VERSION = re.compile(r"""__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""")
_BULK: Final = 2048  # texts summed at a time by `Model.vectors`


def _folder() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(
            f"search by meaning needs the {PACKAGE} package (its model files): reinstall cas "
            "with pip, or search with --mode lexical"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _unreadable(folder: Path, problem: object) -> UsageError:
    return UsageError(
        f"the embedding model in {folder} cannot be read ({problem}): reinstall {PACKAGE} with "
        "pip, or search with --mode lexical"
    )


class Model:
    """The vocabulary, merges and table of the model in ``folder``: `vector` embeds a query,
    `vectors` many texts. The vocabulary is read when a word is first met that this process
    has not tokenized (a search names a few words; `words` may be given them)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        try:
            found = _VERSION.search((folder / VERSION_FILE).read_text(encoding="utf-8"))
            version = found.group(1) if found else "unknown"
            with (folder / TABLE_FILE).open("rb") as f:
                self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._offset, self.rows = _table_place(self._data)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise _unreadable(folder, e) from None
        # The model's name as every vector's cache key records it: another version of the
        # package may ship other weights, and their vectors are made again.
        self.name = f"{PACKAGE}-{version}/l2_supercat_{DIM}"
        self._vocab: dict[str, int] | None = None
        self._ranks: dict[str, int] = {}
        self._bytes: list[int] = []
        self._pairs: tuple[array[int], array[int]] = (array("Q"), array("Q"))
        # word -> its token ids as packed uint32 (native order), at most `WORDS_KEPT` of them
        self.words: dict[str, bytes] = {}
        self._table: Any = None  # int32, made by the first bulk embedding

    # --- tokens ---------------------------------------------------------------------------------

    def _load_vocabulary(self) -> dict[str, int]:
        if self._vocab is None:
            try:
                config = json.loads((self.folder / TOKENIZER_FILE).read_text(encoding="utf-8"))
                spec = config["model"]
                vocab: dict[str, int] = spec["vocab"]
                merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in spec["merges"]]
            except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
                raise _unreadable(self.folder, e) from None
            self._ranks = dict(zip(merges, range(len(merges)), strict=True))
            self._bytes = [vocab.get(f"<0x{b:02X}>", 0) for b in range(256)]
            self._pairs = _pair_table(vocab, merges)
            self._vocab = vocab
        return self._vocab

    def tokens(self, word: str) -> tuple[int, ...]:
        """The token ids of one word as it reads after a space."""
        return tuple(array("I", self._packed(word)))

    def _packed(self, word: str) -> bytes:
        got = self.words.get(word)
        if got is None:
            if len(self.words) >= WORDS_KEPT:
                self.words.clear()  # a cache: a tree of a million names does not hold them all
            got = self.words[word] = array("I", self._merge(_SPACE + word)).tobytes()
        return got

    def _merge(self, piece: str) -> tuple[int, ...]:
        vocab = self._load_vocabulary()
        native = native_module()
        if native is not None and hasattr(native, "bpe"):
            first = [vocab.get(ch, -1) for ch in piece]
            if -1 not in first:  # every character a token: the merges run in C
                keys, values = self._pairs
                merged = array("I", native.bpe(array("I", first).tobytes(), keys, values))
                return tuple(merged)
        ranks = self._ranks
        symbols = list(piece)
        none = len(ranks)
        while len(symbols) > 1:
            best, best_rank = -1, none
            for i in range(len(symbols) - 1):
                rank = ranks.get(f"{symbols[i]} {symbols[i + 1]}", none)
                if rank < best_rank:
                    best, best_rank = i, rank
            if best < 0:
                break
            symbols[best : best + 2] = [symbols[best] + symbols[best + 1]]
        out: list[int] = []
        for s in symbols:
            found = vocab.get(s)
            if found is None:
                out.extend(self._bytes[b] for b in s.encode("utf-8", "surrogatepass"))
            else:
                out.append(found)
        return tuple(out)

    def ids(self, text: str) -> array[int]:
        """The token ids of ``text``, word by word (see the module's docstring)."""
        out = array("I")
        words = self.words
        for word in text.split():
            got = words.get(word)
            if got is None:
                if len(word) > MAX_WORD:
                    continue
                got = self._packed(word)
            out.frombytes(got)
        return out

    # --- vectors --------------------------------------------------------------------------------

    def vector(self, text: str) -> bytes | None:
        """One text's vector (`quantize`d), with no numpy: its rows read from the mapped file.
        None for a text with no word."""
        sums = [0] * DIM
        base = self._offset
        for token in self.ids(text):
            row = _ROW.unpack_from(self._data, base + token * 2 * DIM)
            for d, value in enumerate(row):
                sums[d] += int(value * _EXACT)
        return quantize(sums)

    def vectors(self, texts: Sequence[str]) -> list[bytes | None]:
        """Each text's vector (`quantize`d), or None for a text with no word: exactly what
        `vector` gives each, in bulk."""
        import numpy as np

        out: list[bytes | None] = []
        for at in range(0, len(texts), _BULK):
            group = texts[at : at + _BULK]
            ids = array("I")
            bounds = array("q", [0])
            for text in group:
                ids.extend(self.ids(text))
                bounds.append(len(ids))
            sums = self._sums(ids, bounds)
            top = np.abs(sums).max(axis=1)
            safe = np.where(top > 0, top, 1)[:, None]
            mag = (np.abs(sums) * 254 + safe) // (2 * safe)
            rows = (np.sign(sums) * mag).astype(np.int8)
            out.extend(rows[i].tobytes() if top[i] > 0 else None for i in range(len(group)))
        return out

    def _sums(self, ids: array[int], bounds: array[int]) -> npt.NDArray[np.int64]:
        import numpy as np

        table = self._int_table()
        n = len(bounds) - 1
        native = native_module()
        if native is not None and hasattr(native, "row_sums"):
            raw = native.row_sums(table, ids, bounds, DIM)
            return np.frombuffer(raw, dtype=np.int64).reshape(n, DIM)
        at = np.frombuffer(ids, dtype=np.uint32).astype(np.int64)
        cuts = np.frombuffer(bounds, dtype=np.int64)
        out = np.zeros((n, DIM), dtype=np.int64)
        filled = cuts[1:] > cuts[:-1]
        if len(at):
            summed = np.add.reduceat(table[at], cuts[:-1][filled], axis=0, dtype=np.int64)
            out[filled] = summed
        return out

    def _int_table(self) -> npt.NDArray[np.int32]:
        """The whole table as exact int32 (float16 * 2**24), made once per process."""
        import numpy as np

        if self._table is None:
            raw = np.frombuffer(self._data, dtype="<f2", count=self.rows * DIM, offset=self._offset)
            wide = raw.astype(np.float32)
            if not np.isfinite(wide).all() or np.abs(wide).max() >= 128:
                raise _unreadable(self.folder, "table values past what int32 holds exactly")
            self._table = (wide * np.float32(_EXACT)).astype(np.int32).reshape(self.rows, DIM)
        table: npt.NDArray[np.int32] = self._table
        return table


def _pair_table(vocab: dict[str, int], merges: list[str]) -> tuple[array[int], array[int]]:
    """The merges as token ids for `cas._words.bpe`: keys (left << 32 | right), ascending, and
    per key (rank << 32 | merged id), the lowest rank where a pair is listed twice."""
    pairs: dict[int, int] = {}
    for rank, merge in enumerate(merges):
        left, _, right = merge.partition(" ")
        a, b, ab = vocab.get(left), vocab.get(right), vocab.get(left + right)
        if a is None or b is None or ab is None:
            continue  # never applies to tokens of the vocabulary
        pairs.setdefault((a << 32) | b, (rank << 32) | ab)
    keys = sorted(pairs)
    return array("Q", keys), array("Q", [pairs[k] for k in keys])


def _table_place(data: mmap.mmap) -> tuple[int, int]:
    """Where the table's data starts in the safetensors file and how many rows it has: the
    file is a header length (u64 LE), a JSON header naming each tensor's dtype, shape and byte
    range, then the data."""
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(bytes(data[8 : 8 + n]))
    spec = header[TABLE_KEY]
    rows, width = spec["shape"]
    if spec["dtype"] != "F16" or width != DIM:
        raise ValueError(f"{TABLE_KEY} is {spec['dtype']} {spec['shape']}, not F16 [n, {DIM}]")
    lo, hi = spec["data_offsets"]
    if hi - lo != rows * width * 2 or 8 + n + hi > len(data):
        raise ValueError(f"{TABLE_KEY}'s byte range does not fit the file")
    return 8 + n + lo, rows


def quantize(total: Sequence[int]) -> bytes | None:
    """A sum of rows as 256 signed bytes: each component times 127 over the largest magnitude,
    rounded half away from zero, in integer arithmetic; None for a zero vector."""
    top = max((abs(v) for v in total), default=0)
    if top == 0:
        return None
    out = bytearray(len(total))
    for d, v in enumerate(total):
        mag = (abs(v) * 254 + top) // (2 * top)
        out[d] = (mag if v >= 0 else -mag) & 0xFF
    return bytes(out)


def scores(query: bytes, matrix: bytes | memoryview) -> array[int]:
    """Cosine of ``query`` with each row of ``matrix`` (rows of `DIM` signed bytes) in
    millionths: floor(dot / sqrt(|q|^2 |r|^2) * 1e6), 0 where a norm is 0; the same on every
    machine (see the module's docstring)."""
    native = native_module()
    if native is not None and hasattr(native, "cosines"):
        return array("q", native.cosines(matrix, query, DIM))
    import numpy as np

    m = np.frombuffer(matrix, dtype=np.int8).reshape(-1, DIM).astype(np.int64)
    q = np.frombuffer(query, dtype=np.int8).astype(np.int64)
    dots = m @ q
    norms = np.einsum("ij,ij->i", m, m)
    denom = np.sqrt((norms * int(q @ q)).astype(np.float64))
    ratio = dots / np.where(denom > 0, denom, 1.0)
    values = np.where(denom > 0, np.floor(ratio * 1e6), 0.0)
    return array("q", values.astype(np.int64).tobytes())


_LOCK = threading.Lock()
_MODEL: list[Model] = []


def model() -> Model:
    """The process's model, opened on first use."""
    with _LOCK:
        if not _MODEL:
            _MODEL.append(Model(_folder()))
        return _MODEL[0]
