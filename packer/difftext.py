"""A manifest as lines a line diff reads: what ``cas textconv`` prints for git's diff driver.

A pack file is canonical msgpack, binary to git. Given to git as the ``textconv`` of a diff
driver (``*.pack diff=cas`` in ``.gitattributes``, ``diff.cas.textconv = cas textconv``), each
side of a change is shown as this text, so ``git diff``, ``git log -p`` and a pull request show
which entries were added, removed, re-tiered or changed, and how the budget moved.

The text is a function of the manifest alone (no store, no project, no clock): a header of
``#`` lines (the pack, its kind, tokenizer, budget, rendered tokens, the files of each tier,
the parent; a load's query and sources), then one line per entry in the manifest's order (by
the bytes of the path), each naming the path first, so a changed file is one ``-`` line and one
``+`` line beside each other::

    src/app.py  high 812 tokens  rating ~4e3  blake3:77475f334fd7

The rating is shown to one significant digit (`coarse`): the exact rating is a rank over the
whole project's reference graph and moves a little with any change anywhere, so shown exactly
it would change nearly every line of every pack; a line should change when the file's body,
tier, tokens or standing does (``cas show`` prints the exact rating). A MEDIUM entry adds its
summary's short digest (``summary blake3:...``), a withheld one says ``withheld`` instead of a
digest, a LOW entry with its own line in the render says ``listed``, and the reason closes the
line in brackets. Every name goes through `cas.display.shown`, so a path holding a newline is
still one line.
"""

from __future__ import annotations

from typing import Any, Final

from cas import manifest as mf
from cas.digest import Digest
from cas.display import one_line, shown

__all__ = ["SHORT_HEX", "coarse", "entry_line", "header_lines", "manifest_text", "short"]

SHORT_HEX: Final = 12  # hex digits of a digest shown: enough to tell two bodies of one path apart


def short(digest: Digest) -> str:
    """``blake3:`` and the first `SHORT_HEX` hex digits of ``digest``."""
    text = str(digest)
    prefix, _, hexa = text.partition(":")
    return f"{prefix}:{hexa[:SHORT_HEX]}"


def coarse(rating: int) -> str:
    """``rating`` to one significant digit: ``~4e3`` for 4410, ``~1e6`` for 951000; under 10 as
    it is. Integers only, so the same on every machine."""
    if rating < 10:
        return str(rating)
    exponent = len(str(rating)) - 1
    unit = 10**exponent
    digit = (rating + unit // 2) // unit
    if digit == 10:
        digit, exponent = 1, exponent + 1
    return f"~{digit}e{exponent}"


def _totals(totals: dict[str, Any], prefix: str = "") -> list[str]:
    """``key value`` pairs of a manifest's totals, nested maps flattened with dots, sorted."""
    out: list[str] = []
    for key in sorted(totals, key=lambda k: str(k).encode("utf-8")):
        value = totals[key]
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.extend(_totals(value, f"{name}."))
        else:
            out.append(f"{name} {value}")
    return out


def header_lines(m: mf.Manifest) -> list[str]:
    """The ``#`` lines above the entries: what the pack is and what it holds in all."""
    target = f" target {shown(m.target)}," if m.target else ""
    lines = [
        f"# cas pack {shown(m.name)}: {m.kind},{target} scope {shown(m.scope)}, "
        f"format {m.format}, tokenizer {shown(m.tokenizer)}",
        f"# budget: target {m.budget_target}, max {m.budget_max}",
    ]
    rendered = m.totals.get("tokens")
    if isinstance(rendered, dict) and rendered:
        shares = ", ".join(f"{k} {rendered[k]}" for k in sorted(rendered))
        lines.append(f"# tokens: {one_line(shares)}")
    tiers = []
    for tier in mf.TIERS:
        row = m.totals.get(tier)
        if isinstance(row, dict):
            tiers.append(f"{tier} {row.get('files', 0)} ({row.get('tokens', 0)} tokens)")
    withheld = sum(1 for e in m.entries if e.withheld)
    lines.append(
        f"# entries: {len(m.entries)}" + (f"; {', '.join(tiers)}" if tiers else "")
        + f"; withheld {withheld}"
    )  # fmt: skip
    others = {k: v for k, v in m.totals.items() if k not in (*mf.TIERS, "tokens")}
    if others:
        lines.append(f"# totals: {one_line(', '.join(_totals(others)))}")
    lines.append(f"# parent: {short(m.parent) if m.parent else 'none'}")
    if m.query is not None:
        lines.append(f"# query: {shown(m.query)}")
    for name, digest in m.sources:
        lines.append(f"# source: {shown(name)} {short(digest)}")
    return lines


def entry_line(e: mf.Entry) -> str:
    """One entry as one line, its path first."""
    parts = [shown(e.path), f"{e.tier} {e.tokens} tokens", f"rating {coarse(e.rating)}"]
    parts.append(short(e.digest) if e.digest is not None else "withheld")
    if e.summary is not None:
        parts.append(f"summary {short(e.summary)}")
    if e.kind != "file":
        parts.append(e.kind)
    if e.listed:
        parts.append("listed")
    if e.reason:
        parts.append(f"[{shown(e.reason)}]")
    return "  ".join(parts)


def manifest_text(data: bytes, source: str = "manifest") -> str:
    """The text of the manifest ``data``: its header, then its entries, one line each, ending
    in a newline. Raises `cas.errors.ManifestError` when ``data`` is not a manifest."""
    m = mf.decode(data, source)
    return "\n".join([*header_lines(m), *(entry_line(e) for e in m.entries)]) + "\n"
