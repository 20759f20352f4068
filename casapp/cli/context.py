"""What a command runs with and prints through, without the click parser: the context (which
store, quiet or not), its lines on stdout and stderr, its JSON reports and its notes.

The click commands (`casapp.cli._common` re-exports these) and the quick path (`casapp.cli.quick`,
which answers ``cas search`` without importing click) share them, so a command prints the same
bytes whichever parser read its arguments.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cas.display import json_safe, one_line, shown
from cas.errors import StoreNotFound
from cas.progress import wanted

if TYPE_CHECKING:
    from cas.store import Store


def echo(line: str, *, err: bool = False) -> None:
    """``line`` and a newline on stdout (stderr with ``err``), flushed at once, as ``click.echo``
    writes a line. What it prints went through `shown`, `one_line` or `json_safe` first: nothing
    in it acts on a terminal."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # started with it closed (`cas ls >&-`): as click.echo, nothing is written
        return
    stream.write(line + "\n")
    stream.flush()


class Ctx:
    """The options every command takes (``--store``, ``--debug``, ``-q``), wherever they were
    given on the command line."""

    __slots__ = ("debug", "quiet", "store_opt")

    def __init__(self, store_opt: str | None, debug: bool, quiet: bool) -> None:
        self.store_opt = store_opt
        self.debug = debug
        self.quiet = quiet

    def __repr__(self) -> str:
        return f"Ctx(store_opt={self.store_opt!r}, debug={self.debug!r}, quiet={self.quiet!r})"

    def store_path(self) -> Path:
        if self.store_opt:
            return Path(self.store_opt).absolute()
        from cas.store import find_store

        return find_store()

    def open_store(self, *, readonly: bool = False) -> Store:
        from cas.store import Store

        return Store.at(self.store_path(), readonly=readonly)

    def open_or_create_store(self, default: Path) -> Store:
        """The store, or, when there is none and no --store was given, a new one at
        ``default``. Concurrent callers share one: exactly one creates it (and says so)."""
        from cas.store import Store

        try:
            return self.open_store()
        except StoreNotFound:
            if self.store_opt:
                raise
        store = Store.create(default, exist_ok=True)
        if store.created and not self.quiet:
            warn(f"created a new store in {shown(str(store.path))}")
        return store

    @property
    def progress(self) -> bool:
        return wanted(self.quiet)


def emit_json(obj: Any) -> None:
    # JSON keeps every name as it is; json_safe writes what a terminal could act on as \u escapes
    import json  # here: only a --json report needs it

    echo(json_safe(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)))


def emit_report(report: Any, **extra: Any) -> None:
    """Print a report as JSON by the one convention (`cas.report.report_json`), with any keys
    the command adds to it."""
    from cas.report import report_json

    emit_json({**report_json(report), **extra})


def project_root() -> Path:
    """The project the command runs in: the nearest folder at or above the working directory
    holding cas.toml, a pyproject.toml with [tool.cas], or .git (the working directory when
    there is none). Its packs are where `cas.locate` says, whatever store is used."""
    from packer.project import find_project_root

    return find_project_root(Path.cwd())


def warn(message: str) -> None:
    """One line on stderr; names in ``message`` should have gone through `shown`, and whatever
    else could break the line or act on a terminal is escaped here."""
    echo(f"cas: {one_line(message)}", err=True)


def note_sink(ctx: Ctx) -> Callable[[str], None] | None:
    """Where a library's notes go (the search index set aside and rebuilt): one line each on
    stderr, none with -q."""
    if ctx.quiet:
        return None
    return lambda text: warn(f"note: {text}")
