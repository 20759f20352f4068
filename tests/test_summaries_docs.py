"""Outlines of documents and configuration: Markdown and reStructuredText sections, TOML tables,
YAML and JSON keys, plain text; on planted texts and on real files (Django's docs and
pyproject.toml, ky's package.json, anyhow's CI workflow)."""

from __future__ import annotations

import textwrap

import pytest
from realcode import read

from packer.outline import Outline, render
from packer.summaries import outline


def shown(o: Outline) -> list[str]:
    return render(o).splitlines()[1:]


def parents(o: Outline) -> list[tuple[str, str]]:
    return [(o.symbols[s.parent].name if s.parent >= 0 else "", s.name) for s in o.symbols]


# --- Markdown -----------------------------------------------------------------------------------

MD_SOURCE = textwrap.dedent(
    """\
    ---
    title: front matter is not prose
    ---
    [![build](https://ci/badge.svg)](https://ci)

    # cas

    A content-addressed store, e.g. for packs. It keeps bytes once.

    ```bash
    # not a heading: inside a fence
    pip install cas
    ```

    ## Install

    <!-- a comment
    # not a heading: inside a comment
    -->

    | col | col |
    |-----|-----|
    | not prose | x |

    Run the [installer](https://example.org) first! Then configure.

    Usage
    -----

    - Call `cas pack` to build. Then verify.

    ~~~
    ## also not a heading
    ~~~

    ### Closing hashes ###
    """
)


def test_markdown_sections_nest_and_carry_their_first_sentence() -> None:
    o = outline("README.md", MD_SOURCE)
    assert shown(o) == [
        "# cas",
        "  A content-addressed store, e.g. for packs.",
        "## Install",
        "  Run the installer first!",
        "## Usage",
        "  Call `cas pack` to build.",
        "### Closing hashes",
    ]
    assert parents(o) == [
        ("", "cas"),
        ("cas", "Install"),
        ("cas", "Usage"),
        ("Usage", "Closing hashes"),
    ]
    assert {s.kind for s in o.symbols} == {"section"}


def test_markdown_prose_before_the_first_heading_is_the_head() -> None:
    o = outline("a.md", "Intro text here. More.\n\n# Title\n\nBody.\n")
    assert o.head == ("Intro text here.",)


def test_markdown_long_sentence_is_clipped() -> None:
    lines = shown(outline("a.md", "# T\n\n" + "word " * 200 + "\n"))
    assert len(lines[1]) <= 202
    assert lines[1].endswith("...")


def test_markdown_without_headings_shows_its_first_lines() -> None:
    o = outline("notes.md", "Just prose. More prose.\nAnd more.\n")
    assert shown(o) == ["Just prose. More prose.", "And more."]
    assert {s.kind for s in o.symbols} == {"text"}


# --- reStructuredText ---------------------------------------------------------------------------

RST_SOURCE = textwrap.dedent(
    """\
    =======
    Widgets
    =======

    Widgets draw things. They are cheap.

    .. note::

       A note is not the section's sentence.

    Creating one
    ============

    Call the factory::

        make_widget(1)   # a literal block, not prose

    .. function:: make_widget(size, *, color=None)

       Make a widget of ``size`` pixels. Then use it.

    .. class:: Widget(size)

       A drawable widget.

       .. method:: draw(canvas)

          Draw on :class:`~canvas.Canvas`.

       .. attribute:: size

    .. code-block:: python

       .. function:: not_a_directive()

    .. setting:: WIDGET_SIZE

    Default: ``10``. The size of new widgets.

    Removing one
    ------------

    .. versionadded:: 2.0

    Use :func:`drop`.
    """
)


def test_rst_titles_directives_and_first_sentences() -> None:
    o = outline("docs/widgets.rst", RST_SOURCE)
    assert o.lang == "rst"
    assert shown(o) == [
        "# Widgets",
        "  Widgets draw things.",
        "## Creating one",
        "  Call the factory:",
        ".. function:: make_widget(size, *, color=None)",
        "   Make a widget of `size` pixels.",
        ".. class:: Widget(size)",
        "   A drawable widget.",
        "  .. method:: draw(canvas)",
        "     Draw on canvas.Canvas.",
        "  .. attribute:: size",
        ".. setting:: WIDGET_SIZE",
        "   Default: `10`.",
        "### Removing one",
        "  Use drop.",
    ]
    assert parents(o) == [
        ("", "Widgets"),
        ("Widgets", "Creating one"),
        ("Creating one", "make_widget"),
        ("Creating one", "Widget"),
        ("Widget", "draw"),
        ("Widget", "size"),
        ("Creating one", "WIDGET_SIZE"),
        ("Creating one", "Removing one"),
    ]
    kinds = {s.name: s.kind for s in o.symbols}
    assert kinds["make_widget"] == "function"
    assert kinds["Widget"] == "class"
    assert kinds["draw"] == "method"
    assert kinds["size"] == "field"


def test_rst_in_a_txt_file_is_read_as_rst_and_plain_text_is_not() -> None:
    assert outline("docs/intro.txt", RST_SOURCE).lang == "rst"
    plain = outline("notes.txt", "Some notes.\nNothing adorned here.\n")
    assert plain.lang == "text"
    assert shown(plain) == ["Some notes.", "Nothing adorned here."]


@pytest.mark.slow
def test_django_docs_outline() -> None:
    # Django writes its reference in reStructuredText files named .txt.
    o = outline("docs/ref/urlresolvers.txt", read("django", "docs/ref/urlresolvers.txt"))
    lines = shown(o)
    assert lines[0] == "# `django.urls` utility functions"
    assert "## `reverse()`" in lines
    assert (
        ".. function:: reverse(viewname, urlconf=None, args=None, kwargs=None, current_app=None)"
        in lines
    )
    assert ".. function:: resolve(path, urlconf=None)" in lines
    assert "  .. attribute:: ResolverMatch.url_name" in lines
    names = {s.name for s in o.symbols}
    assert {
        "reverse",
        "reverse_lazy",
        "resolve",
        "ResolverMatch",
        "func",
        "get_script_prefix",
    } <= names
    readme = outline("README.rst", read("django", "README.rst"))
    assert shown(readme)[:2] == [
        "# Django",
        "  Django is a high-level Python web framework that encourages rapid development and"
        " clean, pragmatic design.",
    ]


# --- TOML, YAML, JSON ---------------------------------------------------------------------------

TOML_SOURCE = textwrap.dedent(
    '''\
    # a comment
    title = "top"

    [project]
    name = "cas"  # trailing comment
    dependencies = [
        "blake3>=1.0",  # hashing
        "zstandard>=0.22",
    ]
    description = """
    Many lines.
    [not.a.table]
    """

    [project.scripts]
    cas = "casapp.cli:main"

    [[tool.mypy.overrides]]
    module = ["zstandard"]
    '''
)


def test_toml_tables_and_keys_with_values() -> None:
    o = outline("pyproject.toml", TOML_SOURCE)
    assert shown(o) == [
        'title = "top"',
        "[project]",
        '  name = "cas"',
        '  dependencies = ["blake3>=1.0", "zstandard>=0.22"]',
        '  description = """ Many lines. [not.a.table] """',
        "[project.scripts]",
        '  cas = "casapp.cli:main"',
        "[[tool.mypy.overrides]]",
        '  module = ["zstandard"]',
    ]
    assert parents(o)[4:7] == [
        ("project", "description"),
        ("", "project.scripts"),
        ("project.scripts", "cas"),
    ]
    # A tool's settings are not what the file says of the project: not exported.
    private = [s.name for s in o.symbols if not s.exported]
    assert private == ["tool.mypy.overrides", "module"]


def test_django_pyproject_keeps_its_scripts_and_dependencies() -> None:
    o = outline("pyproject.toml", read("django", "pyproject.toml"))
    lines = shown(o)
    at = lines.index("[project.scripts]")
    assert lines[at + 1] == '  django-admin = "django.core.management:execute_from_command_line"'
    assert '  name = "Django"' in lines
    assert any(line.startswith('  dependencies = ["asgiref>=') for line in lines)
    assert "[tool.setuptools.dynamic]" in lines


YAML_SOURCE = textwrap.dedent(
    """\
    # CI
    name: CI
    on:
      push:
        branches: [main]  # a comment
    jobs:
      test:
        runs-on: ubuntu-latest
        steps:
          - uses: actions/checkout@v4
          - name: Test
            run: |
              pytest: not a key
        deep:
          deeper:
            deepest: 1
    ---
    second: document
    """
)


def test_yaml_keys_of_three_levels_and_no_sequence_items() -> None:
    o = outline("ci.yml", YAML_SOURCE)
    assert shown(o) == [
        "name: CI",
        "on:",
        "  push:",
        "    branches: [main]",
        "jobs:",
        "  test:",
        "    runs-on: ubuntu-latest",
        "    steps:",
        "    deep:",
        "second: document",
    ]
    assert parents(o)[:4] == [("", "name"), ("", "on"), ("on", "push"), ("push", "branches")]


def test_anyhow_ci_workflow() -> None:
    o = outline(".github/workflows/ci.yml", read("anyhow", ".github/workflows/ci.yml"))
    lines = shown(o)
    assert lines[:2] == ["name: CI", "on:"]
    assert "jobs:" in lines
    assert "  clippy:" in lines
    assert not any("actions/checkout" in line for line in lines)


def test_json_keys_values_and_jsonc() -> None:
    source = '{"name": "x", "scripts": {"build": "tsc", "test": "ava"}, "keywords": ["a", "b"],\n'
    source += ' "files": [' + ", ".join(f'"f{i}"' for i in range(60)) + "]}"
    o = outline("package.json", source)
    assert shown(o) == [
        '"name": "x"',
        '"scripts":',
        '  "build": "tsc"',
        '  "test": "ava"',
        '"keywords": ["a", "b"]',
        '"files": [60 items]',
    ]
    jsonc = outline(
        "tsconfig.json", '{\n  // comment\n  "compilerOptions": {"strict": true,},\n}\n'
    )
    assert shown(jsonc) == ['"compilerOptions":', '  "strict": true']
    assert outline("broken.json", "{not json").symbols[0].kind == "text"


def test_ky_package_json_entry_points_and_scripts() -> None:
    o = outline("package.json", read("ky", "package.json"))
    lines = shown(o)
    assert '"name": "ky"' in lines
    assert '"main": "./distribution/index.js"' in lines
    at = lines.index('"exports":')
    assert lines[at + 1 : at + 3] == [
        '  "types": "./distribution/index.d.ts"',
        '  "default": "./distribution/index.js"',
    ]
    assert any(line.startswith('  "build": ') for line in lines)
    assert '"devDependencies":' in lines
