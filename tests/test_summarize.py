"""Summaries as text (`packer.summarize`): the rendered outline of a file, fitted to a line limit
by leaving out whole symbols, never by cutting the tail; and the properties every summary keeps
on any input (never raises, deterministic, one line per line, encodable).

The outlines themselves are tested per language in tests/test_summaries_*.py.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from packer.lang import language_for
from packer.summaries import outline
from packer.summarize import SUMMARY_VERSION, summarize


def lines_of(summary: str) -> list[str]:
    assert summary.endswith("\n")
    assert not summary.endswith("\n\n")
    return summary[:-1].split("\n")


# --- language_for -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("a/b.py", "python"),
        ("stubs/x.pyi", "python"),
        ("README.md", "markdown"),
        ("docs/GUIDE.MARKDOWN", "markdown"),
        ("src/app.ts", "typescript"),
        ("src/App.tsx", "tsx"),
        ("index.js", "javascript"),
        ("lib/x.mjs", "javascript"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("A.java", "java"),
        ("x.c", "c"),
        ("x.h", "c"),
        ("x.hpp", "cpp"),
        ("x.cc", "cpp"),
        ("x.ipp", "cpp"),
        ("config.ru", "ruby"),
        ("Podfile", "ruby"),
        ("tsconfig.jsonc", "json"),
        ("docs/intro.rst", "rst"),
        ("pyproject.toml", "toml"),
        ("ci.yml", "yaml"),
        ("x.rb", "ruby"),
        ("Rakefile", "ruby"),
        ("x.cs", "csharp"),
        ("x.php", "php"),
        ("x.kt", "kotlin"),
        ("x.swift", "swift"),
        ("data.bin", None),
        ("noextension", None),
        ("", None),
    ],
)
def test_language_for(path: str, lang: str | None) -> None:
    assert language_for(path) == lang


BODY = "    value = compute()\n    return BODY_MARKER\n"


def test_a_summary_is_the_whole_outline_when_it_fits() -> None:
    text = '"""Tools."""\n\ndef f(x: int) -> int:\n    """Double."""\n' + BODY
    assert summarize("t.py", text) == (
        '# summary (python, 6 lines)\n"""Tools."""\ndef f(x: int) -> int:\n    """Double."""\n'
    )


def test_python_that_does_not_parse_falls_back_to_its_first_lines() -> None:
    for text in ("def broken(:\n    BODY_MARKER_X = 1\n", "class A\n  pass\n", "x = (\n"):
        lines = lines_of(summarize("bad.py", text))
        assert lines[0].startswith("# summary (python, ")
        assert lines[1] == text.split("\n", maxsplit=1)[0]


def test_fallback_shows_twenty_lines() -> None:
    text = "".join(f"line {i}\n\n" for i in range(50))
    lines = lines_of(summarize("notes.txt", text))
    assert lines == ["# summary (text, 100 lines)", *[f"line {i}" for i in range(20)]]


def test_fallback_clips_long_lines() -> None:
    lines = lines_of(summarize("x.txt", "y" * 1000 + "\n"))
    assert len(lines[1]) <= 160
    assert lines[1].endswith("...")


# --- the output contract ------------------------------------------------------------------------


def test_max_lines_leaves_out_whole_symbols_and_says_how_many() -> None:
    text = "".join(f"def f{i}(x: int) -> int: ...\n" for i in range(100))
    lines = lines_of(summarize("many.py", text, max_lines=10))
    assert len(lines) == 10
    assert lines[-1] == "... (92 more symbols not shown)"
    assert lines[1:-1] == [f"def f{i}(x: int) -> int: ..." for i in range(8)]


def test_max_lines_keeps_exported_symbols_before_private_ones_and_never_cuts_the_tail() -> None:
    # The old summary cut click's core.py before `class Option`; a fitted one keeps the public
    # classes and leaves out private helpers and members instead.
    text = "".join(f"def _helper{i}(x):\n    pass\n" for i in range(40))
    text += "class Option:\n    def __init__(self, name: str) -> None: ...\n"
    text += "class Argument:\n    def _private(self): ...\n"
    assert lines_of(summarize("core.py", text, max_lines=6)) == [
        "# summary (python, 84 lines)",
        "def _helper0(x): ...",  # the room left after the public symbols
        "class Option:",
        "    def __init__(self, name: str) -> None: ...",
        "class Argument:",
        "... (40 more symbols not shown)",
    ]


def test_big_file_summary_is_much_smaller() -> None:  # and a body never shows
    body = "\n".join(f"    value_{j} = compute({j}) + {j} * 2" for j in range(40))
    text = "".join(f"def func_{i}(a: int, b: str = 'x') -> int:\n{body}\n\n" for i in range(80))
    summary = summarize("big.py", text, max_lines=500)
    assert len(text) > 100_000
    assert len(summary) * 20 < len(text)
    assert "def func_79(a: int, b: str = 'x') -> int: ..." in summary
    assert "value_" not in summary


GO_SOURCE = "package store\n\n// Open opens.\nfunc Open(path string) error { return nil }\n"
MD_SOURCE = "# cas\n\nA store. It keeps bytes.\n\n## Install\n\nRun it.\n"


def test_summary_depends_on_path_only_through_its_language() -> None:
    # The build caches summaries by content digest and language.
    assert summarize("a/one.go", GO_SOURCE) == summarize("b/two.go", GO_SOURCE)
    assert summarize("x.md", MD_SOURCE) == summarize("README", MD_SOURCE)
    assert summarize("a/__init__.py", "from .a import b\n") == summarize(
        "x.py", "from .a import b\n"
    )
    assert outline("x.c", "static int f(void);\n") == outline("x.h", "static int f(void);\n")


def test_summary_version_is_a_string() -> None:
    assert isinstance(SUMMARY_VERSION, str)
    assert SUMMARY_VERSION


def test_empty_and_odd_inputs() -> None:
    assert summarize("e.py", "") == "# summary (python, 0 lines)\n"
    assert summarize("e.md", "\n\n\n") == "# summary (markdown, 3 lines)\n"
    odd = summarize("we\nird\u2028.txt", "a\rb\u2028c\x0bd\n")
    assert odd.count("\n") == len(odd.splitlines()) == 2
    surrogate = summarize("s.py", "x = '\udcff'\n")
    surrogate.encode("utf-8")  # always encodable


LANG_PATHS = [
    "a.py",
    "a.md",
    "a.ts",
    "a.tsx",
    "a.js",
    "a.go",
    "a.rs",
    "a.java",
    "a.c",
    "a.h",
    "a.cpp",
    "a.rb",
    "a.cs",
    "a.php",
    "a.kt",
    "a.swift",
    "a.txt",
    "a.rst",
    "a.toml",
    "a.yaml",
    "a.json",
]


@given(path=st.sampled_from(LANG_PATHS), text=st.text(max_size=400))
@example(path="a.py", text="def f(:")
@example(path="a.md", text="```\n# h")
@example(path="a.ts", text="export class A { m() {")
@example(path="a.py", text="x = " + "(" * 300 + ")" * 300)
@example(path="a.go", text="\x00\ud800func F() {}")
@example(path="a.toml", text='x = """\n[t]\n')
@example(path="a.json", text="[" * 5000)
@example(path="a.rst", text="Title\n=====\n\n.. function:: f(\u2028x)\n")
def test_never_raises_is_deterministic_and_ends_with_one_newline(path: str, text: str) -> None:
    first = summarize(path, text)
    assert first == summarize(path, text)
    lines = lines_of(first)
    assert lines[0].startswith("# summary (")
    assert len(lines) <= 200
    assert first.count("\n") == len(first.splitlines())
    first.encode("utf-8")
    o = outline(path, text)
    for line in (*o.head, *(x for s in o.symbols for x in s.lines)):
        assert len(line.splitlines()) <= 1
    assert all(-1 <= s.parent < i for i, s in enumerate(o.symbols))


@given(
    path=st.sampled_from(LANG_PATHS),
    text=st.text(alphabet="abc(){}[];:=,.\n \t#/*\"'<>`-|", max_size=600),
    max_lines=st.integers(min_value=-3, max_value=30),
)
def test_code_like_noise_respects_max_lines(path: str, text: str, max_lines: int) -> None:
    lines = lines_of(summarize(path, text, max_lines=max_lines))
    assert len(lines) <= max(max_lines, 2)
