"""Text helpers every summarizer shares: one-line text, clipping, first sentences, plain lines.

A summary line never holds a line break of any kind (a reader would split it), never ends in
whitespace, and a long one is clipped with "..." rather than wrapped. Prose is reduced to its first
full sentence: that is what a reader needs to decide whether to look further.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Final

from packer.outline import Symbol

LINE_WIDTH: Final = 200  # a declaration line
SENTENCE_WIDTH: Final = 200  # a doc sentence
VALUE_WIDTH: Final = 60  # a constant's or a key's value
MAPPING_WIDTH: Final = 300  # a mapping shown as its entries (a configuration's defaults)
PLAIN_LINES: Final = 20  # lines a summary of unknown text shows
PLAIN_WIDTH: Final = 160

# Every character that some reader takes as a line break, and the other C0 controls but tab.
_BREAKS = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_SENTENCE_END = re.compile(r"[.!?](?=[\s)\]\"']|$)")
# Words ending in "." that do not end a sentence.
_ABBREVIATIONS: Final = frozenset(
    {
        "e.g.",
        "i.e.",
        "etc.",
        "vs.",
        "cf.",
        "mr.",
        "mrs.",
        "dr.",
        "no.",
        "st.",
        "approx.",
        "eg.",
        "ie.",
    }
)


def valid(text: str) -> str:
    """``text`` with lone surrogates replaced, so every line derived from it encodes as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def clean(line: str) -> str:
    """One output line: line breaks and control characters become spaces, no trailing space."""
    return _BREAKS.sub(" ", line).rstrip()


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) made one space."""
    return " ".join(text.split())


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 1)].rstrip() + "..."


def first_sentence(paragraph: str, width: int = SENTENCE_WIDTH) -> str:
    """The first full sentence of ``paragraph`` on one line, clipped to ``width``."""
    paragraph = one_line(paragraph[: width * 4])
    for m in _SENTENCE_END.finditer(paragraph):
        word = paragraph[: m.end()].rsplit(" ", 1)[-1].lower().lstrip("(\"'`")
        if word in _ABBREVIATIONS or len(word) <= 2:
            continue  # "e.g." or an initial, not the end of a sentence
        return clip(paragraph[: m.end()], width)
    return clip(paragraph, width)


def paragraphs(lines: Iterable[str], limit: int = 6) -> Iterator[str]:
    """The first ``limit`` paragraphs of ``lines`` (blank lines separate them), each joined
    into one line; lazily, so a reader that stops early reads no further."""
    current: list[str] = []
    fence = ""
    count = 0
    for line in lines:
        stripped = line.strip()
        if fence or stripped.startswith(("```", "~~~")):
            # A fenced example is code, not a paragraph, whatever blank lines it holds.
            if not fence:
                fence = stripped[:3]
            elif stripped.startswith(fence):
                fence = ""
            continue
        if stripped:
            if len(current) < 40:
                current.append(stripped)
            continue
        if current:
            yield " ".join(current)
            current = []
            count += 1
            if count == limit:
                return
    if current:
        yield " ".join(current)


_MD_IMAGE = re.compile(r"!\[[^\]\n]{0,300}\](?:\([^)\n]{0,500}\)|\[[^\]\n]{0,100}\])?")
_MD_LINK = re.compile(r"\[([^\]\n]{0,300})\](?:\([^)\n]{0,500}\)|\[[^\]\n]{0,100}\])")
_HTML = re.compile(
    r"</?(?:a|b|i|p|br|hr|div|span|img|em|strong|code|pre|sup|sub|details|summary|picture|"
    r"source|table|tr|td|th|ul|ol|li|h[1-6]|center|small|kbd)\b[^<>\n]{0,300}>|&[a-z]{2,8};",
    re.IGNORECASE,
)
# A paragraph that is code, not prose: a doctest, a shell line, an import, an assignment, a
# call on its own, a fence, a Markdown link definition.
_CODE = re.compile(
    r"(?:>>>|\$ |```|~~~|import\s|from\s+\S+\s+import\s|assert\s|\[[^\]\n]+\]:\s|"
    r"[\w.\[\]'\"]+\s*=[^=]|[\w.]+\([^()]*\)\s*$)"
)
_WORD = re.compile(r"[^\W\d_]{2,}")  # a word of two letters or more


def prose(paragraph: str) -> str:
    """``paragraph`` as a reader sees it (Markdown images, link targets and HTML markup taken
    out), or "" if it is not prose: code, or badges and markup with hardly a word."""
    if _CODE.match(paragraph):
        return ""
    text = one_line(_HTML.sub(" ", _MD_LINK.sub(r"\1", _MD_IMAGE.sub("", paragraph))))
    return text if _WORD.search(text[:400]) else ""


def first_prose_sentence(lines: Iterable[str]) -> str:
    """The first sentence of the first paragraph of ``lines`` that is prose, or "" if none is
    (a doc that is only an example says nothing a signature does not)."""
    for paragraph in paragraphs(lines):
        text = prose(paragraph)
        if text:
            return first_sentence(text)
    return ""


def plain_symbols(text: str, first_line: int = 1) -> list[Symbol]:
    """The first non-empty lines of ``text`` as "text" symbols: the summary of a file no
    summarizer understood (the outline's header says how many lines the file has)."""
    out: list[Symbol] = []
    start, number = 0, first_line
    while start <= len(text) and len(out) < PLAIN_LINES:
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start : min(end, start + PLAIN_WIDTH * 2)]
        if line.strip():
            shown = clip(clean(line), PLAIN_WIDTH)
            out.append(Symbol(f"line {number}", "text", (shown,), line=number))
        start, number = end + 1, number + 1
    return out


def fit_entries(entries: list[str], width: int = MAPPING_WIDTH) -> tuple[list[int], bool]:
    """Which of a mapping's ``entries`` (its ``key: value`` texts, "" for one that cannot be
    shown) a line of ``width`` shows: all that can be when they fit, else the shortest first
    (then by position); returned in position order, with whether any was left out."""
    shown = [i for i, e in enumerate(entries) if e]
    if sum(len(entries[i]) + 2 for i in shown) > width:
        room, chosen = width, []
        for i in sorted(shown, key=lambda i: (len(entries[i]), i)):
            if len(entries[i]) + 2 > room:
                break
            chosen.append(i)
            room -= len(entries[i]) + 2
        shown = sorted(chosen)
    return shown, len(shown) < len(entries)
