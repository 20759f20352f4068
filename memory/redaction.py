"""Secrets kept out of a memory and out of what it says about its input.

Text from outside reaches a memory laid out in a file: a log entry as a list item whose later
lines are indented, a fact's value as one line after ``value: ``. `cut` scans a text in the
views a reader may meet it in, each with every byte mapped back to the text:

* as it is stored (its `Layout`: what comes before its first line, what stands for each line
  break);
* line by line, as it was given;
* its lines joined with a space (how a fact stores them, how summaries and compaction show an
  entry), joined with nothing (a token or a URL broken at a line end reads whole again), and
  joined as written (a break with white space beside it as that space, a bare one as nothing).

A secret found in any view is cut from the text (`packer.secrets.redact`: its marker, never its
value), and the views are made and scanned again until none finds anything; a finding with no
exact span, or a text that does not settle within `MAX_ROUNDS`, withholds the text whole. So
what is stored is exactly what was scanned last, and scanned clean. One reading per view: a
secret broken by two line breaks that must be read differently (one as a space, the other as
nothing, against how they are written) can still pass unseen.

Names are not cut: a fact key or a scope id that holds a secret is refused (`refuse_secret`),
since a key with its secret replaced by a marker would collide with another and a name is shown
wherever the memory is. Input an error line repeats is shown through `redacted`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from cas.errors import SecretInName
from packer.secrets import SecretFinding, marker, redact, scan_secrets

__all__ = [
    "CLOSED",
    "JOINED",
    "LINES",
    "MAX_ROUNDS",
    "WRITTEN",
    "Cut",
    "Layout",
    "cut",
    "redacted",
    "refuse_secret",
    "secret_kinds",
]

# Cutting a secret can make another (the text around a marker reads differently): this many
# scans and cuts at most, then the text is withheld whole.
MAX_ROUNDS: Final = 4


@dataclass(frozen=True, slots=True)
class Layout:
    """How a text is laid out where it is kept: ``prefix`` before its first line, ``joint`` for
    each line break, ``blank`` for a line break before an empty line (None: ``joint``);
    ``trim``: the white space around each line break goes with it (lines read joined)."""

    prefix: str
    joint: str
    blank: str | None = None
    trim: bool = False


LINES: Final = Layout("", "\n")  # line by line, as given
JOINED: Final = Layout("", " ", trim=True)  # lines joined with a space
CLOSED: Final = Layout("", "", trim=True)  # lines joined with nothing
# lines joined as written: a break with white space beside it reads as that space, a bare one
# as nothing (a word broken at a line end)
WRITTEN: Final = Layout("", "")


@dataclass(frozen=True, slots=True)
class Cut:
    """A text with its secrets cut out (None: withheld whole), and the kinds found."""

    text: str | None
    kinds: tuple[str, ...]


def _view(lines: list[bytes], layout: Layout) -> tuple[bytes, list[int]]:
    """``lines`` laid out, and for each byte of the result the offset in the
    text (the lines joined with ``\\n``) it stands for; a joint stands for its line break."""
    prefix = layout.prefix.encode()
    joint = layout.joint.encode()
    blank = joint if layout.blank is None else layout.blank.encode()
    parts = [prefix]
    origin = [0] * len(prefix)
    at = 0
    last = len(lines) - 1
    for k, line in enumerate(lines):
        start, end = at, at + len(line)
        if layout.trim:
            if k:
                start += len(line) - len(line.lstrip())
            if k < last:
                end = max(start, end - (len(line) - len(line.rstrip())))
        if k:
            sep = joint if line else blank
            parts.append(sep)
            origin += [at - 1] * len(sep)
        parts.append(line[start - at : end - at])
        origin += range(start, end)
        at += len(line) + 1
    return b"".join(parts), origin


def cut(text: str, stored: Layout) -> Cut:
    """``text`` (lines separated by ``\\n``) with every secret any view finds cut out, until
    no view finds one (see the module's docstring)."""
    data = text.encode("utf-8", "surrogatepass")
    kinds: set[str] = set()
    views = tuple(dict.fromkeys((stored, LINES, JOINED, CLOSED, WRITTEN)))
    for _round in range(MAX_ROUNDS):
        # What is scanned is what is kept: text that is not UTF-8 is made so first.
        data = data.decode("utf-8", "replace").encode()
        lines = data.split(b"\n")
        spans: list[SecretFinding] = []
        for layout in views:
            view, origin = _view(lines, layout)
            for f in scan_secrets(view):
                kinds.add(f.kind)
                if not f.exact or f.end <= f.start:
                    return Cut(None, tuple(sorted(kinds)))
                spans.append(SecretFinding(f.kind, 0, origin[f.start], origin[f.end - 1] + 1))
        if not spans:
            return Cut(data.decode(), tuple(sorted(kinds)))
        cut_data = redact(data, spans)
        assert cut_data is not None  # every span is exact
        data = cut_data
    return Cut(None, tuple(sorted(kinds)))


def secret_kinds(forms: Iterable[str]) -> tuple[str, ...]:
    """The kinds of secret in any of ``forms`` (the ways one name is written), in any view."""
    kinds: set[str] = set()
    for form in forms:
        kinds.update(cut(form, JOINED).kinds)
    return tuple(sorted(kinds))


def refuse_secret(what: str, forms: Iterable[str], hint: str) -> None:
    """A `SecretInName` when any of ``forms`` holds a secret: the name is never stored, and the
    refusal names the kind of secret, never the value."""
    kinds = secret_kinds(forms)
    if kinds:
        raise SecretInName(what, kinds, hint)


def redacted(text: str) -> str:
    """``text`` as an error line may repeat it: its secrets cut out, or only their kinds when
    they cannot be cut."""
    done = cut(text, JOINED)
    if done.text is not None:
        return done.text
    return marker(", ".join(done.kinds)).decode()
