"""Rendering a manifest as text an agent reads: LITE, FULL or SPLIT, in markdown, xml or plain.

A render is built from pieces (header, map, one index line per file, one section per file,
omitted and withheld lists). Every piece starts with a character that is not whitespace and ends
with a newline, which are points where the tokenizers' pre-tokenization always splits, so the
token count of a render is exactly the sum of its pieces' counts. The builder relies on that to
price each file at each tier without rendering the whole pack per step, and then checks the real
total anyway.

Bodies come from the store only (a ``fetch`` callable), never from the working tree, so a pack
renders on any machine that has the store.

Names (paths, folders, reasons that may quote a link target) go through `cas.display.shown`:
a name with a newline, a CR, ESC or another control or bidirectional character is quoted with
escapes, so no name can start a line of a render (forge a heading, say) or act on a terminal.
In markdown a name sits in a code span fenced longer than any run of backticks inside it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from cas.digest import Digest
from cas.display import shown
from cas.manifest import Entry, Manifest

FORMATS: Final = ("markdown", "xml", "plain")
MODES: Final = ("lite", "full", "split")
MAP_DEPTH: Final = 2
# Above this many directory lines, the map keeps only the top level.
MAP_MAX_LINES: Final = 60

Fetch = Callable[[Digest], str]

_LANGS: Final = {
    "py": "python", "pyi": "python", "md": "markdown", "rst": "rst", "ts": "typescript",
    "tsx": "tsx", "js": "javascript", "jsx": "jsx", "mjs": "javascript", "go": "go",
    "rs": "rust", "java": "java", "kt": "kotlin", "c": "c", "h": "c", "cpp": "cpp",
    "hpp": "cpp", "cc": "cpp", "cs": "csharp", "rb": "ruby", "php": "php", "swift": "swift",
    "sh": "bash", "bash": "bash", "toml": "toml", "yaml": "yaml", "yml": "yaml",
    "json": "json", "sql": "sql", "html": "html", "css": "css", "xml": "xml", "txt": "text",
}  # fmt: skip


def fence_language(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return _LANGS.get(ext, "")


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)


def _fenced(text: str, lang: str) -> str:
    """A markdown code block that no backtick run inside ``text`` can close early."""
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{lang}\n{body}{fence}\n\n"


def _code(name: str) -> str:
    """A name as a markdown code span: shown safely, and fenced so no backtick in it closes it."""
    text = shown(name)
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (_longest_run(text, "`") + 1)
    return f"{fence} {text} {fence}"  # one space each side, which markdown strips


def _names(names: Sequence[str]) -> str:
    return ", ".join(shown(n) for n in names)


def _xml_attr(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _cdata(text: str) -> str:
    body = text.replace("]]>", "]]]]><![CDATA[>")
    return f"<![CDATA[{body}]]>"


@dataclass(frozen=True, slots=True)
class Header:
    scope: str
    target: str | None
    tokenizer: str
    budget_max: int
    counts: tuple[int, int, int, int, int]  # files, high, medium, low (not withheld), withheld


def header_for(m: Manifest) -> Header:
    tiers = Counter(e.tier for e in m.entries if not e.withheld)
    withheld = sum(1 for e in m.entries if e.withheld)
    return Header(
        m.scope,
        m.target,
        m.tokenizer,
        m.budget_max,
        (len(m.entries), tiers["high"], tiers["medium"], tiers["low"], withheld),
    )


class Renderer:
    """The pieces of one format. Subclasses differ only in syntax."""

    fmt = "markdown"

    def header(self, h: Header, mode: str) -> str:
        files, high, medium, low, withheld = h.counts
        title = f"# Context pack `{h.scope}`" + (f" for `{h.target}`" if h.target else "")
        name = f"{h.scope}.{h.target}" if h.target else h.scope
        if mode == "lite":
            what = (
                f"{files} files: {high} inline in full, {medium} summarized, {low} omitted, "
                f"{withheld} withheld as secrets. Budget: at most {h.budget_max} tokens "
                f"({h.tokenizer})."
            )
        else:
            what = f"{files} files, every one that is not a secret inline in full."
        return (
            f"{title}\n{what}\nFetch an omitted file with `cas get DIGEST`; "
            f"`cas show {name}` lists every path with its digest.\n\n"
        )

    def map_section(self, lines: Sequence[tuple[str, int]]) -> str:
        if not lines:
            return ""
        body = "".join(f"- {_code(d)} {n} file{'s' if n != 1 else ''}\n" for d, n in lines)
        return f"## Map\n{body}\n"

    def index_open(self) -> str:
        return "## Index\n"

    def index_line(self, e: Entry) -> str:
        return f"- {_code(e.path)} {e.tier}: {shown(e.reason or '')}\n"

    def index_close(self) -> str:
        return "\n"

    def files_open(self) -> str:
        return "## Files\n\n"

    def section_head(self, e: Entry, summary: bool) -> str:
        return f"### {_code(e.path)}" + (" (summary)" if summary else "") + "\n"

    def section_body(self, text: str, lang: str) -> str:
        return _fenced(text, lang)

    def section_close(self) -> str:
        return ""

    def files_close(self) -> str:
        return ""

    def omitted_open(self) -> str:
        return "## Omitted\n"

    def omitted_line(self, e: Entry) -> str:
        return f"- {_code(e.path)} {shown(e.reason or 'low')}\n"

    def omitted_group(self, folder: str, reason: str, names: Sequence[str] | int) -> str:
        listed = f"{names} files" if isinstance(names, int) else _names(names)
        return f"- {_code(folder)} {shown(reason)}: {listed}\n"

    def omitted_close(self) -> str:
        return "\n"

    def withheld_open(self) -> str:
        return "## Withheld\n"

    def withheld_line(self, e: Entry) -> str:
        return f"- {_code(e.path)} {shown(e.reason or 'secret')}\n"

    def withheld_close(self) -> str:
        return "\n"

    def footer(self) -> str:
        return ""


class XmlRenderer(Renderer):
    fmt = "xml"

    def header(self, h: Header, mode: str) -> str:
        files, high, medium, low, withheld = h.counts
        target = f' target="{_xml_attr(h.target)}"' if h.target else ""
        name = f"{h.scope}.{h.target}" if h.target else h.scope
        return (
            f'<pack scope="{_xml_attr(h.scope)}"{target} mode="{mode}" files="{files}" '
            f'high="{high}" medium="{medium}" low="{low}" withheld="{withheld}" '
            f'budget-max="{h.budget_max}" tokenizer="{h.tokenizer}">\n'
            f"<fetch>cas get DIGEST; cas show {_xml_attr(name)} lists every digest</fetch>\n"
        )

    def map_section(self, lines: Sequence[tuple[str, int]]) -> str:
        if not lines:
            return ""
        body = "".join(f'<dir path="{_xml_attr(shown(d))}" files="{n}"/>\n' for d, n in lines)
        return f"<map>\n{body}</map>\n"

    def index_open(self) -> str:
        return "<index>\n"

    def index_line(self, e: Entry) -> str:
        why = _xml_attr(shown(e.reason or ""))
        return f'<entry path="{_xml_attr(shown(e.path))}" tier="{e.tier}" reason="{why}"/>\n'

    def index_close(self) -> str:
        return "</index>\n"

    def files_open(self) -> str:
        return "<files>\n"

    def section_head(self, e: Entry, summary: bool) -> str:
        kind = ' summary="true"' if summary else ""
        return f'<file path="{_xml_attr(shown(e.path))}" tier="{e.tier}"{kind}>\n'

    def section_body(self, text: str, lang: str) -> str:
        body = text if text.endswith("\n") or not text else text + "\n"
        return _cdata(body) + "\n"

    def section_close(self) -> str:
        return "</file>\n"

    def files_close(self) -> str:
        return "</files>\n"

    def omitted_open(self) -> str:
        return "<omitted>\n"

    def omitted_line(self, e: Entry) -> str:
        path, why = _xml_attr(shown(e.path)), _xml_attr(shown(e.reason or "low"))
        return f'<file path="{path}" reason="{why}"/>\n'

    def omitted_group(self, folder: str, reason: str, names: Sequence[str] | int) -> str:
        listed = f"{names} files" if isinstance(names, int) else _names(names)
        return (
            f'<group dir="{_xml_attr(shown(folder))}" reason="{_xml_attr(shown(reason))}">'
            f"{_xml_attr(listed)}</group>\n"
        )

    def omitted_close(self) -> str:
        return "</omitted>\n"

    def withheld_open(self) -> str:
        return "<withheld>\n"

    def withheld_line(self, e: Entry) -> str:
        path, why = _xml_attr(shown(e.path)), _xml_attr(shown(e.reason or "secret"))
        return f'<file path="{path}" reason="{why}"/>\n'

    def withheld_close(self) -> str:
        return "</withheld>\n"

    def footer(self) -> str:
        return "</pack>\n"


class PlainRenderer(Renderer):
    fmt = "plain"

    def header(self, h: Header, mode: str) -> str:
        return (
            Renderer.header(self, h, mode)
            .replace("# Context pack", "CONTEXT PACK", 1)
            .replace("`", "")
        )

    def map_section(self, lines: Sequence[tuple[str, int]]) -> str:
        if not lines:
            return ""
        body = "".join(f"  {shown(d)} ({n})\n" for d, n in lines)
        return f"MAP\n{body}\n"

    def index_open(self) -> str:
        return "INDEX\n"

    def index_line(self, e: Entry) -> str:
        return f"* {shown(e.path)} [{e.tier}] {shown(e.reason or '')}\n"

    def files_open(self) -> str:
        return "FILES\n\n"

    def section_head(self, e: Entry, summary: bool) -> str:
        return f"==== {shown(e.path)}" + (" (summary)" if summary else "") + " ====\n"

    def section_body(self, text: str, lang: str) -> str:
        body = text if text.endswith("\n") or not text else text + "\n"
        return f"{body}==== end ====\n\n"

    def omitted_open(self) -> str:
        return "OMITTED\n"

    def omitted_line(self, e: Entry) -> str:
        return f"* {shown(e.path)} ({shown(e.reason or 'low')})\n"

    def omitted_group(self, folder: str, reason: str, names: Sequence[str] | int) -> str:
        listed = f"{names} files" if isinstance(names, int) else _names(names)
        return f"* {shown(folder)} ({shown(reason)}): {listed}\n"

    def withheld_open(self) -> str:
        return "WITHHELD\n"

    def withheld_line(self, e: Entry) -> str:
        return f"* {shown(e.path)} ({shown(e.reason or 'secret')})\n"


RENDERERS: Final[dict[str, Renderer]] = {
    "markdown": Renderer(),
    "xml": XmlRenderer(),
    "plain": PlainRenderer(),
}


def renderer(fmt: str) -> Renderer:
    return RENDERERS[fmt]


def map_lines(paths: Iterable[str], *, depth: int = MAP_DEPTH) -> list[tuple[str, int]]:
    """(directory/, file count below it) for directories up to ``depth`` levels, sorted."""
    counts: Counter[str] = Counter()
    for path in paths:
        parts = path.split("/")[:-1]
        if not parts:
            counts["./"] += 1
            continue
        for level in range(1, min(depth, len(parts)) + 1):
            counts["/".join(parts[:level]) + "/"] += 1
    lines = sorted(counts.items(), key=lambda kv: kv[0].encode("utf-8"))
    if len(lines) > MAP_MAX_LINES and depth > 1:
        return map_lines(paths, depth=depth - 1)
    return lines


def _base_reason(e: Entry) -> str:
    return (e.reason or "low").split(", demoted")[0]


def low_pieces(r: Renderer, entries: Sequence[Entry], level: int) -> list[str]:
    """The omitted list at a compaction level: 0 one line per file; 1 one line per folder and
    reason with file names; 2 one line per folder and reason with a count; 3 one line per
    top-level folder with a count; 4 a single line with the count."""
    if not entries:
        return []
    if level == 0:
        return [r.omitted_line(e) for e in entries]
    if level >= 3:
        tops: dict[str, int] = {}
        for e in entries:
            top = e.path.split("/", 1)[0] + "/" if "/" in e.path else "./"
            tops[top] = tops.get(top, 0) + 1
        if level == 3:
            names = sorted(tops, key=lambda k: k.encode("utf-8"))
            return [r.omitted_group(k, "omitted", tops[k]) for k in names]
        return [r.omitted_group("./", "omitted in all", len(entries))]
    groups: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        folder, _, name = e.path.rpartition("/")
        groups.setdefault((folder + "/" if folder else "./", _base_reason(e)), []).append(name)
    keys = sorted(groups, key=lambda k: (k[0].encode("utf-8"), k[1].encode("utf-8")))
    if level == 1:
        return [r.omitted_group(f, why, groups[(f, why)]) for f, why in keys]
    return [r.omitted_group(f, why, len(groups[(f, why)])) for f, why in keys]


@dataclass(frozen=True, slots=True)
class Layout:
    """Everything a LITE render consists of, in order."""

    head: list[str]
    index: list[str]
    sections: list[str]
    tail: list[str]

    def text(self) -> str:
        return "".join(self.head + self.index + self.sections + self.tail)


def lite_layout(m: Manifest, fetch: Fetch, fmt: str = "markdown", *, low_level: int = 0) -> Layout:
    r = renderer(fmt)
    h = header_for(m)
    head = [r.header(h, "lite"), r.map_section(map_lines(e.path for e in m.entries))]
    shown = [e for e in m.entries if e.tier in ("high", "medium")]
    index = [r.index_open(), *(r.index_line(e) for e in shown), r.index_close()] if shown else []
    sections: list[str] = []
    if shown:
        sections.append(r.files_open())
        for e in shown:
            sections.extend(entry_section(r, e, fetch))
        sections.append(r.files_close())
    tail: list[str] = []
    low = [e for e in m.entries if e.tier == "low" and not e.withheld]
    if low:
        tail += [r.omitted_open(), *low_pieces(r, low, low_level), r.omitted_close()]
    withheld = [e for e in m.entries if e.withheld]
    if withheld:
        tail += [r.withheld_open(), *(r.withheld_line(e) for e in withheld), r.withheld_close()]
    tail.append(r.footer())
    return Layout([p for p in head if p], index, sections, [p for p in tail if p])


def entry_section(r: Renderer, e: Entry, fetch: Fetch) -> list[str]:
    if e.tier == "medium" and e.summary is not None:
        text = fetch(e.summary)
        return [r.section_head(e, True), r.section_body(text, ""), r.section_close()]
    if e.digest is None:
        return []
    text = fetch(e.digest)
    return [
        r.section_head(e, False),
        r.section_body(text, fence_language(e.path)),
        r.section_close(),
    ]


def render_lite(m: Manifest, fetch: Fetch, fmt: str = "markdown") -> str:
    level = int(m.totals.get("low_level", 0)) if isinstance(m.totals.get("low_level"), int) else 0
    return lite_layout(m, fetch, fmt, low_level=level).text()


def inlined_in_full(e: Entry) -> bool:
    """FULL inlines every file but secrets, binaries and files too large to be text for an agent."""
    why = e.reason or ""
    return not e.withheld and not why.startswith(("binary", "large file"))


def render_full(m: Manifest, fetch: Fetch, fmt: str = "markdown") -> str:
    r = renderer(fmt)
    shown = [e for e in m.entries if inlined_in_full(e)]
    parts = [r.header(header_for(m), "full"), r.map_section(map_lines(e.path for e in m.entries))]
    parts.append(r.files_open())
    for e in shown:
        assert e.digest is not None
        text = fetch(e.digest)
        parts += [r.section_head(e, False), r.section_body(text, fence_language(e.path))]
        parts.append(r.section_close())
    parts.append(r.files_close())
    rest = [e for e in m.entries if not e.withheld and not inlined_in_full(e)]
    if rest:
        parts += [r.omitted_open(), *(r.omitted_line(e) for e in rest), r.omitted_close()]
    withheld = [e for e in m.entries if e.withheld]
    if withheld:
        parts += [r.withheld_open(), *(r.withheld_line(e) for e in withheld), r.withheld_close()]
    parts.append(r.footer())
    return "".join(p for p in parts if p)


def section_of(path: str) -> str:
    """SPLIT groups files by top-level folder; files at the root form the ``_root`` section."""
    return path.split("/", 1)[0] if "/" in path else "_root"


def render_split(
    m: Manifest, fetch: Fetch, fmt: str = "markdown", mode: str = "lite"
) -> dict[str, str]:
    """One document per top-level folder plus an INDEX; each part rendered in ``mode``."""
    ext = {"markdown": "md", "xml": "xml", "plain": "txt"}[fmt]
    groups: dict[str, list[Entry]] = {}
    for e in m.entries:
        groups.setdefault(section_of(e.path), []).append(e)
    out: dict[str, str] = {}
    listing = []
    for name in sorted(groups, key=lambda s: s.encode("utf-8")):
        part = replace(m, entries=tuple(groups[name]))
        text = render_full(part, fetch, fmt) if mode == "full" else render_lite(part, fetch, fmt)
        out[f"{name}.{ext}"] = text
        listing.append(f"- {shown(f'{name}.{ext}')}: {len(groups[name])} files\n")
    r = renderer(fmt)
    head = r.header(header_for(m), "lite" if mode != "full" else "full")
    out[f"INDEX.{ext}"] = head + "## Sections\n" + "".join(listing) + "\n" + r.footer()
    return out
