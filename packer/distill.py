"""A recent-changes document (``90_recent_changes.md``) distilled from git history, in a budget.

What it says: how many commits the window holds and what they changed (files, folders, and the
token delta between two packs when two are given); the commits, newest first, each as its short
hash, its date and its subject, with the first paragraph of its body; the files changed, grouped
by top-level folder with counts; and, from two packs (`packer.diff`), the re-tiered files and the
largest token deltas. Never a diff, never a raw log: a message keeps its subject and the first
paragraph of its body, trailers (``Signed-off-by:``, ``Co-authored-by:``) dropped.

The window is the newest ``commits`` commits of the first-parent chain from HEAD, or the chain
from HEAD back to a revision (``since``), at most `MAX_COMMITS`; with ``until`` (a day), only
the commits dated that day or before count, so commits made later never change the window of
that day (a memory pack's, `memory.recent`). Only commits that change the
project's folder count when the project is a subfolder of its repository, as in
`packer.history`, whose git conventions apply: configuration that could change the output fixed
on the command line, ``-z`` output, order from the chain, never from a clock. Dates are shown as
each commit records its committer date (``YYYY-MM-DD``, in the commit's own zone): the same
repository and arguments give the same bytes on any machine.

Fitting the budget: the whole document is laid out, then detail is dropped in a fixed order
until its token count (the target's tokenizer, `packer.tokens`) is within the budget:

1. the bodies of commits, oldest first;
2. file lists: the longest list shown is halved, again and again, until every folder is a count;
3. token-delta rows, smallest delta first;
4. re-tiered rows, from the last;
5. commits, oldest first; the newest is never dropped;
6. folder rows, fewest files first, then the "Files changed" section (the summary counts them).

Each step removes whole lines or shortens a list inside one line; no line is ever cut. Dropped
rows leave a line saying how many are not shown. When the title, the summary and the newest
commit alone are over the budget, `DistillBudgetError`. Counting is incremental: every line
begins with ``-`` or ``#``, where the tokenizers' pre-tokens always split (`packer.tokens`), so a
document's count is the sum of its sections' counts; the final text is counted whole once more.

Secrets: every commit message and every path goes through the secret scan (`packer.secrets`)
before it is laid out, and the finished document once more; a finding is cut out and replaced
by its marker (``[REDACTED: GitHub token]``), and a message whose secret has no exact span is
replaced by the marker whole.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cas.display import echoed, one_line, shown
from cas.errors import DistillBudgetError, HistoryError, UnknownName, UsageError
from cas.manifest import Manifest
from cas.report import json_rule
from packer.config import Config, Target
from packer.diff import Change, PackDiff, diff
from packer.fit_loop import PRIMARY, Pieces, Steps, Trial, refit
from packer.history import FIRST_PARENT_LOG, git_environment, run_git
from packer.rules import parse_day
from packer.secrets import marker, redact, redact_path, scan_secrets, secrets_in_paths
from packer.tokens import TokenCounter

__all__ = [
    "DEFAULT_COMMITS",
    "DOCUMENT_NAME",
    "MAX_COMMITS",
    "Commit",
    "RecentChanges",
    "Window",
    "choose_targets",
    "configured_targets",
    "distill",
    "distill_text",
    "read_window",
]

DOCUMENT_NAME: Final = "90_recent_changes.md"
DEFAULT_COMMITS: Final = 20
# The most commits a window reads (`--since` an old revision): enough for any document a
# context budget holds, and a bound on the git output read.
MAX_COMMITS: Final = 10_000
SHORT_HASH: Final = 10
# A subject or a body paragraph longer than this is shortened at a word, with "...".
SUBJECT_CHARS: Final = 240
BODY_CHARS: Final = 480

_HEX = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_TRAILER = re.compile(r"([A-Za-z0-9][A-Za-z0-9-]*):\s+\S")
_TRAILER_KEYS = frozenset({"bug", "cc", "change-id", "closes", "fixes", "link", "refs", "see-also"})
_CHERRY = re.compile(r"\(cherry picked from commit [0-9a-f]+\)")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of the window, as git records it."""

    id: str  # the full hash
    date: str  # the committer date, YYYY-MM-DD, as the commit records it
    message: str  # the whole message
    paths: tuple[str, ...]  # the files it changed (relative to the project root), sorted


@dataclass(frozen=True, slots=True)
class Window:
    """The commits of the window, newest first."""

    commits: tuple[Commit, ...]
    cut: bool = False  # the range held more than MAX_COMMITS commits: the oldest are not read


@dataclass(frozen=True, slots=True)
class RecentChanges:
    """A distilled document and what it holds."""

    text: str = field(metadata=json_rule(omit=True))
    tokens: int  # of the text, counted whole with the tokenizer
    budget: int
    tokenizer: str
    commits: int  # in the window
    shown: int  # listed in the document
    bodies: int  # listed with the first paragraph of their body
    files: int  # changed in the window
    folders: int
    redacted: int  # secrets cut out of messages and paths


# --- reading the window --------------------------------------------------------------------------


def read_window(
    root: str | os.PathLike[str],
    *,
    commits: int = DEFAULT_COMMITS,
    since: str | None = None,
    until: str | None = None,
) -> Window:
    """The newest ``commits`` commits of the first-parent chain from HEAD, or those after the
    revision ``since`` (at most `MAX_COMMITS`), that change files under ``root``; with
    ``until`` (``YYYY-MM-DD``), only the commits whose committer date is that day or before
    (see `_dated`).

    `HistoryError` when ``root`` is not in a git repository or ``since`` names no commit;
    `UsageError` when ``until`` is not a calendar date."""
    root = Path(root)
    day = parse_day(until) if until is not None else None
    env = git_environment()
    top = run_git(root, ["rev-parse", "--show-prefix"], env)
    if top is None:
        raise HistoryError(str(root), "not in a git repository (or git cannot run here)")
    prefix = top.decode("utf-8", "surrogateescape").strip("\n")
    revs = ["HEAD"]
    limit = min(max(commits, 1), MAX_COMMITS)
    if since is not None:
        if not since or since.startswith("-") or any(c.isspace() for c in since):
            raise HistoryError(str(root), f"{echoed(since, quoted=False)} is not a revision")
        start = run_git(root, ["rev-parse", "--verify", "--quiet", f"{since}^{{commit}}"], env)
        if start is None:
            raise HistoryError(str(root), f"unknown revision {echoed(since, quoted=False)}")
        revs.append("^" + start.decode("ascii").strip())
        limit = MAX_COMMITS
    if run_git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], env) is None:
        return Window(())  # a repository without commits
    pathspec = ("--", ".") if prefix else ()
    picked: list[str] = []
    if day is not None:
        picked, more = _dated(root, env, revs, pathspec, day, limit)
        if not picked:
            return Window(())
        revs = ["--no-walk=unsorted", *picked]
    out = run_git(
        root,
        [
            "-c",
            "log.showRoot=true",
            *FIRST_PARENT_LOG,
            "--no-notes",
            "--encoding=UTF-8",
            "--format=%x01%H%x00%cs%x00%B%x00",
            "-z",
            f"--max-count={limit + 1}",
            *revs,
            *pathspec,
        ],
        env,
    )
    if out is None:
        raise HistoryError(str(root), "git log failed")
    found = _parse_log(out)
    if day is not None:
        return Window(tuple(found), cut=since is not None and more)
    return Window(tuple(found[:limit]), cut=since is not None and len(found) > limit)


# A commit's date in its own zone is at most this far from its UTC date: git keeps zones up to
# +-99:59. The git side of the `until` bound is this much past the day, the exact test is ours.
_ZONE_SLACK = dt.timedelta(hours=100)


def _dated(
    root: Path,
    env: dict[str, str],
    revs: list[str],
    pathspec: tuple[str, ...],
    day: dt.date,
    limit: int,
) -> tuple[list[str], bool]:
    """The newest ``limit`` commits of the chain (``revs``, ``pathspec``) whose committer date,
    in the commit's own zone as `Commit.date` shows it, is ``day`` or before; and whether there
    were more. Newer commits never take a place in the window (the chain's dates need not
    be in order), so commits made after ``day`` leave the window of ``day`` as it was. git
    skips the commits well after the day (``--until``, a timestamp, no clock); each date left is
    compared here. At most `MAX_COMMITS` commits are read."""
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC) + _ZONE_SLACK
    out = run_git(
        root,
        [
            "log",
            "--first-parent",
            "--no-show-signature",
            "--format=%H %cs",
            "-z",
            f"--until=@{int(end.timestamp())} +0000",
            f"--max-count={MAX_COMMITS}",
            *revs,
            *pathspec,
        ],
        env,
    )
    if out is None:
        raise HistoryError(str(root), "git log failed")
    wanted = day.isoformat()
    picked = []
    for record in out.split(b"\0"):
        fields = record.strip(b"\n").split(b" ")
        if (
            len(fields) == 2
            and _HEX.fullmatch(fields[0])
            and fields[1].decode("ascii", "replace") <= wanted
        ):
            picked.append(fields[0].decode("ascii"))
    return picked[:limit], len(picked) > limit


def _parse_log(out: bytes) -> list[Commit]:
    """Commits from ``\\x01HASH\\0DATE\\0MESSAGE\\0`` then their paths, each ended by NUL."""
    tokens = out.split(b"\0")
    commits: list[Commit] = []
    i = 0
    while i < len(tokens):
        head = tokens[i].lstrip(b"\n")
        if not (head.startswith(b"\x01") and _HEX.fullmatch(head[1:]) and i + 2 < len(tokens)):
            i += 1
            continue
        date, message = tokens[i + 1], tokens[i + 2]
        i += 3
        paths: set[str] = set()
        while i < len(tokens):
            name = tokens[i].lstrip(b"\n")
            if name.startswith(b"\x01") and _HEX.fullmatch(name[1:]):
                break
            if name:
                paths.add(name.decode("utf-8", "surrogateescape"))
            i += 1
        commits.append(
            Commit(
                head[1:].decode("ascii"),
                date.decode("ascii", "replace"),
                message.decode("utf-8", "replace"),
                tuple(sorted(paths, key=_path_key)),
            )
        )
    return commits


def _path_key(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


# --- distilling ----------------------------------------------------------------------------------


def _without_secrets(text: str) -> tuple[str, int]:
    """``text`` with its secrets cut out, and how many there were. A secret without an exact
    span takes the whole text with it."""
    data = text.encode("utf-8", "surrogateescape")
    found = scan_secrets(data)
    if not found:
        return text, 0
    cut = redact(data, found)
    if cut is None:
        return marker(found[0].kind).decode(), len(found)
    return cut.decode("utf-8", "replace"), len(found)


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "..."


def _is_trailers(paragraph: list[str]) -> bool:
    """A block of trailers (``Signed-off-by: ...``) or cherry-pick notes: every line one, and
    at least one a known trailer key or a ``*-by`` key."""
    known = False
    for line in paragraph:
        if _CHERRY.fullmatch(line.strip()):
            known = True
            continue
        m = _TRAILER.match(line)
        if m is None:
            return False
        key = m.group(1).lower()
        known = known or key.endswith("-by") or key in _TRAILER_KEYS
    return known


def _distill_message(message: str) -> tuple[str, str, int]:
    """The subject and the first paragraph of the body (empty when it is only trailers), each
    on one line, and how many secrets were cut out."""
    clean, secrets = _without_secrets(message)
    paragraphs: list[list[str]] = [[]]
    for line in clean.splitlines():
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    paragraphs = [p for p in paragraphs if p]
    subject = _SPACE.sub(" ", " ".join(paragraphs[0])).strip() if paragraphs else ""
    body = ""
    if len(paragraphs) > 1 and not _is_trailers(paragraphs[1]):
        body = _SPACE.sub(" ", " ".join(paragraphs[1])).strip()
    subject = _shorten(one_line(subject), SUBJECT_CHARS) or "(no message)"
    body = _shorten(one_line(body), BODY_CHARS)
    # Joining and shortening can change what the scan sees: the pieces are scanned as shown.
    subject, more = _without_secrets(subject)
    body, more2 = _without_secrets(body)
    return subject, body, secrets + more + more2


class _Section:
    """A heading and its rows (each one line or an item with its indented line, ending in a
    newline), then the ``tail`` row saying what is not shown. Its count is kept as rows change."""

    def __init__(self, count: Pieces, header: str, rows: list[str]) -> None:
        self.count = count
        self.header = header
        self.rows = rows
        self.tail = ""
        self.sum = sum(count(r) for r in rows)

    def replace(self, i: int, text: str) -> None:
        self.sum += self.count(text) - self.count(self.rows[i])
        self.rows[i] = text

    def pop(self) -> None:
        self.sum -= self.count(self.rows.pop())

    def tokens(self, last: bool) -> int:
        n = self.count(self.header) + self.sum + self.count(self.tail)
        if not last:  # the blank line after the section belongs to its last row
            end = self.tail or self.rows[-1]
            n += self.count(end + "\n") - self.count(end)
        return n

    def text(self) -> str:
        return self.header + "".join(self.rows) + self.tail


@dataclass(slots=True)
class _Folder:
    name: str  # "" for the project's top folder
    files: list[str]  # paths below it, most changed first
    shown: int

    def row(self) -> str:
        label = f"{self.name}/" if self.name else "./"
        n = len(self.files)
        count = f"{n} file" if n == 1 else f"{n} files"
        if not self.shown:
            return f"- {label} ({count})\n"
        listed = ", ".join(self.files[: self.shown])
        more = f" and {n - self.shown} more" if self.shown < n else ""
        return f"- {label} ({count}): {listed}{more}\n"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _signed(n: int) -> str:
    return f"{n:+d}"


def _changed_files(commits: Sequence[Commit]) -> tuple[dict[str, int], list[_Folder], int]:
    """How often each path changed, the folders' rows (most files first), and how many
    secrets were cut out of the paths (each then shown on one line)."""
    every = sorted({p for c in commits for p in c.paths}, key=_path_key)
    in_paths = secrets_in_paths(every)
    redacted = sum(len(f) for f in in_paths.values())
    changed: dict[str, int] = {}
    for c in commits:
        for p in c.paths:
            changed[p] = changed.get(p, 0) + 1
    folders: dict[str, dict[str, int]] = {}
    for path, n in changed.items():
        safe = redact_path(path, in_paths.get(path)) if path in in_paths else path
        top, _, rest = safe.partition("/")
        name, below = (top, rest) if rest else ("", top)
        files = folders.setdefault(name, {})
        files[shown(below)] = files.get(shown(below), 0) + n
    folder_rows = [
        _Folder(shown(name) if name else "", sorted(files, key=lambda f: (-files[f], f)), 0)
        for name, files in folders.items()
    ]
    folder_rows.sort(key=lambda f: (-len(f.files), _path_key(f.name)))
    for f in folder_rows:
        f.shown = len(f.files)
    return changed, folder_rows, redacted


def _commit_items(commits: Sequence[Commit]) -> tuple[list[tuple[str, str]], int]:
    """Each commit's line and its body's line, secrets cut out; how many were."""
    items: list[tuple[str, str]] = []
    redacted = 0
    for c in commits:
        subject, body, found = _distill_message(c.message)
        redacted += found
        head = f"- {c.id[:SHORT_HASH]} {c.date} {subject}\n"
        items.append((head, f"  {body}\n" if body else ""))
    return items, redacted


def _summary_line(window: Window, files: int, folders: int, pack_diff: PackDiff | None) -> str:
    """The summary line: the whole window, whatever is dropped."""
    commits = window.commits
    if commits:
        newest, oldest = commits[0], commits[-1]
        span = (
            f"{oldest.id[:SHORT_HASH]} ({oldest.date}) to {newest.id[:SHORT_HASH]} ({newest.date})"
            if len(commits) > 1
            else f"{newest.id[:SHORT_HASH]} ({newest.date})"
        )
        summary = (
            f"{_plural(len(commits), 'commit')}, {span}; "
            f"{_plural(files, 'file')} changed in {_plural(folders, 'folder')}"
        )
        if window.cut:
            summary += f" (the window stops at {MAX_COMMITS} commits)"
    else:
        summary = "No commits in the window"
    if pack_diff is not None:
        delta = pack_diff.new_tokens - pack_diff.old_tokens
        summary += (
            f"; pack tokens {pack_diff.old_tokens} -> {pack_diff.new_tokens} ({_signed(delta)})"
        )
    return summary + "."


def _edits(
    items: list[tuple[str, str]],
    commits: Sequence[Commit],
    commit_sec: _Section,
    folder_rows: list[_Folder],
    folder_sec: _Section,
    delta_changes: list[Change],
    delta_sec: _Section,
    retier_changes: list[Change],
    retier_sec: _Section,
    sections: list[_Section],
) -> Iterator[None]:
    """The document cut one step at a time, in the order of the module doc."""
    # 1. bodies, oldest first
    for i in reversed(range(len(items))):
        if items[i][1]:
            commit_sec.replace(i, items[i][0])
            yield
    # 2. file lists, the longest shown halved until every folder is a count
    while True:
        longest = max(folder_rows, key=lambda f: f.shown, default=None)
        if longest is None or not longest.shown:
            break
        longest.shown //= 2
        folder_sec.replace(folder_rows.index(longest), longest.row())
        yield
    # 3. token deltas, smallest first
    hidden = 0
    while delta_sec.rows:
        delta_sec.pop()
        gone = delta_changes[len(delta_sec.rows) :]
        hidden = sum(c.delta for c in gone)
        more = "more " if delta_sec.rows else ""
        delta_sec.tail = f"- {_plural(len(gone), more + 'file')}: {_signed(hidden)} tokens in all\n"
        yield
    # 4. re-tiered files, from the last
    while retier_sec.rows:
        retier_sec.pop()
        n = len(retier_changes) - len(retier_sec.rows)
        more = "more " if retier_sec.rows else ""
        retier_sec.tail = f"- {_plural(n, more + 're-tiered file')}\n"
        yield
    # 5. commits, oldest first; never the newest
    while len(commit_sec.rows) > 1:
        commit_sec.pop()
        n = len(commits) - len(commit_sec.rows)
        commit_sec.tail = f"- {_plural(n, 'older commit')} not shown\n"
        yield
    # 6. folders, fewest files first, then the section (the summary line counts them)
    while folder_sec.rows:
        folder_sec.pop()
        if not folder_sec.rows:  # the summary line holds the counts
            sections.remove(folder_sec)
            yield
            break
        left = folder_rows[len(folder_sec.rows) :]
        files = sum(len(f.files) for f in left)
        folder_sec.tail = f"- {_plural(len(left), 'more folder')} ({_plural(files, 'file')})\n"
        yield


def distill_text(
    window: Window,
    budget: int,
    counter: TokenCounter,
    pack_diff: PackDiff | None = None,
) -> RecentChanges:
    """The recent-changes document of ``window`` within ``budget`` tokens of ``counter``'s
    tokenizer, with the re-tiered files and token deltas of ``pack_diff`` when given. A pure
    function of its arguments (see the module doc for the layout and the order of dropping).

    `DistillBudgetError` when the summary and the newest commit alone do not fit."""
    if budget < 1:
        raise UsageError(f"a token budget is a positive number, not {budget}")
    count = Pieces(counter)
    commits = window.commits
    redacted = 0

    changed, folder_rows, redacted = _changed_files(commits)
    folders = len(folder_rows)

    items, found = _commit_items(commits)
    redacted += found

    summary = _summary_line(window, len(changed), folders, pack_diff)

    sections: list[_Section] = []
    commit_sec = _Section(count, "## Commits (newest first)\n\n", [h + b for h, b in items])
    folder_sec = _Section(count, "## Files changed\n\n", [f.row() for f in folder_rows])
    if commits:
        sections.append(commit_sec)
    if folder_rows:
        sections.append(folder_sec)
    retier_changes: list[Change] = []
    delta_changes: list[Change] = []
    if pack_diff is not None:
        retier_changes = pack_diff.by_kind("retiered")
        delta_changes = sorted(
            (c for c in pack_diff.changes if c.delta),
            key=lambda c: (-abs(c.delta), _path_key(c.path)),
        )
    listed = sorted({c.path for c in (*retier_changes, *delta_changes)}, key=_path_key)
    diff_paths = secrets_in_paths(listed)
    redacted += sum(len(f) for f in diff_paths.values())

    def diff_path(path: str) -> str:
        return shown(redact_path(path, diff_paths[path]) if path in diff_paths else path)

    retier_sec = _Section(
        count,
        "## Re-tiered\n\n",
        [
            f"- {diff_path(c.path)}: {c.old_tier} -> {c.new_tier} ({_signed(c.delta)} tokens)\n"
            for c in retier_changes
        ],
    )
    delta_sec = _Section(
        count,
        "## Token deltas\n\n",
        [
            f"- {diff_path(c.path)} {_signed(c.delta)} ({c.change.replace('+', ', ')})\n"
            for c in delta_changes
        ],
    )
    if retier_changes:
        sections.append(retier_sec)
    if delta_changes:
        sections.append(delta_sec)

    title = f"# Recent changes\n\n{summary}\n" + ("\n" if sections else "")

    def total() -> int:
        return count(title) + sum(
            s.tokens(last=i == len(sections) - 1) for i, s in enumerate(sections)
        )

    steps = _edits(
        items, commits, commit_sec, folder_rows, folder_sec, delta_changes, delta_sec,
        retier_changes, retier_sec, sections,
    )  # fmt: skip

    def trial(k: int) -> Trial[RecentChanges | None] | None:
        """The document after ``k`` edits: counted whole only when its sections' counts say
        it may fit (they are exact but for a secret the whole text's scan finds)."""
        if k and next(steps, StopIteration) is StopIteration:
            return None
        estimate = total()
        if estimate > budget:
            return Trial(None, {PRIMARY: estimate}, estimate)
        text = title + "\n".join(s.text() for s in sections)
        text, found = _without_secrets(text)  # what the pieces' scans could not see
        tokens = counter.count(text)
        shown_commits = len(commit_sec.rows) if commits else 0
        done = RecentChanges(
            text=text,
            tokens=tokens,
            budget=budget,
            tokenizer=counter.name,
            commits=len(commits),
            shown=shown_commits,
            bodies=sum(1 for r in commit_sec.rows[:shown_commits] if "\n  " in r),
            files=len(changed),
            folders=folders,
            redacted=redacted + found,
        )
        return Trial(done, {PRIMARY: tokens}, estimate)

    best = refit(trial, Steps(lambda _k: budget))
    if best is None or best.made is None:
        raise DistillBudgetError(budget, total())
    return best.made


# --- the project's side --------------------------------------------------------------------------


def configured_targets(config: Config) -> list[Target]:
    """The targets a project's packs are made for, each once, in the order the configuration
    first names them, with the budget of that first scope; a project without named targets has
    one unnamed target with the ``[pack]`` budget."""
    seen: dict[str, Target] = {}
    for scope in config.scopes:
        for target in scope.targets:
            if target.name and target.name not in seen:
                seen[target.name] = target
    return list(seen.values()) or [Target("", config.budget)]


def choose_targets(config: Config, names: Sequence[str] = ()) -> list[Target]:
    """The targets ``names`` (each once, in the order given), or every configured target when
    none is named; `UnknownName` for a name the configuration does not have."""
    known = configured_targets(config)
    by_name = {t.name: t for t in known}
    for name in names:
        if name not in by_name:
            source = config.source or "the default configuration"
            raise UnknownName("target", name, [t.name for t in known if t.name], source)
    return [by_name[n] for n in dict.fromkeys(names)] if names else known


def distill(
    root: str | os.PathLike[str],
    budget: int,
    *,
    tokenizer: str = "o200k_base",
    commits: int = DEFAULT_COMMITS,
    since: str | None = None,
    until: str | None = None,
    old: Manifest | None = None,
    new: Manifest | None = None,
) -> RecentChanges:
    """The recent-changes document of the git history of ``root`` (`read_window`, up to the
    day ``until`` when given) within ``budget`` tokens of ``tokenizer`` (`distill_text`); with
    ``old`` and ``new``, two packs of the project, their re-tiered files and token deltas
    (`packer.diff`)."""
    if (old is None) != (new is None):
        raise UsageError("a pack diff needs both packs: give the old one and the new one")
    window = read_window(root, commits=commits, since=since, until=until)
    pack_diff = diff(old, new) if old is not None and new is not None else None
    return distill_text(window, budget, TokenCounter(tokenizer), pack_diff)
