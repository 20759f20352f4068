"""The rows of a benchmark's printed table, for the benchmarks' smoke tests."""

from __future__ import annotations

import re


def table_rows(stdout: str, first_title: str, key: int = 0) -> dict[str, dict[str, str]]:
    """The rows of the table whose header line starts with ``first_title``, each a {column
    title: cell} map, by the cell in column ``key``. Cells are separated by two or more spaces;
    no cell but the last (the note) holds two spaces in a row, and the table ends at the first
    empty line."""
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(first_title + " "))
    titles = re.split(r"\s{2,}", lines[head].strip())
    rows = {}
    for line in lines[head + 2 :]:
        if not line.strip():
            break
        # A stage's label starts with two spaces: the strip drops them before the split.
        cells = re.split(r"\s{2,}", line.strip(), maxsplit=len(titles) - 1)
        cells += [""] * (len(titles) - len(cells))  # an empty note
        rows[cells[key]] = dict(zip(titles, cells, strict=True))
    return rows
