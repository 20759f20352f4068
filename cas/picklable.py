"""Records that cross to and from worker processes, pickled as their class and field values.

A dataclass with slots pickles through the dataclass module's ``__getstate__`` and
``__setstate__``: Python functions that make a list of its fields, then set each one back by
name. The ingest gets back, for every file it hands a worker process, a few records (the
file's fact, its prepared blob and the blob's puts, what a secret scan found): some 100,000
records for a tree of 20,000 files, each pickled once and unpickled once.
`by_fields` gives such a class a ``__reduce__`` that returns the class and its field values in
order, so pickle stores one tuple and rebuilds the record with one call of the class: the
same record, at about half the cost on both sides.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def by_fields(cls: type[T]) -> type[T]:
    """Make ``cls`` (a dataclass whose fields are all arguments of its constructor, in order)
    pickle as ``cls(*fields)``. A class decorator, applied after ``@dataclass``."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not fields or any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"{cls.__name__}: every field must be a positional constructor argument")
    names = [f.name for f in fields]
    values: Callable[[Any], Any] = operator.attrgetter(*names)
    if len(names) == 1:
        one = values

        def values(record: Any) -> tuple[Any, ...]:
            return (one(record),)

    def __reduce__(self: Any) -> tuple[type[T], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign]
    return cls
