"""MEDIUM-tier summaries: signatures and purposes in, bodies out, for every supported language.

Each source below plants a distinctive marker (BODY_MARKER_*) inside a body; a summary that leaks
a body shows it.
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from packer.languages import language_for
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


# --- Python -------------------------------------------------------------------------------------

PY_SOURCE = textwrap.dedent(
    '''
    """Stores things in boxes.

    A second paragraph that the summary leaves out.
    """

    from __future__ import annotations

    import os
    import sys as system
    from . import store
    from .cache import Cache
    from cas.errors import InputError

    MAX_SIZE = 1 << 20
    DEFAULT_NAME: str = "box"
    _PRIVATE_TABLE = {"a": 1}
    lowercase_value = 3


    @dataclass(frozen=True)
    class Box(Base, metaclass=Meta):
        """A box that holds one thing.

        More detail here that is not shown.
        """

        label: str
        size: int = 0
        LIMIT = 10

        def open(self, force: bool = False, *, timeout: float | None = None) -> bytes:
            """Open the box and return what it holds."""
            BODY_MARKER_METHOD = 1
            def nested_helper():
                return 2
            return BODY_MARKER_METHOD

        @property
        def empty(self) -> bool:
            return False

        class Inner:
            def deep(self, x, /, y, *args, **kwargs): ...


    async def fetch(url: str, retries: int = 3, *rest: str, **options: object) -> dict[str, int]:
        """Fetch a url.

        Not this line.
        """
        BODY_MARKER_FUNCTION = await get(url)
        return BODY_MARKER_FUNCTION


    def long_default(x=["a very long default value that goes on and on and on"]):
        pass


    class Color(Enum):
        RED = 1
        GREEN = 2
    '''
)


def test_python_signatures_docstrings_and_no_bodies() -> None:
    summary = summarize("pkg/boxes.py", PY_SOURCE)
    lines = lines_of(summary)
    assert lines[0] == f"# summary (python, {PY_SOURCE.count(chr(10))} lines)"
    assert lines[1] == '"""Stores things in boxes."""'
    assert lines[2] == "imports: os, sys, .store, .cache, cas.errors"
    expected = [
        "MAX_SIZE = 1 << 20",
        "DEFAULT_NAME: str = 'box'",
        "@dataclass(frozen=True)",
        "class Box(Base, metaclass=Meta):",
        '    """A box that holds one thing."""',
        "    label: str",
        "    size: int = 0",
        "    LIMIT = 10",
        "    def open(self, force: bool = False, *, timeout: float | None = None) -> bytes:",
        '        """Open the box and return what it holds."""',
        "    @property",
        "    def empty(self) -> bool: ...",
        "    class Inner:",
        "        def deep(self, x, /, y, *args, **kwargs): ...",
        "async def fetch(url: str, retries: int = 3, *rest: str, **options: object)"
        " -> dict[str, int]:",
        '    """Fetch a url."""',
        "def long_default(x=...): ...",
        "class Color(Enum):",
        "    RED = 1",
        "    GREEN = 2",
    ]
    for line in expected:
        assert line in lines
    for absent in (
        "BODY_MARKER",
        "nested_helper",
        "second paragraph",
        "Not this line",
        "More detail",
        "_PRIVATE_TABLE",
        "lowercase_value",
        "__future__",
    ):
        assert absent not in summary


def test_python_without_declarations_falls_back_to_first_lines() -> None:
    text = "import x\n\nregister('a')\nregister('b')\n"
    assert lines_of(summarize("reg.py", text))[1:] == ["import x", "register('a')", "register('b')"]


@pytest.mark.parametrize(
    "text",
    ["def broken(:\n    BODY_MARKER_X = 1\n", "class A\n  pass\n", "x = (\n", "a\x00b = 1\n"],
)
def test_python_that_does_not_parse_falls_back(text: str) -> None:
    lines = lines_of(summarize("bad.py", text))
    assert lines[0].startswith("# summary (python, ")
    assert lines[1] == text.split("\n", maxsplit=1)[0]


def test_fallback_shows_twenty_lines_and_counts_the_rest() -> None:
    text = "".join(f"line {i}\n\n" for i in range(50))
    lines = lines_of(summarize("notes.txt", text))
    assert lines[0] == "# summary (text, 100 lines)"
    assert lines[1:21] == [f"line {i}" for i in range(20)]
    assert lines[21] == "... (30 more lines)"
    assert len(lines) == 22


def test_fallback_clips_long_lines() -> None:
    lines = lines_of(summarize("x.txt", "y" * 1000 + "\n"))
    assert len(lines[1]) <= 160
    assert lines[1].endswith("...")


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


def test_markdown_outline_and_first_sentences() -> None:
    lines = lines_of(summarize("README.md", MD_SOURCE))
    assert lines[1:] == [
        "# cas",
        "  A content-addressed store, e.g. for packs.",
        "## Install",
        "  Run the installer first!",
        "## Usage",
        "  Call `cas pack` to build.",
        "### Closing hashes",
    ]


def test_markdown_long_sentence_is_clipped() -> None:
    text = "# T\n\n" + "word " * 200 + "\n"
    lines = lines_of(summarize("a.md", text))
    assert len(lines[2]) <= 202
    assert lines[2].endswith("...")


def test_markdown_without_headings_falls_back() -> None:
    lines = lines_of(summarize("notes.md", "Just prose. More prose.\nAnd more.\n"))
    assert lines[1:] == ["Just prose. More prose.", "And more."]


# --- tree-sitter languages ----------------------------------------------------------------------

TS_SOURCE = """\
import { x } from "./x";

/** Adds two numbers. */
export function add(a: number, b = 2): number {
  return BODY_MARKER_ADD;
}

export class Store<T> extends Base implements Closeable {
  private count: number = 0;
  constructor(public root: string) { super(); BODY_MARKER_CTOR(); }
  async get(key: string): Promise<T | undefined> { return BODY_MARKER_GET; }
}

export interface Shape {
  area(): number;
  name: string;
}

export type Id = string | number;
export const LIMIT = 10;
const helper = (s: string): string => { return BODY_MARKER_ARROW; };
const notShown = computeSomething();
"""


def test_typescript() -> None:
    summary = summarize("src/store.ts", TS_SOURCE)
    lines = lines_of(summary)
    assert lines[1:] == [
        "// Adds two numbers.",
        "export function add(a: number, b = 2): number",
        "export class Store<T> extends Base implements Closeable",
        "  private count: number = 0",
        "  constructor(public root: string)",
        "  async get(key: string): Promise<T | undefined>",
        "export interface Shape",
        "  area(): number",
        "  name: string",
        "export type Id = string | number",
        "export const LIMIT = 10",
        "const helper = (s: string): string =>",
    ]
    assert "BODY_MARKER" not in summary


def test_typescript_default_exports_and_tsx() -> None:
    source = (
        "export default function (a: number) { BODY_MARKER(); }\n"
        "export default async (req) => { BODY_MARKER() }\n"
        "export { add as plus };\n"
    )
    summary = summarize("d.ts", source)
    assert lines_of(summary)[1:] == [
        "export default function (a: number)",
        "export default async (req) =>",
        "export { add as plus }",
    ]
    tsx = (
        "type Props = { name: string };\n"
        "/** Greets. */\n"
        "export const Hello = ({ name }: Props) => { return <div>BODY_MARKER {name}</div>; };\n"
    )
    summary = summarize("App.tsx", tsx)
    assert lines_of(summary)[1:] == [
        "type Props = { name: string }",
        "// Greets.",
        "export const Hello = ({ name }: Props) =>",
    ]
    assert "BODY_MARKER" not in summary


JS_SOURCE = """\
'use strict'
const fs = require('fs')

// Reads a config file.
function readConfig (path, { strict = false } = {}) {
  return BODY_MARKER_READ
}

class Loader extends Base {
  constructor (opts) { super(opts); BODY_MARKER_CTOR() }
  static create (name) { return BODY_MARKER_CREATE }
}

module.exports = class Agent extends Loader {
  fetch (url) { return BODY_MARKER_FETCH }
}

exports.helper = function (a, b) { BODY_MARKER_HELPER() }
"""


def test_javascript() -> None:
    summary = summarize("lib/loader.js", JS_SOURCE)
    assert lines_of(summary)[1:] == [
        "// Reads a config file.",
        "function readConfig (path, { strict = false } = {})",
        "class Loader extends Base",
        "  constructor (opts)",
        "  static create (name)",
        "module.exports = class Agent extends Loader",
        "  fetch (url)",
        "exports.helper = function (a, b)",
    ]
    assert "BODY_MARKER" not in summary


GO_SOURCE = """\
package store

import "fmt"

// Open opens a store at path.
// It creates the directory.
func Open(path string, mode int) (*Store, error) {
	return nil, BODY_MARKER_OPEN
}

type Store struct {
	Path string
	size int
}

type Reader interface {
	Read(key string) ([]byte, error)
}

func (s *Store) Close() error { return BODY_MARKER_CLOSE }

const Version = 3
const internal = 4
"""


def test_go() -> None:
    summary = summarize("store/store.go", GO_SOURCE)
    assert lines_of(summary)[1:] == [
        "// Open opens a store at path.",
        "func Open(path string, mode int) (*Store, error)",
        "type Store struct",
        "  Path string",
        "  size int",
        "type Reader interface",
        "  Read(key string) ([]byte, error)",
        "func (s *Store) Close() error",
        "const Version = 3",
    ]
    assert "BODY_MARKER" not in summary


RUST_SOURCE = """\
use std::io;

/// A stored blob.
#[derive(Debug, Clone)]
pub struct Blob {
    pub digest: [u8; 32],
    size: u64,
}

pub trait Storage {
    fn get(&self, key: &[u8]) -> io::Result<Vec<u8>>;
}

impl Storage for Blob {
    fn get(&self, key: &[u8]) -> io::Result<Vec<u8>> {
        BODY_MARKER_GET
    }
}

pub enum Codec { Raw, Zstd(i32) }

pub fn put<T: AsRef<[u8]>>(data: T) -> Blob where T: Send { BODY_MARKER_PUT }
"""


def test_rust() -> None:
    summary = summarize("src/blob.rs", RUST_SOURCE)
    assert lines_of(summary)[1:] == [
        "// A stored blob.",
        "pub struct Blob",
        "  pub digest: [u8; 32]",
        "  size: u64",
        "pub trait Storage",
        "  fn get(&self, key: &[u8]) -> io::Result<Vec<u8>>",
        "impl Storage for Blob",
        "  fn get(&self, key: &[u8]) -> io::Result<Vec<u8>>",
        "pub enum Codec { Raw, Zstd(i32) }",
        "pub fn put<T: AsRef<[u8]>>(data: T) -> Blob where T: Send",
    ]
    assert "BODY_MARKER" not in summary


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "A.java",
            "/** A box. */\npublic class A extends B {\n  private int n = 1;\n"
            "  public int get(String k) throws IOException { return BODY_MARKER; }\n}\n",
            [
                "// A box.",
                "public class A extends B",
                "  private int n = 1",
                "  public int get(String k) throws IOException",
            ],
        ),
        (
            "x.c",
            "#ifndef X_H\n#define X_H\n/* Adds. */\nint add(int a, int b);\n"
            "struct pt { int x; int y; };\nstatic int f(void) { return BODY_MARKER; }\n#endif\n",
            [
                "// Adds.",
                "int add(int a, int b)",
                "struct pt",
                "  int x",
                "  int y",
                "static int f(void)",
            ],
        ),
        (
            "x.h",
            "namespace ns {\nclass Box {\npublic:\n"
            "  int get() const { return BODY_MARKER; }\n};\n}\n",
            ["namespace ns", "  class Box", "    public:", "    int get() const"],
        ),
        (
            "x.rb",
            "# A module.\nmodule M\n  class Foo < Bar\n    def run(a, b = 1)\n"
            "      BODY_MARKER\n    end\n  end\nend\n",
            ["# A module.", "module M", "  class Foo < Bar", "    def run(a, b = 1)"],
        ),
        (
            "x.cs",
            "namespace N {\n  public class Foo {\n"
            "    public int Get(int id) { return BODY_MARKER; }\n  }\n}\n",
            ["namespace N", "  public class Foo", "    public int Get(int id)"],
        ),
        (
            "x.php",
            "<?php\nclass Foo extends Bar {\n  public function get(int $id): string "
            "{ return BODY_MARKER; }\n}\nfunction top($a) { BODY_MARKER; }\n",
            ["class Foo extends Bar", "  public function get(int $id): string", "function top($a)"],
        ),
        (
            "x.kt",
            "class Foo(val a: Int) : Bar() {\n"
            "  fun get(id: Int): String { return BODY_MARKER }\n}\n"
            "fun top(a: Int): Int = BODY_MARKER\n",
            ["class Foo(val a: Int) : Bar()", "  fun get(id: Int): String", "fun top(a: Int): Int"],
        ),
    ],
    ids=["java", "c", "cpp-in-dot-h", "ruby", "csharp", "php", "kotlin"],
)
def test_other_grammars(path: str, source: str, expected: list[str]) -> None:
    summary = summarize(path, source)
    assert lines_of(summary)[1:] == expected
    assert "BODY_MARKER" not in summary


def test_a_dot_h_with_cpp_is_labelled_cpp() -> None:
    assert summarize("x.h", "namespace a { int f(); }\n").startswith("# summary (cpp, 1 line)")


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("broken.ts", "}}}} ((( export ]] function ??? class {{ <<< >>> " * 30),
        ("broken.go", ")))) func ((( type }}}} struct {{{ " * 30),
        ("broken.rs", "fn ]] impl {{ <<< pub )))) " * 30),
        ("script.js", "console.log('hi')\nrun(1, 2)\n"),
    ],
)
def test_unparseable_or_declaration_free_sources_fall_back(path: str, source: str) -> None:
    lines = lines_of(summarize(path, source))
    assert lines[1] == _clipped(source.split("\n", maxsplit=1)[0])


def _clipped(line: str) -> str:
    return line if len(line) <= 160 else line[:157].rstrip() + "..."


# --- the output contract ------------------------------------------------------------------------


def test_max_lines_truncates_with_a_marker() -> None:
    text = "".join(f"def f{i}(x: int) -> int: ...\n" for i in range(100))
    lines = lines_of(summarize("many.py", text, max_lines=10))
    assert len(lines) == 10
    assert lines[-1] == "... (truncated, 92 more lines)"
    assert lines[-2] == "def f7(x: int) -> int: ..."


def test_big_file_summary_is_much_smaller() -> None:
    body = "\n".join(f"    value_{j} = compute({j}) + {j} * 2" for j in range(40))
    text = "".join(f"def func_{i}(a: int, b: str = 'x') -> int:\n{body}\n\n" for i in range(80))
    summary = summarize("big.py", text, max_lines=500)
    assert len(text) > 100_000
    assert len(summary) * 20 < len(text)
    assert "def func_79(a: int, b: str = 'x') -> int: ..." in summary


def test_summary_depends_on_path_only_through_its_language() -> None:
    # The build caches summaries by content digest and language.
    assert summarize("a/one.go", GO_SOURCE) == summarize("b/two.go", GO_SOURCE)
    assert summarize("x.md", MD_SOURCE) == summarize("README", MD_SOURCE)


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
]


@given(path=st.sampled_from(LANG_PATHS), text=st.text(max_size=400))
@example(path="a.py", text="def f(:")
@example(path="a.md", text="```\n# h")
@example(path="a.ts", text="export class A { m() {")
@example(path="a.py", text="x = " + "(" * 300 + ")" * 300)
@example(path="a.go", text="\x00\ud800func F() {}")
def test_never_raises_is_deterministic_and_ends_with_one_newline(path: str, text: str) -> None:
    first = summarize(path, text)
    assert first == summarize(path, text)
    lines = lines_of(first)
    assert lines[0].startswith("# summary (")
    assert len(lines) <= 200
    assert first.count("\n") == len(first.splitlines())
    first.encode("utf-8")


@given(
    path=st.sampled_from(LANG_PATHS),
    text=st.text(alphabet="abc(){}[];:=,.\n \t#/*\"'<>`-|", max_size=600),
    max_lines=st.integers(min_value=-3, max_value=30),
)
def test_code_like_noise_respects_max_lines(path: str, text: str, max_lines: int) -> None:
    lines = lines_of(summarize(path, text, max_lines=max_lines))
    assert len(lines) <= max(max_lines, 2)
