"""The recent changes of a memory pack: ``90_recent_changes.md``, distilled from the project's
git history up to the pack's day, within a share of the target's budget.

What changed is read from git, never from raw logs: `packer.distill` lays out the commits of
the window (subjects, the first paragraph of each body, the files changed by folder; every
message and path through the secret scan, the finished document once more). The window is the
newest `packer.distill.DEFAULT_COMMITS` commits of the first-parent chain whose committer date
is ``now`` or before (`packer.distill.read_window` with ``until``), so commits made after
``now`` never change a memory pack of ``now``, and no clock is read.

Inside a memory pack the document is a section headed ``## Recent changes
(90_recent_changes.md)``, its own headings one level down; the section, heading included, is at
most the share's tokens (`MemoryConfig.recent_changes_share` percent of the target's budget),
counted as the pack shows it. When the project is not a git repository, has no commit dated
``now`` or before, or not even the newest commit fits the share, the section is one line that
says so: a memory pack never fails for its history. The document itself (the standalone
``90_recent_changes.md``, or that line under its title) is what the pack's manifest lists and
the store keeps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from cas.errors import DistillBudgetError, HistoryError
from packer.config import Budget
from packer.distill import DOCUMENT_NAME, RecentChanges, Window, distill_text, read_window
from packer.fit_loop import PRIMARY, Rooms, Trial, refit
from packer.tokens import TokenCounter

__all__ = ["DOCUMENT_NAME", "History", "Section", "history", "left_out", "section"]

TITLE: Final = "# Recent changes\n\n"
HEADING: Final = f"## Recent changes ({DOCUMENT_NAME})\n\n"


@dataclass(frozen=True, slots=True)
class History:
    """What a project's git history holds up to ``now``: the window, or None when the project
    is not a git repository."""

    now: str
    window: Window | None


@dataclass(frozen=True, slots=True)
class Section:
    """The recent changes as a memory pack shows them."""

    piece: str  # the section of the memory pack, heading included; "" when left out
    document: str  # the 90_recent_changes.md it stands for (what the store keeps)
    commits: int  # in the window
    shown: int  # commits listed
    tier: str  # high: the section shows the document; low: a line, or left out to fit
    reason: str


def history(root: str | os.PathLike[str], now: str) -> History:
    """The git history of the project at ``root`` up to the day ``now`` (``YYYY-MM-DD``)."""
    try:
        return History(now, read_window(root, until=now))
    except HistoryError:
        return History(now, None)


def _one_line(line: str, commits: int, tier: str, reason: str) -> Section:
    return Section(HEADING + line + "\n", TITLE + line + "\n", commits, 0, tier, reason)


def _piece(document: str) -> str:
    """The document as a section of a memory pack: its title replaced by the section's
    heading, its other headings one level down (every heading line starts with '#')."""
    body = document.removeprefix(TITLE)
    return HEADING + "".join(
        "#" + line if line.startswith("#") else line for line in body.splitlines(keepends=True)
    )


def section(found: History, budget: int, counter: TokenCounter) -> Section:
    """The recent changes of ``found`` within ``budget`` tokens of ``counter``, as a memory
    pack shows them, heading included; one line when there is nothing to distil or not room
    for the newest commit."""
    if found.window is None:
        return _one_line("Not a git repository: no recent changes.", 0, "high", "no git history")
    window = found.window
    commits = len(window.commits)
    if not commits:
        line = f"No commits dated {found.now} or before."
        return _one_line(line, 0, "high", "no commits in the window")

    def trial(room: int) -> Trial[tuple[str, RecentChanges]] | None:
        """The document distilled within ``room``, as the section shows it (its headings one
        level down cost a little more than the room said)."""
        if room < 1:
            return None
        try:
            done = distill_text(window, room, counter)
        except DistillBudgetError:
            return None  # not even the newest commit fits
        piece = _piece(done.text)
        return Trial((piece, done), {PRIMARY: counter.count(piece)}, room)

    # Each try takes what the last one was over off the document's budget; the first within
    # the budget is the section.
    fitted = refit(trial, Rooms(Budget(budget, budget), budget, grow=False, margin=0, floors=False))
    if fitted is None:
        return left_out(found, budget)
    piece, done = fitted.made
    reason = f"recent changes: {done.shown} of {commits} commits up to {found.now}"
    return Section(piece, done.text, commits, done.shown, "high", reason)


def left_out(found: History, budget: int) -> Section:
    """The line that stands for the recent changes when they do not fit ``budget``."""
    commits = len(found.window.commits) if found.window is not None else 0
    line = (
        f"({commits} recent {'commit' if commits == 1 else 'commits'} up to {found.now} not "
        f"shown to fit {budget} tokens: 'cas distill' writes them)"
    )
    return _one_line(line, commits, "low", "recent changes, left out to fit")
