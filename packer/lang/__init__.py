"""What cas knows of each language, in one place: the record (`packer.lang.record`) and the
table with its lookups (`packer.lang.registry`). Every stage of the packer asks here."""

from __future__ import annotations

from packer.lang.record import Language
from packer.lang.registry import (
    LANGUAGES,
    fence_for,
    is_readme,
    kind_for,
    language_for,
    named,
    record_for,
)

__all__ = [
    "LANGUAGES",
    "Language",
    "fence_for",
    "is_readme",
    "kind_for",
    "language_for",
    "named",
    "record_for",
]
