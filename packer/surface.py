"""How a project's files import each other, and what the project shows the world.

`Layout` indexes a project's files by the ways code names them (Python module names, paths with
and without extensions, folders, Go and Java packages), so `Layout.resolve` turns an import
specifier as a lexicon recorded it (`packer.lexicon`) into the files it means. `public_surface`
finds the files and names a user of the project meets first: entry points declared in its
metadata (``pyproject.toml``, ``setup.cfg``, ``setup.py``, ``package.json``, ``go.mod``,
``Cargo.toml``), package indexes (``__init__.py``, ``index.ts``, ``mod.rs``, ``lib.rs``), and
what the top-level README names. Everything here is a pure function of the paths, the lexicons
and the metadata text: no file system, no clock.
"""

from __future__ import annotations

import configparser
import functools
import json
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cas.ancestors import ancestors
from packer.lang import is_readme, named
from packer.lang.record import Modules, ModuleSystem
from packer.lexicon import Lexicon

# Points of the personalization (see `packer.rating`) each kind of public file adds.
ENTRY_POINTS: Final = 256  # declared by the project's metadata: what its users run or import
PACKAGE_ROOT: Final = 128  # the index of a top-level package, a Go root package, a crate root
PACKAGE_INDEX: Final = 32  # the index of a nested package or folder module
README_PATH: Final = 256  # a path the top-level README names
README_NAMES: Final = 256  # the most a file gains from names the README mentions
REEXPORTED: Final = 256  # the most a file gains from names a package index re-exports

_JS_EXTS: Final = (".ts", ".tsx", ".mts", ".cts", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")
_INDEX_NAMES: Final = frozenset(
    {"__init__.py", "__init__.pyi", "mod.rs", "lib.rs"} | {"index" + e for e in _JS_EXTS}
)
_BUILT: Final = ("dist", "distribution", "build", "lib", "out", "esm", "cjs")
_SOURCE: Final = ("src", "source", "lib")
_SOURCE_FOLDERS: Final = frozenset({"", "src", "source", "lib", "python"})
_METADATA: Final = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "package.json",
    "go.mod",
    "Cargo.toml",
)
# A specifier that names more files than this (a Java wildcard, a C# namespace) is a
# dependency on a folder, not on any one file: it adds no edge.
MAX_TARGETS: Final = 16


def is_index(path: str) -> bool:
    """A package's index: the file a package or folder module is imported as."""
    return _name(path) in _INDEX_NAMES


def _dir(path: str) -> str:
    return path.rpartition("/")[0]


def _name(path: str) -> str:
    return path.rpartition("/")[2]


def _join(base: str, rel: str) -> str | None:
    """``rel`` below ``base``, normalized: ``""`` for the project's top folder itself, None
    when it climbs out of the project."""
    joined = posixpath.normpath(posixpath.join(base, rel)) if base else posixpath.normpath(rel)
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        return None
    return "" if joined == "." else joined


class Layout:
    """A project's files, indexed for import resolution (see the module docstring)."""

    def __init__(self, paths: Sequence[str], lexicons: Sequence[Lexicon | None]) -> None:
        self.paths = paths
        self.lexicons = lexicons
        self.index = {p: i for i, p in enumerate(paths)}
        self.by_dir: dict[str, list[int]] = {}
        self.packages: dict[str, list[int]] = {}  # declared package or namespace -> files
        for i, path in enumerate(paths):
            self.by_dir.setdefault(_dir(path), []).append(i)
            lexicon = lexicons[i]
            if lexicon is not None and lexicon.package:
                self.packages.setdefault(lexicon.package, []).append(i)
        self.python_packages = {
            _dir(p) for p in paths if p.endswith("__init__.py") and _name(p) == "__init__.py"
        }  # the folders holding an __init__.py ("" for the root)
        self.modules = self._python_modules()
        self.go_module = ""
        self.go_root = ""
        # Go files by (module, its folder, import path): every file importing a package asks
        # the same question, and a large Go project asks it tens of thousands of times.
        self._go_found: dict[tuple[str, str, str], list[int]] = {}
        self.js_name = ""
        self.js_entry: list[int] = []
        self.crate_name = ""

    @functools.cached_property
    def tails(self) -> dict[str, list[int]]:
        """The last one to four parts of each path -> the files whose path ends so (built on
        first use: only includes, requires and documents need it)."""
        tails: dict[str, list[int]] = {}
        for i, path in enumerate(self.paths):
            parts = path.split("/")
            for k in range(1, min(4, len(parts)) + 1):
                tails.setdefault("/".join(parts[-k:]), []).append(i)
        return tails

    # --- Python ------------------------------------------------------------------------------

    def _python_modules(self) -> dict[str, list[int]]:
        """Dotted module name -> files. A file's name is counted from above its outermost
        package (the folders holding an ``__init__.py`` up to it), so ``src/click/core.py``
        is ``click.core`` and ``tests/test_x.py`` is ``test_x``. When the root itself holds an
        ``__init__.py`` (a package folder packed on its own), names count from the root, which
        has no name of its own: ``core.py`` is ``core``, and the root's ``__init__.py`` has no
        module name (only relative imports reach it)."""
        modules: dict[str, list[int]] = {}
        for i, path in enumerate(self.paths):
            if not path.endswith((".py", ".pyi")):
                continue
            stem = _name(path).rsplit(".", 1)[0]
            parts = [] if stem == "__init__" else [stem]
            for folder in ancestors(path):
                if folder not in self.python_packages:
                    break
                if folder:
                    parts.append(_name(folder))
            if parts:
                modules.setdefault(".".join(reversed(parts)), []).append(i)
        return modules

    def outermost_package(self, folder: str) -> bool:
        """Whether the Python package ``folder`` sits in no package (the root's folder, when
        the root holds an ``__init__.py``, is the outermost)."""
        return next(ancestors(folder), None) not in self.python_packages

    def _python(self, src: int, spec: str) -> list[int]:
        if spec.startswith("."):
            # One dot is the importer's own folder, each further dot the folder above.
            level = len(spec) - len(spec.lstrip("."))
            folders = list(ancestors(self.paths[src]))
            if level > len(folders):
                return []  # climbs out of the project
            base = folders[level - 1]
            rest = spec[level:]
            target = _join(base, rest.replace(".", "/")) if rest else base
            if target is None:
                return []
            files = (target + ".py", target + ".pyi") if target else ()
            for candidate in (*files, (target + "/" if target else "") + "__init__.py"):
                if candidate in self.index:
                    return [self.index[candidate]]
            return []
        found = self.modules.get(spec, [])
        if len(found) > 1:
            # The same module name in several places (tests folders, stubs): the one nearest
            # to the importer, by the longest shared folder prefix, then by path.
            here = self.paths[src]
            best = max(len(posixpath.commonpath([here, self.paths[f]])) for f in found)
            found = [f for f in found if len(posixpath.commonpath([here, self.paths[f]])) == best]
        return found[:1] if len(found) > MAX_TARGETS else found

    # --- the other languages -----------------------------------------------------------------

    def _js(self, src: int, spec: str) -> list[int]:
        if spec.startswith("."):
            base = _join(_dir(self.paths[src]), spec)
            return [] if base is None else self._js_file(base)
        if self.js_name and (spec == self.js_name or spec.startswith(self.js_name + "/")):
            sub = spec[len(self.js_name) + 1 :]
            return self._js_file(sub) if sub else list(self.js_entry)
        return []

    def _js_file(self, base: str) -> list[int]:
        """The file ``base`` names as a module: itself, with an extension, or its folder's
        index (``""``, the project's top folder, only the latter)."""
        candidates = []
        if base:
            candidates.append(base)
            stem, ext = posixpath.splitext(base)
            if ext in (".js", ".jsx", ".mjs", ".cjs"):
                candidates += [stem + e for e in (".ts", ".tsx", ".mts", ".cts", ".d.ts")]
            candidates += [base + e for e in _JS_EXTS]
        candidates += [(base + "/" if base else "") + "index" + e for e in _JS_EXTS]
        for candidate in candidates:
            if candidate in self.index:
                return [self.index[candidate]]
        return []

    def _go(self, spec: str) -> list[int]:
        key = (self.go_module, self.go_root, spec)
        found = self._go_found.get(key)
        if found is None:
            found = self._go_found[key] = self._go_package(spec)
        return found

    def _go_package(self, spec: str) -> list[int]:
        folder: str | None = None
        if self.go_module and (spec == self.go_module or spec.startswith(self.go_module + "/")):
            rest = spec[len(self.go_module) + 1 :]
            folder = _join(self.go_root, rest) if rest else self.go_root
        else:
            # A module path that ends like a folder of the project (a vendored copy, a module
            # without go.mod here): the longest such ending of at least two parts.
            parts = spec.split("/")
            for k in range(len(parts) - 1, 1, -1):
                tail = "/".join(parts[-k:])
                if tail in self.by_dir:
                    folder = tail
                    break
        if folder is None:
            return []
        return [
            i
            for i in self.by_dir.get(folder, [])
            if self.paths[i].endswith(".go") and not self.paths[i].endswith("_test.go")
        ]

    def _rust_module_dir(self, path: str) -> str:
        folder, name = posixpath.split(path)
        if name in ("mod.rs", "lib.rs", "main.rs"):
            return folder
        return posixpath.join(folder, name[:-3]) if folder else name[:-3]

    def _rust_crate_root(self, path: str) -> str:
        """The nearest folder holding ``path`` (its own, or one above it) that holds a
        ``lib.rs`` or ``main.rs``; ``path``'s own folder when none does."""
        for folder in ancestors(path):
            for root in ("lib.rs", "main.rs"):
                if posixpath.join(folder, root) in self.index:
                    return folder
        return _dir(path)

    def _rust(self, src: int, spec: str) -> list[int]:
        path = self.paths[src]
        if spec.startswith("mod "):
            base = self._rust_module_dir(path)
            name = spec[4:]
            for candidate in (f"{base}/{name}.rs", f"{base}/{name}/mod.rs"):
                if candidate.lstrip("/") in self.index:
                    return [self.index[candidate.lstrip("/")]]
            return []
        head = spec.split("{", 1)[0].split(" as ", 1)[0].strip().rstrip(":")
        parts = [p for p in head.split("::") if p and p != "*"]
        if not parts:
            return []
        if parts[0] == "crate" or (self.crate_name and parts[0] == self.crate_name):
            base = self._rust_crate_root(path)
        elif parts[0] == "self":
            base = self._rust_module_dir(path)
        elif parts[0] == "super":
            # Each `super` is one folder up from the module's own; above the root is nothing.
            supers = next((k for k, part in enumerate(parts) if part != "super"), len(parts))
            module = self._rust_module_dir(path)
            folders = list(ancestors(module))
            if supers > len(folders):
                return []
            base = folders[supers - 1]
            parts = parts[supers - 1 :]
        else:
            return []
        parts = parts[1:]
        for k in range(len(parts), 0, -1):
            stem = posixpath.join(base, *parts[:k]) if base else posixpath.join(*parts[:k])
            for candidate in (stem + ".rs", stem + "/mod.rs"):
                if candidate in self.index:
                    return [self.index[candidate]]
        return []

    def _tail(self, tail: str, prefer: str = "") -> list[int]:
        found = self.tails.get(tail, [])
        if prefer and len(found) > 1:
            near = [f for f in found if self.paths[f].startswith(prefer)]
            found = near or found
        return found if len(found) <= 3 else []

    def _c(self, src: int, spec: str) -> list[int]:
        name = spec[1:-1]
        if spec.startswith('"'):
            local = _join(_dir(self.paths[src]), name)
            if local is not None and local in self.index:
                return [self.index[local]]
        parts = name.split("/")
        return self._tail("/".join(parts[-3:]))

    def _dotted(self, spec: str, extensions: tuple[str, ...]) -> list[int]:
        if spec.endswith(".*"):
            found = self.packages.get(spec[:-2], [])
            return found if len(found) <= MAX_TARGETS else []
        parts = spec.split(".")
        for ext in extensions:
            found = self._tail("/".join(parts[-3:]) + ext)
            if found:
                return found
        found = self.packages.get(spec, [])
        return found if len(found) <= MAX_TARGETS else []

    def _relative_file(self, src: int, spec: str, extensions: tuple[str, ...]) -> list[int]:
        base = _join(_dir(self.paths[src]), spec)
        for candidate in ([base] if base else []) + [base + e for e in extensions if base]:
            if candidate in self.index:
                return [self.index[candidate]]
        parts = spec.lstrip("./").split("/")
        for ext in ("", *extensions):
            found = self._tail("/".join(parts[-3:]) + ext)
            if found:
                return found
        return []

    def _document(self, src: int, spec: str) -> list[int]:
        spec = spec.split("#", 1)[0].rstrip("/")
        if not spec:
            return []
        if spec in self.index:
            return [self.index[spec]]
        local = _join(_dir(self.paths[src]), spec)
        if local is not None and local in self.index:
            return [self.index[local]]
        found = self.tails.get("/".join(spec.split("/")[-3:]), [])
        return found if len(found) == 1 and "/" in spec else []

    def _namespace(self, spec: str) -> list[int]:
        found = self.packages.get(spec, [])
        return found if len(found) <= MAX_TARGETS else []

    def resolve(self, src: int, spec: str, lang: str) -> list[int]:
        """The files the import ``spec`` of file ``src`` (written in ``lang``) means, by the
        module system its language's record names."""
        record = named(lang)
        if record is None or record.modules is None:
            return []
        found = _RESOLVERS[record.modules.system](self, src, spec, record.modules)
        return [f for f in found if f != src]


# How each module system resolves a specifier: (layout, importing file, specifier, the
# language's `Modules`) -> files.
_RESOLVERS: Final[dict[ModuleSystem, Callable[[Layout, int, str, Modules], list[int]]]] = {
    "python": lambda layout, src, spec, m: layout._python(src, spec),
    "javascript": lambda layout, src, spec, m: layout._js(src, spec),
    "go": lambda layout, src, spec, m: layout._go(spec),
    "rust": lambda layout, src, spec, m: layout._rust(src, spec),
    "include": lambda layout, src, spec, m: layout._c(src, spec),
    "dotted": lambda layout, src, spec, m: layout._dotted(spec, m.extensions),
    "namespace": lambda layout, src, spec, m: layout._namespace(spec),
    "relative": lambda layout, src, spec, m: layout._relative_file(
        src, spec.replace(m.separator, "/"), m.extensions
    ),
    "document": lambda layout, src, spec, m: layout._document(src, spec),
}


def module_system(lang: str | None) -> ModuleSystem | None:
    """The module system of the language ``lang`` (`packer.lang.record.ModuleSystem`), or None
    for a language whose imports lead nowhere."""
    record = named(lang)
    return None if record is None or record.modules is None else record.modules.system


# --- the public surface -----------------------------------------------------------------------


@dataclass(slots=True)
class Surface:
    """Personalization points and reasons per file, and bonuses per symbol."""

    points: dict[int, int] = field(default_factory=dict)
    reasons: dict[int, list[str]] = field(default_factory=dict)
    entry_symbols: dict[int, set[str]] = field(default_factory=dict)  # file -> names declared
    readme: int | None = None  # the top-level README's file

    def add(self, file: int, points: int, reason: str) -> None:
        self.points[file] = self.points.get(file, 0) + points
        reasons = self.reasons.setdefault(file, [])
        if reason not in reasons:
            reasons.append(reason)


def _load_toml(text: str | None) -> dict[str, Any]:
    """A metadata file's TOML, or nothing when it cannot be read as TOML (tomllib parses
    nested arrays and inline tables recursively, so a deep enough nesting is unreadable too)."""
    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}


def _load_json(text: str | None) -> object:
    """A metadata file's JSON, or nothing when it cannot be read as JSON (too deep included)."""
    try:
        return json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {}


def _items(value: object) -> list[object]:
    """``value`` when it is a list (an array of tables), else nothing: metadata written by
    hand may hold any type where a list belongs."""
    return value if isinstance(value, list) else []


def _strings(value: object) -> Iterable[str]:
    """Every string inside a JSON value (package.json ``exports`` nests them), in document
    order with each object's keys sorted; a stack rather than recursion, so any depth reads."""
    stack = [value]
    while stack:  # each step takes one value off and puts back only values inside it
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item[key] for key in sorted(item, reverse=True))
        elif isinstance(item, list):
            stack.extend(reversed(item))


_ENTRY_SPEC = re.compile(r"^\s*([\w.-]+)\s*=\s*([\w.]+)(?::([\w.]+))?")


def _python_metadata(
    read: Callable[[str], str | None], present: set[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """(package names, [(module, function)] entry points) the Python metadata declares."""
    packages: list[str] = []
    entries: list[tuple[str, str]] = []

    def entry(value: str) -> None:
        module, _, func = value.strip().partition(":")
        if module:
            entries.append((module.strip(), func.strip().split(".")[0].split("[")[0].strip()))

    if "pyproject.toml" in present:
        data = _load_toml(read("pyproject.toml"))
        project = data.get("project", {})
        if isinstance(project, dict):
            if isinstance(project.get("name"), str):
                packages.append(project["name"])
            for table in ("scripts", "gui-scripts"):
                scripts = project.get(table, {})
                if isinstance(scripts, dict):
                    for key in sorted(scripts):
                        if isinstance(scripts[key], str):
                            entry(scripts[key])
            groups = project.get("entry-points", {})
            if isinstance(groups, dict):
                for group in sorted(groups):
                    if isinstance(groups[group], dict):
                        for key in sorted(groups[group]):
                            if isinstance(groups[group][key], str):
                                entry(groups[group][key])
        tool = data.get("tool", {})
        if isinstance(tool, dict):
            poetry = tool.get("poetry", {})
            if isinstance(poetry, dict):
                if isinstance(poetry.get("name"), str):
                    packages.append(poetry["name"])
                for item in _items(poetry.get("packages")):
                    if isinstance(item, dict) and isinstance(item.get("include"), str):
                        packages.append(item["include"])
                scripts = poetry.get("scripts", {})
                if isinstance(scripts, dict):
                    for key in sorted(scripts):
                        if isinstance(scripts[key], str):
                            entry(scripts[key])
            setuptools = tool.get("setuptools", {})
            if isinstance(setuptools, dict) and isinstance(setuptools.get("packages"), list):
                packages += [p for p in setuptools["packages"] if isinstance(p, str)]
            find = setuptools.get("packages", {}) if isinstance(setuptools, dict) else {}
            if isinstance(find, dict):
                found = find.get("find", {})
                if isinstance(found, dict) and isinstance(found.get("include"), list):
                    packages += [p for p in found["include"] if isinstance(p, str)]
    if "setup.cfg" in present:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(read("setup.cfg") or "")
        except configparser.Error:
            parser = configparser.ConfigParser(interpolation=None)
        if parser.has_option("metadata", "name"):
            packages.append(parser.get("metadata", "name"))
        if parser.has_option("options", "packages"):
            packages += parser.get("options", "packages").split()
        if parser.has_section("options.entry_points"):
            for key in sorted(parser.options("options.entry_points")):
                for line in parser.get("options.entry_points", key).splitlines():
                    if m := _ENTRY_SPEC.match(line):
                        entry(m.group(2) + (":" + m.group(3) if m.group(3) else ""))
    if "setup.py" in present:
        text = read("setup.py") or ""
        if m := re.search(r"""\bname\s*=\s*['"]([\w.-]+)['"]""", text):
            packages.append(m.group(1))
        for m in re.finditer(r"""['"]\s*[\w.-]+\s*=\s*([\w.]+):([\w.]+)""", text):
            entry(m.group(1) + ":" + m.group(2))
    return packages, entries


def public_surface(
    layout: Layout,
    langs: Sequence[str | None],
    read: Callable[[str], str | None],
) -> Surface:
    """The project's public surface: entry points, package indexes, what its README names."""
    surface = Surface()
    paths = layout.paths
    present = {p for p in paths if "/" not in p}

    # Python: declared packages and entry points, then every package's __init__.
    packages, entries = _python_metadata(read, present)
    named: set[int] = set()
    for name in packages:
        module = name.replace("-", "_").replace("/", ".").removesuffix("*").strip(".")
        named.update(layout.modules.get(module, []) + layout.modules.get(module.lower(), []))
    for f in sorted(named):
        surface.add(f, ENTRY_POINTS, "the package the project's metadata names")
    for module, func in entries:
        for f in layout.modules.get(module, []):
            surface.add(
                f, ENTRY_POINTS, f"entry point ({module}:{func})" if func else "entry point"
            )
            if func:
                surface.entry_symbols.setdefault(f, set()).add(func)
    for i, path in enumerate(paths):
        name, folder = _name(path), _dir(path)
        if name in ("__init__.py", "__init__.pyi") and folder in layout.python_packages:
            # A top-level package sits at the root or in a source folder; a package of its
            # own below `tests/` or `examples/` is only a package.
            top = layout.outermost_package(folder) and _dir(folder) in _SOURCE_FOLDERS
            surface.add(
                i,
                PACKAGE_ROOT if top else PACKAGE_INDEX,
                "top-level package index" if top else "package index",
            )
        elif name == "__main__.py":
            surface.add(i, ENTRY_POINTS, "entry point (__main__)")

    # JavaScript and TypeScript: package.json's entries, and folder indexes.
    if "package.json" in present:
        manifest = _load_json(read("package.json"))
        if isinstance(manifest, dict):
            if isinstance(manifest.get("name"), str):
                layout.js_name = manifest["name"]
            targets: list[str] = []
            for key in ("main", "module", "types", "typings", "browser", "exports", "bin"):
                targets += list(_strings(manifest.get(key)))
            for target in targets:
                for f in _js_entry(layout, target):
                    if f not in layout.js_entry:
                        layout.js_entry.append(f)
                    surface.add(f, ENTRY_POINTS, "entry point (package.json)")
    for i, path in enumerate(paths):
        name = _name(path)
        if name.startswith("index.") and is_index(path) and module_system(langs[i]) == "javascript":
            surface.add(i, PACKAGE_INDEX, "folder index")

    # Go: the module's root package and every main package.
    if "go.mod" in present:
        m = re.search(r"^module\s+(\S+)", read("go.mod") or "", re.M)
        if m:
            layout.go_module = m.group(1).strip('"')
            for f in layout._go(layout.go_module):
                surface.add(f, PACKAGE_ROOT, "root package")
    for i, lexicon in enumerate(layout.lexicons):
        if (
            lexicon is not None
            and lexicon.package == "main"
            and module_system(lexicon.lang) == "go"
            and not paths[i].endswith("_test.go")
        ):
            surface.add(i, ENTRY_POINTS, "main package")

    # Rust: the crate's lib.rs and main.rs (or what Cargo.toml names), binaries, mod.rs.
    if "Cargo.toml" in present:
        cargo = _load_toml(read("Cargo.toml"))
        package = cargo.get("package", {})
        if isinstance(package, dict) and isinstance(package.get("name"), str):
            layout.crate_name = package["name"].replace("-", "_")
        declared = []
        lib = cargo.get("lib", {})
        if isinstance(lib, dict) and isinstance(lib.get("path"), str):
            declared.append(lib["path"])
        for binary in _items(cargo.get("bin")):
            if isinstance(binary, dict) and isinstance(binary.get("path"), str):
                declared.append(binary["path"])
        for target in declared:
            norm = _join("", target)
            if norm is not None and norm in layout.index:
                surface.add(layout.index[norm], ENTRY_POINTS, "crate root (Cargo.toml)")
    rust = {lang for lang in set(langs) if module_system(lang) == "rust"}
    for i, path in enumerate(paths):
        if langs[i] not in rust:
            continue
        name = _name(path)
        if name in ("lib.rs", "main.rs") and _dir(path).endswith("src"):
            surface.add(i, ENTRY_POINTS, "crate root")
        elif _dir(path).endswith("src/bin"):
            surface.add(i, ENTRY_POINTS, "binary")
        elif name == "mod.rs":
            surface.add(i, PACKAGE_INDEX, "module index")

    # The top-level README: the paths it names.
    readmes = sorted(
        (p for p in present if is_readme(p)), key=lambda p: (_readme_rank(p), p.encode())
    )
    if readmes:
        surface.readme = layout.index[readmes[0]]
        surface.add(surface.readme, ENTRY_POINTS, "the project's README")
    return surface


def _readme_rank(path: str) -> int:
    ext = posixpath.splitext(path)[1].lower()
    return {".md": 0, ".rst": 1, ".markdown": 2, ".txt": 3, "": 4}.get(ext, 5)


def _js_entry(layout: Layout, target: str) -> list[int]:
    """The files a package.json entry means: the file itself and, when it is built output
    (``dist/index.js``), the source it was built from when the project ships it."""
    norm = _join("", target)
    if norm is None:
        return []
    found = layout._js_file(norm)
    parts = norm.split("/")
    if len(parts) > 1 and parts[0] in _BUILT:
        stem = posixpath.splitext("/".join(parts[1:]))[0]
        if stem.endswith(".d"):
            stem = stem[:-2]
        for source in _SOURCE:
            for f in layout._js_file(f"{source}/{stem}"):
                if f not in found:
                    found.append(f)
    return found
