"""The import graph of cas/ and packer/: no cycle, and only the store touches LMDB.

Every module is parsed with `ast`; an import anywhere in it counts, at module level or inside a
function (an import hidden in a function is still a dependency, and hiding one is how a cycle
used to go unseen). Imports under ``if TYPE_CHECKING:`` are left out: they never run, and a lower
module naming a higher one's type for a hint is the accepted way (DESIGN.md, STYLE.md). An
import of a package's submodule counts as an import of that submodule, not of the package's
``__init__`` (which, in cas/, loads nothing eagerly). Tests and benchmarks are not checked: a
test that must damage a record reaches under the store through tests/rawstore.py alone.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ROOT

PACKAGES = ("cas", "packer", "memory", "casapp")
# The store's own modules: the only ones that may see LMDB, its tables and its records.
STORE_MODULES = frozenset(
    {"cas.store", "cas.store_tables", "cas.records", "cas.store_kv", "cas.store_refs"}
)
# What only the store's own modules may import: LMDB itself, the module that names the tables
# and the one that lays out their records ...
STORE_PRIVATE_MODULES = frozenset({"lmdb", "cas.store_tables", "cas.records"})
# ... and these names, from wherever: a raw transaction, and the tables' view of one.
STORE_PRIVATE_NAMES = frozenset({"Txn", "Tables"})


@dataclass(frozen=True, slots=True)
class Import:
    target: str  # the absolute dotted name imported (a module, or a module's attribute)
    module: str  # the module of the project it resolves to; "" when it is not one of ours
    names: tuple[str, ...]  # what `from target import ...` takes; () for `import target`
    line: int


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file, for every module of the project's packages."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, *, typing: bool = False) -> Iterable[ast.AST]:
    """Every node, except the bodies of ``if TYPE_CHECKING:`` blocks (their ``else`` runs)
    unless ``typing``: what a type checker reads is a dependency too."""
    for node in ast.iter_child_nodes(tree):
        if not typing and isinstance(node, ast.If) and _type_checking(node.test):
            for other in node.orelse:
                yield other
                yield from _nodes(other)
            continue
        yield node
        yield from _nodes(node, typing=typing)


def _resolve(name: str, known: Iterable[str]) -> str:
    """The project module ``name`` lives in (its longest known prefix), or ""."""
    modules = set(known)
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name


def _extension(name: str) -> bool:
    """Whether ``name`` is one of the project's C extension modules (its stub sits beside it)."""
    return (ROOT / (name.replace(".", "/") + ".pyi")).is_file()


def imports_of(
    module: str, source: str, known: Iterable[str], *, package: bool = False, typing: bool = False
) -> list[Import]:
    """Every import ``source`` (the text of ``module``; ``package``: an ``__init__``) runs, and
    with ``typing`` those only a type checker reads."""
    modules = set(known)
    out: list[Import] = []
    for node in _nodes(ast.parse(source), typing=typing):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Import(alias.name, _resolve(alias.name, modules), (), node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if package else module.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join([*here, *([base] if base else [])])
            # `from cas import frame` imports the module cas.frame; `from cas.x import y`
            # imports cas.x (y is an attribute of it).
            targets: dict[str, list[str]] = {}
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full not in modules and _extension(full):
                    out.append(Import(full, "", (), node.lineno))  # a C module: no edge
                    continue
                targets.setdefault(full if full in modules else base, []).append(alias.name)
            for target, names in targets.items():
                out.append(Import(target, _resolve(target, modules), tuple(names), node.lineno))
    return out


def import_graph(
    modules: Mapping[str, Path], *, typing: bool = False
) -> tuple[dict[str, set[str]], dict[tuple[str, str], int]]:
    """module -> the project modules it imports (with ``typing``, for type checking too), and
    the line of each edge's first import."""
    graph: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], int] = {}
    for name, path in modules.items():
        graph[name] = set()
        source = path.read_text(encoding="utf-8")
        package = path.name == "__init__.py"
        for imp in imports_of(name, source, modules, package=package, typing=typing):
            if imp.module and imp.module != name:
                graph[name].add(imp.module)
                lines.setdefault((name, imp.module), imp.line)
    return graph, lines


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a path that ends where it starts (``[a, b, a]``), or None.
    Depth first, in sorted order, so the same graph always gives the same cycle."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found is not None:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found is not None:
                return found
    return None


def store_private_imports(module: str, found: Iterable[Import]) -> list[Import]:
    """The imports of ``module`` that only the store's own modules may make."""
    if module in STORE_MODULES:
        return []
    return [
        imp
        for imp in found
        if imp.target.split(".")[0] in STORE_PRIVATE_MODULES
        or imp.module in STORE_PRIVATE_MODULES
        or STORE_PRIVATE_NAMES.intersection(imp.names)
    ]


# --- the checks themselves, on a small made-up graph and module (each must be able to fail) --


def test_the_cycle_finder_reports_the_cycle_as_a_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"x"}}) == ["x", "x"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set(), "e": {"a", "c"}}) is None
    assert find_cycle({}) is None


@given(
    st.integers(min_value=2, max_value=12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))),
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
        )
    )
)
def test_a_graph_has_a_cycle_exactly_when_it_is_not_ordered(
    case: tuple[int, set[tuple[int, int]], tuple[int, int]],
) -> None:
    """Edges that only go up never make a cycle; one edge back down (or to itself) on top of a
    path up always does, and what is reported is a real cycle of the graph."""
    n, edges, (low, high) = case
    low, high = min(low, high), max(low, high)
    upward = {(a, b) for a, b in edges if a < b}
    graph: dict[str, set[str]] = {str(i): set() for i in range(n)}
    for a, b in upward:
        graph[str(a)].add(str(b))
    assert find_cycle(graph) is None
    for i in range(low, high):
        graph[str(i)].add(str(i + 1))  # a path up from low to high ...
    graph[str(high)].add(str(low))  # ... and back
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) >= 2
    assert all(b in graph[a] for a, b in itertools.pairwise(cycle))


SAMPLE = """
from __future__ import annotations
import os
import lmdb
from typing import TYPE_CHECKING
from cas import frame, digest as d
from cas.records import META
from . import errors
from .store import Store, Txn

if TYPE_CHECKING:
    from cas.batch import Batch
else:
    from cas import space

def later():
    from cas import procpool
    import packer.tiers
"""


def test_the_parser_sees_imports_in_functions_and_skips_type_checking_ones() -> None:
    known = [
        "cas",
        "cas.batch",
        "cas.digest",
        "cas.errors",
        "cas.frame",
        "cas.procpool",
        "cas.records",
        "cas.space",
        "cas.store",
        "cas.gc",
        "packer",
        "packer.tiers",
    ]
    found = imports_of("cas.gc", SAMPLE, known)
    modules = {imp.module for imp in found} - {""}
    assert modules == {
        "cas.frame",
        "cas.digest",
        "cas.records",
        "cas.errors",
        "cas.store",
        "cas.space",  # the else of TYPE_CHECKING runs
        "cas.procpool",  # inside a function
        "packer.tiers",
    }
    assert "cas.batch" not in modules  # under TYPE_CHECKING only
    offenders = {(imp.target, imp.line) for imp in store_private_imports("cas.gc", found)}
    assert offenders == {("lmdb", 4), ("cas.records", 7), ("cas.store", 9)}
    assert store_private_imports("cas.store", found) == []


# --- the project -------------------------------------------------------------------------------


def test_the_project_graph_is_read_whole() -> None:
    modules = project_modules()
    graph, _lines = import_graph(modules)
    assert len(modules) > 60 and sum(map(len, graph.values())) > 150
    # edges known to exist, one at module level and one inside a function
    assert "cas.batch" in graph["cas.store"]
    assert "packer.config" in graph["casapp.cli.pack_cmds"]


def test_no_import_cycle() -> None:
    """None, counting the imports only a type checker reads: a cycle there is one a reader
    follows all the same."""
    modules = project_modules()
    graph, lines = import_graph(modules, typing=True)
    cycle = find_cycle(graph)
    if cycle is not None:
        steps = [
            f"{modules[a].relative_to(ROOT)}:{lines[a, b]} imports {b}"
            for a, b in itertools.pairwise(cycle)
        ]
        raise AssertionError("import cycle: " + " -> ".join(cycle) + "\n  " + "\n  ".join(steps))


def test_only_the_store_touches_lmdb_its_tables_and_its_records() -> None:
    modules = project_modules()
    offenders = []
    for name, path in modules.items():
        found = imports_of(name, path.read_text(encoding="utf-8"), modules)
        for imp in store_private_imports(name, found):
            what = ", ".join(imp.names) + " from " if imp.names else ""
            offenders.append(f"{path.relative_to(ROOT)}:{imp.line} imports {what}{imp.target}")
    assert not offenders, (
        "only " + ", ".join(sorted(STORE_MODULES)) + " may:\n" + "\n".join(offenders)
    )


# The layers of ARCHITECTURE.md and what each may import. The engine knows nothing of remotes,
# packing policy or commands; remotes and the packer build on the engine and know nothing of each
# other or of commands; the services (`casapp`) put them together, and only the surfaces (the
# CLI and the MCP server) present what they do.
LAYERS: dict[str, tuple[str, ...]] = {
    "engine": ("cas",),
    "remote": ("cas.remote",),
    "packer": ("packer",),
    "memory": ("memory",),
    "services": ("casapp",),
    "surface": ("casapp.cli", "casapp.mcpserver", "cas.__main__", "packer.__main__"),
}
MAY_IMPORT: dict[str, frozenset[str]] = {
    "engine": frozenset({"engine"}),
    "remote": frozenset({"engine", "remote"}),
    "packer": frozenset({"engine", "packer"}),
    "memory": frozenset({"engine", "packer", "memory"}),
    "services": frozenset({"engine", "remote", "packer", "memory", "services"}),
    "surface": frozenset(LAYERS),
}
# Modules of a lower layer that only the surfaces may import: the terminal display (library
# code sends progress events, `cas.events`, and never draws).
SURFACE_ONLY = frozenset({"cas.progress"})


def layer_of(module: str) -> str:
    """The layer of ``module``: the one whose longest prefix names it."""
    best, length = "", -1
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = layer, len(prefix)
    return best


def layer_violations(graph: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """The edges (importer, imported) that reach a layer the importer may not import."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) not in MAY_IMPORT[layer_of(module)]
        or (target in SURFACE_ONLY and layer_of(module) != "surface")
    )


def test_layer_rules_catch_an_upward_or_sideways_import() -> None:
    assert layer_of("cas.store") == "engine" and layer_of("cas") == "engine"
    assert layer_of("cas.remote.pull") == "remote" and layer_of("cas.remote") == "remote"
    assert layer_of("casapp.cli.pack_cmds") == "surface" and layer_of("packer.build") == "packer"
    graph = {
        "cas.store": {"cas.digest"},  # down: fine
        "cas.remote.pull": {"cas.store"},  # down: fine
        "casapp.cli.remote_cmds": {"cas.remote.pull", "packer.build"},  # a surface: fine
        "cas.verify": {"cas.remote.objects"},  # up
        "packer.build": {"cas.remote.push"},  # sideways
        "cas.remote.push": {"packer.config"},  # sideways
        "packer.scan": {"casapp.cli._common"},  # up
        "cas.remote.transfer": {"cas.progress"},  # the terminal display, below a surface
        "casapp.cli.maint_cmds": {"cas.progress"},  # fine
    }
    assert layer_violations(graph) == [
        ("cas.remote.push", "packer.config"),
        ("cas.remote.transfer", "cas.progress"),
        ("cas.verify", "cas.remote.objects"),
        ("packer.build", "cas.remote.push"),
        ("packer.scan", "casapp.cli._common"),
    ]


def test_imports_follow_the_layers() -> None:
    modules = project_modules()
    graph, lines = import_graph(modules, typing=True)
    bad = layer_violations(graph)
    assert not bad, "imports against the layers of ARCHITECTURE.md:\n" + "\n".join(
        f"{modules[a].relative_to(ROOT)}:{lines[a, b]} ({layer_of(a)}) imports {b} ({layer_of(b)})"
        for a, b in bad
    )


# --- what a command loads --------------------------------------------------------------------

# Runs one command in a fresh interpreter, as the `cas` command would, and prints the modules
# of the project and the heavy libraries it loaded.
_LOADED = """
import json, sys
from casapp.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(args: list[str], cwd: Path) -> tuple[set[str], str]:
    """The modules ``cas ARGS`` loaded, and what it printed."""
    import json
    import subprocess
    import sys

    from tests.conftest import cas_env

    proc = subprocess.run(
        [sys.executable, "-P", "-c", _LOADED, *args],
        capture_output=True, text=True, cwd=cwd, env=cas_env(), check=True, timeout=120,
    )  # fmt: skip
    return set(json.loads(proc.stderr.strip().splitlines()[-1])), proc.stdout


def test_the_command_table_names_every_command_of_its_modules() -> None:
    """`casapp.cli.COMMAND_MODULES` is what lets a command load alone: every command a module
    defines is listed under its own name, with that module, and nothing else is."""
    import importlib

    from casapp.cli import COMMAND_MODULES

    found = {}
    for module in set(COMMAND_MODULES.values()):
        for command in importlib.import_module(module).COMMANDS:
            assert command.name is not None
            found[command.name] = module
    assert found == COMMAND_MODULES


def test_a_command_loads_its_own_module_and_not_the_others(tmp_path: Path) -> None:
    """A search loads the search and the store, not the packer's pipeline, the remotes, gc, the
    MCP SDK or numpy (a search by meaning, once its files' vectors are made, neither);
    ``--help`` of the whole tool loads every command to list it."""
    from tests.conftest import run_cas

    (tmp_path / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    (tmp_path / "router.py").write_text("def new_router():\n    return 1\n")
    assert run_cas("pack", cwd=tmp_path).code == 0
    # a question by meaning embeds the files (numpy, once); a lookup of a name needs none
    first, _ = loaded_by(["search", "--mode", "semantic", "a function that makes one"], tmp_path)
    assert "numpy" in first
    again, _ = loaded_by(["search", "--mode", "semantic", "a function that makes one"], tmp_path)
    assert "numpy" not in again  # the vectors are kept: a query is embedded without numpy
    loaded, out = loaded_by(["search", "new_router"], tmp_path)
    assert out.startswith("router.py:1-")
    assert {"casapp.cli.agent_cmds", "packer.search", "packer.packview", "cas.store"} <= loaded
    for unwanted in (
        "casapp.cli.pack_cmds",
        "casapp.cli.remote_cmds",
        "casapp.cli.maint_cmds",
        "casapp.cli.mem_cmds",
        "casapp.cli.store_cmds",
        "packer.build",
        "packer.secrets",
        "cas.gc",
        "cas.remote",
        "cas.batch",
        "mcp",
        "numpy",
        "pathspec",
        "concurrent.futures.process",
        "multiprocessing",
    ):
        assert unwanted not in loaded, unwanted
    everything, _ = loaded_by(["--help"], tmp_path)
    assert {"casapp.cli.pack_cmds", "casapp.cli.remote_cmds", "casapp.cli.mem_cmds"} <= everything
