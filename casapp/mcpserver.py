"""`cas mcp`: the packs served to agents over the Model Context Protocol.

An edge like the CLI (it may import packer): each tool calls the same library function as its
command and owns no logic of its own. Built on the official ``mcp`` SDK (`MCPServer`), over
stdio, or streamable HTTP on 127.0.0.1.

Tools: ``list_packs``, ``render_pack``, ``read_file``, ``search``, ``load``, ``verify``; the
memory tools ``remember``, ``recall`` and ``facts``; one entry by its id (`memory.edits`):
``memory_write`` (``remember``, answering the id), ``memory_get``, ``memory_edit``,
``memory_delete``, ``memory_search`` (``recall``), ``curate`` (new text, or a log entry
promoted) and ``compact`` (by the rules only: the server never runs a command); and the
conversation's ``context`` and
``add_turn`` (`memory.context`, `memory.shortterm`: a server keeps one conversation of its own,
``sN``, unless a call names a session).
Resources: each pack's LITE markdown render, at ``cas://pack/NAME``: the packs as they are
when listed (a pack written or removed after the server started is seen), and a call that finds
them changed sends ``notifications/resources/list_changed``.

Served over MCP, every header names the server's own tools (``read_file(pack=..., path=PATH)``,
``render_pack``), not the command line's (`packer.render.Header.mcp`); a load's fit counts that
header. A load is kept so that what it points to can be followed: stored and pinned as
``load/mcp/N`` (the last `KEEP_LOADS`), and a turn's context as ``context/SCOPE/SESSION``;
``read_file`` and ``render_pack`` take either pin as a pack name, or the load's digest,
under the same grant as any pack. ``render_pack`` mode ``split`` answers the index of
the parts (one per top-level folder), or one ``part`` by name.

Memory (the ``memory`` package): the server is started with the scopes it may use
(``cas mcp --memory-scope session:42 --memory-scope user:ana``; the first is the default of
every memory tool). A tool asked for any other scope fails: a session's memory is never seen
from a server started for another session, whatever the agent asks. The pack tools hold to the
same grant (`cas.visibility`): ``list_packs``, ``search``, ``load``, ``render_pack``,
``read_file`` and the resources see the project's packs, the granted memories themselves (each
as the pack ``memory/SCOPE``, its files under that folder), their memory packs, and loads drawn
on them only; any other memory pack, memory state or load is answered as a pack that does not
exist, by name or by digest.

Read-only but for memory and loads: no tool writes anything but the store's caches (the search
index, cached outlines and token counts), ``load``'s pinned loads, the granted memories
(``remember``, ``facts`` with a value, the entry tools but ``memory_get``, ``compact`` but a dry
run, ``add_turn``, and ``context``, which records in the session's ledger what it gave and pins
the context as ``context/SCOPE/SESSION``) and the uses of their facts: a fact a tool shows
(``facts`` by key, ``memory_get``, ``recall``, ``search``, ``load``, ``read_file``) counts a use
in the store's usage table (`memory.usage`), never a new state of the memory. ``load`` writes no
manifest file; ``verify`` does not record what it checked. Every path is a pack path, looked up
in a pack's manifest, and every body comes from the store by digest: nothing outside the store
can be read through the server.
A tool that fails answers a tool error with the CLI's one-line message; the server goes on. A
call with an argument its tool does not take is refused the same way, for every tool alike
(`build_server`'s server checks the names against the tool's schema before it runs).
Nothing but protocol is written to stdout.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from cas.display import echoed, one_line
from cas.errors import CasError
from cas.locate import manifest_dir, pack_files
from cas.report import report_json
from cas.store import Store

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

INSTRUCTIONS: Final = (
    "Context packs of this project, built by cas. Start with list_packs, then render_pack "
    "for an overview, or load with the question to get the files it is about within a token "
    "budget. An omitted file is expanded with read_file(pack, path). search finds files and "
    "lines by words and identifiers (with_context, NewRouter, os.path.join). When the server "
    "has a memory: remember what is worth keeping, recall it later, and keep facts with facts."
)
MAX_K: Final = 100
# A search that took less than this runs the next one on the event loop (`Service.search_inline`).
INLINE_SEARCH: Final = 0.05
RESOURCE: Final = "cas://pack/"  # a pack's resource: its LITE render
MAX_BUDGET: Final = 1_000_000
# A load made over MCP is kept in the store, pinned as ``load/mcp/N``, so that what it points
# to can be read by that name; the last `KEEP_LOADS` are kept, older ones unpinned for gc.
LOAD_PIN: Final = "load/mcp/"
KEEP_LOADS: Final = 100

T = TypeVar("T")


class Service:
    """The tools' calls to the project's services (`casapp.project.Project`, opened for the
    memories granted, seeing nothing else). The SDK runs each in a worker thread; a search runs
    on the event loop itself when the last one was quick and no other tool is running
    (`search_inline`). The tools that read a pack (``list_packs``, ``read_file``,
    ``render_pack``, the resources) go through a project of their own, one at a time, so that
    they never wait for a slow search, load or memory tool; those run one at a time through
    the other (what a project keeps between calls is not shared between threads; the store
    is, as LMDB lets readers in several threads run beside its one writer).

    What the tools read is kept between calls by the project: the pack files (read and hashed
    again only when a file's identity changes, each manifest decoded once per digest:
    `cas.locate.PackFiles`), the packs' views and the last search's files
    (`packer.packview.Views`), and the search index, open, loaded again only when its folder's
    segments change. A pack written, replaced or removed underneath the server is seen by the
    next call."""

    def __init__(self, root: Path, store: Store, scopes: tuple[str, ...] = ()) -> None:
        from casapp.project import Project

        self.project = Project(root, store, scopes=scopes, granted_only=True, notes=_note)
        self.root = root
        self.store = store
        self.scopes = self.project.scopes  # the memories it may use; the first is the default
        self.files = self.project.files
        self.reader = Project(root, store, scopes=scopes, granted_only=True, notes=_note)
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()
        # The project's pack files as they were after the last search, when it took under
        # `INLINE_SEARCH` seconds; None otherwise (see `search_inline`).
        self._quick: tuple[tuple[str, int, int, int, int], ...] | None = None
        self._sessions: dict[str, str] = {}  # this server's own session in each scope

    def close(self) -> None:
        self.project.close()
        self.reader.close()

    def _run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return self._locked(fn)

    def _read(self, fn: Callable[[], T]) -> T:
        with self._read_lock:
            return self._locked(fn)

    @staticmethod
    def _locked(fn: Callable[[], T]) -> T:
        try:
            return fn()
        except CasError as exc:
            raise ToolFailure(one_line(str(exc))) from None

    # --- the tools ----------------------------------------------------------------------------

    def list_packs(self) -> list[dict[str, Any]]:
        return self._read(lambda: [report_json(info) for info in self.reader.packs()])

    def pack_names(self) -> list[str]:
        """The packs the resources show: every pack ``list_packs`` lists but the memories
        themselves."""
        from packer.search import visible_packs

        def run() -> list[str]:
            found = visible_packs(
                self.root, self.store, self.scopes, memory_packs=True, files=self.reader.files
            )
            return [p.name for p in found]

        return self._read(run)

    def render_pack(
        self, pack: str, mode: str = "lite", fmt: str = "markdown", part: str | None = None
    ) -> str:
        if mode not in ("lite", "full", "split"):
            raise ToolFailure(f"mode {echoed(mode)}: use 'lite', 'full' or 'split'")
        if mode != "split":
            if part is not None:
                raise ToolFailure(f"part {echoed(part)}: only mode 'split' has parts")
            return self._read(lambda: self.reader.render(pack, mode, fmt, mcp=True))
        parts = self._read(lambda: self.reader.render_split(pack, fmt, mcp=True))
        index = next(name for name in parts if name.startswith("INDEX."))
        if part is None:
            first = next((name for name in parts if name != index), index)
            return parts[index] + (
                f'Read each part with render_pack(pack="{pack}", mode="split", part=NAME), '
                f'such as part="{first}".\n'
            )
        if part not in parts:
            names = ", ".join(parts)
            raise ToolFailure(f"part {echoed(part)}: pack {echoed(pack)} has the parts {names}")
        return parts[part]

    def read_file(
        self, pack: str, path: str, first: int | None = None, last: int | None = None
    ) -> str:
        return self._read(lambda: self.reader.read_text(pack, path, first=first, last=last))

    def search(
        self, query: str, pack: str | None = None, k: int = 10, mode: str = "auto"
    ) -> list[dict[str, Any]]:
        return self._run(self._search(query, pack, k, mode))

    def search_inline(
        self, query: str, pack: str | None = None, k: int = 10, mode: str = "auto"
    ) -> list[dict[str, Any]] | None:
        """`search`, in the caller's thread (the server's event loop), when it is sure to be
        quick: the last search took under `INLINE_SEARCH`, the project's pack files are the
        same files since (what it read is kept, and the index holds their bodies), and no other
        tool is running (its lock is free: the loop never waits for one). None otherwise: the
        caller runs `search` in a worker thread, as every other tool runs, and the loop goes on
        answering. A call handed to a worker thread and back costs about 2 ms of a 20 ms
        search."""
        if self._quick is None or self._quick != self._pack_files():
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._locked(self._search(query, pack, k, mode))
        finally:
            self._lock.release()

    def _pack_files(self) -> tuple[tuple[str, int, int, int, int], ...]:
        """Each pack file of the project by name, with its identity (device, inode, size and
        change time): a pack made again, added or removed changes it."""
        out = []
        for path in pack_files(manifest_dir(self.root)):
            try:
                st = path.stat()
            except OSError:
                continue
            out.append((path.name, st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns))
        return tuple(out)

    def _search(
        self, query: str, pack: str | None, k: int, mode: str
    ) -> Callable[[], list[dict[str, Any]]]:
        if not 1 <= k <= MAX_K:
            raise ToolFailure(f"k={k}: ask for 1 to {MAX_K} results")

        def run() -> list[dict[str, Any]]:
            started = time.monotonic()
            self._quick = None  # until this one is done, in time
            packs = [pack] if pack else None  # None: every pack the grant lets it see
            found = self.project.search(query, packs=packs, k=k, mode=mode)
            out = [report_json(h) for h in found]
            if time.monotonic() - started < INLINE_SEARCH:
                self._quick = self._pack_files()
            return out

        return run

    def load(self, query: str, budget: int | None = None, mode: str = "auto") -> str:
        from packer.render import render_lite

        _check_budget(budget)

        def run() -> str:
            pin = self._load_pin()
            result = self.project.load(query, budget=budget, mode=mode, pin=pin)
            notes = []
            for t in result.triggered:
                notes.append(f"triggered {t.domain} by {', '.join(t.words)}")
            for name, paths in result.gaps.items():
                notes.append(f"gap {name}: added {', '.join(paths)}")
            if result.fallback:
                notes.append("fallback: drew on every pack")
            if result.unmatched:
                unmatched = echoed(", ".join(result.unmatched), quoted=False)
                notes.append(f"not found in any pack: {unmatched}")
            text = render_lite(result.manifest, result.fetch(self.store), mcp=pin)
            return text + ("\n" + "\n".join(notes) + "\n" if notes else "")

        return self._run(run)

    def _load_pin(self) -> str:
        """The pin of the next load: ``load/mcp/N``, one past the highest in the store; the
        oldest are unpinned so that the last `KEEP_LOADS` stay (with this one)."""
        pins = self.store.refs.pins()
        numbers = sorted(
            int(rest)
            for name in pins
            if name.startswith(LOAD_PIN) and (rest := name[len(LOAD_PIN) :]).isdigit()
        )
        for n in numbers[: max(0, len(numbers) + 1 - KEEP_LOADS)]:
            self.store.refs.unpin(f"{LOAD_PIN}{n}")
        return f"{LOAD_PIN}{numbers[-1] + 1 if numbers else 1}"

    def verify(self) -> dict[str, Any]:
        return self._run(lambda: report_json(self.project.verify(record=False)))

    # --- memory ---------------------------------------------------------------------------------

    def _scope(self, scope: str | None) -> str:
        """The scope a memory tool acts on: checked by the rule the command line keeps (the
        same refusal, as a tool error, for a scope holding a secret), then the grant."""
        if not self.scopes:
            raise ToolFailure(
                "this server was started without a memory: start it with "
                "'cas mcp --memory-scope SCOPE'"
            )
        if scope is None:
            return self.scopes[0]
        from memory.scopes import check_scope

        self._run(lambda: check_scope(scope))
        if scope not in self.scopes:
            raise ToolFailure(
                f"scope {echoed(scope)} is not one this server may use ({', '.join(self.scopes)})"
            )
        return scope

    def _session(self, scope: str, session: str | None) -> str:
        """The session a conversation tool acts on: the one named, else this server's own in
        ``scope`` (a new one, ``sN``, fixed at its first use: one server, one conversation)."""
        if session is not None:
            from memory.session import check_session

            return self._run(lambda: check_session(session))
        own = self._sessions.get(scope)
        if own is None:
            own = self._sessions[scope] = self._run(lambda: self.project.new_session(scope))
        return own

    def context(
        self,
        query: str,
        budget: int | None = None,
        session: str | None = None,
        scope: str | None = None,
        mode: str = "auto",
    ) -> str:
        _check_budget(budget)
        chosen = self._scope(scope)
        ident = self._session(chosen, session)

        def run() -> str:
            found = self.project.context(
                query, scope=chosen, session=ident, budget=budget, mode=mode, mcp=True
            )
            return found.text

        return self._run(run)

    def add_turn(
        self, user: str, assistant: str, session: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        chosen = self._scope(scope)
        ident = self._session(chosen, session)
        return self._run(
            lambda: report_json(self.project.add_turn(user, assistant, scope=chosen, session=ident))
        )

    def remember(self, text: str, scope: str | None = None) -> dict[str, Any]:
        chosen = self._scope(scope)
        return self._run(lambda: report_json(self.project.memory(chosen).remember(text)))

    def recall(
        self, query: str, scope: str | None = None, k: int = 10, mode: str = "auto"
    ) -> list[dict[str, Any]]:
        chosen = self._scope(scope)
        if not 1 <= k <= MAX_K:
            raise ToolFailure(f"k={k}: ask for 1 to {MAX_K} results")
        return self._run(
            lambda: [report_json(h) for h in self.project.recall(chosen, query, k, mode=mode)]
        )

    def facts(
        self, key: str | None = None, value: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        chosen = self._scope(scope)

        def run() -> dict[str, Any]:
            if value is not None:
                if key is None:
                    raise ToolFailure("value given without a key: facts(key, value) sets one")
                return {key: self.project.memory(chosen).set_fact(key, value).value}
            if key is not None:
                return {key: self.project.fact(chosen, key)}
            return self.project.memory(chosen).facts()

        return self._run(run)

    # --- one memory entry by its id (`memory.edits`) --------------------------------------------

    def memory_get(self, ident: str, scope: str | None = None) -> dict[str, Any]:
        chosen = self._scope(scope)
        return self._run(lambda: report_json(self.project.memory_entry(chosen, ident)))

    def memory_edit(self, ident: str, text: str, scope: str | None = None) -> dict[str, Any]:
        chosen = self._scope(scope)
        return self._run(lambda: report_json(self.project.memory(chosen).edit(ident, text)))

    def memory_delete(self, ident: str, scope: str | None = None) -> dict[str, Any]:
        chosen = self._scope(scope)
        return self._run(lambda: report_json(self.project.memory(chosen).delete_entry(ident)))

    def curate(
        self, text: str | None = None, ident: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        chosen = self._scope(scope)
        if (text is None) == (ident is None):
            raise ToolFailure("give text (a new item of MEMORY.md) or id (a log entry), not both")

        def run() -> dict[str, Any]:
            mem = self.project.memory(chosen)
            done = mem.promote(ident) if ident is not None else mem.curate_entry(text or "")
            return report_json(done)

        return self._run(run)

    def compact(
        self, now: str | None = None, dry_run: bool = False, scope: str | None = None
    ) -> dict[str, Any]:
        chosen = self._scope(scope)
        return self._run(
            lambda: report_json(self.project.compact_memory(chosen, now=now, dry_run=dry_run))
        )


def _note(text: str) -> None:
    """A note of the server's (the search index set aside and rebuilt): stderr, since stdout
    is the protocol's."""
    print(f"cas: note: {one_line(text)}", file=sys.stderr, flush=True)


class ToolFailure(Exception):
    """A tool's one-line error (wrapped into the SDK's ToolError by `build_server`)."""


class _Packs:
    """The packs the resources show, as last seen (`Service.pack_names`)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.files = service._pack_files()
        try:
            self.seen = service.pack_names()
        except ToolFailure:  # a pack that cannot be read: the tools name it when asked
            self.seen = []

    async def now(self) -> list[str]:
        import anyio.to_thread

        self.files = self.service._pack_files()
        with contextlib.suppress(ToolFailure):  # unreadable: as last seen
            self.seen = await anyio.to_thread.run_sync(self.service.pack_names)
        return self.seen

    async def notice(self, context: Any) -> None:
        """Tell the client of ``context`` when the packs are not those last seen: the
        session's notification, or on the newest protocol its subscriptions' bus."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if context is None or self.service._pack_files() == self.files:
            return  # no pack file written, replaced or removed since: the same packs
        before = self.seen
        if await self.now() == before:
            return
        if context.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await context.notify_resources_changed()
        else:
            await context.session.send_resource_list_changed()


def _announce_list_changed(server: MCPServer) -> None:
    """Have the handshake say that the resources' list changes and that the client is told
    (the SDK's option, which its ``run`` does not pass)."""
    from mcp.server.lowlevel.server import NotificationOptions

    lowlevel = server._lowlevel_server
    options = lowlevel.create_initialization_options

    def with_list_changed(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        chosen = notification_options or NotificationOptions(resources_changed=True)
        return options(chosen, *args, **kwargs)

    lowlevel.create_initialization_options = with_list_changed  # type: ignore[method-assign]


def build_server(service: Service) -> Any:
    """The MCP server with its tools and resources."""
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
    from pydantic import ValidationError

    from cas import __version__

    class Server(MCPServer):
        """Every tool's arguments are its parameters and nothing else: the schemas listed say
        so (``additionalProperties: false``) and a call with any other argument is a tool error
        naming it, before the tool runs (the SDK itself would drop it silently).

        The resources are the packs as they are when asked for: one written after the server
        started is listed, one removed is not; a call that finds the set changed since it was
        last seen tells the client (``notifications/resources/list_changed``)."""

        async def list_tools(self) -> list[types.Tool]:
            listed = await super().list_tools()
            return [
                tool.model_copy(
                    update={"input_schema": {**tool.input_schema, "additionalProperties": False}}
                )
                for tool in listed
            ]

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            if not schemas:  # the tools are those registered before the server started
                schemas.update({t.name: t.input_schema for t in await self.list_tools()})
            schema = schemas.get(name)
            if schema is not None:
                known = list(schema.get("properties", {}))
                unknown = sorted(set(arguments) - set(known))
                if unknown:
                    raise ToolError(f"{name}: {_unknown_arguments(unknown, known)}")
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    raise ToolError(f"{name}: {_arguments_problem(cause)}") from None
                message = str(exc)
                # A deliberate error is the CLI's line as it is; the SDK's prefix says nothing.
                prefix = f"Error executing tool {name}: "
                if isinstance(cause, ToolError) and message.startswith(prefix):
                    message = message[len(prefix) :]
                raise ToolError(one_line(message)) from None
            finally:
                await notice(context)

        async def list_resources(self) -> list[types.Resource]:
            names = await packs_now()
            return [
                types.Resource(
                    uri=f"{RESOURCE}{name}",
                    name=name,
                    description=f"The pack {name}, rendered (lite, markdown)",
                    mime_type="text/markdown",
                )
                for name in names
            ]

        async def read_resource(self, uri: Any, context: Any = None) -> Any:
            text = str(uri)
            if not text.startswith(RESOURCE):
                raise ResourceNotFoundError(f"no resource {echoed(text)}: list_packs names them")
            name = text[len(RESOURCE) :]
            try:
                body = await anyio.to_thread.run_sync(
                    lambda: guarded(lambda: service.render_pack(name))
                )
            except ToolError as exc:
                raise ResourceError(str(exc)) from None
            return [ReadResourceContents(content=body, mime_type="text/markdown")]

    packs = _Packs(service)
    packs_now, notice = packs.now, packs.notice
    schemas: dict[str, dict[str, Any]] = {}  # each tool's arguments, by name (`call_tool`)
    server = Server("cas", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    _announce_list_changed(server)

    def guarded(fn: Callable[[], T]) -> T:
        try:
            return fn()
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None
        except CasError as exc:  # wherever it was raised: its one line, as the CLI prints it
            raise ToolError(one_line(str(exc))) from None

    @server.tool()
    def list_packs() -> list[dict[str, Any]]:
        """Every pack of the project: name, kind, digest, files per tier, budget; and each
        memory this server may use, as the pack memory/SCOPE."""
        return guarded(service.list_packs)

    @server.tool()
    def render_pack(
        pack: str, mode: str = "lite", format: str = "markdown", part: str | None = None
    ) -> str:
        """A pack rendered for reading: mode lite (what fits its budget), full, or split (one
        part per top-level folder: without part, the index naming the parts; with part, that
        part, such as part="src.md"); format markdown, xml or plain."""
        return guarded(lambda: service.render_pack(pack, mode, format, part))

    @server.tool()
    def read_file(pack: str, path: str, first: int | None = None, last: int | None = None) -> str:
        """One file of a pack by its path (also omitted ones: this expands a pointer), whole
        or lines first..last (counted from 1, both included; a last past the end reads to the
        end)."""
        return guarded(lambda: service.read_file(pack, path, first, last))

    @server.tool()
    async def search(
        query: str, pack: str | None = None, k: int = 10, mode: str = "auto"
    ) -> list[dict[str, Any]]:
        """Search the packs' files (and this server's memories) by words and meaning: path,
        line range, snippet and digest per hit, best first. Identifiers are found whole and by
        their words; a question in other words than the code's is found by its meaning.
        mode: auto (default: hybrid over at most 5,000 files, else lexical), hybrid, lexical
        (exact words and names) or semantic (meaning alone)."""
        found = guarded(lambda: service.search_inline(query, pack, k, mode))
        if found is not None:
            return found
        import anyio.to_thread

        return await anyio.to_thread.run_sync(
            lambda: guarded(lambda: service.search(query, pack, k, mode))
        )

    @server.tool()
    def load(query: str, budget: int | None = None, mode: str = "auto") -> str:
        """The project's packs fitted to one question within a token budget (default: the
        project's [load] budget): what it is about in full, neighbours summarized. What it
        is about is found by words and meaning; mode: auto (default), hybrid, lexical or
        semantic."""
        return guarded(lambda: service.load(query, budget, mode))

    @server.tool()
    def verify() -> dict[str, Any]:
        """Check that every pack is whole: each blob present and re-hashing to its digest."""
        return guarded(service.verify)

    @server.tool()
    def remember(text: str, scope: str | None = None) -> dict[str, Any]:
        """Add an entry to today's log of a memory (default: this session's); secrets in it
        are cut out before it is stored."""
        return guarded(lambda: service.remember(text, scope))

    @server.tool()
    def recall(
        query: str, scope: str | None = None, k: int = 10, mode: str = "auto"
    ) -> list[dict[str, Any]]:
        """A memory's files that best answer the query (by words and by meaning, ranked; facts
        by their current value): path, line range and snippet per hit, best first. mode:
        auto (default: hybrid), hybrid, lexical (exact words) or semantic (meaning alone)."""
        return guarded(lambda: service.recall(query, scope, k, mode))

    @server.tool()
    def facts(
        key: str | None = None, value: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        """A memory's facts: all of them, the one named by key, or, given a value, set it."""
        return guarded(lambda: service.facts(key, value, scope))

    _entry_tools(server, service, guarded)
    _conversation_tools(server, service, guarded)

    return server


class _Guard(Protocol):
    """`build_server`'s ``guarded``: a call whose errors become tool errors."""

    def __call__(self, fn: Callable[[], T], /) -> T: ...


def _conversation_tools(server: MCPServer, service: Service, guarded: _Guard) -> None:
    """The conversation's tools (`memory.context`, `memory.shortterm`), and ``memory_search``."""

    @server.tool()
    def context(
        query: str,
        budget: int | None = None,
        session: str | None = None,
        scope: str | None = None,
        mode: str = "auto",
    ) -> str:
        """The context for the next turn of this conversation about the query, within one exact
        token budget (default: the project's [load] budget): the session's recent turns and
        facts always, what the query finds in the memory and the packs (domains whose words
        appear are added, and stay), and nothing this session was given before unchanged (one
        line says how many). session: default this server's own conversation. Add each turn
        with add_turn."""
        return guarded(lambda: service.context(query, budget, session, scope, mode))

    @server.tool()
    def add_turn(
        user: str, assistant: str, session: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        """Add a turn (what the user said, what you answered) to the conversation's short-term
        memory; past its token limit the oldest turns go whole to today's log and are
        compressed or promoted. Secrets are cut out first."""
        return guarded(lambda: service.add_turn(user, assistant, session, scope))

    @server.tool()
    def memory_search(
        query: str, scope: str | None = None, k: int = 10, mode: str = "auto"
    ) -> list[dict[str, Any]]:
        """recall by the name the memory's other tools share (memory_get, memory_write, ...):
        the memory's files that best answer the query, by words and meaning, best first; each
        entry's id is at the end of its line in the snippet."""
        return guarded(lambda: service.recall(query, scope, k, mode))


def _entry_tools(
    server: MCPServer,
    service: Service,
    guarded: Callable[[Callable[[], dict[str, Any]]], dict[str, Any]],
) -> None:
    """The memory tools acting on one entry by its id (`memory.edits`), and ``compact``."""

    @server.tool()
    def memory_write(text: str, scope: str | None = None) -> dict[str, Any]:
        """remember: add an entry to today's log of a memory (default: this session's), secrets
        cut out; answers its id (e-xxxxxx), which memory_get, memory_edit, memory_delete and
        curate take."""
        return guarded(lambda: service.remember(text, scope))

    @server.tool()
    def memory_get(id: str, scope: str | None = None) -> dict[str, Any]:
        """One entry of a memory by its id: e-xxxxxx (shown at the end of an entry's first
        line by recall and read_file), DATE.N (the Nth entry of that day's log), MEMORY.N (the
        Nth item of MEMORY.md) or fact:KEY."""
        return guarded(lambda: service.memory_get(id, scope))

    @server.tool()
    def memory_edit(id: str, text: str, scope: str | None = None) -> dict[str, Any]:
        """Replace the text of one entry (its id stays; fact:KEY sets that fact), secrets cut
        out: a new state of the memory, the old text in its history."""
        return guarded(lambda: service.memory_edit(id, text, scope))

    @server.tool()
    def memory_delete(id: str, scope: str | None = None) -> dict[str, Any]:
        """Remove one entry from a memory (fact:KEY deletes that fact): a new state, the entry
        kept in the history."""
        return guarded(lambda: service.memory_delete(id, scope))

    @server.tool()
    def curate(
        text: str | None = None, id: str | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        """Add to the curated memory, MEMORY.md: new text, or the daily log entry id, moved
        there with its id."""
        return guarded(lambda: service.curate(text, id, scope))

    @server.tool()
    def compact(
        now: str | None = None, dry_run: bool = False, scope: str | None = None
    ) -> dict[str, Any]:
        """Compact a memory's daily logs older than its [memory] full_days at now (YYYY-MM-DD,
        default today) by the rules: decisions promoted to MEMORY.md, other entries shortened;
        each decision journalled. dry_run: only list the decisions."""
        return guarded(lambda: service.compact(now, dry_run, scope))


def _check_budget(budget: int | None) -> None:
    """A token budget a tool was given: 1 to `MAX_BUDGET`, or none (the project's)."""
    if budget is not None and not 1 <= budget <= MAX_BUDGET:
        raise ToolFailure(f"budget {budget}: give 1 to {MAX_BUDGET} tokens")


def _arguments_problem(exc: Any) -> str:
    """One line for the SDK's argument validation error: each field and what is wrong."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        kind = err.get("type", "")
        what = "is required" if kind == "missing" else one_line(str(err.get("msg", "is invalid")))
        parts.append(f"{field} {what}")
    return "; ".join(parts) or "bad arguments"


def _unknown_arguments(unknown: list[str], known: list[str]) -> str:
    """One line for arguments a tool does not take, and the ones it does."""
    names = echoed(", ".join(unknown), quoted=False)
    takes = ", ".join(known) if known else "none"
    s = "s" if len(unknown) > 1 else ""
    return f"unknown argument{s} {names}: this tool takes {takes}"


def serve(
    root: Path, store: Store, http_port: int | None = None, scopes: tuple[str, ...] = ()
) -> None:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP), with the
    memories of ``scopes`` (the first the default)."""
    service = Service(root, store, scopes)
    server = build_server(service)
    try:
        if http_port is None:
            server.run("stdio")
        else:
            server.run("streamable-http", host="127.0.0.1", port=http_port)
    finally:
        service.close()
