"""A repository built by the tests: docs, code in several languages, a binary, planted secrets
of every kind, symlinks in and out of the root, a FIFO, unicode and non-UTF-8 names, nested
.gitignore files. Secret values are assembled at run time so no test source holds one."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

# Each value is unique so a test can search the store and every render for it.
SECRETS: dict[str, str] = {
    "aws": "AKIA" + "QWERTYUIOPASDFGH",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "openai": "sk-" + "proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9z8y7",
    "password": "Tr0u" + "b4dor&3xK9#mQ2vL8wZ5",
    "pem_body": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "VJTUt9Us8cKj",
    "env": "DATABASE_URL=postgres://admin:" + "hunter2hunter2@db/prod",
    "idrsa": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + "AAAAAAAAABAAABlwAAAAdzc2gtcn",
}

PY_SOURCE = '''"""Inventory of widgets: counting and pricing."""

import math


class Widget:
    """A thing that can be counted."""

    def __init__(self, name: str, price: float = 1.0) -> None:
        """Make a widget."""
        self.name = name
        self.price = price

    def total(self, count: int) -> float:
        """Price of COUNT widgets."""
        secret_body_marker_py = math.ceil(self.price * count)
        return secret_body_marker_py


def helper(a, *args, b=2, **kw):
    """Help."""
    unique_python_body_statement = a + b
    return unique_python_body_statement
'''

TS_SOURCE = """export interface Shape { area(): number }
export class Square implements Shape {
  constructor(private side: number) {}
  area(): number { const unique_ts_body = this.side * this.side; return unique_ts_body; }
}
export function makeSquare(side: number): Square {
  const unique_ts_fn_body = 1; return new Square(side);
}
"""

GO_SOURCE = """package shapes

type Circle struct { R float64 }

func (c Circle) Area() float64 { unique_go_body := 3.14 * c.R * c.R; return unique_go_body }

func NewCircle(r float64) Circle { return Circle{R: r} }
"""


def build_tree(root: Path, *, with_specials: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)

    def write(rel: str, data: str | bytes) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            p.write_text(data, encoding="utf-8")
        else:
            p.write_bytes(data)

    write("README.md", "# Widgets\n\nWidgets are counted here. More text follows.\n")
    write(
        "docs/guide.md",
        "# Guide\n\nStart here. Then read on.\n\n## Install\n\nRun the installer. It is quick.\n",
    )
    write("src/widgets.py", PY_SOURCE)
    write("src/shapes.ts", TS_SOURCE)
    write("src/shapes.go", GO_SOURCE)
    write("src/latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    write("src/ünïcode.md", "# Ünïcode\n\nA file with a unicode name.\n")
    write("tests/test_widgets.py", "def test_one():\n    assert 1 + 1 == 2\n")
    write("assets/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    write("package-lock.json", '{"lockfileVersion": 3}\n')
    # Planted secrets: by name, and by content in ordinary-looking files.
    write(".env", SECRETS["env"] + "\n")
    write(
        "certs/server.pem",
        "-----BEGIN PRIVATE KEY-----\n" + SECRETS["pem_body"] + "\n-----END PRIVATE KEY-----\n",
    )
    write(
        "keys/id_rsa",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + SECRETS["idrsa"]
        + "\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    write("src/settings.py", f'AWS_KEY = "{SECRETS["aws"]}"\nREGION = "eu-west-1"\n')
    write("src/gh.md", f"# Deploy\n\nUse token {SECRETS['github']} to deploy.\n")
    write("src/chat.js", f'const slack = "{SECRETS["slack"]}";\n')
    write("src/ai.ts", f'export const key = "{SECRETS["openai"]}";\n')
    write("src/db.yaml", f'db:\n  password: "{SECRETS["password"]}"\n')
    # Ignore rules at two levels.
    write(".gitignore", "*.log\nbuild/\n")
    write("src/.gitignore", "generated_*.py\n!generated_keep.py\n")
    write("debug.log", "ignored\n")
    write("build/out.js", "ignored\n")
    write("src/generated_x.py", "ignored = True\n")
    write("src/generated_keep.py", "kept = True\n")
    if with_specials:
        os.symlink("widgets.py", root / "src" / "link_in.py")
        os.symlink("/etc/hostname", root / "src" / "link_out")
        os.mkfifo(root / "src" / "pipe")
        bad = os.fsencode(str(root / "src")) + b"/bad\xffname.txt"
        fd = os.open(bad, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"not utf-8 name\n")
        os.close(fd)
    return root


def write_modules(
    pkg: Path, modules: int, functions: int, head: str, call: Callable[[int], str]
) -> None:
    """``modules`` Python modules ``mod0.py``... in the package folder ``pkg`` (made, with an
    ``__init__.py`` left to the caller), each ``head`` and then ``functions`` small functions
    ``handle_<pkg>_<module>_<k>`` whose body returns ``call(k)``: a large tree of code whose
    reference graph the caller chooses by what the functions call."""
    pkg.mkdir(parents=True, exist_ok=True)
    for j in range(modules):
        body = "".join(
            f"def handle_{pkg.name}_{j}_{k}(request, option_{k}=None):\n"
            f'    """Handle {k}."""\n    return {call(k)}\n\n'
            for k in range(functions)
        )
        (pkg / f"mod{j}.py").write_text(f"{head}\n\n{body}")
