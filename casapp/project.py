"""A project and its store, and what can be done with them: the services the command line, the
MCP server and Python programs all call.

`Project` holds what a session keeps between calls (the pack files read, the packs' views, the
search index open) and the memories it may use (``scopes``). With ``granted_only`` (the MCP
server) a pack that carries a memory outside ``scopes`` is answered as one that does not exist,
and every pack is named by name or digest, never by a file path; the command line, run by the
owner of the project, reads any pack, by name, file or digest.

Each service does the work and returns what it found; presenting it (a table, JSON, a tool's
answer) is the surface's. Errors are `cas.errors.CasError`s, the same everywhere.

    >>> from casapp import Project
    >>> with Project.open(project, create=True) as p:
    ...     report = p.pack()
    ...     [info.name for info in p.packs()]
    ...     [hit.path for hit in p.search("checkout", k=1)]
    ...     p.read_text("repo", "src/shop/__init__.py", first=4, last=4)
    ['repo']
    ['src/shop/__init__.py']
    'def checkout(cart: list[int]) -> int:\\n'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cas.display import echoed
from cas.errors import MemoryNotGranted, NotFound, ProblemError, StoreNotFound, UsageError
from cas.locate import LocatedPack, PackFiles, load_pack, manifest_dir, pack_entry, usable_pack_name
from cas.report import named_report
from cas.store import Store, find_store
from cas.visibility import SOURCE_PREFIX, granted_pack

if TYPE_CHECKING:
    from datetime import date

    from cas import manifest as mf
    from cas.digest import Digest
    from cas.events import ProgressSink
    from cas.gc import GcReport
    from cas.reader import BlobReader
    from cas.remote.pull import PullReport
    from cas.remote.push import PushReport
    from cas.textindex import TextIndex
    from cas.verify import VerifyReport
    from memory.compact import Compacted, Decider
    from memory.context import TurnContext
    from memory.edits import Entry as MemoryEntry
    from memory.manager import MemoryManager
    from memory.search import Hit as MemoryHit
    from memory.shortterm import Policy, TurnAdded
    from packer.diff import PackDiff
    from packer.export import ExportReport
    from packer.load import LoadResult
    from packer.packing import PackScope
    from packer.packview import Views
    from packer.results import PackReport
    from packer.search import Attached, Hit

__all__ = ["PackInfo", "Project"]

Notes = Callable[[str], None]


class PackInfo(NamedTuple):
    """One pack a project serves (`Project.packs`). A named tuple, not a dataclass: a fresh
    ``cas search`` imports this module, and `dataclasses` would cost it 30 ms of imports."""

    name: str
    kind: str
    digest: str  # a memory itself (``memory/SCOPE``): its newest state's
    files: int
    tiers: dict[str, int]  # high, medium, low: how many files each
    budget: dict[str, int]  # target, max
    query: str | None  # a load's question


named_report(PackInfo)


class Project:
    """The project at ``root`` with ``store`` open; ``scopes``: the memories it may use (the
    first is the memory tools' default). Close it, or use it in a ``with``, to close the
    search index and a store it opened."""

    def __init__(
        self,
        root: Path,
        store: Store,
        *,
        scopes: Sequence[str] = (),
        granted_only: bool = False,
        notes: Notes | None = None,
        own_store: bool = False,
    ) -> None:
        if scopes:
            from memory.scopes import check_scope  # only then: a plain search never loads it

            scopes = [check_scope(s) for s in scopes]
        self.root = root
        self.store = store
        self.scopes = tuple(dict.fromkeys(scopes))
        self.granted_only = granted_only
        self.notes = notes
        self.files = PackFiles()
        self._own_store = own_store
        self._views: Views | None = None
        self._index: TextIndex | None = None

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = ".",
        *,
        store: str | os.PathLike[str] | None = None,
        create: bool = False,
        readonly: bool = False,
        scopes: Sequence[str] = (),
        granted_only: bool = False,
        notes: Notes | None = None,
    ) -> Project:
        """The project at or above ``path`` (the nearest folder holding cas.toml, a
        pyproject.toml with [tool.cas], or .git) with its store: ``store``, else ``CAS_STORE``,
        else the nearest ``.cas`` upward; with ``create``, made at the project's root when
        there is none (`StoreNotFound` otherwise)."""
        from packer.project import existing_folder, find_project_root

        root = find_project_root(existing_folder(path))
        if store is not None:
            opened = Store.at(Path(store).absolute(), readonly=readonly)
        else:
            try:
                opened = Store.at(find_store(root), readonly=readonly)
            except StoreNotFound:
                if not create:
                    raise
                opened = Store.create(root / ".cas", exist_ok=True)
        return cls(
            root, opened, scopes=scopes, granted_only=granted_only, notes=notes, own_store=True
        )

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._own_store:
            self.store.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Project({str(self.root)!r}, store={str(self.store.path)!r})"

    @property
    def manifests(self) -> Path:
        """The folder of the project's packs."""
        return manifest_dir(self.root)

    # --- what a session keeps ---------------------------------------------------------------

    def index(self) -> TextIndex:
        """The store's search index, open for the project's life and loaded again when its
        segments changed (a pack indexed more, another process merged)."""
        from cas.textindex import TextIndex

        if self._index is None:
            self._index = TextIndex.open(self.store.path, note=self.notes)
            assert self._index is not None  # open creates one
        else:
            self._index.refresh()
        return self._index

    def views(self) -> Views:
        if self._views is None:
            from packer.packview import Views

            self._views = Views(self.store, self.files)
        return self._views

    def memories(self) -> list[Attached]:
        """The memories of ``scopes`` as they stand now, drawn on beside the packs."""
        if not self.scopes:
            return []
        from memory.search import attached

        return attached(self.store, self.scopes)

    # --- packs --------------------------------------------------------------------------------

    def pack(
        self,
        scopes: Sequence[str | PackScope] = (),
        *,
        targets: Sequence[str] = (),
        baseline: str | None = None,
        allow_secrets: Sequence[str] = (),
        check: bool = False,
        explain: str | None = None,
        now: date | None = None,
        progress: ProgressSink | None = None,
    ) -> PackReport:
        """Build the project's packs (`packer.packing.pack_project`): ``scopes`` names the
        configuration's scopes or gives `packer.PackScope`s, as `packer.make_pack` takes them."""
        from packer.config import load_config
        from packer.packing import pack_project, with_scopes

        config, names = with_scopes(load_config(self.root), scopes)
        return pack_project(
            self.root, self.store, config, scopes=names, targets=targets,
            baseline=baseline, allow_secrets=allow_secrets, check=check, explain=explain,
            now=now, progress=progress, notes=self.notes,
        )  # fmt: skip

    def locate(self, pack: str) -> LocatedPack:
        """The pack ``pack`` names: a name of the project's, a digest, or (unless
        ``granted_only``) a manifest file. With ``granted_only``, a pack carrying a memory the
        project may not use is `NotFound`, as one that does not exist."""
        if not self.granted_only:
            return load_pack(pack, self.manifests, self.store, self.files)
        from memory.redaction import redacted

        if "/" in pack:
            pinned = self.store.refs.pins().get(pack)
            if pinned is not None:
                return self._pinned_load(pack, pinned)
            if pack.startswith(("load/", "context/")):  # a load's pin, gone or never made
                raise self._missing(pack)
        if not pack.startswith("blake3:") and not usable_pack_name(pack):
            raise UsageError(
                f"pack {echoed(redacted(pack))}: give a pack name such as 'repo.claude' "
                "(list_packs), not a path"
            )
        try:
            return granted_pack(pack, self.manifests, self.store, self.scopes, self.files)
        except (NotFound, MemoryNotGranted):
            raise self._missing(pack) from None

    def _pinned_load(self, pin: str, digest: Digest) -> LocatedPack:
        """The load pinned as ``pin`` (``load/mcp/N``, ``context/SCOPE/SESSION``), by that name,
        when the grant lets it be seen; a pin holding anything but a load is no pack."""
        try:
            found = granted_pack(str(digest), self.manifests, self.store, self.scopes, self.files)
        except (NotFound, MemoryNotGranted):
            raise self._missing(pin) from None
        if found.manifest.kind != "load":
            raise self._missing(pin)
        return found._replace(name=pin)

    def _missing(self, pack: str) -> NotFound:
        """One answer for a pack that is not there and one the grant hides: they look the same."""
        from memory.redaction import redacted

        return NotFound("pack", redacted(pack), "list_packs names the packs this server serves")

    def manifest(self, pack: str) -> tuple[str, mf.Manifest, LocatedPack | None]:
        """(name, manifest, the pack file found or None) for a pack, or a memory of ``scopes``
        (``memory/SCOPE``: its newest state, which is no file)."""
        if pack.startswith(SOURCE_PREFIX):
            for memory in self.memories():
                if memory.name == pack:
                    return pack, memory.manifest, None
            raise self._missing(pack)
        found = self.locate(pack)
        return found.name, found.manifest, found

    def packs(self) -> list[PackInfo]:
        """Every pack the project serves where the memories of ``scopes`` were asked for, by
        name, then each of those memories as the pack ``memory/SCOPE``."""
        from packer.search import visible_packs

        found = visible_packs(
            self.root, self.store, self.scopes, memory_packs=True, files=self.files
        )
        named = [(p.name, p.manifest, str(p.digest)) for p in found]
        named += [(a.name, a.manifest, str(a.digest)) for a in self.memories()]
        out = []
        for name, m, digest in named:
            tiers = {t: sum(1 for e in m.entries if e.tier == t) for t in ("high", "medium", "low")}
            out.append(
                PackInfo(
                    name=name,
                    kind=m.kind,
                    digest=digest,
                    files=len(m.entries),
                    tiers=tiers,
                    budget={"target": m.budget_target, "max": m.budget_max},
                    query=m.query,
                )
            )
        return out

    def render(
        self, pack: str, mode: str = "lite", fmt: str = "markdown", *, mcp: bool = False
    ) -> str:
        """A pack rendered for reading: ``lite`` (what fits its budget, the project's map
        first) or ``full``; ``fmt`` markdown, xml or plain; with ``mcp``, its header names the
        MCP server's tools (`packer.render.Header.mcp`)."""
        from packer.projectmap import known_map
        from packer.render import FORMATS, render_full, render_lite

        if mode not in ("lite", "full"):
            raise UsageError(f"mode {echoed(mode)}: use 'lite' or 'full'")
        if fmt not in FORMATS:
            raise UsageError(f"format {echoed(fmt)}: use one of {', '.join(FORMATS)}")
        name, m, found = self.manifest(pack)
        fetch, cite = self._text, name if mcp else None
        if mode == "full":
            return render_full(m, fetch, fmt, mcp=cite)
        folders = known_map(self.store, m, found.digest) if found is not None else None
        return render_lite(m, fetch, fmt, folders, mcp=cite)

    def render_split(
        self, pack: str, fmt: str = "markdown", *, mcp: bool = False
    ) -> dict[str, str]:
        """A pack rendered as files (an index and one part per file), by file name."""
        from packer.render import render_split

        name, m, _found = self.manifest(pack)
        return render_split(m, self._text, fmt, mcp=name if mcp else None)

    def export(self, folder: str | os.PathLike[str], packs: Sequence[str] = ()) -> ExportReport:
        """Write ``packs`` (default: every pack of the project) under ``folder`` as FULL, LITE,
        SPLIT and a kept archive per pack and digest, as ``cas export`` does
        (`packer.export`)."""
        from pathlib import Path

        from packer.export import export, texts

        names = list(dict.fromkeys(packs)) or [p.name for p in self.packs()]
        if not names:
            raise NotFound("pack", "", "this project has no packs: run 'cas pack' first")
        made = []
        for pack in names:
            name, m, found = self.manifest(pack)
            if found is None:
                raise UsageError(f"{echoed(pack)} is a memory, not a pack: export its memory pack")

            def render(mode: str, fmt: str, pack: str = pack) -> str:
                return self.render(pack, mode, fmt)

            made.append(texts(name, found.digest, found.data, m, render, self._text))
        return export(Path(folder), made, self.store.get)

    def _text(self, digest: object) -> str:
        from packer.scan import decode_text

        return decode_text(self.store.get(digest))  # type: ignore[arg-type]

    def open_file(self, pack: str, path: str, *, summary: bool = False) -> BlobReader:
        """A reader of one file of a pack by its path (re-hashed as it is read); with
        ``summary``, of the summary the pack shows."""
        name, m, _found = self.manifest(pack)
        # The hint names the pack as the caller did (`cas show repo`), not by its file's path.
        digest = pack_entry(m, pack if not self.granted_only else name, path, summary=summary)
        reader = self.store.open(digest)
        self._used(m, [path])
        return reader

    def summary(self, pack: str, path: str) -> bytes:
        """The summary of any file a pack holds: for a file the pack summarizes (MEDIUM), the
        summary it shows; for one it shows in full or leaves out, the one cas makes of the
        file's body (`packer.summarize.summarize`: its outline with every symbol, at most 200
        lines), made from the store as a pack would make it. A `ProblemError` says why there is
        none: a binary file, a withheld secret (whose body is stored nowhere)."""
        from packer.scan import decode_text, is_binary
        from packer.summarize import summarize

        name, m, _found = self.manifest(pack)
        source = pack if not self.granted_only else name
        digest = pack_entry(m, source, path)  # NotFound, or the withheld secret's error
        wanted = path.removeprefix("./")
        entry = m.entry(wanted)
        assert entry is not None  # pack_entry found it
        if entry.summary is not None:
            data = self.store.get(entry.summary)
        else:
            body = self.store.get(digest)
            if is_binary(body):
                raise ProblemError(
                    f"{echoed(wanted, quoted=False)} is binary ({len(body)} bytes): cas "
                    "summarizes text only; 'cas cat' without --summary prints its bytes"
                )
            data = summarize(wanted, decode_text(body)).encode("utf-8")
        self._used(m, [wanted])
        return data

    def read_text(
        self, pack: str, path: str, *, first: int | None = None, last: int | None = None
    ) -> str:
        """One file of a pack as text, whole or lines ``first`` to ``last`` (from 1, both
        included; a ``last`` past the end reads to the end)."""
        from packer.scan import decode_text

        name, m, _found = self.manifest(pack)
        text = decode_text(self.store.get(pack_entry(m, name, path)))
        if first is not None or last is not None:
            text = line_range(text, path, first, last)
        self._used(m, [path])
        return text

    # --- search and load ----------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        packs: Sequence[str] | None = None,
        paths: Sequence[str] = (),
        k: int = 10,
        progress: ProgressSink | None = None,
        mode: str = "auto",
    ) -> list[Hit]:
        """The best ``k`` files of the packs (all those the project serves, or ``packs``) and of
        the memories of ``scopes`` for ``query``, each with its matching lines; ``mode``:
        ``auto`` (``hybrid`` over at most 5,000 files, else ``lexical``), ``hybrid`` (by words
        and meaning), ``lexical`` or ``semantic``."""
        from packer.search import search

        memories = self.memories()
        if packs is not None and self.granted_only:
            chosen = [self.manifest(p)[0] for p in packs]
            memories = [m for m in memories if m.name in chosen]
            packs = [p for p in chosen if not p.startswith(SOURCE_PREFIX)]
        hits = search(
            self.store, self.index(), self.root, query, packs=packs, k=k, path_glob=paths,
            progress=progress, scopes=self.scopes, attached=memories, views=self.views(),
            mode=mode,
        )  # fmt: skip
        self._used(None, [h.path for h in hits])
        return hits

    def load(
        self,
        query: str,
        *,
        budget: int | None = None,
        name: str = "load",
        write: bool = False,
        progress: ProgressSink | None = None,
        mode: str = "auto",
        pin: str | None = None,
    ) -> LoadResult:
        """The packs fitted to one question within ``budget`` tokens (default: the project's
        [load] budget); with ``write``, its manifest goes to ``manifests/NAME.pack`` and its
        summaries to the store, as ``cas load`` does; with ``pin`` (the MCP server's), they go
        to the store pinned under that name, and its header names the server's tools to read
        it by that name. ``mode``: what the question is about is
        found by words and meaning (``hybrid``; ``auto``: hybrid over at most 5,000 files),
        words alone (``lexical``) or meaning alone (``semantic``)."""
        from packer.config import Budget, load_config
        from packer.load import Loader, store_result

        if budget is not None and budget < 1:
            raise UsageError(f"budget must be a positive number of tokens, not {budget}")
        config = load_config(self.root)
        loader = Loader(
            self.root, self.store, self.index(), config.load, config.tokenizer,
            progress=progress, scopes=self.scopes, attached=self.memories(), mode=mode, mcp=pin,
        )  # fmt: skip
        limit = Budget(budget, budget) if budget is not None else None
        result = loader.load(query, limit, name=name)
        if pin is not None:
            store_result(self.store, result)
            self.store.refs.pin(pin, result.digest)
        if write:
            from cas.fsutil import atomic_write
            from cas.locate import pack_path
            from cas.roots import prepare_manifest_dir

            path = pack_path(self.manifests, name)
            store_result(self.store, result)
            prepare_manifest_dir(self.store, path.parent)
            atomic_write(path, result.data)
        shown = [e.path for e in result.manifest.entries if e.tier in ("high", "medium")]
        self._used(None, shown)
        return result

    def verify(
        self,
        targets: Sequence[str] = (),
        *,
        all_blobs: bool = False,
        record: bool = True,
        progress: ProgressSink | None = None,
    ) -> VerifyReport:
        """Check the project's packs (or ``targets``) as ``cas verify`` does."""
        from cas.verify import verify

        return verify(
            self.store, targets, all_blobs=all_blobs, project_dir=self.manifests,
            record=record, progress=progress,
        )  # fmt: skip

    def diff(self, old: str, new: str) -> PackDiff:
        """What changed between two packs: added, removed, changed, re-tiered, token deltas."""
        from packer.diff import diff

        return diff(self.manifest(old)[1], self.manifest(new)[1])

    def gc(
        self,
        *,
        grace_s: float | None = None,
        dry_run: bool = False,
        keep: Sequence[Digest] = (),
        extra_dirs: Sequence[str | os.PathLike[str]] = (),
        lease_wait_s: float | None = None,
        progress: ProgressSink | None = None,
    ) -> GcReport:
        """Delete the blobs no manifest (the project's, the store's recorded folders',
        ``extra_dirs``'), pin or ``keep`` references, once older than ``grace_s`` (default: an
        hour), as ``cas gc`` does; never racing a pack in progress (waiting ``lease_wait_s``
        for one, a minute by default)."""
        from cas.gc import DEFAULT_GRACE_NS, DEFAULT_LEASE_WAIT_S, collect

        return collect(
            self.store, extra_dirs=extra_dirs, project_dir=self.manifests,
            grace_ns=DEFAULT_GRACE_NS if grace_s is None else round(grace_s * 1e9),
            dry_run=dry_run, keep=keep,
            lease_wait_s=DEFAULT_LEASE_WAIT_S if lease_wait_s is None else lease_wait_s,
            progress=progress,
        )  # fmt: skip

    # --- remotes ------------------------------------------------------------------------------

    def push(
        self,
        remote: str | None = None,
        packs: Sequence[str] = (),
        *,
        jobs: int | None = None,
        progress: ProgressSink | None = None,
    ) -> PushReport:
        """Upload ``packs`` (manifest files, pack names of the project or digests; none: every
        pack of the project) and every blob they reach that the remote ``remote`` (none: the
        only one configured) lacks, as ``cas push`` does; ``jobs`` requests at once."""
        from cas.remote.config import choose_remote
        from cas.remote.sync import local_manifests
        from cas.remote.sync import push as push_packs
        from cas.remote.transfer import DEFAULT_JOBS

        target = choose_remote(self.store, remote)
        manifests = local_manifests(self.store, list(packs), folder=self.manifests)
        return push_packs(
            self.store, target, manifests, jobs=jobs or DEFAULT_JOBS, progress=progress
        )

    def pull(
        self,
        remote: str | None = None,
        packs: Sequence[str] = (),
        *,
        everything: bool = False,
        force: bool = False,
        jobs: int | None = None,
        progress: ProgressSink | None = None,
    ) -> PullReport:
        """Download what the store lacks of ``packs`` (pack names on the remote, digests, or
        local manifest files; none: the project's packs; ``everything``: every pack on the
        remote, written to the project's manifests folder), re-hashing every byte, as
        ``cas pull`` does."""
        from cas.remote.config import choose_remote
        from cas.remote.sync import pull as pull_packs
        from cas.remote.transfer import DEFAULT_JOBS

        return pull_packs(
            self.store, choose_remote(self.store, remote), list(packs), folder=self.manifests,
            everything=everything, force=force, jobs=jobs or DEFAULT_JOBS, progress=progress,
        )  # fmt: skip

    # --- memory -------------------------------------------------------------------------------

    def memory(self, scope: str | None = None) -> MemoryManager:
        """The memory of ``scope`` (default: the first of ``scopes``), in this project's store.
        With ``granted_only``, only the scopes the project was opened with."""
        from memory.manager import MemoryManager

        if scope is None:
            if not self.scopes:
                raise UsageError("no memory: name a scope ('global', 'user:ID', 'session:ID')")
            scope = self.scopes[0]
        return MemoryManager(self.store, self._granted(scope))

    def fact(self, scope: str, key: str) -> str | None:
        """The value of fact ``key`` of the memory ``scope`` (None: deleted; `NotFound` when
        it was never set); a value shown counts a use (`memory.usage`) in an agent's session."""
        from memory.ops import get_fact
        from memory.usage import FACT, used

        value = get_fact(self.store, self._granted(scope), key).value
        if value is not None and self.granted_only:
            used(self.store, scope, [FACT + key], _today())
        return value

    def recall(self, scope: str, query: str, k: int = 10, *, mode: str = "auto") -> list[MemoryHit]:
        """The files of the memory ``scope`` that best answer ``query`` (``mode``: ``auto``,
        ``hybrid``, ``lexical`` or ``semantic``); each one shown counts a use in an agent's
        session."""
        from memory.search import search
        from memory.usage import used_paths

        found = search(self.store, self.index(), self._granted(scope), query, k=k, mode=mode)
        if self.granted_only:
            used_paths(self.store, scope, [h.path for h in found], _today())
        return found

    def context(
        self,
        query: str,
        *,
        scope: str | None = None,
        session: str,
        budget: int | None = None,
        date: str | None = None,
        mode: str = "auto",
        fmt: str = "markdown",
        progress: ProgressSink | None = None,
        mcp: bool = False,
    ) -> TurnContext:
        """The context for the next turn of ``session`` in the memory ``scope`` (default: the
        first of ``scopes``) about ``query``, within ``budget`` tokens (default: the project's
        [load] budget): its recent turns and facts always, what the query finds in the memory
        and the packs, nothing the session holds unchanged (`memory.context`); the other
        memories of ``scopes`` are drawn on too. With ``mcp``, its header names the MCP
        server's tools to read it by its pin."""
        from memory.context import get_context
        from memory.session import check_session

        if budget is not None and budget < 1:
            raise UsageError(f"budget must be a positive number of tokens, not {budget}")
        chosen = self._default_scope(scope)
        found = get_context(
            self.store, self.index(), self.root, chosen, check_session(session), query,
            date=date or _today(), budget=budget, mode=mode, fmt=fmt, progress=progress,
            scopes=[s for s in self.scopes if s != chosen], mcp=mcp,
        )  # fmt: skip
        shown = [e.path for e in found.load.manifest.entries if e.tier in ("high", "medium")]
        self._used(None, shown)
        return found

    def add_turn(
        self,
        user: str,
        assistant: str,
        *,
        scope: str | None = None,
        session: str,
        date: str | None = None,
        policy: Policy | None = None,
        decide: Decider | None = None,
    ) -> TurnAdded:
        """Add a turn to the short-term memory of ``session`` in ``scope`` (default: the first
        of ``scopes``), flushing what is over the policy's limit into the day's log
        (`memory.shortterm`)."""
        from memory.session import check_session
        from memory.shortterm import add_turn

        return add_turn(
            self.store, self._default_scope(scope), check_session(session), user, assistant,
            date=date or _today(), policy=policy, decide=decide,
        )  # fmt: skip

    def new_session(self, scope: str | None = None) -> str:
        """A session id no session of ``scope``'s memory has yet (``s1``, ``s2``, ...)."""
        from memory.session import next_session
        from memory.state import head

        return next_session(head(self.store, self._default_scope(scope)).files)

    def _default_scope(self, scope: str | None) -> str:
        if scope is None:
            if not self.scopes:
                raise UsageError("no memory: name a scope ('global', 'user:ID', 'session:ID')")
            scope = self.scopes[0]
        return self._granted(scope)

    def memory_entry(self, scope: str, ident: str) -> MemoryEntry:
        """The entry, item of ``MEMORY.md`` or fact ``ident`` names in the memory ``scope``
        (`memory.edits.get`); a fact shown counts a use in an agent's session."""
        from memory.edits import FACT_ID, get
        from memory.usage import FACT, used

        entry = get(self.store, self._granted(scope), ident)
        if entry.kind == "fact" and self.granted_only:
            used(self.store, entry.scope, [FACT + entry.id.removeprefix(FACT_ID)], _today())
        return entry

    def compact_memory(
        self, scope: str, *, now: str | None = None, dry_run: bool = False
    ) -> Compacted:
        """Compact the old daily logs of the memory ``scope`` at ``now`` (today by default) by
        the rules, never by a command (`memory.compact`), with the project's ``[memory]``
        settings."""
        from memory.ages import load_memory_config
        from memory.compact import compact

        config = load_memory_config(self.root)
        return compact(self.store, self._granted(scope), now or _today(), config, dry_run=dry_run)

    def _granted(self, scope: str) -> str:
        from memory.scopes import check_scope

        scope = check_scope(scope)
        if self.granted_only and scope not in self.scopes:
            raise UsageError(
                f"scope {echoed(scope)} is not one this server may use ({', '.join(self.scopes)})"
            )
        return scope

    def _used(self, m: mf.Manifest | None, paths: list[str]) -> None:
        """Count the uses of the memories' entities among ``paths`` shown from the pack ``m``
        (`memory.usage`): a memory's own files, a memory pack's, or files under
        ``memory/SCOPE/`` in a memory itself, a load or a search. Only for a project opened
        with ``granted_only`` (an agent's session): reading as the owner counts nothing."""
        if not self.scopes or not self.granted_only:
            return
        from cas.visibility import carried, is_memory_pack
        from memory.usage import used_paths, used_shown

        today = _today()
        if m is not None and is_memory_pack(m):
            scopes = carried(m, self.store)
            if len(scopes) == 1 and (scope := next(iter(scopes))) in self.scopes:
                used_paths(self.store, scope, paths, today)
            return
        used_shown(self.store, self.scopes, paths, today)


def _today() -> str:
    import datetime as dt

    return dt.date.today().isoformat()


def line_range(text: str, path: str, first: int | None, last: int | None) -> str:
    """Lines ``first`` to ``last`` of ``text``, counted from 1, both included (``first``
    defaults to 1, ``last`` to the last line, and a ``last`` past the end reads to the end).
    A line number below 1, a ``first`` past the end or a ``last`` before ``first``: one line
    saying the range there is."""
    lines = text.splitlines(keepends=True)
    n = len(lines)
    where = echoed(path, quoted=False)
    if n == 0:
        raise UsageError(f"{where} is empty: it has no lines; read it without first and last")
    valid = f"{where} has lines 1 to {n}; give first and last in that range, first <= last"
    for arg, value in (("first", first), ("last", last)):
        if value is not None and value < 1:
            raise UsageError(f"{arg}={value}: lines count from 1: {valid}")
    a = 1 if first is None else first
    b = n if last is None else min(last, n)
    if a > n:
        raise UsageError(f"first={a} is past the end: {valid}")
    if last is not None and last < a:
        raise UsageError(f"last={last} is before first={a}: {valid}")
    return "".join(lines[a - 1 : b])
