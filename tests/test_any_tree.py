"""Any tree packs: bounded in time and memory, within budget, the same bytes twice.

Issue 21 was a tree of two files (``__init__.py`` and ``a.py`` at the top) on which ``cas pack``
never ended and grew until the machine ran out of memory. Here hypothesis builds small trees of
what such loops feed on: package indexes and metadata files at any depth including the top
(``__init__.py``, ``index.ts``, ``go.mod``, ``Cargo.toml``, ``package.json`` with odd values,
``mod.rs``, ``lib.rs``), odd names (spaces, unicode, leading dots, ``..a``, ``a.``, a tab, a
newline), empty files, code whose imports point up, down, at itself and out of the tree, and
symlinks inside, outside, dangling and in loops. Each tree is packed by a real ``cas pack`` in a
child process whose address space is capped (`tests.conftest.run_cas_capped`) and which is killed
after a timeout far above what a pack of a few files takes: a loop that never ends fails here,
whether it spins or grows. A tree is built in two folders at different depths and packed into
a fresh store in each; the manifests must be byte-identical and every pack within its budget.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cas import manifest as mf
from tests.conftest import run_cas_capped
from tests.gitrepo import GIT

# Generous on purpose: a pack of a handful of files takes about a second; this only has to
# tell "slow machine" from "never ends".
TIMEOUT_S = 60


@dataclass(frozen=True)
class Link:
    """A symlink: ``kind`` says where it leads (see `_link_text`), ``to`` a path in the tree."""

    kind: str
    to: str = ""


Tree: TypeAlias = dict[str, "Node"]
Node: TypeAlias = str | Link | Tree  # a file's text, a symlink, a folder

# --- what the trees are made of ---------------------------------------------------------------

NAMES = ["a", "core", "sub", "m", "x", "pkg"]  # what imports name, so some resolve
SPECIAL_FILES = [
    *("__init__.py", "__main__.py", "index.ts", "index.js", "go.mod", "Cargo.toml"),
    *("package.json", "mod.rs", "lib.rs", "main.rs", "pyproject.toml", "setup.cfg", "setup.py"),
    *("README.md", ".gitignore", ".casignore"),
]
ODD_FILES = [
    *("a.py", "core.py", "m.go", "x.rs", "a.ts", "util.js", "doc.md", "a b.py", "ünï.py"),
    *(".hidden.py", "..a", "a.", "a.b.c.py", ".py", "-x.ts", "日本.go", "tab\tname.py"),
    *("new\nline.md", "noext", "x.pyi", "a..b"),
]
FOLDERS = ["a", "sub", "src", "pkg", "lib", "dist", "..a", "a.", ".d", "sp ace", "ünï", "x.py"]

DEEP_JSON = '{"main": ' + "[" * 3000 + "]" * 3000 + "}"
DEEP_TOML = "a = " + "[" * 3000 + "]" * 3000 + "\n"
CONTENTS = {
    ".py": [
        *("", "from . import {n}\n", "from .. import {n}\n", "from ...{n} import x\n"),
        *("import {n}\nfrom {n}.core import f\n", "from .{n} import *\n__all__ = ['f']\n"),
        *("def f():\n    return {n}\n", "from . import *\nfrom .... import up\n"),
    ],
    ".ts": [
        *("", 'import {{ x }} from "./{n}"\n', 'export * from "../{n}"\n'),
        *('export * from "."\n', 'import y from "p/{n}"\n', "export const f = () => 1\n"),
        'import z from "../../../../{n}"\n',
    ],
    ".rs": [
        *("", "mod {n};\n", "use crate::{n}::f;\n", "use super::super::{n};\n"),
        *("pub use self::{n}::*;\n", "pub fn f() {{}}\n", "use super::super::super::super::x;\n"),
    ],
    ".go": ['package main\nimport "example.com/m/{n}"\n', "package {n}\n", ""],
    "go.mod": [
        "module example.com/m\n",
        "module .\n",
        "module /\n",
        "module ../..\n",
        "",
        "module\n",
    ],
    "Cargo.toml": [
        *('[package]\nname = "c-d"\n', "bin = 5\nlib = 'x'\n", '[lib]\npath = "../x.rs"\n'),
        *('[[bin]]\npath = "/abs"\n', "= = =\n", "", DEEP_TOML),
    ],
    "package.json": [
        *('{"name": "p", "main": "/abs/x"}', '{"main": "../../x", "bin": {"x": "."}}'),
        '{"exports": {"./a": {"import": ["./a.ts", null, 3]}}, "name": 7}',
        *('{"main": 5, "types": "../.."}', "[]", "null", '"index.ts"', "{", DEEP_JSON),
        '{"name": "p", "main": "."}',
    ],
    "pyproject.toml": [
        '[project]\nname = "."\n[project.scripts]\nx = "a:main"\n',
        *("[tool.poetry]\npackages = 5\n", "[[[\n", DEEP_TOML),
    ],
    "setup.cfg": ["[metadata]\nname = *\n", "[options]\npackages = a sub\n", "[[\n"],
    "setup.py": ["setup(name='-', entry_points={{'x': ['a = {n}:main']}})\n", ""],
    ".md": ["", "[x](../{n})\n", "See `{n}.py` and sub/ and ../../../{n}.\n", "# T\n"],
    ".gitignore": ["*.py\n", "!a.py\n", "sub/\n", "[\n", "\\\n", "**\n!**/\n"],
    "": ["", "x", "\x00\x01 binary", "line\n" * 3],
}


def _kind(name: str) -> str:
    if name in CONTENTS:
        return name
    if name == ".casignore":
        return ".gitignore"
    for ext in (".py", ".pyi", ".ts", ".js", ".rs", ".go", ".md"):
        if name.endswith(ext):
            return {".pyi": ".py", ".js": ".ts"}.get(ext, ext)
    return ""


@st.composite
def file_text(draw: st.DrawFn, name: str) -> str:
    template = draw(st.sampled_from(CONTENTS[_kind(name)]))
    return template.format(n=draw(st.sampled_from(NAMES))) if "{n}" in template else template


links = st.one_of(
    st.builds(Link, st.just("in"), st.sampled_from(["a", "sub", "a/a.py", "..", ".", "../sub"])),
    st.builds(Link, st.just("abs-in"), st.sampled_from(["", "a.py", "sub", "nowhere"])),
    st.builds(Link, st.sampled_from(["out", "abs-out", "self", "loop"])),
)


@st.composite
def files(draw: st.DrawFn) -> tuple[str, Node]:
    name = draw(st.sampled_from(SPECIAL_FILES + ODD_FILES))
    if draw(st.integers(0, 9)) == 0:
        return name, draw(links)
    return name, draw(file_text(name))


trees: st.SearchStrategy[Tree] = st.recursive(
    st.lists(files(), max_size=4).map(dict),
    lambda inner: st.lists(
        st.one_of(files(), st.tuples(st.sampled_from(FOLDERS), inner)), max_size=4
    ).map(dict),
    max_leaves=12,
).filter(bool)  # an empty tree costs a pack like any other and holds nothing to loop on

# --- making and packing them ------------------------------------------------------------------


def _link_text(link: Link, where: Path, root: Path, depth: int) -> str:
    """What the symlink at ``where`` (``depth`` folders below ``root``) holds."""
    if link.kind == "in":
        return link.to
    if link.kind == "abs-in":
        return str(root / link.to)
    if link.kind == "out":
        return "../" * (depth + 1) + "outside/secret.txt"
    if link.kind == "abs-out":
        return str(root.parent / "outside")
    if link.kind == "self":
        return where.name
    # "loop": a pair leading to each other (the second is made beside it)
    return where.name + ".loop"


def _build(folder: Path, tree: Tree, root: Path, depth: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, node in tree.items():
        path = folder / name
        if isinstance(node, dict):
            _build(path, node, root, depth + 1)
        elif isinstance(node, Link):
            os.symlink(_link_text(node, path, root, depth), path)
            if node.kind == "loop" and not os.path.lexists(f"{path}.loop"):
                os.symlink(name, f"{path}.loop")
        else:
            path.write_bytes(node.encode("utf-8"))


def _make(place: Path, tree: Tree) -> Path:
    """The tree as a git work tree at ``place/project``, with ``place/outside`` beside it."""
    (place / "outside").mkdir(parents=True)
    (place / "outside" / "secret.txt").write_text("outside the tree\n")
    root = place / "project"
    _build(root, tree, root)
    assert GIT is not None, "these tests need git on PATH"
    subprocess.run([GIT, "init", "-q", str(root)], check=True, capture_output=True, timeout=60)
    return root


def _pack(root: Path, tree: Tree) -> tuple[int, dict[str, bytes]]:
    """(exit code, manifest file name -> bytes) of one capped `cas pack` of ``root``."""
    try:
        r = run_cas_capped("--quiet", "pack", cwd=root, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"cas pack did not end within {TIMEOUT_S} s on {tree!r}")
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    if r.code != 0:
        # A refusal (a budget the required files exceed, say) is one line and its exit code.
        assert r.code in (1, 2) and len(r.err.strip().splitlines()) == 1, (r.code, r.err)
        assert r.err.startswith("cas: error: "), r.err
        return r.code, {}
    assert r.err == "", r.err
    packs = {p.name: p.read_bytes() for p in sorted((root / "manifests").glob("*.pack"))}
    assert packs, r.out
    return 0, packs


def _within_budget(packs: dict[str, bytes]) -> None:
    for name, data in packs.items():
        m = mf.decode(data)
        tokens = m.totals["tokens"]
        assert tokens and max(tokens.values()) <= m.budget_max, (name, tokens, m.budget_max)
        for e in m.entries:
            parts = e.path.split("/")
            assert "" not in parts and ".." not in parts and "." not in parts, e.path


ISSUE = {"__init__.py": "", "a.py": "x = 1\n"}
TOPS: Tree = {
    "index.ts": 'export * from "."\nexport * from "../x"\n',
    "package.json": '{"name": "p", "main": "/abs", "exports": {"a": [".", "..", 5]}}',
    "go.mod": "module .\n",
    "m.go": 'package m\nimport "example.com/m/sub"\n',
    "sub": {"go.mod": "module example.com/m\n", "s.go": "package main\n"},
    "Cargo.toml": '[lib]\npath = "../lib.rs"\n',
    "lib.rs": "mod a;\nuse super::super::x;\n",
    "a": {"mod.rs": "use crate::a;\nuse super::super::super::z;\n"},
}
LINKS: Tree = {
    "__init__.py": "from .. import a\n",
    "me": Link("self"),
    "ring": Link("loop"),
    "up": Link("in", ".."),
    "out": Link("out"),
    "far": Link("abs-out"),
    "sub": {"__init__.py": "", "back": Link("abs-in", "sub"), "gone": Link("in", "nowhere")},
}


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@example(ISSUE)
@example(TOPS)
@example(LINKS)
@given(trees)
def test_any_tree_packs_in_bounded_time_and_memory_within_budget_the_same_bytes_twice(
    tmp_path_factory: pytest.TempPathFactory, tree: Tree
) -> None:
    one = _make(tmp_path_factory.mktemp("one"), tree)
    two = _make(tmp_path_factory.mktemp("two") / "deeper" / "still", tree)
    code, packs = _pack(one, tree)
    _within_budget(packs)
    again, packs_again = _pack(two, tree)
    assert (again, packs_again) == (code, packs)
