"""The manifest format: a pack as canonical msgpack. Encode, decode, validate; no packer policy.

Format 2, a map with these keys (any other key, a missing key or a wrong type is an error)::

    format     2
    kind       "lite" | "full" | "load" | "memory"
    scope      str
    target     str | nil
    tokenizer  str
    budget     {target: int, max: int}
    parent     32 bytes | nil          the manifest this one was built against (--baseline)
    totals     map of str -> int | map (counts; no floats)
    entries    [entry, ...]            sorted by the UTF-8 bytes of path, paths unique

    entry: {path: str, kind: "file" | "symlink", digest: 32 bytes | nil, size: int,
            tier: "high" | "medium" | "low", tokens: int, summary: 32 bytes | nil,
            reason: str | nil, rating: int, listed: bool}

A ``load`` manifest (`cas load`, a pack fitted to one query from other packs) has two more
keys: ``query`` (str, the question as asked) and ``sources`` ([[pack name, manifest digest
(32 bytes)], ...], the packs it drew on, in the order they were drawn on).

A ``memory`` manifest is one state of an agent's memory (the ``memory`` package): ``scope`` is
the memory's scope (``global``, ``user:ID``, ``session:ID``), ``parent`` the state it was made
from. Unlike a pack's baseline, a memory's parent is part of it: its history, kept by whatever
keeps the memory (`Manifest.references`).

``digest`` is nil only for a withheld secret, whose body is stored nowhere. ``summary`` is set
only for a MEDIUM entry. ``rating`` is how much an agent needs the file (packer.rating; render
order); ``listed`` says a LOW entry has its own line in the render's omitted or withheld list
(the others are counted by folder), and is false for every other entry. Format 1 (no rating, no
listed) is still read: its entries rate 0 and every LOW one is listed.

Canonical means: maps with keys sorted by their UTF-8 bytes, strings in Unicode NFC, integers in
msgpack's shortest form, no floats, no extension types. Decoding re-encodes and requires the same
bytes, so one pack has exactly one encoding and one digest.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Final, NamedTuple

import msgpack

from cas.digest import Digest
from cas.display import echoed
from cas.errors import ManifestError

FORMAT: Final = 2
READABLE: Final = (1, 2)  # format versions this cas decodes
KINDS: Final = ("lite", "full", "load", "memory")
TIERS: Final = ("high", "medium", "low")
ENTRY_KINDS: Final = ("file", "symlink")
MAX_BYTES: Final = 256 << 20
# The cache namespace (`cas.cache.Cache`) where a writer of manifests records the digest of each
# one it encoded: bytes under that digest are known valid and canonical, and are decoded
# without validating them again (`cas.locate.load_pack`).
VALID_NS: Final = "manifest-valid:1"
_PIECE: Final = 1 << 20  # encoding of a large manifest: its bytes are gathered in pieces this big

_TOP_KEYS: Final = frozenset(
    ("format", "kind", "scope", "target", "tokenizer", "budget", "parent", "totals", "entries")
)
_LOAD_KEYS: Final = _TOP_KEYS | {"query", "sources"}
_ENTRY_KEYS_V1: Final = frozenset(
    ("path", "kind", "digest", "size", "tier", "tokens", "summary", "reason")
)
_ENTRY_KEYS: Final = _ENTRY_KEYS_V1 | {"rating", "listed"}
# The largest rating a manifest holds (ratings are bounded integers, see packer.rating).
MAX_RATING: Final = (1 << 62) - 1


def pack_name(scope: str, target: str | None) -> str:
    """The name of the pack of ``scope`` and ``target``: ``scope`` or ``scope.target``."""
    return f"{scope}.{target}" if target else scope


class Entry(NamedTuple):
    path: str
    digest: Digest | None
    size: int
    tier: str
    tokens: int
    kind: str = "file"
    summary: Digest | None = None
    reason: str | None = None
    rating: int = 0
    listed: bool = False

    @property
    def withheld(self) -> bool:
        return self.digest is None


class Manifest(NamedTuple):
    scope: str
    target: str | None
    tokenizer: str
    budget_target: int
    budget_max: int
    entries: tuple[Entry, ...]
    # never changed in place (a manifest is a value): one empty mapping serves every default
    totals: dict[str, Any] = {}  # noqa: RUF012
    parent: Digest | None = None
    kind: str = "lite"
    format: int = FORMAT
    query: str | None = None  # a load's question (kind "load" only)
    sources: tuple[tuple[str, Digest], ...] = ()  # a load's packs: (name, manifest digest)

    @property
    def name(self) -> str:
        """The pack's name (`pack_name`), its file's name without ``.pack`` (`cas.locate`)."""
        return pack_name(self.scope, self.target)

    def digests(self) -> set[Digest]:
        """Every blob the manifest references (contents and summaries)."""
        out: set[Digest] = set()
        for e in self.entries:
            if e.digest is not None:
                out.add(e.digest)
            if e.summary is not None:
                out.add(e.summary)
        return out

    def references(self) -> set[Digest]:
        """What keeping this manifest keeps: its blobs, and for a memory state its parent (the
        state it was made from, whose own references its keeper follows in turn)."""
        out = self.digests()
        if self.kind == "memory" and self.parent is not None:
            out.add(self.parent)
        return out

    def entry(self, path: str) -> Entry | None:
        for e in self.entries:
            if e.path == path:
                return e
        return None


def _sorted_map(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _sorted_map(obj[k]) for k in sorted(obj, key=lambda s: s.encode("utf-8"))}
    if isinstance(obj, list | tuple):
        return [_sorted_map(v) for v in obj]
    if isinstance(obj, float):
        raise ManifestError("manifest", "floats are not allowed in a manifest")
    if isinstance(obj, str):
        return unicodedata.normalize("NFC", obj)
    return obj


def _nfc(text: str) -> str:
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _entry_obj(e: Entry, version: int) -> dict[str, Any]:
    # Built directly in canonical key order (sorted by UTF-8 bytes): entries are most of a
    # manifest, and sorting each one's keys would dominate encoding a large pack.
    if version == 1:
        return {
            "digest": bytes(e.digest) if e.digest is not None else None,
            "kind": e.kind,
            "path": _nfc(e.path),
            "reason": _nfc(e.reason) if e.reason is not None else None,
            "size": e.size,
            "summary": bytes(e.summary) if e.summary is not None else None,
            "tier": e.tier,
            "tokens": e.tokens,
        }
    return {
        "digest": bytes(e.digest) if e.digest is not None else None,
        "kind": e.kind,
        "listed": e.listed,
        "path": _nfc(e.path),
        "rating": e.rating,
        "reason": _nfc(e.reason) if e.reason is not None else None,
        "size": e.size,
        "summary": bytes(e.summary) if e.summary is not None else None,
        "tier": e.tier,
        "tokens": e.tokens,
    }


def _canonical(m: Manifest, entries: list[dict[str, Any]]) -> dict[str, Any]:
    head = {
        "budget": {"max": m.budget_max, "target": m.budget_target},
        "format": m.format,
        "kind": m.kind,
        "parent": bytes(m.parent) if m.parent is not None else None,
        "scope": _nfc(m.scope),
        "target": _nfc(m.target) if m.target is not None else None,
        "tokenizer": m.tokenizer,
        "totals": _sorted_map(m.totals),
    }
    if m.kind == "load":
        head["query"] = _nfc(m.query or "")
        head["sources"] = [[_nfc(name), bytes(d)] for name, d in m.sources]
    head["entries"] = entries
    return {k: head[k] for k in sorted(head)}


def encode(m: Manifest) -> bytes:
    """The canonical bytes of a manifest (validated first)."""
    return _encode(m, validate=True)


def _encode(m: Manifest, *, validate: bool) -> bytes:
    """The same bytes as ``msgpack.packb(_canonical(m, entries))``, packed one entry at a time:
    a pack of 100,000 files would otherwise hold 100,000 maps at once just to encode them."""
    ordered = sorted(m.entries, key=lambda e: e.path.encode("utf-8"))
    head = _canonical(m, [])
    if validate:
        _validate_head(head, "manifest")
    packer = msgpack.Packer(use_bin_type=True, autoreset=False)
    pieces: list[bytes] = []
    packer.pack_map_header(len(head))
    previous: bytes | None = None
    for key, value in head.items():
        packer.pack(key)
        if key != "entries":
            packer.pack(value)
            continue
        packer.pack_array_header(len(ordered))
        for i, e in enumerate(ordered):
            obj = _entry_obj(e, m.format)
            if validate:
                previous = _validate_entry(obj, i, previous, "manifest", m.format)
            packer.pack(obj)
            if len(packer.getbuffer()) >= _PIECE:  # the packer's buffer would double as it grows
                pieces.append(packer.bytes())
                packer.reset()
    pieces.append(packer.bytes())
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def decode(data: bytes, source: str = "manifest", *, trusted: bool = False) -> Manifest:
    """Parse and validate manifest bytes. Anything wrong is a `ManifestError` naming ``source``.

    ``trusted=True`` skips validation and the re-encoding that proves the bytes canonical: only
    for bytes this program encoded from a validated manifest and the store just re-hashed to
    the digest recorded then (the memo of an unchanged pack). Other input may then raise
    anything."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ManifestError(source, "expected bytes")
    if len(data) == 0:
        raise ManifestError(source, "empty file")
    if len(data) > MAX_BYTES:
        raise ManifestError(source, f"{len(data)} bytes is larger than any manifest may be")
    try:
        obj = msgpack.unpackb(
            bytes(data),
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_bin_len=1 << 20,
            max_str_len=1 << 20,
            max_array_len=10_000_000,
            max_map_len=1 << 16,
            max_ext_len=0,
        )
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise ManifestError(source, f"not msgpack ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # msgpack raises assorted errors on hostile input
        raise ManifestError(source, f"not msgpack ({type(exc).__name__})") from None
    if not isinstance(obj, dict):
        raise ManifestError(source, f"top level is {type(obj).__name__}, expected a map")
    version = obj.get("format")
    if isinstance(version, int) and not isinstance(version, bool) and version not in READABLE:
        raise ManifestError(
            source,
            f"format version {version} is not supported (this cas reads versions "
            f"{', '.join(map(str, READABLE))})",
        )
    if not trusted:
        _validate(obj, source)
    entries = tuple(
        Entry(
            path=e["path"],
            kind=e["kind"],
            digest=Digest(e["digest"]) if e["digest"] is not None else None,
            size=e["size"],
            tier=e["tier"],
            tokens=e["tokens"],
            summary=Digest(e["summary"]) if e["summary"] is not None else None,
            reason=e["reason"],
            rating=e.get("rating", 0),
            listed=e.get("listed", e["tier"] == "low" and obj["format"] == 1),
        )
        for e in obj["entries"]
    )
    m = Manifest(
        scope=obj["scope"],
        target=obj["target"],
        tokenizer=obj["tokenizer"],
        budget_target=obj["budget"]["target"],
        budget_max=obj["budget"]["max"],
        entries=entries,
        totals=obj["totals"],
        parent=Digest(obj["parent"]) if obj["parent"] is not None else None,
        kind=obj["kind"],
        format=obj["format"],
        query=obj.get("query"),
        sources=tuple((str(n), Digest(d)) for n, d in obj.get("sources", ())),
    )
    if trusted:
        return m
    # The decoded object was validated above, and the manifest is built from it as it is: the
    # re-encoding that proves the bytes canonical need not validate it again.
    again = _encode(m, validate=False)
    if again != bytes(data):
        raise ManifestError(source, "not in canonical form (keys unsorted or non-minimal encoding)")
    return m


def _is_int(v: Any) -> bool:
    return type(v) is int or (isinstance(v, int) and not isinstance(v, bool))


def _check_totals(v: Any, source: str, depth: int = 0) -> None:
    if depth > 3 or not isinstance(v, dict):
        raise ManifestError(source, "totals must be a map of counts")
    for key, value in v.items():
        if not isinstance(key, str):
            raise ManifestError(source, "totals keys must be strings")
        if isinstance(value, dict):
            _check_totals(value, source, depth + 1)
        elif not _is_int(value):
            raise ManifestError(source, f"totals.{key} must be an integer")


def _validate(obj: dict[str, Any], source: str) -> None:
    _validate_head(obj, source)
    previous: bytes | None = None
    for i, e in enumerate(obj["entries"]):
        previous = _validate_entry(e, i, previous, source, obj["format"])


def _validate_head(obj: dict[str, Any], source: str) -> None:
    """Everything but the entries themselves."""

    def bad(problem: str) -> ManifestError:
        return ManifestError(source, problem)

    keys = set(obj)
    wanted = _LOAD_KEYS if obj.get("kind") == "load" else _TOP_KEYS
    if keys != wanted:
        missing, extra = sorted(wanted - keys), sorted(str(k) for k in keys - wanted)
        raise bad(f"wrong keys (missing {missing}, unexpected {extra})")
    if obj.get("kind") == "load":
        if not isinstance(obj["query"], str) or not obj["query"]:
            raise bad("query must be a non-empty string")
        sources = obj["sources"]
        if not isinstance(sources, list) or not all(
            isinstance(s, list)
            and len(s) == 2
            and isinstance(s[0], str)
            and s[0]
            and isinstance(s[1], bytes)
            and len(s[1]) == 32
            for s in sources
        ):
            raise bad("sources must be a list of [pack name, 32-byte digest]")
    if not _is_int(obj["format"]) or obj["format"] not in READABLE:
        raise bad(f"format must be one of {', '.join(map(str, READABLE))}")
    if obj["kind"] not in KINDS:
        raise bad(f"kind must be one of {', '.join(KINDS)}")
    for key in ("scope", "tokenizer"):
        if not isinstance(obj[key], str) or not obj[key]:
            raise bad(f"{key} must be a non-empty string")
    if obj["target"] is not None and (not isinstance(obj["target"], str) or not obj["target"]):
        raise bad("target must be a non-empty string or nil")
    budget = obj["budget"]
    if (
        not isinstance(budget, dict)
        or set(budget) != {"target", "max"}
        or not all(_is_int(v) and v >= 0 for v in budget.values())
    ):
        raise bad("budget must be {target: int, max: int}")
    parent = obj["parent"]
    if parent is not None and (not isinstance(parent, bytes) or len(parent) != 32):
        raise bad("parent must be a 32-byte digest or nil")
    _check_totals(obj["totals"], source)
    if not isinstance(obj["entries"], list):
        raise bad("entries must be a list")


def _validate_entry(e: Any, i: int, previous: bytes | None, source: str, version: int) -> bytes:
    """Check ``entries[i]`` of a manifest of format ``version``, which must sort after the path
    ``previous``; returns its path."""

    def bad(problem: str) -> ManifestError:  # ``problem`` follows the entry's name
        return ManifestError(source, f"entries[{i}]{problem}")

    entry_keys = _ENTRY_KEYS_V1 if version == 1 else _ENTRY_KEYS
    if not isinstance(e, dict) or e.keys() != entry_keys:
        raise bad(f" must be a map with keys {sorted(entry_keys)}")
    path = e["path"]
    if not isinstance(path, str) or not _valid_path(path):
        raise bad(f".path {echoed(path)} is not a relative POSIX path")
    encoded = path.encode("utf-8", "surrogatepass")
    if previous is not None and encoded <= previous:
        raise bad(f".path {echoed(path)} is out of order or repeated")
    if e["kind"] not in ENTRY_KINDS:
        raise bad(f".kind must be one of {', '.join(ENTRY_KINDS)}")
    if e["tier"] not in TIERS:
        raise bad(f".tier must be one of {', '.join(TIERS)}")
    for key in ("size", "tokens"):
        if not _is_int(e[key]) or e[key] < 0:
            raise bad(f".{key} must be a non-negative integer")
    for key in ("digest", "summary"):
        v = e[key]
        if v is not None and (not isinstance(v, bytes) or len(v) != 32):
            raise bad(f".{key} must be a 32-byte digest or nil")
    if e["summary"] is not None and e["tier"] != "medium":
        raise bad(": only a medium entry has a summary")
    if e["digest"] is None and e["tier"] != "low":
        raise bad(": an entry without a digest (withheld) must be low")
    if e["reason"] is not None and not isinstance(e["reason"], str):
        raise bad(".reason must be a string or nil")
    if version != 1:
        if not _is_int(e["rating"]) or not 0 <= e["rating"] <= MAX_RATING:
            raise bad(f".rating must be an integer from 0 to {MAX_RATING}")
        if not isinstance(e["listed"], bool):
            raise bad(".listed must be true or false")
        if e["listed"] and e["tier"] != "low":
            raise bad(": only a low entry is listed")
    return encoded


def _valid_path(path: str) -> bool:
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        return False
    if not unicodedata.is_normalized("NFC", path):
        return False
    parts = path.split("/")
    return "" not in parts and "." not in parts and ".." not in parts
