"""The map of a large project (`packer.projectmap`): what a folder says it is for, which folders
a map holds, how each format renders it, and a pack of a large tree that opens with one and
still fits its budget."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Digest, Store
from cas import manifest as mf
from cas.cache import Cache
from packer.fit_loop import FileRow
from packer.projectmap import (
    ABOUT_CHARS,
    LARGE_FILES,
    LEAST_FOLDERS,
    MAP_NS,
    MOST_FOLDERS,
    TOKENS_PER_FOLDER,
    Folder,
    known_map,
    map_size,
    project_map,
    purpose,
)
from packer.render import lite_layouts, renderer
from packer.tokens import TokenCounter
from tests.conftest import run_cas
from tests.packfixture import write_modules

LICENSE = (
    "// Copyright 2020 The Authors.\n//\n// Licensed under the Apache License, Version 2.0\n\n"
)


def test_purpose_reads_each_kind_of_documentation() -> None:
    assert (
        purpose(
            "__init__.py",
            '#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"""Rich text and formatting.\n\n'
            'More here."""\nimport os\n',
        )
        == "Rich text and formatting."
    )
    go = LICENSE + "//go:build linux\n\n// Package stack glues protocols together. It is.\n"
    assert purpose("stack.go", go + "package stack\n") == "Package stack glues protocols together."
    assert purpose("lib.rs", "//! # Serde\n//!\n//! A framework for serializing.\n") == (
        "A framework for serializing."
    )
    jsdoc = "/**\n * A tiny HTTP client for browsers.\n * @module ky\n */\nexport default 1\n"
    assert purpose("index.ts", jsdoc) == "A tiny HTTP client for browsers."
    readme = (
        "# Project\n\n[![ci](https://x/badge.svg)](https://x)\n\n```sh\npip install p\n```\n\n"
        "Tools for parsing\nconfiguration files. And more.\n"
    )
    assert purpose("README.md", readme) == "Tools for parsing configuration files."
    assert purpose("a.rb", "# A Ruby settings DSL for apps.\nclass A; end\n") == (
        "A Ruby settings DSL for apps."
    )


def test_purpose_says_nothing_rather_than_something_wrong() -> None:
    assert purpose("a.go", LICENSE + "package a\n// Not before code: after it.\n") == ""
    assert purpose("a.py", "import os\n'''a string, not a docstring, after code'''\n") == ""
    assert purpose("a.py", "from __future__ import annotations\n") == ""
    assert purpose("a.c", "#include <stdio.h>\nint main(void) { return 0; }\n") == ""
    assert purpose("a.js", "// ok\nconst x = 1\n") == ""  # too short to say anything
    assert purpose("data.json", '{"description": "Something long enough to say."}') == ""
    # a plain line comment of a C-like language is not where it documents a file
    assert (
        purpose("a.ts", "// we need these deep imports so the editor sees them\nexport {}\n") == ""
    )
    ts = '/// <reference lib="esnext.asynciterable" />\n/** https://example.com/issue */\nlet a\n'
    assert purpose("types.ts", ts) == ""  # a directive, and a link rather than prose
    # a doc comment right above a declaration is that declaration's
    decl = (
        "/**\n * Returns true if the object is a function.\n * @param x the value\n */\n"
        "export function f() {}\n"
    )
    assert purpose("isFunction.ts", decl) == ""
    module = decl.replace(" * @param x the value", " * @module util")
    assert purpose("util.ts", module) == "Returns true if the object is a function."
    apart = decl.replace("*/\n", "*/\n\n")
    assert purpose("util.ts", apart) == "Returns true if the object is a function."
    assert purpose("a.rb", "# frozen_string_literal: true\n\n# Routes requests to apps.\n") == (
        "Routes requests to apps."
    )


def test_a_docstring_gives_its_first_paragraph() -> None:
    text = '"""Multi-producer dispatching\n\nOriginally based on pydispatch. See license."""\n'
    assert purpose("dispatcher.py", text) == "Multi-producer dispatching"


def test_build_output_and_copies_place_no_folder_on_the_map() -> None:
    body = '"""A module."""\n'
    rows = [
        *(
            FileRow(f"dist/esm/op{i}.js", "file", Digest.of(b"%d" % i), 9, "generated", 9000)
            for i in range(50)
        ),
        *(
            FileRow(f"vendor/x/m{i}.go", "file", Digest.of(b"v%d" % i), 9, "vendored", 9000)
            for i in range(50)
        ),
        FileRow("lib/a.js", "file", Digest.of(b"a"), 9, "duplicate; the same content as x", 99),
        FileRow("lib/b.js", "file", Digest.of(b"b"), 9, "generated from src/b.ts", 99),
        FileRow("src/b.ts", "file", Digest.of(b"s"), 9, "source", 10),
        FileRow("src/c.py", "file", Digest.of(b"c"), 9, None, 5),
    ]
    folders = project_map(rows, 5, lambda d: body)
    assert [f.path for f in folders] == ["src/"]
    assert folders[0].first == ("b.ts", "c.py") and folders[0].files == 2


def _purpose_of_one_folder(texts: dict[str, str], ratings: tuple[int, ...]) -> str:
    """The purpose the map gives the one folder of ``texts`` (path -> body), rated so."""
    rows = [
        FileRow(p, "file", Digest.of(t.encode()), len(t), None, r)
        for (p, t), r in zip(texts.items(), ratings, strict=True)
    ]
    bodies = {Digest.of(t.encode()): t for t in texts.values()}
    return project_map(rows, 1, bodies.__getitem__)[0].about


def test_only_the_best_rated_code_file_speaks_for_an_undocumented_folder() -> None:
    texts = {"pkg/best.py": "import os\n", "pkg/other.py": '"""Speaks of other.py only."""\n'}
    assert _purpose_of_one_folder(texts, (9, 1)) == ""
    # an `__init__.py` without a docstring is read once: the best-rated file after it speaks
    texts = {"pkg/__init__.py": "from .a import b\n", "pkg/res.py": '"""Resolves URLs."""\n'}
    assert _purpose_of_one_folder(texts, (9, 5)) == "Resolves URLs."


def test_a_long_purpose_is_cut_at_a_word() -> None:
    text = '"""' + " ".join(["word"] * 100) + '."""\n'
    about = purpose("m.py", text)
    assert len(about) <= ABOUT_CHARS and about.endswith("...")
    assert about[:-3].split(" ")[-1] == "word"


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["a.py", "a.go", "lib.rs", "index.ts", "README.md", "a.rb", "a.c", "x.txt"]),
    st.text(max_size=400),
)
def test_purpose_of_any_text_is_one_short_line(name: str, text: str) -> None:
    about = purpose(name, text)
    assert len(about) <= ABOUT_CHARS
    assert "\n" not in about and "\r" not in about
    assert about == about.strip()


def _row(path: str, rating: int, size: int = 40_000) -> FileRow:
    return FileRow(path, "file", Digest.of(path.encode()), size, None, rating)


def test_map_size_follows_the_budget_and_only_for_a_large_project() -> None:
    rows = [_row(f"pkg/p{i}/f{j}.go", 10) for i in range(40) for j in range(5)]
    assert map_size(3_000, rows) == LEAST_FOLDERS
    assert map_size(12_000, rows) == 12_000 // TOKENS_PER_FOLDER
    assert map_size(1_000_000, rows) == 0  # the project is within the budget: no map
    assert map_size(
        200_000, [_row(f"pkg/p{i}/f{j}.go", 10, 10**7) for i in range(99) for j in range(3)]
    ) == (MOST_FOLDERS)
    few = [_row(f"pkg/p{i}/f{j}.go", 10) for i in range(LEAST_FOLDERS - 1) for j in range(200)]
    assert map_size(3_000, few) == 0
    small = [
        _row(f"pkg/p{i}/f{j}.go", 10, 10**6) for i in range(9) for j in range(LARGE_FILES // 9)
    ]
    assert len(small) < LARGE_FILES and map_size(3_000, small) == 0
    assert map_size(3_000, [*small, *small[: LARGE_FILES - len(small)]]) == LEAST_FOLDERS
    docs_only = [_row(f"docs/d{i}/f{j}.md", 10) for i in range(10) for j in range(20)]
    assert map_size(3_000, docs_only) == 0  # folders of code only


def test_project_map_takes_the_best_rated_folders_and_their_documentation() -> None:
    texts = {
        "core/__init__.py": '"""The core of it."""\n',
        "core/engine.py": '"""The engine."""\n',
        "net/net.go": "// Package net speaks the protocols.\npackage net\n",
        "net/aaa.go": "// Package net: not the file named as the folder.\npackage net\n",
        "util/helpers.py": "import os\n",
        "low/x.py": '"""Rated low."""\n',
        "tests/test_x.py": '"""Tests."""\n',
    }
    ratings = {"core/engine.py": 50, "core/__init__.py": 5, "net/net.go": 30, "net/aaa.go": 31}
    ratings |= {"util/helpers.py": 20, "low/x.py": 1, "tests/test_x.py": 2}
    rows = [
        *(
            FileRow(p, "file", Digest.of(t.encode()), len(t), None, ratings[p])
            for p, t in texts.items()
        ),
        FileRow("net/README.md", "file", None, 0, "secret", 0),  # withheld: no body to read
        FileRow("top.py", "file", Digest.of(b"top"), 3, None, 99),  # the top level is no folder
    ]
    by_digest = {Digest.of(t.encode()): t for t in texts.values()}
    read: list[Digest] = []

    def fetch(d: Digest) -> str:
        read.append(d)
        return by_digest[d]

    folders = project_map(rows, 3, fetch)
    assert folders == [
        Folder("core/", 2, "The core of it.", ("engine.py", "__init__.py")),
        Folder("net/", 3, "Package net speaks the protocols.", ("aaa.go", "net.go")),
        Folder("util/", 1, "", ("helpers.py",)),
    ]
    assert project_map(list(reversed(rows)), 3, fetch) == folders  # the order rows come in
    assert project_map(rows, 0, fetch) == []
    # A body too large, or binary, is not read for a purpose: the next source speaks.
    huge = [r._replace(size=2 << 20) if r.path == "core/__init__.py" else r for r in rows]
    binary = [r._replace(reason="binary") if r.path == "core/__init__.py" else r for r in rows]
    for changed in (huge, binary):
        read.clear()
        assert project_map(changed, 3, fetch)[0].about == "The engine."
        assert Digest.of(texts["core/__init__.py"].encode()) not in read


def _manifest(size: int) -> tuple[mf.Manifest, dict[Digest, str]]:
    texts = {
        f"pkg/p{i}/f.go": f"// Package p{i} does <thing> {i} & more.\npackage p{i}\n"
        for i in range(6)
    }
    entries = tuple(
        mf.Entry(p, Digest.of(t.encode()), len(t), "low", 3, reason="low value", rating=10 + i)
        for i, (p, t) in enumerate(sorted(texts.items()))
    )
    totals: dict[str, object] = {"files": len(entries), "group_depth": 3}
    if size:
        totals["map"] = size
    m = mf.Manifest(
        scope="repo",
        target=None,
        tokenizer="o200k_base",
        budget_target=3000,
        budget_max=3000,
        entries=entries,
        totals=totals,
    )
    return m, {Digest.of(t.encode()): t for t in texts.values()}


def test_every_format_renders_the_map_and_a_manifest_without_one_renders_none() -> None:
    m, texts = _manifest(3)
    layouts = lite_layouts(m, texts.__getitem__, ("markdown", "xml", "plain"))
    md = layouts["markdown"].text()
    assert md.index("## Map\n") < md.index("## Omitted\n")
    map_md = md.split("## Map\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split("`")[1] for line in map_md.splitlines()[1:]] == [
        "pkg/p3/",
        "pkg/p4/",
        "pkg/p5/",
    ]
    assert "Package p5 does <thing> 5 & more." in map_md
    xml = layouts["xml"].text()
    node = ET.fromstring(xml)
    folders = node.find("map")
    assert folders is not None
    assert [f.get("path") for f in folders] == ["pkg/p3/", "pkg/p4/", "pkg/p5/"]
    assert [f.text for f in folders][2] == "Package p5 does <thing> 5 & more."
    assert folders[0].get("files") == "1" and folders[0].get("first") == "f.go"
    assert "MAP\n  pkg/p3/ (1; f.go): Package p3" in layouts["plain"].text()
    # the same manifest without a map size in its totals: the render as before, no map
    plain, _ = _manifest(0)
    for fmt, layout in lite_layouts(plain, texts.__getitem__, ("markdown", "xml", "plain")).items():
        assert (
            "Map" not in layout.text()
            and "<map>" not in layout.text()
            and "MAP" not in layout.text()
        ), fmt


def test_the_map_piece_keeps_the_token_sum_exact() -> None:
    """The map is a piece of its own: the head's tokens are the header's and the map's, and
    what follows it counts the same with or without it (the fit prices it alone)."""
    m, texts = _manifest(3)
    bare, _ = _manifest(0)
    counter = TokenCounter("o200k_base")
    for fmt in ("markdown", "xml", "plain"):
        layout = lite_layouts(m, texts.__getitem__, (fmt,))[fmt]
        without = lite_layouts(bare, texts.__getitem__, (fmt,))[fmt]
        header, map_piece = layout.head
        assert map_piece[0] not in " \n" and map_piece.endswith("\n"), fmt
        assert counter.count("".join(layout.head)) == counter.count(header) + counter.count(
            map_piece
        ), fmt
        assert counter.count(layout.text()) == counter.count(without.text()) + counter.count(
            map_piece
        ), fmt
    folders = project_map(m.entries, 3, texts.__getitem__)
    assert renderer("markdown").project_map(folders).startswith("## Map\n")


def test_a_pack_of_a_large_tree_opens_with_its_map_within_budget(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for i in range(12):
        pkg = repo / "src" / f"part{i:02d}"
        after = f"part{(i + 1) % 12:02d}"
        write_modules(
            pkg, 17, 40, f"from src import {after}", lambda _k, a=after: f"{a}.run(request)"
        )
        (pkg / "__init__.py").write_text(f'"""Part {i} handles the {i}th kind of request."""\n')
    (repo / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    r = run_cas("pack", "--json", cwd=repo, timeout=300)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    m = mf.decode((repo / "manifests" / "repo.pack").read_bytes())
    assert m.totals["map"] == LEAST_FOLDERS
    tokens = m.totals["tokens"]
    assert isinstance(tokens, dict) and max(tokens.values()) <= 3000
    for fmt in ("markdown", "xml", "plain"):
        out = run_cas("render", "repo", "--format", fmt, cwd=repo)
        assert out.code == 0, out.err
        assert TokenCounter("o200k_base").count(out.out) == tokens[fmt]
    text = run_cas("render", "repo", cwd=repo).out
    map_text = text.split("## Map\n", 1)[1].split("\n\n", 1)[0]
    assert len(map_text.splitlines()) == 1 + LEAST_FOLDERS
    assert "handles the" in map_text
    assert report["packs"][0]["name"] == "repo"
    # The pack kept its map in the cache by the manifest's digest, as the render works it out;
    # a render without that entry, or with a damaged one, is the same text.
    digest = Digest.of((repo / "manifests" / "repo.pack").read_bytes())
    with Store.at(repo / ".cas") as store:
        kept = known_map(store, m, digest)
        fetch = lambda d: store.get(d).decode("utf-8")  # noqa: E731
        assert kept == project_map(m.entries, m.totals["map"], fetch) and kept
        cache = Cache(store)
        cache.put(MAP_NS, bytes(digest), b"\x93damaged")
        cache.flush()
        assert known_map(store, m, digest) is None
    assert run_cas("render", "repo", cwd=repo).out == text


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(["a", "b", "c", "Dir", "ü"]), min_size=0, max_size=3),
            st.sampled_from(["x.py", "y.go", "README.md", "__init__.py", "z.txt", "doc.go"]),
            st.integers(0, 10**6),
            st.booleans(),
        ),
        max_size=40,
        unique_by=lambda t: ("/".join(t[0]), t[1]),
    ),
    st.integers(0, 8),
    st.randoms(use_true_random=False),
)
def test_any_rows_map_to_at_most_size_folders_of_code_in_path_order(
    spec: list[tuple[list[str], str, int, bool]], size: int, rnd: object
) -> None:
    rows = [
        FileRow(
            "/".join([*folders, name]),
            "file",
            Digest.of("/".join([*folders, name]).encode()) if has_body else None,
            10,
            None,
            rating,
        )
        for folders, name, rating, has_body in spec
    ]
    bodies = {r.digest: f'"""Body of {r.path}."""\n' for r in rows if r.digest is not None}
    folders = project_map(rows, size, bodies.__getitem__)
    assert len(folders) <= size
    paths = [f.path for f in folders]
    assert paths == sorted(paths, key=lambda p: p.encode("utf-8")) and len(set(paths)) == len(paths)
    for f in folders:
        assert any(
            r.path.startswith(f.path)
            and "/" not in r.path[len(f.path) :]
            and r.digest
            and r.path.endswith((".py", ".go"))
            for r in rows
        )
    shuffled = list(rows)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert project_map(shuffled, size, bodies.__getitem__) == folders
