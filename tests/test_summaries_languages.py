"""Outlines of the tree-sitter languages: one query per language, one engine, the language's own
rule for what is exported. Each language is tested on a planted source (every body holds a
BODY_MARKER a leaked body would show) and on real code: ky (TypeScript, JavaScript), cobra (Go),
anyhow (Rust), jpype (Java, C++ headers named .h), zstd (C), pythonnet (C#), rack (Ruby).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from realcode import read

from packer.outline import Outline, render
from packer.summaries import outline


def shown(o: Outline) -> list[str]:
    return render(o).splitlines()[1:]


def table(o: Outline) -> list[tuple[str, str, str, bool]]:
    """(parent name, name, kind, exported) of every symbol."""
    return [
        (o.symbols[s.parent].name if s.parent >= 0 else "", s.name, s.kind, s.exported)
        for s in o.symbols
    ]


def by_name(o: Outline, name: str, parent: str | None = None) -> int:
    for i, s in enumerate(o.symbols):
        owner = o.symbols[s.parent].name if s.parent >= 0 else ""
        if s.name == name and (parent is None or owner == parent):
            return i
    raise AssertionError(f"no symbol {name!r} under {parent!r}")


def no_body(o: Outline) -> None:
    text = render(o)
    assert "BODY_MARKER" not in text


# --- TypeScript and JavaScript ------------------------------------------------------------------

TS_SOURCE = """\
/* eslint-disable @typescript-eslint/no-explicit-any */
// Stores for things, kept in memory.

import { x } from "./x";
export { a as b } from "./c";

/** Adds two numbers. Then returns. */
export function add(a: number, b = 2): number {
  return BODY_MARKER_ADD;
}

export class Store<T> extends Base implements Closeable {
  private count: number = 0;
  #secret = 1;
  handler = (e: Event) => { BODY_MARKER_FIELD(); };
  constructor(public root: string) { super(); BODY_MARKER_CTOR(); }
  async get(key: string): Promise<T | undefined> { return BODY_MARKER_GET; }
}

export interface Shape {
  area(): number;
  /** The name. */
  name: string;
}

export type Options = {
  /** Retries. More. */
  retry?: number;
  hooks: { before: () => void };
};

export type Id = string | number;
export const LIMIT = 10;
const helper = (s: string): string => { return BODY_MARKER_ARROW; };
const internal = compute();
export default function (a: number) { BODY_MARKER(); }
"""


def test_typescript() -> None:
    o = outline("src/store.ts", TS_SOURCE)
    no_body(o)
    # The purpose is the first comment that is neither a directive nor a definition's doc.
    assert o.head == ("// Stores for things, kept in memory.", 'export { a as b } from "./c";')
    assert shown(o)[2:] == [
        "imports: ./x",
        "export function add(a: number, b = 2): number { ... }",
        "  // Adds two numbers.",
        "export class Store<T> extends Base implements Closeable {",
        "  private count: number = 0;",
        "  #secret = 1;",
        "  handler = (e: Event) =>",
        "  constructor(public root: string) { ... }",
        "  async get(key: string): Promise<T | undefined> { ... }",
        "export interface Shape {",
        "  area(): number;",
        "  name: string;",
        "    // The name.",
        "export type Options = {",
        "  retry?: number;",
        "    // Retries.",
        "  hooks: { before: () => void };",
        "export type Id = string | number;",
        "export const LIMIT = 10;",
        "const helper = (s: string): string => { ... }",
        "const internal = compute();",
        "export default function (a: number) { ... }",
    ]
    assert table(o)[1:] == [
        ("", "add", "function", True),
        ("", "Store", "class", True),
        ("Store", "count", "field", False),
        ("Store", "#secret", "field", False),
        ("Store", "handler", "field", True),
        ("Store", "constructor", "method", True),
        ("Store", "get", "method", True),
        ("", "Shape", "class", True),
        ("Shape", "area", "method", True),
        ("Shape", "name", "field", True),
        ("", "Options", "type", True),
        ("Options", "retry", "field", True),
        ("Options", "hooks", "field", True),
        ("", "Id", "type", True),
        ("", "LIMIT", "constant", True),
        ("", "helper", "function", False),
        ("", "internal", "constant", False),
        ("", "default", "function", True),
    ]


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
module.exports.Loader = Loader
"""


def test_javascript_and_commonjs_exports() -> None:
    o = outline("lib/loader.js", JS_SOURCE)
    no_body(o)
    assert shown(o) == [
        "imports: fs",
        "function readConfig (path, { strict = false } = {}) { ... }",
        "  // Reads a config file.",
        "class Loader extends Base {",
        "  constructor (opts) { ... }",
        "  static create (name) { ... }",
        "module.exports = class Agent extends Loader {",
        "  fetch (url) { ... }",
        "exports.helper = function (a, b) { ... }",
    ]
    exported = {s.name: s.exported for s in o.symbols}
    assert exported["readConfig"] is False
    assert exported["Agent"] is True
    assert exported["helper"] is True


def test_tsx_component() -> None:
    tsx = (
        "type Props = { name: string };\n"
        "/** Greets. */\n"
        "export const Hello = ({ name }: Props) => { return <div>BODY_MARKER {name}</div>; };\n"
    )
    o = outline("App.tsx", tsx)
    no_body(o)
    assert shown(o) == [
        "type Props = {",
        "  name: string",
        "export const Hello = ({ name }: Props) => { ... }",
        "  // Greets.",
    ]


def test_ky_options_keep_every_field_of_the_object_type() -> None:
    # The old summary collapsed `KyOptions = {...}` to one 200-character line.
    o = outline("distribution/types/options.d.ts", read("ky", "distribution/types/options.d.ts"))
    ky = by_name(o, "KyOptions")
    assert o.symbols[ky].lines == ("export type KyOptions = {", "  // Custom Ky options")
    fields = {s.name: s for s in o.symbols if s.parent == ky}
    assert {
        "json",
        "parseJson",
        "searchParams",
        "retry",
        "timeout",
        "hooks",
        "throwHttpErrors",
        "onDownloadProgress",
        "fetch",
    } <= set(fields)
    assert fields["json"].lines == ("  json?: unknown;", "    // Shortcut for sending JSON.")
    assert fields["retry"].lines[0] == "  retry?: RetryOptions | number;"
    assert fields["timeout"].lines[0] == "  timeout?: number | false;"
    # the default its doc states (`@default 10000`) comes with its first sentence
    assert fields["timeout"].lines[1].startswith("    // Per-attempt timeout in milliseconds")
    assert fields["timeout"].lines[1].endswith(". @default 10000")
    assert all(s.kind == "field" and s.exported for s in fields.values())
    options = by_name(o, "Options")
    assert o.symbols[options].lines[0].startswith("export interface Options extends KyOptions")


def test_ky_index_reexports_head_the_outline() -> None:
    o = outline("distribution/index.d.ts", read("ky", "distribution/index.d.ts"))
    assert "export { HTTPError } from './errors/HTTPError.js';" in o.head
    assert any(
        line.startswith("export type { Input, Options, NormalizedOptions") for line in o.head
    )
    assert table(o)[-1] == ("", "ky", "constant", True)  # `declare const ky` + `export default ky`


def test_ky_javascript_class() -> None:
    o = outline("distribution/core/Ky.js", read("ky", "distribution/core/Ky.js"))
    no_body(o)
    ky = by_name(o, "Ky", "")
    assert o.symbols[ky].lines[0] == "export class Ky {"
    methods = {s.name for s in o.symbols if s.parent == ky and s.kind == "method"}
    assert {"create", "constructor"} <= methods


# --- Go -----------------------------------------------------------------------------------------

GO_SOURCE = """\
// Copyright 2024 The Authors. Licensed under the MIT license.

// Package store keeps blobs.
package store

import (
	"fmt"
	flag "github.com/spf13/pflag"
)

// Open opens a store at path.
// It creates the directory.
func Open(path string, mode int) (*Store, error) {
	return nil, BODY_MARKER_OPEN
}

func helper() { BODY_MARKER_HELPER() }

type Store struct {
	cache map[string]int
	// Path is where it lives.
	Path string
	*Embedded
}

type Reader interface {
	Read(key string) ([]byte, error)
}

func (s *Store) Close() error { return BODY_MARKER_CLOSE }
func (h *hidden) Exported() {}

const (
	Version = 3
	internal = 4
)
var Default = Open
"""


def test_go_exported_first_unexported_fields_last() -> None:
    o = outline("store/store.go", GO_SOURCE)
    no_body(o)
    assert o.head == ("// Package store keeps blobs.",)
    assert shown(o)[1:] == [
        "imports: fmt, github.com/spf13/pflag",
        "type Store struct {",
        "  Path string",
        "    // Path is where it lives.",
        "  *Embedded",
        # godoc's order: a constructor and the methods under their type
        "func Open(path string, mode int) (*Store, error) { ... }",
        "  // Open opens a store at path.",
        "func (s *Store) Close() error { ... }",
        "  cache map[string]int",
        "type Reader interface {",
        "  Read(key string) ([]byte, error)",
        "const Version = 3",
        "var Default = Open",
        "func helper() { ... }",
        "func (h *hidden) Exported() { ... }",
        "const internal = 4",
    ]
    parents = {s.name: o.symbols[s.parent].name for s in o.symbols if s.parent >= 0}
    assert parents == {
        "Path": "Store",
        "Embedded": "Store",
        "Open": "Store",
        "Close": "Store",
        "cache": "Store",
        "Read": "Reader",
    }  # `hidden` is not declared here: its method stays at the top
    exported = {s.name: s.exported for s in o.symbols}
    assert exported["Exported"] is False  # a method of an unexported type
    assert exported["cache"] is False
    assert exported["Embedded"] is True


def test_cobra_command_keeps_execute_and_add_command() -> None:
    o = outline("command.go", read("cobra", "command.go"))
    no_body(o)
    assert o.head[0].startswith("// Package cobra is a commander providing a simple interface")
    names = [s.name for s in o.symbols]
    for name in ("Execute", "ExecuteC", "AddCommand", "ExecuteContext", "Flags"):
        i = by_name(o, name)
        assert o.symbols[i].exported
    execute = o.symbols[by_name(o, "Execute")]
    assert execute.lines == (
        "func (c *Command) Execute() error { ... }",
        "  // Execute uses the args (os.Args[1:] by default) and run through the command tree"
        " finding appropriate matches for commands and then corresponding flags.",
    )
    add = o.symbols[by_name(o, "AddCommand")]
    assert add.lines[0] == "func (c *Command) AddCommand(cmds ...*Command) { ... }"
    # Exported declarations first at top level; within Command, exported fields first.
    top = [s for s in o.symbols if s.parent < 0 and s.kind != "import"]
    first_private = next(i for i, s in enumerate(top) if not s.exported)
    assert all(not s.exported for s in top[first_private:])
    command = by_name(o, "Command", "")
    fields = [s for s in o.symbols if s.parent == command]
    first_field = next(i for i, s in enumerate(fields) if not s.exported)
    assert fields[0].name == "Use"
    assert all(not s.exported for s in fields[first_field:])
    assert len(fields) - first_field >= 20  # the unexported fields, all after the exported ones
    assert "getOut" in names and not o.symbols[by_name(o, "getOut")].exported


# --- Rust ---------------------------------------------------------------------------------------

RUST_SOURCE = """\
//! Blobs and their storage.
use std::io;
pub use crate::codec::{Codec, Level};

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

impl Blob {
    pub fn new() -> Self { BODY_MARKER_NEW }
    fn secret(&self) {}
}

pub enum Kind { Raw, Zstd(i32) }

pub fn put<T: AsRef<[u8]>>(data: T) -> Blob where T: Send { BODY_MARKER_PUT }
pub(crate) fn internal() {}
pub const MAX: usize = 10;

/// Fails.
#[macro_export]
macro_rules! bail {
    ($msg:literal) => { BODY_MARKER_MACRO };
    ($err:expr) => { BODY_MARKER_MACRO };
}
macro_rules! private_macro { () => {} }
"""


def test_rust() -> None:
    o = outline("src/blob.rs", RUST_SOURCE)
    no_body(o)
    assert o.head == ("// Blobs and their storage.", "pub use crate::codec::{Codec, Level};")
    assert shown(o)[2:] == [
        "imports: std::io",  # `pub use` is in the head, not again here
        "pub struct Blob {",
        "  // A stored blob.",
        "  pub digest: [u8; 32],",
        "  size: u64,",
        "pub trait Storage {",
        "  fn get(&self, key: &[u8]) -> io::Result<Vec<u8>>;",
        "impl Storage for Blob {",
        "  fn get(&self, key: &[u8]) -> io::Result<Vec<u8>> { ... }",
        "impl Blob {",
        "  pub fn new() -> Self { ... }",
        "  fn secret(&self) { ... }",
        "pub enum Kind {",
        "  Raw,",
        "  Zstd(i32)",
        "pub fn put<T: AsRef<[u8]>>(data: T) -> Blob where T: Send { ... }",
        "pub(crate) fn internal() { ... }",
        "pub const MAX: usize = 10;",
        "macro_rules! bail { ($msg:literal) | ($err:expr) }",
        "  // Fails.",
        "macro_rules! private_macro { () }",
    ]
    exported = {(p, n): e for p, n, _, e in table(o)}
    assert exported["Blob", "digest"] and not exported["Blob", "size"]
    assert not exported["Blob", "get"]  # a trait implementation's method: the trait's to show
    assert exported["", "Blob"]  # `impl Storage for Blob`: a public type's
    assert exported["Blob", "new"] and not exported["Blob", "secret"]
    assert not exported["", "internal"]
    assert exported["", "bail"] and not exported["", "private_macro"]


def test_anyhow_public_api() -> None:
    lib = outline("src/lib.rs", read("anyhow", "src/lib.rs"))
    assert lib.head[0].startswith("// This library provides `anyhow::Error`, a trait object based")
    assert "pub use crate::kind::BoxedKind" not in lib.head[:1]
    error = lib.symbols[by_name(lib, "Error", "")]
    assert error.lines[0] == "pub struct Error {" and error.exported
    context = by_name(lib, "Context", "")
    assert lib.symbols[context].lines[0].startswith("pub trait Context<T, E>")
    assert {s.name for s in lib.symbols if s.parent == context} == {"context", "with_context"}
    assert lib.symbols[by_name(lib, "Ok")].lines[0] == "pub fn Ok<T>(t: T) -> Result<T> { ... }"
    macros = outline("src/macros.rs", read("anyhow", "src/macros.rs"))
    no_body(macros)
    text = render(macros)
    assert "$crate::" not in text  # a macro's expansion is its body
    for name in ("bail", "ensure", "anyhow"):
        assert macros.symbols[by_name(macros, name)].exported
    assert macros.symbols[by_name(macros, "bail")].lines[1] == "  // Return early with an error."


# --- Java ---------------------------------------------------------------------------------------


def test_java() -> None:
    source = (
        "package x;\nimport java.util.List;\n/** A box. Holds things. */\n"
        "public class A extends B {\n  public static final int N = 1;\n  private int n = 1;\n"
        "  /** Gets it. */\n  @Override\n  public int get(String k) throws IOException "
        "{ return BODY_MARKER; }\n  interface Inner { void run(); }\n  enum E { ONE, TWO }\n}\n"
        "class Hidden {}\n"
    )
    o = outline("A.java", source)
    no_body(o)
    assert shown(o) == [
        "imports: java.util.List",
        "public class A extends B {",
        "  // A box.",
        "  public static final int N = 1;",
        "  private int n = 1;",
        "  public int get(String k) throws IOException { ... }",
        "    // Gets it.",
        "  interface Inner {",
        "    void run();",
        "  enum E {",
        "    ONE,",
        "    TWO",
        "class Hidden { ... }",
    ]
    assert table(o)[1:] == [
        ("", "A", "class", True),
        ("A", "N", "constant", True),
        ("A", "n", "field", False),
        ("A", "get", "method", True),
        ("A", "Inner", "class", False),
        ("Inner", "run", "method", False),
        ("A", "E", "type", False),
        ("E", "ONE", "field", False),
        ("E", "TWO", "field", False),
        ("", "Hidden", "class", False),
    ]


def test_jpype_java_context() -> None:
    o = outline(
        "native/java/org/jpype/JPypeContext.java",
        read("jpype", "native/java/org/jpype/JPypeContext.java"),
    )
    no_body(o)
    context = by_name(o, "JPypeContext", "")
    assert o.symbols[context].lines == ("public class JPypeContext {", "  // Context for JPype.")
    assert o.symbols[by_name(o, "VERSION")].lines == ('  public final String VERSION = "1.5.2";',)
    assert o.symbols[by_name(o, "getInstance")].exported
    shutdown = o.symbols[by_name(o, "shutdown")]
    assert not shutdown.exported
    assert shutdown.lines[1] == "    // Shutdown and remove all Python resources."


# --- C and C++ ----------------------------------------------------------------------------------


def test_c() -> None:
    source = (
        "#ifndef X_H\n#define X_H\n#include <stddef.h>\n/* Adds. */\nint add(int a, int b);\n"
        "struct pt { int x; int *y; };\ntypedef struct { int a; } pair_t;\n"
        "static int f(void) { return BODY_MARKER; }\n#define LIMIT 10\nchar *name(void);\n#endif\n"
    )
    o = outline("x.c", source)
    no_body(o)
    assert shown(o) == [
        "imports: stddef.h",
        "int add(int a, int b);",
        "  // Adds.",
        "struct pt {",
        "  int x;",
        "  int *y;",
        "typedef struct {...} pair_t",
        "  int a;",
        "static int f(void) { ... }",
        "#define LIMIT 10",
        "char *name(void);",
    ]
    assert not o.symbols[by_name(o, "f")].exported
    assert o.symbols[by_name(o, "add")].exported


def test_zstd_header_despite_its_export_macros() -> None:
    o = outline("zstd.h", read("zstd", "zstd.h"))
    no_body(o)
    compress = o.symbols[by_name(o, "ZSTD_compress")]
    assert compress.lines[0] == (
        "size_t ZSTD_compress( void* dst, size_t dstCapacity, const void* src, size_t srcSize,"
        " int compressionLevel);"
    )
    assert compress.exported and compress.kind == "function"
    names = {s.name for s in o.symbols}
    assert {
        "ZSTD_decompress",
        "ZSTD_createCCtx",
        "ZSTD_compressStream2",
        "ZSTD_CCtx_setParameter",
        "ZSTD_cParameter",
        "ZSTD_inBuffer",
        "ZSTD_VERSION_MAJOR",
    } <= names
    decompress = o.symbols[by_name(o, "ZSTD_decompress")]
    assert decompress.lines[1].startswith("  // ZSTD_decompress() : `compressedSize` : must be")
    assert o.symbols[by_name(o, "ZSTD_VERSION_MAJOR")].lines[0] == "#define ZSTD_VERSION_MAJOR 1"


def test_cpp_in_a_dot_h_file() -> None:
    source = (
        "namespace ns {\nclass JP_API Box : public Base {\npublic:\n"
        "  Box(int a);\n  int get() const { return BODY_MARKER; }\nprivate:\n  int x;\n};\n"
        "namespace detail { int helper(); }\n}\n"
    )
    o = outline("x.h", source)
    no_body(o)
    assert o.lang == "cpp"
    assert shown(o) == [
        "namespace ns {",
        "  class Box : public Base {",
        "    Box(int a);",
        "    int get() const { ... }",
        "    int x;",
        "  namespace detail {",
        "    int helper();",
    ]
    assert table(o) == [
        ("", "ns", "class", True),
        ("ns", "Box", "class", True),
        ("Box", "Box", "method", True),
        ("Box", "get", "method", True),
        ("Box", "x", "field", False),
        ("ns", "detail", "class", False),
        ("detail", "helper", "function", False),
    ]


def test_jpype_cpp_header() -> None:
    o = outline(
        "native/common/include/jp_class.h", read("jpype", "native/common/include/jp_class.h")
    )
    no_body(o)
    assert o.lang == "cpp"
    cls = by_name(o, "JPClass", "")
    assert o.symbols[cls].lines[0] == "class JPClass : public JPResource {"
    members = {s.name: s for s in o.symbols if s.parent == cls}
    assert members["getCanonicalName"].lines[0] == "  string getCanonicalName() const { ... }"
    assert members["getCanonicalName"].exported
    assert not members["m_Context"].exported  # protected data
    assert members["findJavaConversion"].lines[1] == (
        "    // Determine if a Python object will convert to this java type."
    )


# --- C# -----------------------------------------------------------------------------------------


def test_csharp() -> None:
    source = (
        "using System;\nnamespace N.M {\n  /// <summary>A foo.</summary>\n"
        "  public class Foo<T> : Bar where T : class {\n    public const int X = 1;\n"
        "    private int y;\n    public int Prop { get; set; }\n"
        "    public int Computed { get { return BODY_MARKER; } }\n"
        "    public int Get(int id) { return BODY_MARKER; }\n  }\n"
        "  public interface IFoo { void Run(); }\n  class Internal {}\n}\n"
    )
    o = outline("x.cs", source)
    no_body(o)
    assert shown(o) == [
        "imports: System",
        "namespace N.M {",
        "  public class Foo<T> : Bar where T : class {",
        "    // A foo.",
        "    public const int X = 1;",
        "    private int y;",
        "    public int Prop { get; set; }",
        "    public int Computed",
        "    public int Get(int id) { ... }",
        "  public interface IFoo {",
        "    void Run();",
        "  class Internal { ... }",
    ]
    exported = {s.name: s.exported for s in o.symbols}
    assert exported == {
        "imports": False,
        "N.M": True,
        "Foo": True,
        "X": True,
        "y": False,
        "Prop": True,
        "Computed": True,
        "Get": True,
        "IFoo": True,
        "Run": True,
        "Internal": False,
    }


def test_pythonnet_engine() -> None:
    o = outline("src/runtime/PythonEngine.cs", read("pythonnet", "src/runtime/PythonEngine.cs"))
    no_body(o)
    engine = by_name(o, "PythonEngine", "Python.Runtime")
    assert o.symbols[engine].lines == (
        "  public class PythonEngine : IDisposable {",
        "    // This class provides the public interface of the Python runtime.",
    )
    assert o.symbols[by_name(o, "DebugGIL")].lines[0] == (
        "    public static bool DebugGIL { get; set; } = false;"
    )
    assert o.symbols[by_name(o, "Initialize")].exported
    assert not o.symbols[by_name(o, "initialized")].exported


# --- Ruby ---------------------------------------------------------------------------------------


def test_ruby() -> None:
    source = (
        "# frozen_string_literal: true\nrequire 'json'\n\n# A module.\nmodule M\n"
        "  VERSION = '1.0'\n  class Foo < Bar\n    attr_reader :a, :b\n"
        "    # Runs it.\n    def run(a, b = 1)\n      BODY_MARKER\n    end\n"
        "    def self.create(x) = new(x)\n    private\n    def hidden; end\n"
        "    public\n    def shown_again; end\n    private def other; end\n  end\nend\n"
    )
    o = outline("x.rb", source)
    no_body(o)
    assert shown(o) == [
        "imports: json",
        "module M",
        "  # A module.",
        "  VERSION = '1.0'",
        "  class Foo < Bar",
        "    attr_reader :a, :b",
        "    def run(a, b = 1)",
        "      # Runs it.",
        "    def self.create(x)",
        "    def hidden",
        "    def shown_again",
        "    private def other",
    ]
    exported = {s.name: s.exported for s in o.symbols}
    assert exported["run"] and exported["create"] and exported["shown_again"]
    assert not exported["hidden"] and not exported["other"]


def test_rack_request() -> None:
    o = outline("lib/rack/request.rb", read("rack", "lib/rack/request.rb"))
    no_body(o)
    helpers = by_name(o, "Helpers", "Request")
    members = {s.name: s for s in o.symbols if s.parent == helpers}
    assert members["GET"].lines == (
        "      def GET",
        "        # Returns the data received in the query string.",
    )
    assert members["GET"].exported and members["values_at"].exported
    assert not members["wrap_ipv6"].exported  # after `private`
    assert not members["AUTHORITY"].exported  # `private_constant :AUTHORITY`
    assert members["DEFAULT_PORTS"].lines[0].startswith("      DEFAULT_PORTS = {")


# --- PHP, Kotlin, Swift; failures ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "x.php",
            "<?php\nclass Foo extends Bar {\n  private $z = 1;\n"
            "  public function get(int $id): string { return BODY_MARKER; }\n}\n"
            "function top($a) { BODY_MARKER; }\n",
            [
                "class Foo extends Bar {",
                "  private $z = 1;",
                "  public function get(int $id): string { ... }",
                "function top($a) { ... }",
            ],
        ),
        (
            "x.kt",
            "class Foo(val a: Int) : Bar() {\n"
            "  fun get(id: Int): String { return BODY_MARKER }\n}\n"
            "fun top(a: Int): Int = BODY_MARKER\n",
            [
                "class Foo(val a: Int) : Bar() {",
                "  fun get(id: Int): String { ... }",
                "fun top(a: Int): Int",
            ],
        ),
        (
            "x.swift",
            "public class Foo {\n  public func get(id: Int) -> String { return BODY_MARKER }\n}\n",
            ["public class Foo {", "  public func get(id: Int) -> String { ... }"],
        ),
    ],
    ids=["php", "kotlin", "swift"],
)
def test_other_grammars(path: str, source: str, expected: list[str]) -> None:
    o = outline(path, source)
    no_body(o)
    assert shown(o) == expected


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("broken.ts", "}}}} ((( export ]] function ??? class {{ <<< >>> " * 30),
        ("broken.go", ")))) func ((( type }}}} struct {{{ " * 30),
        ("broken.rs", "fn ]] impl {{ <<< pub )))) " * 30),
        ("script.js", "console.log('hi')\nrun(1, 2)\n"),
    ],
)
def test_unparseable_or_declaration_free_sources_show_their_first_lines(
    path: str, source: str
) -> None:
    o = outline(path, source)
    assert {s.kind for s in o.symbols} == {"text"}
    first = source.split("\n", maxsplit=1)[0]
    assert o.symbols[0].lines[0] == (first if len(first) <= 160 else first[:157].rstrip() + "...")


def test_outlines_made_in_threads_equal_outlines_made_one_by_one() -> None:
    # Parsers keep state while they parse: each thread has its own.
    files = [
        ("cobra", "command.go"),
        ("anyhow", "src/lib.rs"),
        ("ky", "distribution/types/options.d.ts"),
        ("zstd", "zstd.h"),
        ("rack", "lib/rack/request.rb"),
        ("pythonnet", "src/runtime/PythonEngine.cs"),
    ] * 4
    texts = [(rel, read(name, rel)) for name, rel in files]
    one_by_one = [outline(rel, text) for rel, text in texts]
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(lambda job: outline(*job), texts)) == one_by_one


def test_outlining_leaves_no_cycle_holding_a_parse_tree() -> None:
    """A pack holds Python's cycle collector off (`packer.build`), so what outlining leaves in a
    cycle stays until the pack ends, and a definition's node holds the file's whole parse tree:
    nested definitions (parent and children) and a nested function that called itself (Go's
    `arrange`) kept every Go file's tree alive, and packing gVisor peaked at 287 MiB instead of
    144. Outlining now leaves no garbage for the collector at all."""
    import gc

    sources = [
        ("main.go", GO_SOURCE),
        ("index.ts", TS_SOURCE),
        ("app.js", JS_SOURCE),
        ("lib.rs", RUST_SOURCE),
    ]
    for path, text in sources:
        assert outline(path, text).symbols, path  # the tree-sitter outline, not the fallback
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for path, text in sources * 3:
            outline(path, text)
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_a_typescript_configuration_object_shows_its_defaults() -> None:
    source = """
/** Default options. */
export const defaults = {
	credentials: 'same-origin',
	retry: {limit: 2, methods: ['get', 'put', 'head', 'delete', 'options', 'trace']},
	timeout: 10_000,
	throwHttpErrors: true,
	parseJson: (text: string) => JSON.parse(text),
	...base,
	// a comment between entries
	close() { return undefined; },
};
"""
    (line,) = [
        line
        for line in render(outline("src/options.ts", source)).splitlines()
        if line.startswith("export const defaults")
    ]
    assert line == (
        "export const defaults = {credentials: 'same-origin', timeout: 10_000, "
        "throwHttpErrors: true, parseJson: (text: string) => ..., ...base, close(...), ...}"
    )


def test_rust_trait_plumbing_and_private_types() -> None:
    source = """
pub struct Reader;
struct Access<'a> { r: &'a Reader }

impl<'a> Access<'a> {
    fn new(r: &'a Reader) -> Self { Access { r } }
}

impl<'de, 'a> de::SeqAccess<'de> for Access<'a> {
    type Error = Error;
    fn next_element_seed(&mut self) -> Result<()> { Ok(()) }
}

impl fmt::Display for &Reader {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { Ok(()) }
}

impl Reader {
    pub fn from_str(s: &str) -> Self { Reader }
}

pub fn from_str(s: &str) -> Result<Reader> { Ok(Reader) }
"""
    o = outline("src/de.rs", source)
    rows = [(s.lines[0], s.exported) for s in o.symbols if s.kind != "import"]
    assert rows == [
        ("pub struct Reader;", True),
        ("struct Access<'a> {", False),
        ("  r: &'a Reader", False),
        ("impl<'a> Access<'a> {", False),  # a private type's
        ("  fn new(r: &'a Reader) -> Self { ... }", False),
        ("impl<'de, 'a> de::SeqAccess<'de> for Access<'a> {", False),
        ("  type Error = Error;", False),  # a trait implementation's items are plumbing
        ("  fn next_element_seed(&mut self) -> Result<()> { ... }", False),
        ("impl fmt::Display for &Reader {", False),  # a trait's, whatever the type: plumbing
        ("  fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result { ... }", False),
        ("impl Reader {", True),
        ("  pub fn from_str(s: &str) -> Self { ... }", True),
        ("pub fn from_str(s: &str) -> Result<Reader> { ... }", True),
    ]


def test_a_long_doc_comment_gives_its_first_sentence_and_a_run_too_long_none() -> None:
    example = "\n".join(f"/// let x{i} = {i};" for i in range(200))
    source = f"/// Parses the text.\n///\n/// ```\n{example}\n/// ```\npub fn parse() {{}}\n"
    (lines,) = [s.lines for s in outline("src/lib.rs", source).symbols if s.name == "parse"]
    assert lines == ("pub fn parse() { ... }", "  // Parses the text.")
    endless = "\n".join(f"// line {i}." for i in range(1100)) + "\npub fn parse() {}\n"
    (lines,) = [s.lines for s in outline("src/lib.rs", endless).symbols if s.name == "parse"]
    assert lines == ("pub fn parse() { ... }",)  # never a sentence from the middle of a run


def test_ruby_declarative_calls_in_a_class_body_are_definitions() -> None:
    source = """
module App
  class Settings < Base
    set :port, 4567
    has_many :posts, dependent: :destroy
    private :helper
    include Comparable
    register :json, JSON
    def run; end
  end
end
"""
    o = outline("lib/app.rb", source)
    assert [(s.name, s.kind, s.lines[0].strip()) for s in o.symbols if s.kind == "field"] == [
        (":port", "field", "set :port, 4567"),
        (":posts", "field", "has_many :posts, dependent: :destroy"),
        (":json", "field", "register :json, JSON"),
    ]  # `private :helper` and `include` declare nothing


def test_a_doc_comment_s_default_is_shown_as_written_and_only_when_short() -> None:
    from packer.summaries.comments import doc_default

    assert doc_default("/**\n * Retries.\n *\n * @default   3\n */") == "@default 3"
    assert doc_default("/** Wait.\n @defaultValue `false` */") == "@defaultValue `false`"
    assert doc_default("/** Wait, by default 3. */") == ""  # prose, not the tag
    assert doc_default("/** @default " + "x" * 80 + " */") == ""  # too long to be a value
    source = "export interface O {\n  /** Wait.\n   * @default 3\n   */\n  n?: number;\n}\n"
    o = outline("o.ts", source)
    assert o.symbols[1].lines == ("  n?: number;", "    // Wait. @default 3")


GO_TYPES = """package addr

// Address is a network address.
type Address string

// Clock tells the time.
type Clock interface {
	// Now returns the current time.
	Now() int64
}

// String returns the address as text.
func (a Address) String() string { return string(a) }

// Parse reads an address.
func Parse(s string) (Address, error) { return Address(s), nil }

// Show prints an address.
func Show(a *Address) error { return nil }
"""


def test_go_methods_under_a_type_written_without_members() -> None:
    """A type with no members of its own shows whole, whatever is listed under it; an
    interface's line ends at its bracket, never with its first member's doc comment."""
    o = outline("addr/addr.go", GO_TYPES)
    assert shown(o) == [
        "type Address string",
        "  // Address is a network address.",
        "func (a Address) String() string { ... }",
        "  // String returns the address as text.",
        "func Parse(s string) (Address, error) { ... }",
        "  // Parse reads an address.",
        "type Clock interface {",
        "  // Clock tells the time.",
        "  Now() int64",
        "    // Now returns the current time.",
        "func Show(a *Address) error { ... }",  # a parameter's type is no owner
        "  // Show prints an address.",
    ]
