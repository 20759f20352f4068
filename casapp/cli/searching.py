"""What ``cas search`` does once its arguments are known: open the store and the index, search
the packs (and the memories of the scopes asked for), print the hits.

The click command (`casapp.cli.agent_cmds.search`) and the quick path (`casapp.cli.quick`) both call
`run`, so the output is the same bytes whichever parser read the command line.
"""

from __future__ import annotations

from cas.display import one_line, shown
from cas.progress import Progress
from casapp.cli.context import Ctx, echo, emit_json, note_sink, project_root


def run(
    ctx: Ctx,
    query: str,
    packs: tuple[str, ...],
    paths: tuple[str, ...],
    k: int,
    scopes: tuple[str, ...],
    as_json: bool,
    mode: str = "auto",
) -> None:
    from casapp.project import Project

    root = project_root()
    with (
        ctx.open_store() as store,
        Project(root, store, scopes=scopes, notes=note_sink(ctx)) as project,
        Progress("search", enabled=ctx.progress, stages=True) as bar,
    ):
        found = project.search(
            query, packs=packs or None, paths=paths, k=k, progress=bar.sink, mode=mode
        )
    if as_json:
        from cas.report import report_json

        emit_json({"query": query, "mode": mode, "hits": [report_json(h) for h in found]})
        return
    if not found:
        echo("no matches")
        return
    for h in found:
        packs_text = ",".join(h.packs)
        echo(f"{shown(h.path)}:{h.first}-{h.last}  [{packs_text}]  {h.digest.short()}")
        for n, text in h.snippet:
            echo(f"  {n:>5}: {_line(text)}")


def _line(text: str) -> str:
    """A line of a file as a snippet shows it: its tabs as they are, anything else that could
    act on a terminal (ESC, CR, bidirectional controls) escaped."""
    return "\t".join(one_line(part) for part in text.split("\t"))
