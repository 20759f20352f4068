"""What `cas pack` reports: each pack made or checked, and the run around them.

A result carries what its report shows of its manifest (the budget and the totals); the manifest
itself is at hand after a run that made it, and read from the store on first use after a run
replayed (`packer.replay`), which never decodes one to say what it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cas import manifest as mf
from cas.digest import Digest
from cas.report import json_rule, pairs, rounded
from packer.scan import ScanNote

if TYPE_CHECKING:  # the explanation's module prices files: a replayed run imports none of it
    from packer.explain import Explanation


def manifest_name(scope: str, target: str | None) -> str:
    return mf.pack_name(scope, target)


@dataclass(slots=True)
class PackResult:
    """One pack made (or checked); in JSON its file is ``manifest``, with the manifest's budget
    and totals (`cas.report.report_json`)."""

    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("budget", "totals")

    scope: str
    target: str | None
    name: str
    path: Path = field(metadata=json_rule(omit=True))
    digest: Digest
    written: bool
    tokens: dict[str, int]
    # The manifest file relative to the project root, as POSIX text.
    file: str = field(default="", metadata=json_rule(key="manifest"))
    budget: dict[str, int] = field(default_factory=dict, metadata=json_rule(omit=True))
    totals: dict[str, Any] = field(default_factory=dict, metadata=json_rule(omit=True))
    _manifest: mf.Manifest | None = field(default=None, repr=False, metadata=json_rule(omit=True))
    # How to read the manifest when it is not at hand (a replayed run's).
    _load: Callable[[], mf.Manifest] | None = field(
        default=None, repr=False, metadata=json_rule(omit=True)
    )

    @classmethod
    def made(
        cls,
        scope: str,
        target: str | None,
        name: str,
        path: Path,
        digest: Digest,
        m: mf.Manifest,
        written: bool,
        tokens: dict[str, int],
        file: str = "",
    ) -> PackResult:
        """The result of a manifest at hand."""
        budget = {"target": m.budget_target, "max": m.budget_max}
        return cls(scope, target, name, path, digest, written, tokens, file, budget, m.totals, m)

    @property
    def manifest(self) -> mf.Manifest:
        if self._manifest is None:
            if self._load is None:
                raise ValueError(f"the manifest of {self.name} is neither at hand nor readable")
            self._manifest = self._load()
        return self._manifest

    def has_manifest(self) -> bool:
        """Whether the manifest is at hand (made by this run, or read since)."""
        return self._manifest is not None


@dataclass(slots=True)
class PackReport:
    """What `cas pack` did; `cas.report.report_json` gives its JSON."""

    root: Path
    results: list[PackResult] = field(default_factory=list, metadata=json_rule(key="packs"))
    notes: list[ScanNote] = field(default_factory=list)
    withheld: list[tuple[str, str]] = field(
        default_factory=list, metadata=json_rule(convert=pairs("path", "kind"))
    )
    # Stored with the secrets cut out.
    redacted: list[tuple[str, str]] = field(
        default_factory=list, metadata=json_rule(convert=pairs("path", "kind"))
    )
    stale: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict, metadata=json_rule(convert=rounded(4)))
    # Where the ingest workers and tiering spent their time (see `PackReport.work`'s keys):
    # worker seconds overlap, so these do not add up to the stages.
    work: dict[str, float] = field(default_factory=dict, metadata=json_rule(convert=rounded(4)))
    ingest_mode: str = "threads"
    explained: list[Explanation] = field(default_factory=list, metadata=json_rule(omit=True))
    files: int = 0
    bytes_read: int = 0
    stat_hits: int = 0
    # Whether the run was replayed (`packer.replay`): nothing was read, rated or fitted.
    replayed: bool = False
    # Manifest files no configured scope or target makes (`packer.orphans`), relative to the
    # root as POSIX text; with ``pruned`` (`cas pack --prune`), removed by this run.
    orphans: list[str] = field(default_factory=list)
    pruned: bool = False
