"""The words of a path by their definition, for the tests to hold `packer.pathwords` and the
search's path scores against."""

from __future__ import annotations

import re

from cas.words import split_name


def path_words_by_definition(path: str) -> set[str]:
    """Each piece between ``/``, ``.`` and ``-``, lowercased, and its words
    (`cas.words.split_name`)."""
    out: set[str] = set()
    for piece in re.split(r"[/.\-]", path):
        if piece:
            out.add(piece.lower())
            out.update(split_name(piece))
    return out
