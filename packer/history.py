"""Which files changed recently and often, read from git's commits, never from file times.

History is a sequence of *entries*, newest first: the working tree's uncommitted changes (when it
has any), then the commits of the first-parent chain from HEAD. Each entry is the set of the
pack's files it changed. An entry that changes none of them (a commit touching only
``manifests/``, files outside the pack, or files since deleted) is skipped: it is not part of
the window at all. The window is the newest ``limit`` entries that remain. A file's history is
how many entries of the window changed it and the position of the newest (0 = newest entry).

Why entries and not commits or times: this repository commits its own packs and CI checks them
(``cas pack --check``) on a fresh clone, where the working tree is clean and HEAD is the commit
that recorded it. A pack made from a dirty working tree W sees [changes of W, c1, c2, ...];
committing W (with the pack) gives a commit C whose changes to the pack's files are exactly W's,
so the clone sees [C, c1, c2, ...]: the same entries in the same positions, the same ratings.
A commit of the packs alone changes no file of the pack and is skipped. Commit times never enter
(they differ between a rebase and its original, and clocks lie); only the order of the chain.

What is read: ``git log --first-parent -m --name-only --no-renames -z -- .`` in the pack's root
(so a subfolder of a repository sees its own history), streamed only until the window is full,
and ``git status --porcelain -z --untracked-files=all --no-renames -- .`` for the working tree
(tracked and untracked changes; ignored files are not content). Configuration that could change
the output is overridden on the command line (renames, signatures, replace refs, optional
locks), so the same repository gives the same history for every user.

Shallow clones: a clone made with ``--depth N`` holds fewer commits than a full one. When the
chain ends at a shallow boundary before the window is full, the history differs from a full
clone's and so may the ratings: `History.complete` is then False, and a CI that checks packs must
fetch enough history (``fetch-depth: 0``, or a depth above the window plus the commits it skips).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import blake3
import msgpack

HISTORY_VERSION: Final = "1"
# Entries of the window: enough to tell the files a project works on now from the ones it
# settled long ago; a few milliseconds of git on a large repository.
DEFAULT_LIMIT: Final = 200
# At most this many commits are read for a window (commits that change none of the pack's files
# do not fill it); a chain that runs longer without filling it ends the window (`complete` False).
MAX_COMMITS_PER_ENTRY: Final = 20
_CHUNK = 1 << 16
# Environment that would point git at another repository, index or object store than the one
# the root is in, or rewrite history, is dropped: the history of a root is the history of that
# folder, whoever runs it.
_DROP_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


@dataclass(frozen=True, slots=True)
class History:
    """The recent changes of a pack's files, newest first (see the module docstring)."""

    window: int  # entries in the window (at most the limit)
    limit: int
    changes: dict[str, int] = field(default_factory=dict)  # path -> entries that changed it
    newest: dict[str, int] = field(default_factory=dict)  # path -> position of its newest change
    dirty: frozenset[str] = frozenset()  # changed in the working tree (entry 0 when present)
    complete: bool = True  # False: a shallow clone or a long chain ended the window early
    digest: bytes = b""  # BLAKE3 of the entries: equal digests, equal history

    def reason(self, path: str) -> str | None:
        """How ``path`` changed, in words, or None when it did not."""
        n = self.changes.get(path, 0)
        if not n:
            return None
        if path in self.dirty and n == 1:
            return "changed in the working tree"
        dirty = " (and in the working tree)" if path in self.dirty else ""
        count = n - (path in self.dirty)
        commits = "commit" if self.window - bool(self.dirty) == 1 else "commits"
        return f"changed in {count} of the last {self.window - bool(self.dirty)} {commits}{dirty}"


def git_environment() -> dict[str, str]:
    """The environment every git command of the packer runs in: nothing that points git at
    another repository or rewrites history, no optional locks, the C locale."""
    env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV}
    env.update(
        {
            "GIT_OPTIONAL_LOCKS": "0",  # status must not write the index under a running git
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }
    )
    return env


# git with the configuration that could change its output fixed on the command line.
GIT = ("git", "-c", "log.showSignature=false", "-c", "core.quotePath=false")


# `git log` over the first-parent chain, each commit with the paths it changed (relative to the
# folder it runs in), whatever the user's configuration says of renames, signatures or diffs.
FIRST_PARENT_LOG = (
    "log",
    "--first-parent",
    "-m",
    "--name-only",
    "--no-renames",
    "--relative",
    "--no-show-signature",
    "--no-ext-diff",
)


def run_git(root: Path, args: list[str], env: dict[str, str]) -> bytes | None:
    """git ``args`` in ``root`` with the fixed configuration: its stdout, None on failure."""
    try:
        done = subprocess.run(
            [*GIT, "-C", str(root), *args],
            capture_output=True,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError:  # no git binary, or it cannot run here
        return None
    return done.stdout if done.returncode == 0 else None


def _commits(root: Path, env: dict[str, str], whole: bool) -> Iterator[list[str]]:
    """The paths each commit of the first-parent chain changed, newest first, streamed.
    ``whole``: the root is the repository's top folder (no path limit needed)."""
    args = [
        *GIT,
        "-C",
        str(root),
        *FIRST_PARENT_LOG,
        "--format=%x01",
        "-z",
        *(() if whole else ("--", ".")),
    ]
    try:
        proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return
    assert proc.stdout is not None
    try:
        # The output is "\x01" before each commit, then its paths, each ended by a NUL.
        pending = b""
        started = False
        while chunk := proc.stdout.read(_CHUNK):
            records = (pending + chunk).split(b"\x01")
            pending = records.pop()
            for record in records:
                if started:
                    yield _names(record)
                started = True
        if started:
            yield _names(pending)
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()


def _names(record: bytes) -> list[str]:
    return [
        n.decode("utf-8", "surrogateescape")
        for n in record.lstrip(b"\0\n").split(b"\0")
        if n.strip(b"\n")
    ]


def _start_status(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """`git status` for the working tree, started to run while the log is read."""
    args = [
        *GIT,
        "-C",
        str(root),
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules=all",
        "--",
        ".",
    ]
    try:
        return subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except OSError:
        return None


def _dirty(proc: subprocess.Popen[bytes] | None) -> list[str]:
    if proc is None:
        return []
    out, _ = proc.communicate()
    if proc.returncode != 0:
        return []
    # Each record is "XY path"; paths are relative to the repository's top folder.
    return [r[3:].decode("utf-8", "surrogateescape") for r in out.split(b"\0") if len(r) > 3]


def read_history(
    root: str | os.PathLike[str],
    paths: Collection[str],
    *,
    limit: int = DEFAULT_LIMIT,
) -> History | None:
    """The history of the files ``paths`` (relative to ``root``, POSIX), or None when ``root``
    is not in a git repository or git cannot be run."""
    root = Path(root)
    env = git_environment()
    head = run_git(root, ["rev-parse", "--show-prefix", "--is-shallow-repository"], env)
    if head is None:
        return None
    lines = head.decode("utf-8", "surrogateescape").split("\n")
    prefix, shallow = lines[0], (lines[1] if len(lines) > 1 else "") == "true"
    wanted = paths if isinstance(paths, frozenset) else frozenset(paths)
    status = _start_status(root, env)
    commits: list[list[str]] = []
    complete = True
    try:
        for read, names in enumerate(_commits(root, env, whole=not prefix), 1):
            mine = sorted(wanted.intersection(names))
            if mine:
                commits.append(mine)
                if len(commits) >= limit:
                    break
            if read >= limit * MAX_COMMITS_PER_ENTRY:
                complete = False
                break
        else:  # the chain ended: at its first commit, or at a shallow clone's boundary
            complete = not shallow
    finally:
        dirty = _dirty(status)
    entries: list[list[str]] = []
    changed = sorted({p[len(prefix) :] for p in dirty if p.startswith(prefix)} & wanted)
    if changed:
        entries.append(changed)
    entries += commits
    entries = entries[:limit]
    complete = complete or len(entries) == limit
    changes: dict[str, int] = {}
    newest: dict[str, int] = {}
    for position, names in enumerate(entries):
        for name in names:
            changes[name] = changes.get(name, 0) + 1
            newest.setdefault(name, position)
    digest = blake3.blake3(
        msgpack.packb([HISTORY_VERSION, limit, complete, entries], use_bin_type=True)
    ).digest()
    return History(
        len(entries),
        limit,
        dict(sorted(changes.items())),
        dict(sorted(newest.items())),
        frozenset(changed),
        complete,
        digest,
    )
