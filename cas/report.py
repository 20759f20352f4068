"""Reports as JSON: the one convention for what a command prints with ``--json``.

A report is a dataclass, and its JSON is its fields: `report_json` applies these rules, so no
report's JSON is written out by hand.

* Every field, under its own name, in declaration order. A field's metadata (`json_rule`) may
  give it another key (``key``), its own conversion (``convert``: its result is used as it is),
  or leave it out (``omit``: what only the text output or the caller needs).
* Then each name in ``JSON_EXTRA`` of the class and its bases: values derived from the fields
  (properties such as ``ok`` or ``request_count``).
* Values: a dataclass by these same rules; a `Digest` or a path as text; a float rounded to 3
  places (milliseconds, for seconds); a tuple, list or set as a list (a set sorted); a mapping
  as an object; None, bool, int and str as they are. Anything else is a `TypeError`: a new
  kind of value gets a rule here, not a conversion somewhere else.

A command that adds to a report (``gc --compact``'s sizes) adds keys to the object this
returns; it does not build the report's own keys.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any, Final

from cas.digest import Digest

JSON_META: Final = "json"
SECONDS_PLACES: Final = 3


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


def report_json(report: Any) -> dict[str, Any]:
    """The JSON object of a report dataclass (see the module's rules)."""
    if not dataclasses.is_dataclass(report) or isinstance(report, type):
        raise TypeError(f"a report is a dataclass instance, not {type(report).__name__}")
    out: dict[str, Any] = {}
    for f in dataclasses.fields(report):
        rule = f.metadata.get(JSON_META, {})
        if rule.get("omit"):
            continue
        value = getattr(report, f.name)
        convert = rule.get("convert")
        out[rule.get("key") or f.name] = convert(value) if convert else json_value(value)
    for cls in reversed(type(report).__mro__):
        for name in vars(cls).get("JSON_EXTRA", ()):
            out[name] = json_value(getattr(report, name))
    return out


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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return report_json(value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(json_value(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    raise TypeError(f"no JSON rule for {type(value).__name__}: add one to cas.report")
