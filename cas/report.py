"""Reports as JSON: the one convention for what a command prints with ``--json``.

A report is a dataclass, or a NamedTuple made one by `named_report` (a record a fresh process
makes, where a dataclass would cost its start-up the compiling of its methods and the import of
`dataclasses`), and its JSON is its fields: `report_json` applies these rules, so no report's
JSON is written out by hand.

* Every field, under its own name, in declaration order. A field's metadata (`json_rule`) may
  give it another key (``key``), its own conversion (``convert``: its result is used as it is),
  or leave it out (``omit``: what only the text output or the caller needs).
* Then each name in ``JSON_EXTRA`` of the class and its bases (for a NamedTuple, the ``extra``
  given to `named_report`): values derived from the fields (properties such as ``ok`` or
  ``request_count``).
* Values: a report by these same rules; a `Digest` or a path as text; a float rounded to 3
  places (milliseconds, for seconds); a tuple, list or set as a list (a set sorted); a mapping
  as an object; None, bool, int and str as they are. Anything else is a `TypeError`: a new
  kind of value gets a rule here, not a conversion somewhere else.

A command that adds to a report (``gc --compact``'s sizes) adds keys to the object this
returns; it does not build the report's own keys.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from cas.digest import Digest

JSON_META: Final = "json"
SECONDS_PLACES: Final = 3

T = TypeVar("T")

# The NamedTuples that are reports: their rules by field name, and their extra names.
_NAMED: dict[type, tuple[dict[str, dict[str, Any]], tuple[str, ...]]] = {}


def json_rule(
    *, key: str | None = None, convert: Callable[[Any], Any] | None = None, omit: bool = False
) -> dict[str, Any]:
    """A field's JSON rule, as its metadata: ``field(default=0, metadata=json_rule(key=...))``.
    ``key`` is another name, ``convert`` gives its JSON value, ``omit`` leaves it out."""
    return {JSON_META: {"key": key, "convert": convert, "omit": omit}}


def rounded(places: int) -> Callable[[Any], Any]:
    """A ``convert`` for a float, or a mapping of floats, kept to ``places`` places."""

    def convert(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): round(v, places) for k, v in value.items()}
        return round(value, places)

    return convert


def pairs(*keys: str) -> Callable[[Any], Any]:
    """A ``convert`` for a list of tuples: each an object with ``keys``."""
    return lambda rows: [dict(zip(keys, row, strict=True)) for row in rows]


def named_report(cls: type[T], *, extra: tuple[str, ...] = (), **rules: dict[str, Any]) -> type[T]:
    """Make the NamedTuple ``cls`` a report: its fields in order, each by the rule `json_rule`
    gave it in ``rules`` (by field name; none: as it is), then the names in ``extra``. A
    NamedTuple holds no class attributes beside its fields, so what a dataclass report says in
    its fields' metadata and its ``JSON_EXTRA`` is said here."""
    fields = getattr(cls, "_fields", None)
    if not isinstance(fields, tuple) or not issubclass(cls, tuple):
        raise TypeError(f"{cls.__name__} is not a NamedTuple")
    unknown = sorted(set(rules) - set(fields))
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}")
    _NAMED[cls] = ({name: rule.get(JSON_META, {}) for name, rule in rules.items()}, extra)
    return cls


def _rules(report: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[str]] | None:
    """A report's fields, each with its rule, and its extra names; None when it is no report."""
    named = _NAMED.get(type(report))
    if named is not None:
        rules, extra = named
        return [(name, rules.get(name, {})) for name in report._fields], list(extra)
    import dataclasses  # here: a fresh `cas search` has no dataclass to report, nor loads them

    if not dataclasses.is_dataclass(report) or isinstance(report, type):
        return None
    fields = [(f.name, f.metadata.get(JSON_META, {})) for f in dataclasses.fields(report)]
    extras = [
        name for cls in reversed(type(report).__mro__) for name in vars(cls).get("JSON_EXTRA", ())
    ]
    return fields, extras


def report_json(report: Any) -> dict[str, Any]:
    """The JSON object of a report (see the module's rules)."""
    found = _rules(report)
    if found is None:
        raise TypeError(f"a report is a dataclass instance, not {type(report).__name__}")
    fields, extras = found
    out: dict[str, Any] = {}
    for name, rule in fields:
        if rule.get("omit"):
            continue
        value = getattr(report, name)
        convert = rule.get("convert")
        out[rule.get("key") or name] = convert(value) if convert else json_value(value)
    for name in extras:
        out[name] = json_value(getattr(report, name))
    return out


def _is_report(value: Any) -> bool:
    if isinstance(value, type):
        return False
    if type(value) in _NAMED:
        return True
    dataclasses = sys.modules.get("dataclasses")  # no dataclass exists before it is loaded
    return dataclasses is not None and bool(dataclasses.is_dataclass(value))


def json_value(value: Any) -> Any:
    """One value by the module's rules."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return round(value, SECONDS_PLACES)
    if isinstance(value, Digest):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if _is_report(value):
        return report_json(value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(json_value(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    raise TypeError(f"no JSON rule for {type(value).__name__}: add one to cas.report")
