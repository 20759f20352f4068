"""cas.picklable: records that cross to worker processes pickle as their class and fields."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.batch import Prepared
from cas.digest import Digest
from cas.picklable import by_fields
from cas.puts import BlobPut, ChunkPut, IndexPut
from packer.ingest import Fact, _Worked
from packer.scan import ScannedFile
from packer.secrets import SecretFinding

_TEXT = st.text(max_size=12)
_DIGEST = st.binary(min_size=32, max_size=32).map(Digest)


@st.composite
def _records(draw: st.DrawFn) -> object:
    """One of each record the ingest sends to or gets back from a worker process."""
    digest = draw(_DIGEST)
    scanned = ScannedFile(
        draw(_TEXT), "/root", draw(st.none() | _TEXT), draw(st.sampled_from(["file", "symlink"])),
        draw(st.integers(0, 2**40)), draw(st.integers(0, 2**62)), draw(st.integers(0, 2**62)),
        draw(st.integers(0, 2**62)), draw(st.integers(0, 2**40)), draw(st.none() | _TEXT),
    )  # fmt: skip
    fact = Fact(draw(_TEXT), "file", draw(st.integers(0, 2**40)), draw(st.none() | _DIGEST),
                forced=draw(st.none() | _TEXT), text=draw(st.booleans()))  # fmt: skip
    puts = [
        BlobPut(digest, draw(st.none() | st.binary(max_size=40)), None, draw(st.integers(0, 99))),
        ChunkPut(digest, draw(st.binary(max_size=40))),
        IndexPut(digest, draw(st.binary(max_size=40)), 5, 3, [digest, digest]),
    ]
    findings = [SecretFinding(draw(_TEXT), draw(st.integers(0, 99)))]
    worked = _Worked(fact, Prepared(digest, puts), findings, (0.5,) * 6, digest, 7,
                     ("ns", b"lexicon"), (b"k" * 8, b"m" * 4, 1, 32))  # fmt: skip
    return draw(st.sampled_from([scanned, fact, worked, *puts, findings[0]]))


@given(_records())
def test_a_record_comes_back_equal_from_a_pickle_and_a_copy(record: object) -> None:
    """Through pickle (any protocol a worker pipe may use), copy and deepcopy: an equal record
    of the same class, each field equal."""
    for protocol in (2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL):
        again = pickle.loads(pickle.dumps(record, protocol=protocol))
        assert type(again) is type(record) and again == record
    assert copy.copy(record) == record and copy.deepcopy(record) == record


def test_a_record_pickles_as_its_class_called_with_its_fields() -> None:
    """What pickle stores: the class and the field values in order (no state set by name)."""
    finding = SecretFinding("aws key", 3, 10, 30)
    assert finding.__reduce_ex__(pickle.HIGHEST_PROTOCOL) == (SecretFinding, ("aws key", 3, 10, 30))


@by_fields
@dataclass(frozen=True, slots=True)
class One:
    value: int


@by_fields
@dataclass(slots=True)
class Defaults:
    name: str
    items: list[int] = field(default_factory=list)


def test_a_class_of_one_field_and_of_defaults() -> None:
    assert One(5).__reduce__() == (One, (5,))
    assert pickle.loads(pickle.dumps(One(5))) == One(5)
    held = Defaults("x", [1, 2])
    assert pickle.loads(pickle.dumps(held)) == held


def test_a_class_whose_fields_the_constructor_does_not_take_in_order_is_refused() -> None:
    @dataclass
    class Derived:
        value: int
        twice: int = field(init=False, default=0)

    @dataclass(kw_only=True)
    class Keywords:
        value: int

    for cls in (Derived, Keywords):
        with pytest.raises(TypeError, match="positional constructor argument"):
            by_fields(cls)
    with pytest.raises(TypeError):
        by_fields(int)  # not a dataclass
