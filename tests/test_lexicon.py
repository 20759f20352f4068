"""The lexicon: what each file defines, exports, uses and imports, fast and the same everywhere.

Every language the lexicon reads is tried on a snippet shaped like real code (declarations with
their modifiers, exports, imports, members, prose), and the main ones on real projects
(tests/realcode.py). Properties: `lex` never raises on any bytes, encodes and decodes to the
same lexicon, and gives the same bytes in a process with another hash seed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lexicon_v1 import lex as lex_v1
from realcode import corpus, read

from cas import words
from packer.lang import LANGUAGES as RECORDS
from packer.lang import language_for, named
from packer.lexicon import (
    _PY_ASSIGN,
    LANGUAGES,
    MAX_REFS,
    PLAIN,
    SPECIFIC,
    STRUCTURED,
    Lexicon,
    _Builder,
    _declarations,
    _python_blocks,
    _python_declarations,
    _python_headers,
    decode,
    encode,
    fingerprint,
    lex,
    lexicon_language,
    shape,
)


def lx(path: str, text: str) -> Lexicon:
    found = lex(path, textwrap.dedent(text).encode())
    assert found is not None
    return found


def test_fingerprint_is_fixed() -> None:
    # CRC-32 and Adler-32 of the name's bytes: pinned, since a change of function changes every
    # cached lexicon and every rating (it would need LEXICON_VERSION bumped).
    assert fingerprint("Command") == (0x4177D348 << 32) | 0x0AAE02C0
    assert fingerprint(b"Command") == fingerprint("Command")
    assert fingerprint("Command") != fingerprint("command")


def test_shapes() -> None:
    assert shape("get_current_context") == SPECIFIC
    assert shape("AddCommand") == SPECIFIC
    assert shape("Command") == STRUCTURED
    assert shape("URL") == STRUCTURED
    assert shape("callbacks") == PLAIN  # long, but a plain word
    assert shape("run") == PLAIN
    assert shape("name") == PLAIN


def test_python() -> None:
    found = lx(
        "pkg/core.py",
        '''
        """A module. It mentions Context and a plain word like name."""
        from __future__ import annotations
        import os, sys as system
        from typing import Set
        from . import types
        from .utils import (echo as say, _hidden)
        from ..base import Base

        LIMIT = 10
        _cache = {}

        class Command(Base):
            """A command; see make_context."""
            exit_code = 2

            def invoke(self, ctx):
                def helper():  # a local helper, not the file's
                    pass
                return say(ctx.name)

            def _private(self):
                pass

        async def run_command(cmd):
            return Command()

        def _internal():
            pass

        if sys.version_info > (3,):
            def conditional():
                pass
        ''',
    )
    assert found.lang == "python"
    assert found.defines == (
        "Command",
        "LIMIT",
        "_cache",
        "_internal",
        "_private",
        "conditional",
        "invoke",
        "run_command",
    )
    assert found.exported == ("Command", "LIMIT", "conditional", "invoke", "run_command")
    assert set(found.minor) == {"LIMIT", "_cache", "_private", "invoke"}
    assert ".utils" in found.imports and "..base" in found.imports and "os" in found.imports
    assert ".types" in found.imports  # `from . import types`: a module of the package
    assert "__future__" not in found.imports
    bound = {(spec, name) for spec, name, _ in found.bound}
    assert {("typing", "Set"), (".utils", "echo"), (".utils", "_hidden")} <= bound
    assert ("..base", "Base") in bound
    # A name bound by an import is not a reference: the rating follows the import instead.
    assert found.uses("Set") == 0 and found.uses("say") == 0
    assert found.uses("Command") == 2  # the class statement is a definition, not a use... twice
    assert found.uses("make_context") == 1  # a name in a docstring still counts
    assert found.uses("name") == 1  # in code
    assert found.uses("plain") == 0  # a plain word of prose does not
    assert found.uses("self") == 0  # keywords never


def test_python_all_and_package_index() -> None:
    listed = lx(
        "pkg/mod.py",
        """
        __all__ = ["public", "Reexported"]
        from .other import Reexported
        def public(): pass
        def also_public(): pass
        """,
    )
    assert listed.exported == ("Reexported", "public")
    assert listed.reexports == ("Reexported",)
    index = lx(
        "pkg/__init__.py",
        """
        from .core import Command as Command, Group
        from .utils import _private
        from .star import *
        """,
    )
    assert index.reexports == ("Command", "Group")
    assert index.star == (".star",)


@pytest.mark.parametrize(
    ("path", "header"),
    [
        (
            "pkg/stack.go",
            b"// Copyright 2018 The Authors.\n//\n"
            b"// Licensed under the Apache License, Version 2.0.\n",
        ),
        ("src/lib.rs", b"/* SPDX-License-Identifier: MIT\n * Version Linux */\n"),
        ("pkg/mod.py", b"#!/usr/bin/env python\n# Copyright (c) Version Linux.\n# License: MIT.\n"),
    ],
)
def test_a_license_header_is_not_prose(path: str, header: bytes) -> None:
    """The words of a license header are the same above every file of a project: `Version`
    (in "Apache License, Version 2.0") counted as a reference would link each file to every
    definition of `Version`. A comment after it, and any comment not naming a license, still
    counts."""
    comment = b"#" if path.endswith(".py") else b"//"
    body = b"\n" + comment + b" Linux is the ABI; see NewStack.\nx = Endpoint\n"
    found = lex(path, header + body)
    assert found is not None
    for word in ("Copyright", "Licensed", "License", "Version", "Authors"):
        assert found.uses(word) == 0, word
    for word in ("Linux", "NewStack", "Endpoint"):
        assert found.uses(word) >= 1, word
    plain = lex(path, comment + b" Version of the Linux ABI\n" + body)
    assert plain is not None and plain.uses("Version") == 1
    assert lex_v1(path, header + body) == found


def test_go() -> None:
    found = lx(
        "cmd/command.go",
        """
        // Package cobra is a library; Execute runs it.
        package cobra

        import (
            "fmt"
            flag "github.com/spf13/pflag"
        )
        import "os"

        type Command struct {
            Use string
        }

        type (
            Group struct{}
            hidden int
        )

        const Version = "1"
        var (
            EnablePrefixMatching = false
            initializers []func()
        )

        func (c *Command) Execute() error {
            return nil
        }

        func AddTemplateFunc(name string) {}

        func helper() {
            var local = 1
        }
        """,
    )
    assert found.package == "cobra"
    assert found.defines == (
        "AddTemplateFunc",
        "Command",
        "EnablePrefixMatching",
        "Execute",
        "Group",
        "Version",
        "helper",
        "hidden",
        "initializers",
    )
    assert found.exported == (
        "AddTemplateFunc",
        "Command",
        "EnablePrefixMatching",
        "Execute",
        "Group",
        "Version",
    )
    assert "Execute" in found.minor and "Version" in found.minor and "Command" not in found.minor
    assert found.imports == ("fmt", "github.com/spf13/pflag", "os")


GO_QUALIFIED = b"""package netstack

import (
	"fmt"
	"unsafe"
	tcpstack "gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gopkg.in/yaml.v3"
	_ "embed"
	"example.com/a+b"
)

func run(p unsafe.Pointer) *tcpstack.Stack {
	s := tcpstack.New(tcpstack.Options{})
	id := tcpip.NICID(1)
	fmt.Println(id, x.tcpip.Hidden, yaml.Marshal, tcpip.lower, utcpip.Other, a+b.Zed)
	return tcpstack.New(tcpstack.Options{})
}
"""


@pytest.mark.parametrize("native", [True, False])
def test_go_names_used_through_their_package_are_bound_to_it(native: bool) -> None:
    """`stack.New` is the stack package's `New`: bound to the import it names (by its own name,
    or by its path's last part), and no reference by name; `unsafe.Pointer` is nothing here."""
    saved = list(words._NATIVE)
    if not native:
        words._NATIVE[:] = [None]
    try:
        found = lex("netstack/run.go", GO_QUALIFIED)
    finally:
        words._NATIVE[:] = saved
    assert found is not None
    assert found.bound == (
        ("fmt", "Println", 1),
        ("gopkg.in/yaml.v3", "Marshal", 1),
        ("gvisor.dev/gvisor/pkg/tcpip", "NICID", 1),
        ("gvisor.dev/gvisor/pkg/tcpip/stack", "New", 2),
        ("gvisor.dev/gvisor/pkg/tcpip/stack", "Options", 2),
        ("gvisor.dev/gvisor/pkg/tcpip/stack", "Stack", 1),
        ("unsafe", "Pointer", 1),
    )
    for name in ("New", "Options", "Stack", "NICID", "Pointer", "Println", "Marshal"):
        assert found.uses(name) == 0, name
    # Not a package's use: a member of something else (`x.tcpip.Hidden`), a lowercase name, a
    # longer word that ends like an import's name.
    assert found.uses("Hidden") == 1 and found.uses("Other") == 1
    assert found.uses("Zed") == 1  # `a+b` is no name an import can be used by


def test_typescript_and_javascript() -> None:
    found = lx(
        "source/index.ts",
        """
        import {Ky, type Options as KyOptions} from './core/Ky.js';
        import defaultThing from 'left-pad';
        export * from './errors/index.js';
        export {HTTPError, TimeoutError as Timeout} from './errors.js';
        export type {Hooks} from './types/hooks.js';

        export function createInstance(defaults?: KyOptions) {
            const local = 1;
            return new Ky(defaults);
        }
        export const ky = createInstance();
        export default ky;
        export interface ResponsePromise { json(): Promise<unknown> }
        export type Input = string | URL;
        const internal = 2;
        class Client {
            private secret() { return 1; }
            public fetchAll(input: Input): void {
            }
        }
        """,
    )
    assert found.defines == (
        "Client",
        "Input",
        "ResponsePromise",
        "createInstance",
        "fetchAll",
        "internal",
        "ky",
        "secret",
    )
    assert found.exported == (
        "HTTPError",
        "Hooks",
        "Input",
        "ResponsePromise",
        "Timeout",
        "createInstance",
        "fetchAll",
        "ky",
    )
    assert found.star == ("./errors/index.js",)
    assert {"./core/Ky.js", "left-pad", "./errors.js", "./types/hooks.js"} <= set(found.imports)
    assert ("./core/Ky.js", "Ky", found.bound[0][2]) in found.bound
    assert any(b[:2] == ("./core/Ky.js", "Options") for b in found.bound)
    js = lx("lib/util.js", "exports.parse = function () {};\nfunction helper() {}\n")
    assert js.defines == ("helper", "parse") and js.exported == ("parse",)


def test_rust() -> None:
    found = lx(
        "src/lib.rs",
        """
        //! The crate; see Error.
        mod backtrace;
        pub mod context;
        pub(crate) mod private;
        pub use crate::context::Context;
        pub use crate::kind::{AdhocKind, TraitKind as Trait};
        use std::fmt::Display;

        pub struct Error { inner: u8 }
        pub(crate) fn crate_only() {}
        pub type Result<T, E = Error> = core::result::Result<T, E>;

        impl Error {
            pub fn msg(text: &str) -> Self { todo!() }
            fn hidden(&self) {}
        }

        #[macro_export]
        macro_rules! anyhow {
            ($msg:literal) => {};
        }
        macro_rules! internal { () => {}; }
        """,
    )
    assert found.defines == (
        "Error",
        "Result",
        "anyhow",
        "backtrace",  # a private module is a (private) definition
        "context",
        "crate_only",
        "hidden",
        "internal",
        "msg",
        "private",
    )
    assert found.exported == (
        "AdhocKind",
        "Context",
        "Error",
        "Result",
        "Trait",
        "anyhow",
        "context",
        "msg",
    )
    assert set(found.minor) == {"hidden", "msg"}
    assert {"mod backtrace", "mod context", "crate::context::Context", "std::fmt::Display"} <= set(
        found.imports
    )
    assert ("std::fmt::Display", "Display") in {b[:2] for b in found.bound}


def test_java_and_csharp() -> None:
    java = lx(
        "src/main/java/org/jpype/Launcher.java",
        """
        package org.jpype;

        import java.util.List;
        import org.jpype.manager.TypeManager;

        public class Launcher {
            private static int count;
            public static void main(String[] args) {
                return;
            }
            private void helper() {
                helper();
            }
            public interface Listener {}
        }
        """,
    )
    assert java.package == "org.jpype"
    assert java.imports == ("java.util.List", "org.jpype.manager.TypeManager")
    assert {"Launcher", "main", "helper", "Listener"} <= set(java.defines)
    assert {"Launcher", "main", "Listener"} <= set(java.exported)
    assert "helper" not in java.exported
    cs = lx(
        "src/Python.Runtime/Runtime.cs",
        """
        using System;
        using Python.Runtime.Native;

        namespace Python.Runtime
        {
            public static class PythonEngine
            {
                public static void Initialize() { }
                internal static void Helper() { }
            }
            internal struct Handle { }
        }
        """,
    )
    assert cs.package == "Python.Runtime"
    assert cs.imports == ("Python.Runtime.Native", "System")
    assert {"PythonEngine", "Initialize", "Helper", "Handle"} <= set(cs.defines)
    assert {"PythonEngine", "Initialize"} <= set(cs.exported)
    assert "Helper" not in cs.exported and "Handle" not in cs.exported


def test_c_and_cpp() -> None:
    header = lx(
        "lib/zstd.h",
        """
        #include <stddef.h>
        #include "zstd_errors.h"
        #define ZSTD_VERSION_MAJOR 1
        typedef struct ZSTD_CCtx_s ZSTD_CCtx;
        typedef struct {
            int level;
        } ZSTD_parameters;
        typedef size_t (*ZSTD_sequenceProducer_F)(void* state);
        struct ZSTD_inBuffer_s {
            const void* src;
        };
        size_t ZSTD_compress(void* dst, size_t dstCapacity);
        static int internal_helper(int x);
        """,
    )
    assert header.imports == ('"zstd_errors.h"', "<stddef.h>")
    assert {
        "ZSTD_VERSION_MAJOR",
        "ZSTD_CCtx",
        "ZSTD_parameters",
        "ZSTD_sequenceProducer_F",
        "ZSTD_inBuffer_s",
        "ZSTD_compress",
        "internal_helper",
    } <= set(header.defines)
    assert "ZSTD_compress" in header.exported and "internal_helper" not in header.exported
    source = lx("lib/zstd.c", "int ZSTD_compress(void* dst) {\n    return 0;\n}\n")
    assert source.defines == ("ZSTD_compress",) and source.exported == ()


def test_ruby() -> None:
    found = lx(
        "lib/rack/builder.rb",
        """
        require 'rack/urlmap'
        require_relative 'utils'

        module Rack
          VERSION = "2.2"
          class Builder
            attr_reader :app, :options

            def self.parse_file(path)
            end

            def call(env)
            end

            private

            def generate_map(default_app, mapping)
            end
          end
        end
        """,
    )
    assert found.imports == ("./utils", "rack/urlmap")
    assert {"Rack", "Builder", "VERSION", "parse_file", "call", "generate_map", "app"} <= set(
        found.defines
    )
    assert {"Rack", "Builder", "VERSION", "parse_file", "call", "app"} <= set(found.exported)
    assert "generate_map" not in found.exported


_OTHERS = [
    (
        "a.kt",
        "package x\nfun run() {}\nprivate fun hide() {}\nclass Widget\n",
        "Widget run",
        "hide",
    ),
    (
        "a.swift",
        "public func run() {}\nfunc hide() {}\npublic struct Widget {}\n",
        "Widget run",
        "hide",
    ),
    (
        "a.scala",
        "object Main {\n  def run(): Unit = {}\n  private def hide() = 1\n}\n",
        "Main run",
        "hide",
    ),
    (
        "a.php",
        "<?php\nclass Widget {\n  public function run() {}\n  private function hide() {}\n}\n",
        "Widget run",
        "hide",
    ),
    ("a.lua", "local function hide() end\nfunction M.run() end\n", "run", "hide"),
    ("a.sh", "build() {\n  echo\n}\nfunction deploy {\n  :\n}\n", "build deploy", ""),
]


@pytest.mark.parametrize(("path", "text", "exported", "hidden"), _OTHERS)
def test_other_languages(path: str, text: str, exported: str, hidden: str) -> None:
    found = lx(path, text)
    assert set(found.defines) == {*exported.split(), *hidden.split()}
    assert set(found.exported) == set(exported.split())


def test_documents_refer_to_code_and_paths_only() -> None:
    found = lx(
        "README.md",
        """
        # Project

        Install it, then call `make_context` or read [the guide](docs/guide.md).
        A plain sentence about a Command in prose is not a reference.

        ```python
        from click import command
        @command()
        def hello(): pass
        ```

        See ``src/click/core.py`` and https://example.com/a/b.py for more.
        """,
    )
    assert found.defines == () and found.exported == ()
    assert found.uses("make_context") == 1
    assert found.uses("hello") == 1
    assert found.uses("click") == 2  # the fence, and the path in a literal
    assert found.uses("Command") == 0  # prose, outside code
    assert found.uses("Install") == 0
    assert "docs/guide.md" in found.imports and "src/click/core.py" in found.imports
    assert not any("example.com" in i for i in found.imports)
    rst = lx("README.rst", "Use ``Session.get`` to fetch.\n\n::\n\n    client = Client()\n")
    assert rst.uses("Session") == 1 and rst.uses("Client") == 1 and rst.uses("fetch") == 0


def test_languages_without_a_lexicon() -> None:
    for path in ("a.toml", "a.json", "a.yaml", "a.css", "a.png", "notes.txt", "Makefile"):
        assert lex(path, b"name = 1\n") is None
    assert lex("README.txt", b"see `Widget`\n") is not None  # a README is a document


def test_references_are_capped_most_frequent_first() -> None:
    many = " ".join(f"name_{i}" for i in range(MAX_REFS + 500))
    found = lx("big.py", f"x = frequent_one + frequent_one\n{many}\n")
    assert len(found.refs) == 8 * MAX_REFS
    assert found.uses("frequent_one") == 2


def test_minified_line_is_linear() -> None:
    # One line of a megabyte with a keyword every few bytes: the look back from each keyword
    # to its line's start is bounded, so this takes milliseconds, not minutes.
    data = b"var a=1;" * 120_000
    found = lex("bundle.min.js", data)
    assert found is not None


# Characters that make declarations, imports, strings and comments of every language.
_ALPHABET = " \t\n\"'#/*(){}[]<>:;=.,_aAzZ09defclassimportpubfnexport"


@settings(max_examples=150, deadline=None)
@given(
    lang=st.sampled_from(sorted(LANGUAGES)),
    body=st.binary(max_size=400) | st.text(alphabet=_ALPHABET, max_size=400).map(str.encode),
)
def test_lex_never_raises_and_round_trips(lang: str, body: bytes) -> None:
    ext = {
        "python": "py", "typescript": "ts", "tsx": "tsx", "javascript": "js", "go": "go",
        "rust": "rs", "java": "java", "c": "c", "cpp": "hpp", "csharp": "cs", "ruby": "rb",
        "kotlin": "kt", "swift": "swift", "scala": "scala", "php": "php", "lua": "lua",
        "bash": "sh", "markdown": "md", "rst": "rst",
    }[lang]  # fmt: skip
    found = lex(f"x.{ext}", body)
    assert found is not None and found.lang == lang
    assert decode(encode(found)) == found
    assert encode(decode(encode(found)) or found) == encode(found)


def _both_ways(path: str, body: bytes) -> tuple[object, object]:
    """The lexicon with the C reference counter (cas._words) and with Python's alone."""
    native = lex(path, body)
    saved = list(words._NATIVE)
    words._NATIVE[:] = [None]
    try:
        return native, lex(path, body)
    finally:
        words._NATIVE[:] = saved


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
@settings(max_examples=150, deadline=None)
@given(
    lang=st.sampled_from(["python", "go", "typescript", "rust", "markdown", "ruby"]),
    body=st.binary(max_size=400)
    | st.text(alphabet=_ALPHABET + "ö_xX1", max_size=600).map(str.encode),
)
def test_native_and_python_references_agree(lang: str, body: bytes) -> None:
    ext = {"python": "py", "go": "go", "typescript": "ts", "rust": "rs", "markdown": "md"}
    native, python = _both_ways(f"x.{ext.get(lang, 'rb')}", body)
    assert native == python


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
def test_native_and_python_references_agree_on_real_code() -> None:
    root = corpus("click")
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".rst", ".md"))
    assert len(paths) > 40
    for path in paths:
        native, python = _both_ways(path.relative_to(root).as_posix(), path.read_bytes())
        assert native == python, path


def test_damaged_cache_entries_decode_to_none() -> None:
    good = encode(lx("a.py", "def f(): pass\n"))
    assert decode(good) is not None
    assert decode(good[:-3]) is None
    assert decode(b"not msgpack at all") is None
    assert decode(encode(Lexicon("python", "a\nb", b"\0" * 8, b"\0"))) is None  # lengths disagree


_SEED_SCRIPT = """
import sys
from pathlib import Path
from packer.lexicon import encode, lex
root = Path(sys.argv[1])
out = sys.stdout.buffer
for rel in sys.argv[2:]:
    out.write(encode(lex(rel, (root / rel).read_bytes())))
"""


def test_same_bytes_under_another_hash_seed() -> None:
    root = corpus("click")
    rels = ["src/click/core.py", "src/click/__init__.py", "README.md", "docs/api.rst"]
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _SEED_SCRIPT, str(root), *rels],
            env=env,
            capture_output=True,
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_real_python_click() -> None:
    core = lex("src/click/core.py", read("click", "src/click/core.py").encode())
    assert core is not None
    assert {"Context", "Command", "Group", "Option", "Argument", "Parameter"} <= set(core.exported)
    assert {"invoke", "make_context", "get_help"} <= set(core.defines)
    init = lex("src/click/__init__.py", read("click", "src/click/__init__.py").encode())
    assert init is not None
    assert {"Command", "echo", "option", "group"} <= set(init.reexports)
    assert ".core" in init.imports


def test_real_go_cobra() -> None:
    text = read("cobra", "command.go").encode()
    found = lex("command.go", text)
    assert found is not None and found.package == "cobra"
    assert {"Command", "Execute", "ExecuteC", "AddCommand", "Flags"} <= set(found.exported)
    assert "github.com/spf13/pflag" in found.imports


def test_real_typescript_ky() -> None:
    found = lex("distribution/index.d.ts", read("ky", "distribution/index.d.ts").encode())
    assert found is not None
    assert {"HTTPError", "TimeoutError", "Options", "KyInstance"} <= set(found.exported)
    assert "./types/options.js" in found.imports


def test_real_rust_anyhow() -> None:
    found = lex("src/lib.rs", read("anyhow", "src/lib.rs").encode())
    assert found is not None
    assert {"Error", "Result", "Context", "Chain", "anyhow", "bail", "ensure"} & set(
        found.exported
    ) >= {"Error", "Result", "Context", "Chain"}
    assert "mod error" in found.imports


def test_real_django_speed_shape() -> None:
    # Every file of a real project lexes, and the languages come from the one table.
    root = corpus("django")
    count = 0
    for path in sorted(root.rglob("*.py"))[:400]:
        rel = path.relative_to(root).as_posix()
        assert language_for(rel) == "python"
        found = lex(rel, path.read_bytes())
        assert found is not None and decode(encode(found)) == found
        count += 1
    assert count == 400


# --- the same bytes as the reader before it was made fast ---------------------------------------
#
# tests/lexicon_v1.py is the lexicon's code as it was before the speed work, frozen: every
# lexicon the module gives, with its C helpers and without them, is byte for byte that one's.

_EXTENSIONS = {
    "python": "py", "typescript": "ts", "tsx": "tsx", "javascript": "js", "go": "go",
    "rust": "rs", "java": "java", "c": "c", "cpp": "hpp", "csharp": "cs", "ruby": "rb",
    "kotlin": "kt", "swift": "swift", "scala": "scala", "php": "php", "lua": "lua",
    "bash": "sh", "markdown": "md", "rst": "rst",
}  # fmt: skip

# Lines shaped like declarations of every language the lexicon reads (an indentation, modifier
# and keyword words, a name, the rest of the line), and pieces of comments, strings and imports
# between them: random bodies made mostly of what its scans look for.
_INDENTS = ("", "", "    ", "\t", "  ", "        ", "\x0c", " \r\t")
_WORDS = (
    "def", "class", "async", "function", "function*", "export", "default", "declare", "const",
    "let", "var", "interface", "type", "enum", "namespace", "abstract", "func", "func (r *T)",
    "package", "fn", "pub", "pub(crate)", "pub(in a::b)", "struct", "trait", "impl", "mod",
    "union", "static", "macro_rules!", "public", "private", "protected", "internal", "void",
    "int", "module", "local function", "fun", "object", "val", "typedef", "extern", "unsafe",
    "override", "final", "sealed", "open", "data", "return", "if", '"use', "@x",
)  # fmt: skip
_NAMES = (
    "x", "run", "Name", "_p", "__init__", "__all__", "get_value", "HTTPError", "A1", "$el",
    "M.sub:name", "self", "if", "_", "T",
)  # fmt: skip
_TAILS = (
    "", "()", "(self):", ":", " = 1", " == 2", "<T>() {", " {", ";", " = require('m')",
    " from './m'", " // note", " # note", " /* a */", ' """doc"""', "!", "*",
)  # fmt: skip
_NOISE = (
    "\n", "import a.b", "from .m import (x, _y)", "from m import *", "self.attr = 1",
    "use crate::m::Item;", "export * from './all'", "export { a as b }", "#include <a.h>",
    "/*", "*/", '"""', "'", '"', "`", "```", "end", "}", "private", "#[macro_export]",
    "__all__ = ['x', 'run']", "package main", "namespace N;",
)  # fmt: skip
_LINE = st.tuples(
    st.sampled_from(_INDENTS),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join),
    st.sampled_from((" ", "", "  ", "\t")),
    st.sampled_from(_NAMES),
    st.sampled_from(_TAILS),
).map("".join)
_BODY = st.lists(_LINE | st.sampled_from(_NOISE), max_size=40).map("\n".join).map(
    str.encode
) | st.binary(max_size=300)


def _lexicons(path: str, body: bytes) -> tuple[bytes | None, bytes | None, bytes | None]:
    """``body``'s lexicon encoded: by the module with its C helpers, by the module in Python
    alone, and by the frozen reader."""

    def encoded(found: Lexicon | None) -> bytes | None:
        return None if found is None else encode(found)

    fast = encoded(lex(path, body))
    saved = list(words._NATIVE)
    words._NATIVE[:] = [None]
    try:
        python = encoded(lex(path, body))
    finally:
        words._NATIVE[:] = saved
    return fast, python, encoded(lex_v1(path, body))


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
@given(body=_BODY)
def test_same_lexicons_as_the_frozen_reader(lang: str, body: bytes) -> None:
    fast, python, frozen = _lexicons(f"x.{_EXTENSIONS[lang]}", body)
    assert fast == frozen
    assert python == frozen


# Real projects of every main language (tests/realcode.py), every file the lexicon reads.
_SAME_ON = ("click", "httpx", "cobra", "ky", "anyhow", "rack", "zstd", "jpype", "pythonnet")


@pytest.mark.parametrize("name", _SAME_ON)
def test_same_lexicons_as_the_frozen_reader_on_real_code(name: str) -> None:
    root = corpus(name)
    count = 0
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or lexicon_language(rel, language_for(rel)) is None:
            continue
        fast, python, frozen = _lexicons(rel, path.read_bytes())
        assert frozen is not None
        assert fast == frozen, rel
        assert python == frozen, rel
        count += 1
    assert count >= 3  # (zstd: its headers)


_SCANNED = sorted(
    {r.name for r in RECORDS if r.lexicon is not None and r.lexicon.declarations.decls}
)


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
@pytest.mark.parametrize("lang", _SCANNED)
@given(body=_BODY)
def test_declaration_scan_in_c_is_the_python_reference(lang: str, body: bytes) -> None:
    # What the readers are given: the text after a newline, as `lex` gives it.
    spec = named(lang).lexicon.declarations  # type: ignore[union-attr]
    data = b"\n" + body
    assert _declarations(data, spec) == list(_python_declarations(data, spec))


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
@given(body=_BODY | st.lists(_LINE, max_size=30).map("\n".join).map(str.encode))
def test_python_scan_in_c_is_the_python_reference(body: bytes) -> None:
    data = b"\n" + body
    headers, assigned = words.native_module().python_names(data)
    assert headers == _python_headers(data)
    assert assigned == _PY_ASSIGN.findall(data)


@pytest.mark.skipif(words.native_module() is None, reason="cas._words was not built")
@given(body=_BODY | st.lists(_LINE, max_size=30).map("\n".join).map(str.encode))
def test_python_blocks_in_c_are_the_python_reference(body: bytes) -> None:
    # Nesting, privacy and the statements that close blocks, read in C in one pass, define
    # what the Python reading of the same headers does.
    data = b"\n" + body
    reference = _Builder("python")
    _python_blocks(data, _python_headers(data), reference)
    top, top_private, member, member_private, assigned = words.native_module().python_defs(data)
    assert {*top, *top_private, *member, *member_private} == reference.defines
    assert {*top, *top_private} == reference.toplevel
    assert {*member, *member_private} == reference.minor
    assert {*top, *member} == reference.exported
    assert assigned == _PY_ASSIGN.findall(data)
