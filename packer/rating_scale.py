"""The rating's version and scale, apart from the module that computes it (`packer.rating`).

A pack whose inputs did not change is reused by its memo key, which names the rating's version:
keeping these two numbers here lets that path run without loading numpy.
"""

from __future__ import annotations

from typing import Final

RATING_VERSION: Final = "2"
AVERAGE: Final = 10_000  # the rating of a file with an average share of attention
