"""Scripted git repositories for tests: real `git`, fixed identities and dates, no user config,
so the same script gives the same commits (and hashes) on every machine."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

GIT = shutil.which("git")

# A fixed start (2024-01-01T00:00:00Z) and one hour between commits.
EPOCH = 1_704_067_200


class Repo:
    """A repository in ``root`` whose commits carry the dates of a counter, not of the clock."""

    def __init__(self, root: Path) -> None:
        assert GIT is not None, "these tests need git on PATH"
        self.root = root
        self.ticks = 0
        root.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(
            HOME=str(root / ".home"),
            XDG_CONFIG_HOME=str(root / ".home"),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_AUTHOR_NAME="Test Author",
            GIT_AUTHOR_EMAIL="author@example.com",
            GIT_COMMITTER_NAME="Test Committer",
            GIT_COMMITTER_EMAIL="committer@example.com",
        )
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        assert GIT is not None
        done = subprocess.run(
            [GIT, "-C", str(self.root), *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def commit(
        self, message: str, files: dict[str, str] | None = None, *, date: str | None = None
    ) -> str:
        """Write ``files``, commit everything with ``message``; the new commit's hash. Its date
        is the next hour of the counter, or ``date`` (git's ``SECONDS +HHMM``) when given."""
        for rel, text in (files or {}).items():
            self.write(rel, text)
        self.ticks += 1
        date = date or f"{EPOCH + 3600 * self.ticks} +0000"
        self.git("add", "-A")
        subprocess.run(
            [GIT, "-C", str(self.root), "commit", "-q", "--allow-empty", "-F", "-"],
            input=message,
            env={**self.env, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return self.git("rev-parse", "HEAD").strip()


WORDS = [
    *("store", "pack", "manifest", "budget", "token", "tier", "rating", "scope", "target"),
    *("index", "remote", "chunk", "frame", "digest", "verify", "prune", "lease", "window"),
    *("commit", "history", "render", "search", "load", "summary"),
]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def scripted_history(repo: Repo, commits: int, seed: int = 7) -> list[str]:
    """``commits`` commits, each with a subject, a body of two paragraphs and a trailer,
    changing one to four files in several folders; their hashes, oldest first."""
    rng = random.Random(seed)
    folders = ["src", "docs", "tests", "tools/ci", "lib/core"]
    hashes = []
    for i in range(commits):
        files = {
            f"{rng.choice(folders)}/module_{rng.randrange(40)}.py": f"x = {i}\n"
            for _ in range(rng.randrange(1, 5))
        }
        message = (
            f"Change {i}: {_words(rng, 8)}\n\n{_words(rng, 30)}\n{_words(rng, 10)}\n\n"
            f"Second paragraph {i} never shown {_words(rng, 10)}\n\n"
            f"Signed-off-by: Dev {i} <dev{i}@example.com>\n"
        )
        hashes.append(repo.commit(message, files))
    return hashes
