"""The outline of a file: what its summary can show, symbol by symbol.

A summarizer (``packer/summaries/``) reads a file once and returns an `Outline`: the lines that
always head the file's summary (what the file is for, what a package re-exports) and its symbols
in reading order, each with the lines that show it (a signature, the first sentence of its doc, a
constant with its value) and the symbol that encloses it. Reading order is source order, except
where a language's summarizer puts a file's public names first (Go: exported declarations before
unexported ones); a symbol always comes after the symbol that encloses it. Fitting decides which
symbols a summary keeps, from their ratings; `render` writes the summary for that choice. A symbol
is shown with the lines of every symbol that encloses it, so a method never appears without its
class.

Outlines are cached by content digest (`encode`/`decode`), so every field is plain data.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

import msgpack

# What a symbol is. Summarizers use the closest kind; rating and fitting read only a few of them
# (a container's lines are worth showing for its members' sake).
KINDS: Final = (
    "class",  # classes, structs, records, traits, interfaces, protocols, modules (Ruby)
    "type",  # type aliases, enums, unions, typedefs
    "function",
    "method",
    "field",  # attributes, struct and interface fields, enum members, properties
    "constant",  # module constants, class attributes with a value, Go consts, #defines
    "variable",
    "export",  # a re-export or an exported binding (`export { a as b }`, `pub use`)
    "import",  # the line listing the modules a file imports (one symbol, so it can be dropped)
    "section",  # a document heading, a configuration table
    "key",  # a configuration key
    "text",  # lines of a file no summarizer understood
)
CONTAINERS: Final = frozenset({"class", "section"})


@dataclass(frozen=True, slots=True)
class Symbol:
    """One declaration (or section) a summary may show."""

    name: str  # as code refers to it: "Option", "Execute", "exit_code"; a heading's title
    kind: str  # one of KINDS
    lines: tuple[str, ...]  # shown for it, indentation included, without its members' lines
    # The index in `Outline.symbols` of the enclosing symbol (always a smaller one); -1 at top.
    parent: int = -1
    exported: bool = True  # part of the file's public surface by its language's rules
    line: int = 0  # 1-based line of the declaration in the source; 0 when unknown (JSON keys)


@dataclass(frozen=True, slots=True)
class Outline:
    """A file's summary material: a head always shown, then symbols in reading order."""

    lang: str  # the language the summarizer read ("python", "go", "markdown", "text", ...)
    source_lines: int  # lines of the source file
    head: tuple[str, ...] = ()  # purpose line, `__all__`/re-exports, imports
    symbols: tuple[Symbol, ...] = ()

    def header(self) -> str:
        n = self.source_lines
        return f"# summary ({self.lang}, {n} line{'' if n == 1 else 's'})"

    def ancestors(self, index: int) -> list[int]:
        """The indices of the symbols enclosing ``index``, outermost first."""
        out: list[int] = []
        parent = self.symbols[index].parent
        while parent >= 0:
            out.append(parent)
            parent = self.symbols[parent].parent
        out.reverse()
        return out

    def closure(self, keep: Collection[int]) -> list[int]:
        """``keep`` with every enclosing symbol added, in source order."""
        shown: set[int] = set()
        for i in keep:
            if 0 <= i < len(self.symbols):
                shown.add(i)
                shown.update(self.ancestors(i))
        return sorted(shown)


def render(outline: Outline, keep: Collection[int] | None = None) -> str:
    """The summary text: header, head lines, then the kept symbols (every one when ``keep`` is
    None) with their enclosing symbols, in source order. When symbols were left out, a last line
    says how many. Ends with exactly one newline; no line is empty."""
    indices = list(range(len(outline.symbols))) if keep is None else outline.closure(keep)
    lines = [outline.header(), *outline.head]
    for i in indices:
        lines.extend(outline.symbols[i].lines)
    left = len(outline.symbols) - len(indices)
    if left > 0:
        lines.append(f"... ({left} more symbol{'' if left == 1 else 's'} not shown)")
    return "\n".join(line for line in lines if line.strip()) + "\n"


def encode(outline: Outline) -> bytes:
    symbols = [
        [s.name, s.kind, list(s.lines), s.parent, s.exported, s.line] for s in outline.symbols
    ]
    data: bytes = msgpack.packb(
        [outline.lang, outline.source_lines, list(outline.head), symbols], use_bin_type=True
    )
    return data


def decode(data: bytes) -> Outline | None:
    """The outline `encode` wrote, or None for bytes that are not one (a damaged cache entry)."""
    try:
        lang, source_lines, head, symbols = msgpack.unpackb(data, raw=False)
        if any(not -1 <= int(s[3]) < i for i, s in enumerate(symbols)):
            return None  # a parent after its member: not an outline a summarizer wrote
        return Outline(
            str(lang),
            int(source_lines),
            tuple(str(h) for h in head),
            tuple(
                Symbol(str(n), str(k), tuple(str(x) for x in ls), int(p), bool(e), int(ln))
                for n, k, ls, p, e, ln in symbols
            ),
        )
    except (ValueError, TypeError, IndexError, msgpack.ExtraData):
        return None
