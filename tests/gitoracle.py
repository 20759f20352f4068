"""git as the oracle of ignore rules: a scratch repository that answers `git check-ignore`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

GIT = shutil.which("git")


class Git:
    """A scratch repository whose .gitignore each question rewrites."""

    def __init__(self, root: Path) -> None:
        assert GIT is not None
        self.root = root
        home = str(root / ".home")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(
            HOME=home,
            XDG_CONFIG_HOME=home,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
        )
        subprocess.run([GIT, "init", "-q", str(root)], check=True, env=self.env, timeout=30)

    def ignored(self, lines: list[bytes], paths: list[bytes]) -> set[bytes]:
        assert GIT is not None
        (self.root / ".gitignore").write_bytes(b"\n".join(lines) + b"\n")
        done = subprocess.run(
            [GIT, "check-ignore", "--no-index", "-z", "--stdin"],
            cwd=self.root,
            input=b"\0".join(paths) + b"\0",
            capture_output=True,
            env=self.env,
            timeout=30,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr.decode(errors="replace")
        return {p for p in done.stdout.split(b"\0") if p}
