"""From scanned files to facts: store every body (but a secret's), classify what the content is.

For each file this decides what the content forces (a secret is withheld, a binary or very large
file is LOW whatever its rule says, a symlink is recorded as its link text) and measures what
tiering needs: the token count of the file's body as the render shows it. Bodies go into the store
in one batch; secret bodies go nowhere: not the store, not a cache, not a summary.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import msgpack

from cas.batch import Batch
from cas.digest import Digest
from packer.cache import Cache
from packer.render import fence_language, renderer
from packer.scan import ScannedFile, ScanNote, decode_text, is_binary
from packer.secrets import SECRETS_VERSION, SecretFinding, scan_secrets, secret_path_kind
from packer.tokens import TokenCounter

# Above this size a file is LOW ("large file") and streamed into the store: no agent wants a
# multi-megabyte file inline, and reading it whole would cost memory for nothing.
LARGE_FILE = 8 << 20
_SCAN_WINDOW = 4 << 20
_SCAN_OVERLAP = 64 << 10
RENDER_VERSION = "1"


@dataclass(slots=True)
class Fact:
    """What a pack needs to know about one file, whatever the target."""

    path: str
    kind: str
    size: int
    digest: Digest | None  # None: a withheld secret
    forced: str | None = None  # a reason that pins the file LOW, whatever its rule says
    body_tokens: int = 0  # tokens of the fenced body as a markdown render shows it
    secret: str | None = None
    text: bool = False


@dataclass(slots=True)
class IngestReport:
    facts: list[Fact] = field(default_factory=list)
    notes: list[ScanNote] = field(default_factory=list)
    withheld: list[tuple[str, str]] = field(default_factory=list)  # (path, kind) - never values
    bytes_read: int = 0


def _secret_kind(findings: list[SecretFinding]) -> str:
    kinds = sorted({f.kind for f in findings})
    return ", ".join(kinds)


def _read(f: ScannedFile) -> bytes:
    fd = os.open(f.abspath, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat_mod.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError("changed into something that is not a regular file")
        return handle.read()


def _scan_large(path: str) -> list[SecretFinding]:
    """Secret-scan a large file in overlapping windows, in bounded memory."""
    found: list[SecretFinding] = []
    with open(path, "rb") as handle:
        tail = b""
        while piece := handle.read(_SCAN_WINDOW):
            found += scan_secrets(tail + piece)
            tail = piece[-_SCAN_OVERLAP:]
            if found:
                break
    return found


class Ingest:
    def __init__(
        self,
        batch: Batch,
        cache: Cache,
        counter: TokenCounter,
        *,
        allow_secrets: Iterable[str] = (),
    ) -> None:
        self.batch = batch
        self.cache = cache
        self.counter = counter
        self.allow = set(allow_secrets)

    def run(
        self, files: list[ScannedFile], progress: Callable[[int, int], None] | None = None
    ) -> IngestReport:
        report = IngestReport()
        for i, f in enumerate(files):
            try:
                fact = self.one(f, report)
            except OSError as exc:
                report.notes.append(ScanNote(f.path, f"unreadable: {exc.strerror or exc}"))
                continue
            report.facts.append(fact)
            if progress is not None:
                progress(i + 1, f.size)
        return report

    def one(self, f: ScannedFile, report: IngestReport) -> Fact:
        if f.kind == "symlink":
            target = f.link_target or ""
            digest = self.batch.put(target.encode("utf-8"))
            return Fact(f.path, "symlink", f.size, digest, forced=f"symlink to {target}")
        allowed = f.path in self.allow
        by_path = secret_path_kind(f.path)
        if by_path and not allowed:
            report.withheld.append((f.path, by_path))
            return Fact(f.path, "file", f.size, None, forced=f"secret: {by_path}", secret=by_path)
        if f.size > LARGE_FILE:
            findings = [] if allowed else _scan_large(f.abspath)
            if findings:
                kind = _secret_kind(findings)
                report.withheld.append((f.path, kind))
                return Fact(f.path, "file", f.size, None, forced=f"secret: {kind}", secret=kind)
            digest = self.batch.put_file(f.abspath)
            report.bytes_read += f.size
            return Fact(f.path, "file", f.size, digest, forced="large file")
        data = _read(f)
        report.bytes_read += len(data)
        digest = Digest.of(data)
        if not allowed:
            findings = self._secrets(digest, data)
            if findings:
                kind = _secret_kind(findings)
                report.withheld.append((f.path, kind))
                return Fact(f.path, "file", len(data), None, forced=f"secret: {kind}", secret=kind)
        self.batch.put(data)
        if is_binary(data):
            return Fact(f.path, "file", len(data), digest, forced="binary")
        fact = Fact(f.path, "file", len(data), digest, text=True)
        fact.body_tokens = self.body_tokens(digest, f.path, data)
        return fact

    def _secrets(self, digest: Digest, data: bytes) -> list[SecretFinding]:
        ns = f"secrets:{SECRETS_VERSION}"
        cached = self.cache.get(ns, digest)
        if cached is not None:
            return [SecretFinding(k, line) for k, line in msgpack.unpackb(cached)]
        findings = scan_secrets(data)
        # Only the kind and line are cached, never a matched value.
        self.cache.put(ns, digest, msgpack.packb([[x.kind, x.line] for x in findings]))
        return findings

    def body_tokens(self, digest: Digest, path: str, data: bytes) -> int:
        lang = fence_language(path)
        ns = f"tokens:{self.counter.name}:{RENDER_VERSION}:{lang}"
        cached = self.cache.get(ns, digest)
        if cached is not None:
            return int(cached)
        piece = renderer("markdown").section_body(decode_text(data), lang)
        count = self.counter.count(piece)
        self.cache.put(ns, digest, str(count).encode())
        return count
