"""`packer.surface`: module names and import resolution from the paths alone, and the public
surface from metadata, including the layouts where the project's top folder is itself a package
or crate (a root ``__init__.py``, ``lib.rs``, ``index.ts``, ``go.mod``) and metadata with odd
values. Each layout is built from real lexicons of real source text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from packer.lexicon import lex
from packer.surface import (
    ENTRY_POINTS,
    PACKAGE_INDEX,
    PACKAGE_ROOT,
    Layout,
    _strings,
    public_surface,
)


def layout_of(files: dict[str, str]) -> Layout:
    paths = sorted(files, key=lambda p: p.encode())
    return Layout(paths, [lex(p, files[p].encode()) for p in paths])


def resolved(layout: Layout, src: str, spec: str, lang: str) -> list[str]:
    return [layout.paths[i] for i in layout.resolve(layout.index[src], spec, lang)]


def surface_of(files: dict[str, str]) -> tuple[Layout, dict[str, list[str]], dict[str, int]]:
    layout = layout_of(files)
    langs = [None if lx is None else lx.lang for lx in layout.lexicons]
    found = public_surface(layout, langs, files.get)
    reasons = {layout.paths[i]: r for i, r in found.reasons.items()}
    points = {layout.paths[i]: p for i, p in found.points.items()}
    return layout, reasons, points


def modules(layout: Layout) -> dict[str, list[str]]:
    return {m: [layout.paths[i] for i in files] for m, files in layout.modules.items()}


# --- Python ---------------------------------------------------------------------------------


def test_a_root_init_names_modules_from_the_root() -> None:
    layout = layout_of(
        {
            "__init__.py": "from .a import x\n",
            "a.py": "x = 1\n",
            "sub/__init__.py": "",
            "sub/b.py": "from ..a import x\nfrom . import c\n",
            "sub/c.py": "",
            "tests/test_a.py": "import a\n",
        }
    )
    assert modules(layout) == {
        "a": ["a.py"],
        "sub": ["sub/__init__.py"],
        "sub.b": ["sub/b.py"],
        "sub.c": ["sub/c.py"],
        "test_a": ["tests/test_a.py"],  # `tests` holds no __init__.py
    }
    # the root's __init__.py has no module name; relative imports reach it
    assert resolved(layout, "a.py", ".", "python") == ["__init__.py"]
    assert resolved(layout, "__init__.py", ".a", "python") == ["a.py"]
    assert resolved(layout, "sub/b.py", "..a", "python") == ["a.py"]
    assert resolved(layout, "sub/b.py", "..", "python") == ["__init__.py"]
    assert resolved(layout, "sub/b.py", ".c", "python") == ["sub/c.py"]
    assert resolved(layout, "tests/test_a.py", "a", "python") == ["a.py"]
    # one dot too many climbs out of the project: nothing, at any depth
    assert resolved(layout, "a.py", "..", "python") == []
    assert resolved(layout, "sub/b.py", "...a", "python") == []
    assert resolved(layout, "sub/b.py", "." * 40, "python") == []


def test_without_a_root_init_names_count_from_above_the_outermost_package() -> None:
    layout = layout_of(
        {
            "src/click/__init__.py": "",
            "src/click/core.py": "",
            "src/click/sub/__init__.py": "",
            "src/click/sub/x.py": "",
            "tests/test_x.py": "",
            "setup.py": "",
        }
    )
    assert modules(layout) == {
        "click": ["src/click/__init__.py"],
        "click.core": ["src/click/core.py"],
        "click.sub": ["src/click/sub/__init__.py"],
        "click.sub.x": ["src/click/sub/x.py"],
        "test_x": ["tests/test_x.py"],
        "setup": ["setup.py"],
    }
    assert resolved(layout, "tests/test_x.py", "click.core", "python") == ["src/click/core.py"]
    assert resolved(layout, "src/click/sub/x.py", "..core", "python") == ["src/click/core.py"]
    assert resolved(layout, "src/click/core.py", "...", "python") == []  # `src` holds no init


def test_a_relative_import_of_the_root_never_takes_a_file_named_dot_py() -> None:
    layout = layout_of({"__init__.py": "", ".py": "", "a.py": "from . import b\n"})
    assert resolved(layout, "a.py", ".", "python") == ["__init__.py"]


def test_the_root_package_is_the_top_level_package_and_its_subpackages_are_not() -> None:
    _, reasons, points = surface_of(
        {"__init__.py": "", "a.py": "x = 1\n", "sub/__init__.py": "", "__main__.py": ""}
    )
    assert reasons["__init__.py"] == ["top-level package index"]
    assert points["__init__.py"] == PACKAGE_ROOT
    assert reasons["sub/__init__.py"] == ["package index"]
    assert points["sub/__init__.py"] == PACKAGE_INDEX
    assert points["__main__.py"] == ENTRY_POINTS
    # without the root's __init__.py, `sub` is the top-level package
    _, reasons, _ = surface_of({"a.py": "", "sub/__init__.py": ""})
    assert reasons["sub/__init__.py"] == ["top-level package index"]


def test_metadata_naming_the_root_or_nothing_adds_nothing() -> None:
    files = {
        "__init__.py": "",
        "pyproject.toml": '[project]\nname = "."\n[tool.poetry]\npackages = 5\n',
        "setup.cfg": "[metadata]\nname = *\n",
        "setup.py": "setup(name='-')\n",
    }
    _, reasons, _ = surface_of(files)
    assert reasons["__init__.py"] == ["top-level package index"]


init_trees = st.dictionaries(
    # Folders (at any depth up to 4, the root included) and one Python file at the end: built
    # so, not filtered from random lists (which a health check refuses as too wasteful).
    st.builds(
        lambda folders, name: "/".join([*folders, name]),
        st.lists(st.sampled_from(["a", "b"]), max_size=4),
        st.sampled_from(["__init__.py", "m.py", "x.pyi"]),
    ),
    st.sampled_from(["", "from . import m\n", "from .. import m\n", "from ...a import m\n"]),
    min_size=1,
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(init_trees)
def test_any_python_tree_gets_names_of_its_package_chain(files: dict[str, str]) -> None:
    layout = layout_of(files)
    packages = {p.rpartition("/")[0] for p in files if p.rpartition("/")[2] == "__init__.py"}
    named = {layout.paths[i]: name for name, found in layout.modules.items() for i in found}
    # every module file but the root's __init__ has a name (a root __init__.pyi alone is no
    # package either)
    assert set(named) == {p for p in files if p not in ("__init__.py", "__init__.pyi")}
    for path, name in named.items():
        *folders, base = path.split("/")
        stem = base.rsplit(".", 1)[0]
        parts = name.split(".")
        if stem != "__init__":
            assert parts.pop() == stem
        # the rest: the package folders directly above the file, up to the outermost one
        # below the root (the root, package or not, has no name)
        k = len(folders) - len(parts)
        assert k >= 0 and parts == folders[k:]
        assert all("/".join(folders[: j + 1]) in packages for j in range(k, len(folders)))
        assert k == 0 or "/".join(folders[:k]) not in packages
    for path in files:
        for spec in ("." * k + tail for k in range(1, 6) for tail in ("", "m", "a.m")):
            for target in resolved(layout, path, spec, "python"):
                assert target in files  # resolves inside the project, or to nothing


# --- Rust -----------------------------------------------------------------------------------


def test_a_crate_whose_root_is_the_project_top() -> None:
    files = {
        "Cargo.toml": '[package]\nname = "my-crate"\n',
        "lib.rs": "mod a;\npub use a::f;\n",
        "a.rs": "use crate::b::g;\nuse super::x;\npub fn f() {}\n",
        "b.rs": "pub fn g() {}\n",
        "a/deep.rs": "use super::super::b;\nuse super::super::super::b;\n",
        "x.rs": "",
    }
    layout = layout_of(files)
    public_surface(layout, [None] * len(files), files.get)  # reads the crate's name
    assert layout._rust_crate_root("a/deep.rs") == ""
    assert resolved(layout, "lib.rs", "mod a", "rust") == ["a.rs"]
    assert resolved(layout, "a.rs", "crate::b::g", "rust") == ["b.rs"]
    assert resolved(layout, "a.rs", "my_crate::b::g", "rust") == ["b.rs"]
    # `super` of a.rs (module folder "a") is the top; from a/deep.rs twice up is the top too,
    # and one more is above the project: nothing
    assert resolved(layout, "a.rs", "super::x", "rust") == ["x.rs"]
    assert resolved(layout, "a/deep.rs", "super::super::b", "rust") == ["b.rs"]
    assert resolved(layout, "a/deep.rs", "super::super::super::b", "rust") == []
    assert resolved(layout, "lib.rs", "super::a", "rust") == []
    assert resolved(layout, "a.rs", "super::super", "rust") == []


def test_a_crate_root_found_above_and_a_file_with_none() -> None:
    layout = layout_of({"src/lib.rs": "", "src/a/b/c.rs": "", "other/d.rs": ""})
    assert layout._rust_crate_root("src/a/b/c.rs") == "src"
    assert layout._rust_crate_root("other/d.rs") == "other"  # no crate root: its own folder


def test_cargo_toml_with_odd_values_names_only_files_inside() -> None:
    for cargo in (
        "bin = 5\nlib = 'x'\n",
        '[lib]\npath = "../outside.rs"\n[[bin]]\npath = "/etc/passwd"\n[[bin]]\npath = 7\n',
        "[package]\nname = 5\n",
        "a = " + "[" * 3000 + "]" * 3000 + "\n",  # nested deeper than tomllib can parse
        "not toml at all = = =\n",
    ):
        _, reasons, _ = surface_of({"Cargo.toml": cargo, "lib.rs": "", "main.rs": ""})
        assert not any("Cargo.toml" in r for rs in reasons.values() for r in rs), cargo
    _, reasons, _ = surface_of({"Cargo.toml": '[lib]\npath = "./lib.rs"\n', "lib.rs": ""})
    assert reasons["lib.rs"] == ["crate root (Cargo.toml)"]


# --- JavaScript and TypeScript ----------------------------------------------------------------


def test_an_index_at_the_project_top() -> None:
    files = {"index.ts": 'export * from "./a"\nimport {u} from "../up"\n', "a.ts": ""}
    layout, reasons, _ = surface_of(files)
    assert reasons["index.ts"] == ["folder index"]
    assert resolved(layout, "index.ts", "./a", "typescript") == ["a.ts"]
    assert resolved(layout, "index.ts", "../up", "typescript") == []
    assert resolved(layout, "a.ts", ".", "typescript") == ["index.ts"]


def test_package_json_entries_outside_the_project_or_not_strings_are_skipped() -> None:
    for manifest in (
        {"main": "/abs/index.ts", "module": "../index.ts", "types": "../../..", "bin": 5},
        {"main": None, "exports": {"./x": {"import": [3, None, {"deep": "/"}]}}, "name": 7},
        {"exports": ["..", "/", "./.."], "browser": False},
        [],
        "index.ts",
        None,
    ):
        files = {"package.json": json.dumps(manifest), "index.ts": "", "a.ts": ""}
        layout, reasons, _ = surface_of(files)
        assert layout.js_entry == [], manifest
        assert not any("package.json" in r for rs in reasons.values() for r in rs)
    deep = '{"main": ' + "[" * 5000 + '"./a.ts"' + "]" * 5000 + "}"
    layout, _, _ = surface_of({"package.json": deep, "a.ts": ""})
    assert layout.js_entry == []  # unreadable as JSON: nothing, and no crash
    files = {"package.json": '{"name": "p", "main": "."}', "index.ts": "", "b.ts": ""}
    layout, reasons, _ = surface_of(files)
    assert reasons["index.ts"] == ["entry point (package.json)", "folder index"]
    assert resolved(layout, "b.ts", "p", "typescript") == ["index.ts"]


def test_every_string_of_a_json_value_at_any_depth_in_document_order() -> None:
    value: object = "last"
    for k in range(100_000):  # far deeper than recursion could go
        value = [{"b": value, "a": f"a{k}"}] if k % 2 else {"z": value, "y": None}
    found = list(_strings({"b": ["x", 1, None, {"k": "y"}], "a": value}))
    assert found[-3:] == ["last", "x", "y"]
    assert len(found) == 50_000 + 3
    assert found[:2] == ["a99999", "a99997"]  # each object's keys in sorted order


# --- Go ---------------------------------------------------------------------------------------


def test_go_module_at_the_top_and_a_nested_one() -> None:
    files = {
        "go.mod": "module example.com/m\n",
        "m.go": 'package m\nimport "example.com/m/sub"\n',
        "sub/s.go": "package sub\n",
        "sub/go.mod": "module example.com/other\n",
        "cmd/main.go": 'package main\nimport "example.com/m"\n',
    }
    layout, reasons, _ = surface_of(files)
    assert layout.go_module == "example.com/m"
    assert reasons["m.go"] == ["root package"]
    assert resolved(layout, "m.go", "example.com/m/sub", "go") == ["sub/s.go"]
    assert resolved(layout, "cmd/main.go", "example.com/m", "go") == ["m.go"]
    assert resolved(layout, "m.go", "example.com/m/../../x", "go") == []
    for odd in ("module .\n", "module /\n", "module ../..\n", "module\n", ""):
        layout, _, _ = surface_of({**files, "go.mod": odd})
        for path in files:
            if path.endswith(".go"):
                for spec in ("example.com/m", ".", "/", "../..", layout.go_module + "/sub"):
                    assert all(t in files for t in resolved(layout, path, spec, "go"))
