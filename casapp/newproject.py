"""Starting a project: what ``cas init`` writes beside the store.

`start_project` gives a folder what a project packed with cas needs, and never overwrites a
file a user has (each is created only when missing, or appended to by one line):

* ``cas.toml``, commented, with one scope and the three targets of the design (`CAS_TOML`);
  left alone when there is one, or when a ``pyproject.toml`` holds ``[tool.cas]``;
* ``.gitignore`` with ``.cas/`` (the store is local, never committed);
* ``.gitattributes`` with ``*.pack diff=cas`` (git diffs pack files with the ``cas`` driver);
* in a git work tree, the driver in the repository's own config:
  ``diff.cas.textconv = cas textconv`` (`casapp.cli.review_cmds`), unless it is set already.

What it did and what it left alone is in the `Started` it returns; the command prints it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from cas.errors import OutputError
from packer.project import CONFIG_FILE, PYPROJECT_FILE, parse_toml, tool_cas

__all__ = [
    "ATTRIBUTES_LINE",
    "CAS_TOML",
    "DRIVER_KEY",
    "IGNORE_LINE",
    "Started",
    "start_project",
    "textconv_command",
]

IGNORE_LINE: Final = ".cas/"
ATTRIBUTES_LINE: Final = "*.pack diff=cas"
DRIVER_KEY: Final = "diff.cas.textconv"
# Lines of a .gitignore that already keep the store out of git.
_IGNORES_STORE: Final = frozenset((".cas", ".cas/", "/.cas", "/.cas/"))

CAS_TOML: Final = """\
# How cas packs this project (README "Packing a repository"). `cas pack` writes one pack per
# scope and target to manifests/SCOPE.TARGET.pack; commit them, and check in CI that they are
# current with `cas pack --check`.

[pack]
tokenizer = "o200k_base"                   # exact token counts, offline
# exclude = ["*.min.js", "vendor/**"]      # never packed (beside .gitignore's own rules)

# Rules tier files: high (in full), medium (a summary), low (listed only). The first match
# wins, then the built-in rules (source above tests, docs by name, and so on).
# [[rules]]
# globs = ["docs/**"]
# tier = "high"
# reason = "canonical docs"

# One scope, the whole repository; add scopes (roots, include, exclude) for parts of it.
[scopes.repo]
roots = ["."]

# The three targets: budgets in tokens. A pack fills at least 90% of its target when there is
# more to show, and never passes its max in any format.
[scopes.repo.targets.common]               # fits any model's context beside a conversation
target = 2500
max = 3000

[scopes.repo.targets.chatgpt]
target = 5000
max = 6000

[scopes.repo.targets.claude]
target = 10000
max = 12000
"""


@dataclass(slots=True)
class Started:
    """What `start_project` did: files written whole, files a line was appended to, files
    left as they were (with why), and the git driver set (or why not)."""

    folder: Path
    written: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)
    driver: str | None = None  # the textconv command set in the repository's git config
    driver_note: str | None = None  # why it was not set (already set, no git, not a repository)


def textconv_command() -> str:
    """The command git runs to show a pack as text: ``cas textconv`` when a ``cas`` is on PATH,
    else this interpreter's ``-m cas textconv`` (a cas run from a virtualenv not activated)."""
    if shutil.which("cas"):
        return "cas textconv"
    return f"{shlex.quote(sys.executable)} -m cas textconv"


def start_project(folder: Path, *, textconv: str | None = None) -> Started:
    """Give ``folder`` a commented cas.toml, ``.cas/`` in .gitignore, the pack diff driver in
    .gitattributes and, in a git work tree, in the repository's config. Nothing a user has is
    overwritten."""
    started = Started(folder)
    _config(folder, started)
    _line(folder / ".gitignore", IGNORE_LINE, _IGNORES_STORE, started)
    _line(folder / ".gitattributes", ATTRIBUTES_LINE, frozenset((ATTRIBUTES_LINE,)), started)
    _driver(folder, textconv or textconv_command(), started)
    return started


def _config(folder: Path, started: Started) -> None:
    pyproject = folder / PYPROJECT_FILE
    if not (folder / CONFIG_FILE).exists() and pyproject.is_file():
        try:
            configured = tool_cas(parse_toml(pyproject)) is not None
        except Exception:  # an unreadable pyproject.toml: cas.toml is written, and read first
            configured = False
        if configured:
            started.left.append((CONFIG_FILE, "pyproject.toml holds [tool.cas]"))
            return
    if _create(folder / CONFIG_FILE, CAS_TOML):
        started.written.append(CONFIG_FILE)
    else:
        started.left.append((CONFIG_FILE, "exists"))


def _create(path: Path, text: str) -> bool:
    """Write ``text`` to a new file ``path``; False when there is one already (never replaced,
    even by a race: the file is created exclusively)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return False
    except OSError as exc:
        raise OutputError(str(path), exc.strerror or str(exc)) from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return True


def _line(path: Path, line: str, present: frozenset[str], started: Started) -> None:
    """``line`` in the file ``path``: a new file holding it, or appended when no line of the
    file is one of ``present``."""
    if _create(path, line + "\n"):
        started.written.append(path.name)
        return
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise OutputError(str(path), exc.strerror or str(exc)) from None
    if any(row.strip() in present for row in text.splitlines()):
        started.left.append((path.name, f"has {line}"))
        return
    try:
        with path.open("a", encoding="utf-8") as f:
            f.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")
    except OSError as exc:
        raise OutputError(str(path), exc.strerror or str(exc)) from None
    started.appended.append(path.name)


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return subprocess.run(
            [git, "-C", str(folder), *args], capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip
    except OSError:
        return None


def _driver(folder: Path, command: str, started: Started) -> None:
    inside = _git(folder, "rev-parse", "--is-inside-work-tree")
    if inside is None:
        started.driver_note = "git not found"
        return
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        started.driver_note = "not a git work tree"
        return
    current = _git(folder, "config", "--local", "--get", DRIVER_KEY)
    if current is not None and current.returncode == 0 and current.stdout.strip():
        have = current.stdout.strip()
        started.driver_note = (
            None if have == command else f"{DRIVER_KEY} is set already ({have}): left alone"
        )
        started.driver = have if have == command else None
        return
    done = _git(folder, "config", "--local", DRIVER_KEY, command)
    if done is None or done.returncode != 0:
        why = done.stderr.strip() if done is not None else "git did not run"
        started.driver_note = f"could not set {DRIVER_KEY}: {why}"
        return
    started.driver = command
