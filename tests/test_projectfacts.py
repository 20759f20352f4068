"""The key facts of a project's metadata file (`packer.projectfacts`): which lines of a
pyproject.toml, Cargo.toml and package.json they are, and a pack of a large project at a small
budget that shows them though the file as a whole is worth little beside the code."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cas import manifest as mf
from packer.projectfacts import TABLE_FACTS, is_project_metadata, key_facts
from packer.summaries import outline
from tests.conftest import run_cas
from tests.packfixture import write_modules

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "widget"
description = "Widgets for everyone"
requires-python = ">=3.9"
dependencies = [
    "attrs>=22",
    "click",
]
classifiers = ["Typing :: Typed"]

[project.optional-dependencies]
fast = ["orjson"]

[project.scripts]
widget = "widget.cli:main"

[project.entry-points."widget.plugins"]
basic = "widget.plugins:basic"

[tool.ruff]
line-length = 99
"""
# Settings of the project's tools: what makes a real metadata file worth less whole than its card.
TOOLS = "".join(
    f'\n[tool.linter.rule{i}]\nenabled = true\nseverity = "warning"\nignore = ["a{i}", "b{i}"]\n'
    for i in range(120)
)

CARGO = """\
[package]
name = "tiny"
version = "0.3.1"
edition = "2021"
license = "MIT"

[features]
default = ["std"]
std = []

[dependencies]
serde = { version = "1", optional = true }

[dev-dependencies]
trybuild = "1"
"""

PACKAGE_JSON = {
    "name": "fetcher",
    "version": "2.0.0",
    "description": "Fetch things",
    "type": "module",
    "bin": {"fetcher": "cli.js"},
    "engines": {"node": ">=18"},
    "scripts": {"test": "ava"},
    "dependencies": {"ky": "^1.0.0"},
    "devDependencies": {"ava": "^6"},
}


def facts_of(name: str, text: str) -> list[str]:
    o = outline(name, text)
    assert o is not None
    return [o.symbols[i].lines[0].strip() for i in sorted(key_facts(o))]


def test_the_entries_of_a_long_table_share_a_few_facts_worth() -> None:
    o = outline("pyproject.toml", PYPROJECT)
    assert o is not None
    shares = {o.symbols[i].name: n for i, n in key_facts(o).items()}
    assert shares == {
        "name": 1, "requires-python": 1, "dependencies": 1, "fast": 1, "widget": 1, "basic": 1
    }  # fmt: skip
    many = json.dumps({"name": "x", "dependencies": {f"dep{i}": "^1" for i in range(40)}})
    o = outline("package.json", many)
    assert o is not None
    shares = {o.symbols[i].name: n for i, n in key_facts(o).items()}
    assert shares["name"] == 1 and shares["dep7"] == 40 // TABLE_FACTS and len(shares) == 41


def test_the_key_facts_of_a_pyproject() -> None:
    assert facts_of("pyproject.toml", PYPROJECT) == [
        'name = "widget"',
        'requires-python = ">=3.9"',
        'dependencies = ["attrs>=22", "click"]',
        'fast = ["orjson"]',
        'widget = "widget.cli:main"',
        'basic = "widget.plugins:basic"',
    ]


def test_the_key_facts_of_a_cargo_manifest() -> None:
    assert facts_of("Cargo.toml", CARGO) == [
        'name = "tiny"',
        'version = "0.3.1"',
        'edition = "2021"',
        'default = ["std"]',
        'serde = { version = "1", optional = true }',
    ]


def test_the_key_facts_of_a_package_json() -> None:
    assert facts_of("package.json", json.dumps(PACKAGE_JSON, indent=2)) == [
        '"name": "fetcher"',
        '"version": "2.0.0"',
        '"type": "module"',
        '"fetcher": "cli.js"',
        '"node": ">=18"',
        '"ky": "^1.0.0"',
    ]


def test_no_facts_outside_configuration_and_only_the_top_metadata_file_has_them() -> None:
    o = outline("setup.py", "def main():\n    pass\n")
    assert o is not None and key_facts(o) == {}
    assert is_project_metadata("pyproject.toml", "project metadata")
    assert is_project_metadata("package.json", "project metadata; secrets redacted: token")
    assert not is_project_metadata("sub/pyproject.toml", "project metadata")
    assert not is_project_metadata("pyproject.toml", "configuration")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("[]{}.\"=\n #abkey-_0,'*"), max_size=300))
def test_any_text_gives_facts_among_its_keys(text: str) -> None:
    for name in ("pyproject.toml", "package.json"):
        o = outline(name, text)
        if o is None:
            continue
        facts = key_facts(o)
        assert all(0 <= i < len(o.symbols) and o.symbols[i].kind == "key" for i in facts)
        assert all(n >= 1 for n in facts.values())


def test_a_small_pack_of_a_large_project_shows_its_card(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "widget").mkdir(parents=True)
    core = "".join(f"def run_{k}(request):\n    return request\n\n" for k in range(30))
    (repo / "widget" / "core.py").write_text(core)
    for i in range(10):
        pkg = repo / "widget" / f"part{i}"
        write_modules(pkg, 25, 30, "from widget import core", lambda k: f"core.run_{k}(request)")
        (pkg / "__init__.py").write_text(f'"""Part {i}."""\n')
    (repo / "pyproject.toml").write_text(PYPROJECT + TOOLS)
    (repo / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    r = run_cas("pack", cwd=repo, timeout=300)
    assert r.code == 0, r.err
    m = mf.decode((repo / "manifests" / "repo.pack").read_bytes())
    entry = next(e for e in m.entries if e.path == "pyproject.toml")
    assert entry.tier == "medium"  # a summary (the whole file is larger than the budget)
    text = run_cas("render", "repo", cwd=repo).out
    card = text.split("### `pyproject.toml` (summary)", 1)[1].split("```\n\n", 1)[0]
    for line in ('name = "widget"', 'requires-python = ">=3.9"', 'widget = "widget.cli:main"'):
        assert line in card
    assert "line-length" not in card and "severity" not in card
    explain = run_cas("pack", "--explain", "pyproject.toml", cwd=repo).out
    assert "requires-python (" in explain
