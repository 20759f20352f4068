"""The key facts of a project's metadata file: what it is, what it needs, how it is run.

An agent's first questions about a project are often answered by a dozen lines of its
`pyproject.toml`, `package.json` or `Cargo.toml`: its name and version, the language version it
requires, what it depends on, the commands it installs (console scripts, `bin`), its default
features and module type. On a large project, or at a small budget, the metadata file as a whole
is worth little beside the code and is omitted; those lines are then nowhere in the pack.

`key_facts` picks them out of the file's outline (`packer.summaries`: the TOML and JSON
outliners give each table or object a section and each key a symbol under it), by where they
sit, for the pricing (`packer.pricing`) to value as the project's own card: a pack of the
project shows them (its summary of the metadata file keeps them) as readily as the README's
title. Only the project's own metadata file at the top of the tree is read so
(`is_project_metadata`); a sub-package's is one configuration file among others.
"""

from __future__ import annotations

from typing import Final

from packer.outline import Outline

# What each key fact is worth, in percent of the value of the project's best-valued file.
FACT_SHARE: Final = 1
# The most facts the entries of one table or object are worth together.
TABLE_FACTS: Final = 4
# The rule reason of a project's metadata file (`packer.rules`).
METADATA_REASON: Final = "project metadata"

# TOML: (table, key) pairs that are key facts; a key "*" takes every key of that table; a
# table ending in ".*" every table below it (`[project.entry-points.pytest11]`).
_TOML: Final[dict[str, frozenset[str]]] = {
    # pyproject.toml (PEP 621) and Poetry's table
    "project": frozenset({"name", "version", "requires-python", "dependencies"}),
    "project.scripts": frozenset({"*"}),
    "project.gui-scripts": frozenset({"*"}),
    "project.entry-points.*": frozenset({"*"}),
    "project.optional-dependencies": frozenset({"*"}),
    "tool.poetry": frozenset({"name", "version"}),
    "tool.poetry.dependencies": frozenset({"*"}),
    "tool.poetry.scripts": frozenset({"*"}),
    # Cargo.toml
    "package": frozenset({"name", "version", "edition", "rust-version"}),
    "features": frozenset({"default"}),
    "dependencies": frozenset({"*"}),
}
_TOML_BELOW: Final = tuple((t[:-1], keys) for t, keys in _TOML.items() if t.endswith(".*"))
# package.json: top-level keys, and the objects whose every key is a fact.
_JSON_TOP: Final = frozenset(
    {"name", "version", "type", "main", "module", "types", "bin", "engines", "dependencies"}
    | {"peerDependencies"}
)
_JSON_ALL_BELOW: Final = frozenset({"bin", "engines", "dependencies", "peerDependencies"})


def is_project_metadata(path: str, reason: str) -> bool:
    """Whether ``path`` is the project's own metadata file: at the top of the tree, under the
    metadata rule."""
    return "/" not in path and reason.split(";", maxsplit=1)[0] == METADATA_REASON


def key_facts(o: Outline) -> dict[int, int]:
    """The key facts of a project among ``o``'s symbols (none for an outline that is not TOML
    or JSON): each one's index, and how many facts share one fact's worth. A key named for
    itself (`requires-python`) is a fact alone; the entries of a table or object that is a fact
    as a whole (`[project.scripts]`, `"dependencies"`) are each one while there are at most
    `TABLE_FACTS` of them, and share that many beyond, so a long list of dependencies is worth
    no more than a few lines of their own."""
    if o.lang == "toml":
        return _shared(o, _toml_facts(o))
    if o.lang == "json":
        return _shared(o, _json_facts(o))
    return {}


def _shared(o: Outline, facts: list[tuple[int, bool]]) -> dict[int, int]:
    """``facts`` (index, whether it is an entry of a whole table), each with its share."""
    entries: dict[int, int] = {}
    for i, whole in facts:
        if whole:
            parent = o.symbols[i].parent
            entries[parent] = entries.get(parent, 0) + 1
    return {
        i: max(1, -(-entries[o.symbols[i].parent] // TABLE_FACTS)) if whole else 1
        for i, whole in facts
    }


def _toml_facts(o: Outline) -> list[tuple[int, bool]]:
    out: list[tuple[int, bool]] = []
    for i, s in enumerate(o.symbols):
        if s.kind != "key" or s.parent < 0:
            continue
        table = o.symbols[s.parent].name
        keys = _TOML.get(table)
        if keys is None:
            keys = next((k for p, k in _TOML_BELOW if table.startswith(p)), None)
        if keys is not None and ("*" in keys or s.name in keys):
            out.append((i, "*" in keys))
    return out


def _json_facts(o: Outline) -> list[tuple[int, bool]]:
    out: list[tuple[int, bool]] = []
    for i, s in enumerate(o.symbols):
        if s.parent < 0:
            if s.name in _JSON_TOP and s.kind == "key":
                out.append((i, False))
            continue
        parent = o.symbols[s.parent]
        if parent.parent < 0 and parent.name in _JSON_ALL_BELOW and s.kind == "key":
            out.append((i, True))
    return out
