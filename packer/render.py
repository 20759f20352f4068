"""Rendering a manifest as text an agent reads: LITE, FULL or SPLIT, in markdown, xml or plain.

LITE is what a pack is for: a header (what the pack holds and how to fetch any file), one
section per shown file, most highly rated first (a file in full, or the summary of its best
symbols), then the omitted files (those the fit listed by name, and every other one counted in
its folder's line) and the withheld secrets likewise. FULL inlines every file; SPLIT writes one
document per top-level folder.

A render is built from pieces. Every piece starts with a character that is not whitespace and
ends with a newline, which are points where the tokenizers' pre-tokenization always splits, so
the token count of a render is exactly the sum of its pieces' counts. The builder relies on that
to price each file's section and lines without rendering the whole pack per step, and then
checks the real total anyway.

Bodies come from the store only (a ``fetch`` callable), never from the working tree, so a pack
renders on any machine that has the store.

Names (paths, folders, reasons that may quote a link target) go through `cas.display.shown`:
a name with a newline, a CR, ESC or another control or bidirectional character is quoted with
escapes, so no name can start a line of a render (forge a heading, say) or act on a terminal.
In markdown a name sits in a code span fenced longer than any run of backticks inside it.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final, Protocol

from cas.digest import Digest
from cas.display import more_characters, one_line, shown
from cas.manifest import Entry, Manifest
from packer.lang import fence_for
from packer.projectmap import Folder, project_map

FORMATS: Final = ("markdown", "xml", "plain")
MODES: Final = ("lite", "full", "split")
MAP_DEPTH: Final = 2
# A load's header shows at most this many characters of its question.
QUERY_SHOWN: Final = 500
# Above this many directory lines, the map keeps only the top level.
MAP_MAX_LINES: Final = 60

Fetch = Callable[[Digest], str]


class Named(Protocol):
    """What a file's line in a list shows of it: an `Entry`, or a file still being priced
    (`packer.pricing.Candidate`), which has no entry yet."""

    @property
    def path(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


def fence_language(path: str) -> str:
    """The info string of the code fence ``path``'s body is shown in, by the text after the
    last dot of its name (its language's record, `packer.lang.Language.fences`)."""
    name = path.rsplit("/", 1)[-1]
    return fence_for("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)


def _fenced(text: str, lang: str) -> str:
    """A markdown code block that no backtick run inside ``text`` can close early."""
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{lang}\n{body}{fence}\n\n"


@functools.lru_cache(maxsize=256)
def _code(name: str) -> str:
    """A name as a markdown code span: shown safely, and fenced so no backtick in it closes it.
    The last few are kept: pricing names a file three times in a row (its listed line and both
    headings); a cache of every path would hold tens of MiB on a large tree."""
    text = shown(name)
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (_longest_run(text, "`") + 1)
    return f"{fence} {text} {fence}"  # one space each side, which markdown strips


# A reason as a line shows it: a pack has thousands of files and a few dozen reasons.
_reason = functools.lru_cache(maxsize=1 << 12)(shown)


def _names(names: Sequence[str]) -> str:
    return ", ".join(shown(n) for n in names)


def _files(count: int) -> str:
    return f"{count} file{'' if count == 1 else 's'}"


def _xml_attr(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def _cdata(text: str) -> str:
    body = text.replace("]]>", "]]]]><![CDATA[>")
    return f"<![CDATA[{body}]]>"


def _xml_text(text: str) -> str:
    """``text`` as element content: as it is when nothing in it is markup (no ``<``, no ``&``
    and no ``]]>``, which content may not hold), else in CDATA. Most summaries need none, and
    a CDATA wrapping costs six tokens a file, which counted against every budget in this
    format."""
    return _cdata(text) if "<" in text or "&" in text or "]]>" in text else text


# The reason of an entry of a turn's context left out because the session holds it already,
# unchanged (`packer.load.Loader.load`'s ``held``); the header counts them in one line.
GIVEN: Final = "given earlier in this session, unchanged"


@dataclass(frozen=True, slots=True)
class Header:
    scope: str
    target: str | None
    tokenizer: str
    budget_max: int
    counts: tuple[int, int, int, int, int]  # files, high, medium, low (not withheld), withheld
    query: str | None = None  # a load's question
    sources: tuple[str, ...] = ()  # a load's packs
    given: int = 0  # files a turn's context leaves out as given earlier (`GIVEN`)
    # Served over MCP (`cas mcp`) as the pack of this name: the header names the server's own
    # tools rather than the command line's; None: the command line's `cas cat` and `cas show`.
    mcp: str | None = None


def header_for(m: Manifest) -> Header:
    tiers = Counter(e.tier for e in m.entries if not e.withheld)
    withheld = sum(1 for e in m.entries if e.withheld)
    return Header(
        m.scope,
        m.target,
        m.tokenizer,
        m.budget_max,
        (len(m.entries), tiers["high"], tiers["medium"], tiers["low"], withheld),
        m.query,
        tuple(name for name, _ in m.sources),
        sum(1 for e in m.entries if e.reason == GIVEN),
    )


def _query_line(h: Header) -> str:
    """A load's question, its first `QUERY_SHOWN` characters (the manifest keeps it whole), so
    that however long it is, its share of the load's budget is bounded."""
    if h.query is None:
        return ""
    shown_query = one_line(h.query[:QUERY_SHOWN]) + more_characters(len(h.query) - QUERY_SHOWN)
    given = ""
    if h.given:
        files = "file" if h.given == 1 else "files"
        given = f" {h.given} {files} given earlier in this session, unchanged, not repeated."
    return f"Loaded for the question: {shown_query} (from {', '.join(h.sources)}).{given}\n"


def _reading(h: Header, name: str) -> str:
    """How to read the pack's files: the server's ``read_file`` tool over MCP, else the
    command line."""
    if h.mcp is None:
        return f"Print any file with `cas cat {name} PATH`; `cas show {name}` lists every path."
    # Shorter than the command line's (the name once, not twice): a pack fitted with that one
    # counted stays within its budget when served, whatever its name.
    return f'Read any file with `read_file(pack="{h.mcp}", path=PATH)`.'


def _xml_reading(h: Header, name: str) -> str:
    if h.mcp is None:
        name = _xml_attr(name)
        return f"cas cat {name} PATH prints any file; cas show {name} lists every path"
    text = f'read_file(pack="{h.mcp}", path=PATH) reads any file'
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Renderer:
    """The pieces of one format. Subclasses differ only in syntax."""

    fmt = "markdown"

    def header(self, h: Header, mode: str) -> str:
        files, high, medium, low, withheld = h.counts
        name = f"{h.scope}.{h.target}" if h.target else h.scope
        title = f"# Context pack `{name}`"
        if mode == "lite":
            what = (
                f"{files} files: {high} in full and {medium} summarized below (most important "
                f"first), {low} omitted, {withheld} withheld as secrets; at most {h.budget_max} "
                f"tokens ({h.tokenizer})."
            )
        else:
            what = f"{files} files, every one that is not a secret inline in full."
        return f"{title}\n{_query_line(h)}{what}\n{_reading(h, name)}\n\n"

    def map_section(self, lines: Sequence[tuple[str, int]]) -> str:
        if not lines:
            return ""
        body = "".join(f"- {_code(d)} {n} file{'s' if n != 1 else ''}\n" for d, n in lines)
        return f"## Map\n{body}\n"

    def project_map(self, folders: Sequence[Folder]) -> str:
        """The LITE render's map of a large project (`packer.projectmap`)."""
        if not folders:
            return ""
        body = "".join(
            f"- {_code(f.path)} {_files(f.files)}"
            + (f" ({', '.join(_code(n) for n in f.first)})" if f.first else "")
            + (f": {one_line(f.about)}" if f.about else "")
            + "\n"
            for f in folders
        )
        return f"## Map\nWhere things are: the folders of code that rate highest.\n{body}\n"

    def index_open(self) -> str:
        return "## Index\n"

    def index_line(self, e: Entry) -> str:
        return f"- {_code(e.path)} {e.tier}: {shown(e.reason or '')}\n"

    def index_close(self) -> str:
        return "\n"

    def files_open(self) -> str:
        return "## Files\n\n"

    def section_head(self, path: str, tier: str, summary: bool) -> str:
        return f"### {_code(path)}" + (" (summary)" if summary else "") + "\n"

    def section_body(self, text: str, lang: str) -> str:
        return _fenced(text, lang)

    def section_close(self) -> str:
        return ""

    def files_close(self) -> str:
        return ""

    def omitted_open(self) -> str:
        return "## Omitted\n"

    def omitted_line(self, e: Named) -> str:
        return f"- {_code(e.path)} {_reason(e.reason or 'low')}\n"

    def omitted_group(self, folder: str, count: int, reasons: Sequence[str]) -> str:
        return f"- {_code(folder)} {_files(count)}: {_names(reasons)}\n"

    def omitted_close(self) -> str:
        return "\n"

    def withheld_open(self) -> str:
        return "## Withheld\n"

    def withheld_line(self, e: Named) -> str:
        return f"- {_code(e.path)} {_reason(e.reason or 'secret')}\n"

    def withheld_group(self, count: int) -> str:
        return f"- {_files(count)} more, withheld as secrets (`cas show` lists them)\n"

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
            + (f"<query>{_cdata(_query_line(h).strip())}</query>\n" if h.query else "")
            + f"<fetch>{_xml_reading(h, name)}</fetch>\n"
        )

    def map_section(self, lines: Sequence[tuple[str, int]]) -> str:
        if not lines:
            return ""
        body = "".join(f'<dir path="{_xml_attr(shown(d))}" files="{n}"/>\n' for d, n in lines)
        return f"<map>\n{body}</map>\n"

    def project_map(self, folders: Sequence[Folder]) -> str:
        if not folders:
            return ""
        body = "".join(
            f'<folder path="{_xml_attr(shown(f.path))}" files="{f.files}"'
            + (f' first="{_xml_attr(" ".join(shown(n) for n in f.first))}"' if f.first else "")
            + (f">{_xml_text(one_line(f.about))}</folder>\n" if f.about else "/>\n")
            for f in folders
        )
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

    def section_head(self, path: str, tier: str, summary: bool) -> str:
        # A shown file is whole or summarized: the summary flag says which (its tier adds
        # nothing, and its tokens counted against every budget in this format).
        kind = ' summary="true"' if summary else ""
        return f'<file path="{_xml_attr(shown(path))}"{kind}>\n'

    def section_body(self, text: str, lang: str) -> str:
        body = text if text.endswith("\n") or not text else text + "\n"
        return _xml_text(body) + "\n"

    def section_close(self) -> str:
        return "</file>\n"

    def files_close(self) -> str:
        return "</files>\n"

    def omitted_open(self) -> str:
        return "<omitted>\n"

    def omitted_line(self, e: Named) -> str:
        path, why = _xml_attr(shown(e.path)), _xml_attr(shown(e.reason or "low"))
        return f'<file path="{path}" reason="{why}"/>\n'

    def omitted_group(self, folder: str, count: int, reasons: Sequence[str]) -> str:
        return (
            f'<group dir="{_xml_attr(shown(folder))}" files="{count}" '
            f'reasons="{_xml_attr(_names(reasons))}"/>\n'
        )

    def omitted_close(self) -> str:
        return "</omitted>\n"

    def withheld_open(self) -> str:
        return "<withheld>\n"

    def withheld_line(self, e: Named) -> str:
        path, why = _xml_attr(shown(e.path)), _xml_attr(shown(e.reason or "secret"))
        return f'<file path="{path}" reason="{why}"/>\n'

    def withheld_close(self) -> str:
        return "</withheld>\n"

    def withheld_group(self, count: int) -> str:
        return f'<group files="{count}" reason="more secrets: cas show lists them"/>\n'

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

    def project_map(self, folders: Sequence[Folder]) -> str:
        if not folders:
            return ""
        body = "".join(
            f"  {shown(f.path)} ({f.files}"
            + (f"; {', '.join(shown(n) for n in f.first)}" if f.first else "")
            + ")"
            + (f": {one_line(f.about)}" if f.about else "")
            + "\n"
            for f in folders
        )
        return f"MAP\n{body}\n"

    def index_open(self) -> str:
        return "INDEX\n"

    def index_line(self, e: Entry) -> str:
        return f"* {shown(e.path)} [{e.tier}] {shown(e.reason or '')}\n"

    def files_open(self) -> str:
        return "FILES\n\n"

    def section_head(self, path: str, tier: str, summary: bool) -> str:
        return f"==== {shown(path)}" + (" (summary)" if summary else "") + " ====\n"

    def section_body(self, text: str, lang: str) -> str:
        body = text if text.endswith("\n") or not text else text + "\n"
        return f"{body}==== end ====\n\n"

    def omitted_open(self) -> str:
        return "OMITTED\n"

    def omitted_line(self, e: Named) -> str:
        return f"* {shown(e.path)} ({shown(e.reason or 'low')})\n"

    def omitted_group(self, folder: str, count: int, reasons: Sequence[str]) -> str:
        return f"* {shown(folder)} {_files(count)}: {_names(reasons)}\n"

    def withheld_open(self) -> str:
        return "WITHHELD\n"

    def withheld_line(self, e: Named) -> str:
        return f"* {shown(e.path)} ({shown(e.reason or 'secret')})\n"

    def withheld_group(self, count: int) -> str:
        return f"* {_files(count)} more, withheld as secrets (cas show lists them)\n"


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


# The omitted files the fit did not list are counted by folder, at the deepest level (up to
# GROUP_DEPTH) that keeps at most GROUP_LINES lines for the pack's whole omitted list.
GROUP_DEPTH: Final = 3
GROUP_LINES: Final = 24
GROUP_REASONS: Final = 3


def _folder_group(folder: str, depth: int) -> str:
    """The folder a file in ``folder`` (``""``: the top level) is counted in at ``depth``
    (``./`` for the top level)."""
    parts = folder.split("/")[:depth] if folder else []
    return "/".join(parts) + "/" if parts else "./"


def group_depth(paths: Iterable[str], lines: int = GROUP_LINES) -> int:
    """The deepest grouping that keeps the omitted list's folder lines at most ``lines``."""
    # Files of one folder group alike: each folder is looked at once, however many files it has.
    folders = {p.rpartition("/")[0] for p in paths}
    for depth in range(GROUP_DEPTH, 0, -1):
        if len({_folder_group(f, depth) for f in folders}) <= lines:
            return depth
    return 0


def _base_reason(reason: str | None) -> str:
    return (reason or "low").split(";")[0].split(", demoted")[0]


def omitted_groups(entries: Iterable[Named], depth: int) -> list[tuple[str, int, list[str]]]:
    """(folder, files, most common reasons) for the omitted files not listed by name."""
    # Counted by folder and reason as written first: a large pack has many files to a folder
    # and few reasons.
    by_folder: dict[str, Counter[str | None]] = {}
    for e in entries:
        folder = e.path.rpartition("/")[0]
        written = by_folder.get(folder)
        if written is None:
            written = by_folder[folder] = Counter()
        written[e.reason] += 1
    counts: dict[str, Counter[str]] = {}
    for folder, written in by_folder.items():
        group = counts.setdefault(_folder_group(folder, depth), Counter())
        for reason, n in written.items():
            group[_base_reason(reason)] += n
    out = []
    for folder in sorted(counts, key=lambda f: f.encode("utf-8")):
        reasons = counts[folder]
        top = sorted(reasons, key=lambda r: (-reasons[r], r.encode("utf-8")))[:GROUP_REASONS]
        out.append((folder, sum(reasons.values()), top))
    return out


def shown_order(entries: Iterable[Entry]) -> list[Entry]:
    """Sections most highly rated first; ties by path bytes."""
    return sorted(entries, key=lambda e: (-e.rating, e.path.encode("utf-8")))


@dataclass(frozen=True, slots=True)
class Layout:
    """Everything a LITE render consists of, in order."""

    head: list[str]
    sections: list[str]
    tail: list[str]

    def text(self) -> str:
        return "".join(self.head + self.sections + self.tail)


@dataclass(frozen=True, slots=True)
class _Parts:
    """What a manifest's LITE render shows, the same in every format: the sections' entries in
    order, the omitted files listed by name, the folders of the others, the withheld files."""

    shown: list[Entry]
    listed: list[Entry]
    groups: list[tuple[str, int, list[str]]]
    any_low: bool
    withheld: list[Entry]


def _parts(m: Manifest, depth: int) -> _Parts:
    low = [e for e in m.entries if e.tier == "low" and not e.withheld]
    return _Parts(
        shown=shown_order(e for e in m.entries if e.tier in ("high", "medium")),
        listed=[e for e in low if e.listed],
        groups=omitted_groups((e for e in low if not e.listed), depth),
        any_low=bool(low),
        withheld=[e for e in m.entries if e.withheld],
    )


def _tail(r: Renderer, parts: _Parts) -> list[str]:
    tail: list[str] = []
    if parts.any_low:
        listed = [r.omitted_line(e) for e in parts.listed]
        grouped = [r.omitted_group(folder, n, reasons) for folder, n, reasons in parts.groups]
        tail += [r.omitted_open(), *listed, *grouped, r.omitted_close()]
    withheld = parts.withheld
    if withheld:
        lines = [r.withheld_line(e) for e in withheld if e.listed]
        rest = sum(1 for e in withheld if not e.listed)
        if rest:
            lines.append(r.withheld_group(rest))
        tail += [r.withheld_open(), *lines, r.withheld_close()]
    tail.append(r.footer())
    return [p for p in tail if p]


def tail_pieces(r: Renderer, m: Manifest, depth: int) -> list[str]:
    """The omitted list (listed lines, then folder counts) and the withheld list."""
    return _tail(r, _parts(m, depth))


def lite_layout(
    m: Manifest,
    fetch: Fetch,
    fmt: str = "markdown",
    folders: Sequence[Folder] | None = None,
    *,
    mcp: str | None = None,
) -> Layout:
    return lite_layouts(m, fetch, (fmt,), folders, mcp=mcp)[fmt]


def lite_layouts(
    m: Manifest,
    fetch: Fetch,
    formats: Iterable[str],
    folders: Sequence[Folder] | None = None,
    *,
    mcp: str | None = None,
) -> dict[str, Layout]:
    """The LITE layout of ``m`` in each of ``formats``; what they share (the order of the
    sections, the omitted files' folders, the map) is worked out once. ``folders``: the map
    of ``m``, when the caller already made it (a fit's trials share one). ``mcp``: served over
    MCP as the pack of that name (`Header.mcp`)."""
    depth = m.totals.get("group_depth", GROUP_DEPTH)
    depth = depth if isinstance(depth, int) else GROUP_DEPTH
    parts = _parts(m, depth)
    header = replace(header_for(m), mcp=mcp)
    if folders is None:
        size = m.totals.get("map", 0)
        folders = project_map(m.entries, size, fetch) if isinstance(size, int) else []
    out: dict[str, Layout] = {}
    for fmt in formats:
        r = renderer(fmt)
        head = [r.header(header, "lite")]
        if folders:
            head.append(r.project_map(folders))
        sections: list[str] = []
        for e in parts.shown:
            sections.extend(entry_section(r, e, fetch))
        out[fmt] = Layout(head, sections, _tail(r, parts))
    return out


def entry_section(r: Renderer, e: Entry, fetch: Fetch) -> list[str]:
    if e.tier == "medium" and e.summary is not None:
        text = fetch(e.summary)
        return [r.section_head(e.path, e.tier, True), r.section_body(text, ""), r.section_close()]
    if e.digest is None:
        return []
    text = fetch(e.digest)
    return [
        r.section_head(e.path, e.tier, False),
        r.section_body(text, fence_language(e.path)),
        r.section_close(),
    ]


def render_lite(
    m: Manifest,
    fetch: Fetch,
    fmt: str = "markdown",
    folders: Sequence[Folder] | None = None,
    *,
    mcp: str | None = None,
) -> str:
    """The LITE render of ``m``; ``folders``: its map, when the caller has it (`lite_layouts`);
    ``mcp``: served over MCP as the pack of that name (`Header.mcp`)."""
    return lite_layout(m, fetch, fmt, folders, mcp=mcp).text()


def inlined_in_full(e: Entry) -> bool:
    """FULL inlines every file but secrets, binaries and files too large to be text for an agent."""
    why = e.reason or ""
    return not e.withheld and not why.startswith(("binary", "large file"))


def render_full(m: Manifest, fetch: Fetch, fmt: str = "markdown", *, mcp: str | None = None) -> str:
    r = renderer(fmt)
    shown = [e for e in m.entries if inlined_in_full(e)]
    head = r.header(replace(header_for(m), mcp=mcp), "full")
    parts = [head, r.map_section(map_lines(e.path for e in m.entries))]
    parts.append(r.files_open())
    for e in shown:
        assert e.digest is not None
        text = fetch(e.digest)
        parts.append(r.section_head(e.path, e.tier, False))
        parts += [r.section_body(text, fence_language(e.path)), r.section_close()]
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
    m: Manifest, fetch: Fetch, fmt: str = "markdown", mode: str = "lite", *, mcp: str | None = None
) -> dict[str, str]:
    """One document per top-level folder plus an INDEX; each part rendered in ``mode``;
    ``mcp``: served over MCP as the pack of that name (`Header.mcp`)."""
    ext = {"markdown": "md", "xml": "xml", "plain": "txt"}[fmt]
    groups: dict[str, list[Entry]] = {}
    for e in m.entries:
        groups.setdefault(section_of(e.path), []).append(e)
    out: dict[str, str] = {}
    listing = []
    for name in sorted(groups, key=lambda s: s.encode("utf-8")):
        part = m._replace(entries=tuple(groups[name]))
        if mode == "full":
            text = render_full(part, fetch, fmt, mcp=mcp)
        else:
            text = render_lite(part, fetch, fmt, mcp=mcp)
        out[f"{name}.{ext}"] = text
        listing.append(f"- {shown(f'{name}.{ext}')}: {len(groups[name])} files\n")
    r = renderer(fmt)
    head = r.header(replace(header_for(m), mcp=mcp), "lite" if mode != "full" else "full")
    out[f"INDEX.{ext}"] = head + "## Sections\n" + "".join(listing) + "\n" + r.footer()
    return out
