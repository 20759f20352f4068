"""``cas search`` read without click: a fresh search pays only for what it runs.

Importing click and the command group is a fifth of a fresh ``cas search`` (some 30 ms of 150 on
the 20,000-file bench tree), more than the search itself spends on a query. A command line in
the plain forms below is read here and run by the same code as the click command
(`casapp.cli.searching.run`, ended by `casapp.cli.guard.guarded`). Any other command line, and
anything here that is not plainly one of these forms (``--help``, an option not listed, a value that
begins with ``-``, ``--``, a count that is not digits, a second query, no query), is left to
click, which answers it as it always did. A test reads many command lines both ways and requires
the same exit code and the same bytes out.

    cas [GLOBAL ...] search [OPTION | GLOBAL ...] QUERY [OPTION | GLOBAL ...]

GLOBAL: ``--store PATH``, ``--debug``, ``-q``, ``--quiet``. OPTION: ``--pack PACK``, ``--path
GLOB``, ``--memory-scope SCOPE`` (each repeatable), ``-k N``, ``--mode MODE``, ``--json``. An
option that takes a value takes it as the next argument or after ``=`` (``--pack=repo.claude``;
``-k`` only as the next argument).
"""

from __future__ import annotations

from collections.abc import Callable

COMMAND = "search"
_GLOBAL_FLAGS = {"--debug": "debug", "-q": "quiet", "--quiet": "quiet"}
_GLOBAL_VALUES = {"--store"}
_FLAGS = {"--json"}
_VALUES = {"--pack", "--path", "--memory-scope", "-k", "--mode"}
_MODES = ("auto", "hybrid", "lexical", "semantic")  # `packer.hybrid.MODES`
_REPEATED = {"--pack": "packs", "--path": "paths", "--memory-scope": "scopes"}


class _Search:
    """A search command line, read."""

    __slots__ = (
        "as_json", "debug", "k", "mode", "packs", "paths", "query", "quiet", "scopes", "store",
    )  # fmt: skip

    def __init__(self) -> None:
        self.store: str | None = None
        self.debug = False
        self.quiet = False
        self.as_json = False
        self.k = 10
        self.mode = "auto"
        self.query: str | None = None
        self.packs: list[str] = []
        self.paths: list[str] = []
        self.scopes: list[str] = []

    def take(self, option: str, value: str) -> bool:
        """Record ``option VALUE``; False when the value is not in a plain form."""
        if value.startswith("-"):
            return False
        if option == "--store":
            self.store = value
        elif option == "-k":
            if not (value.isascii() and value.isdigit()):
                return False
            self.k = int(value)
        elif option == "--mode":
            if value not in _MODES:
                return False  # click names the choices
            self.mode = value
        else:
            getattr(self, _REPEATED[option]).append(value)
        return True


def _read(argv: list[str]) -> _Search | None:
    """``argv`` (the arguments after ``cas``) read as a search, or None."""
    read = _Search()
    command = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not command and arg == COMMAND:
            command = True
            continue
        if arg in _GLOBAL_FLAGS:
            setattr(read, _GLOBAL_FLAGS[arg], True)
            continue
        if command and arg in _FLAGS:
            read.as_json = True
            continue
        name, equals, inline = arg.partition("=")
        if name in _GLOBAL_VALUES or (command and name in _VALUES):
            if equals:
                if name == "-k":
                    return None
                value = inline
            elif i < len(argv):
                value = argv[i]
                i += 1
            else:
                return None  # click says what is missing
            if not read.take(name, value):
                return None
            continue
        if not command or arg.startswith("-") or read.query is not None:
            return None  # another command, an option not read here, a second query
        read.query = arg
    if not command or read.query is None:
        return None
    return read


def parsed(argv: list[str]) -> Callable[[], None] | None:
    """The search ``argv`` asks for, ready to run (it exits as `guarded` says), when ``argv``
    is a search in the plain forms; None for click to read."""
    read = _read(argv)
    if read is None:
        return None
    query = read.query
    assert query is not None

    def run() -> None:
        from cas.residency import map_large_buffers
        from casapp.cli.context import Ctx
        from casapp.cli.guard import debug_wanted, guarded, modules_loaded
        from casapp.cli.searching import run as run_search

        debug = debug_wanted(argv)
        map_large_buffers()
        ctx = Ctx(store_opt=read.store, debug=debug or read.debug, quiet=read.quiet)

        def command() -> None:
            modules_loaded()
            run_search(
                ctx, query, tuple(read.packs), tuple(read.paths), read.k, tuple(read.scopes),
                read.as_json, read.mode,
            )  # fmt: skip

        guarded(command, ctx, debug=debug)

    return run
