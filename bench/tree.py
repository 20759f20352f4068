"""A deterministic synthetic source tree, shaped like a real repository, for benchmarks.

    .venv/bin/python -m bench.tree DIR [--files N] [--mb M] [--seed S]

`generate` writes about ``files`` files and ``total_bytes`` bytes below a root: Markdown docs,
Python packages and tests, TypeScript and JavaScript, Go, Rust, JSON and YAML config, shell, CSS
and TOML, binaries (random bytes behind real PNG, JPEG, WOFF2 and SQLite headers), a
``.gitignore`` (plus a nested one) with a few files it ignores, and a handful of planted fake
secrets. Sizes are log-normal per kind (most files a few KiB), plus a few files of 1 to 8 MiB
when the byte budget allows.

The same arguments give the same tree, byte for byte, on any machine: every choice comes from one
seeded generator, and every file and folder gets the same fixed mtime. The fixed mtime also keeps
a fresh tree out of a stat cache's "racy" window (files changed moments before a scan are
re-read on the next one), so a benchmark's warm run measures a warm run.

Secrets are assembled from pieces at run time, so no scanner flags this source file itself.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness

SEED = 20250601
MIB = 1 << 20
# 2023-11-14T22:13:20Z, for every file and folder: see the module docstring.
FIXED_MTIME_NS = 1_700_000_000 * 1_000_000_000
BIG_MIN, BIG_MAX = 1 * MIB, 8 * MIB
# At most this share of the byte budget goes to the 1-8 MiB files, one per 1,000 files.
BIG_SHARE = 0.3
SMALLEST, LARGEST_REGULAR = 40, 768 << 10
SIZE_SIGMA = 1.0
FILES_PER_DIR = 16
POOL_BLOCKS = 1500
# The keywords (of Python, TypeScript, Go and Rust) that the word generator below can spell.
RESERVED = frozenset({"case", "crate", "defer", "delete", "goto", "move", "raise", "super"})


# --- words and sentences ------------------------------------------------------------------------


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    """Pronounceable lower-case words of two to four syllables, none a keyword of any language."""
    onsets = [*"bcdfghjklmnprstvwz", "br", "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh"]
    vowels = [*"aeiouaeio", "ai", "ea", "ou"]
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"]
    words: set[str] = set()
    while len(words) < size:
        parts = [rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.choice((2, 2, 3, 4)))]
        word = "".join(parts) + rng.choice(codas)
        if word not in RESERVED:
            words.add(word)
    ordered = sorted(words)
    rng.shuffle(ordered)
    return ordered


class _Words:
    """Zipf-weighted words, as in real text: a few very common, a long tail of rare ones."""

    def __init__(self, rng: random.Random, size: int = 3000) -> None:
        self.rng = rng
        self.words = _vocabulary(rng, size)
        self._cum = list(itertools.accumulate(1 / (rank + 1) ** 1.1 for rank in range(size)))

    def some(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self._cum, k=k)

    def one(self) -> str:
        return self.some(1)[0]

    def snake(self, k: int = 2) -> str:
        return "_".join(self.some(k))

    def camel(self, k: int = 2) -> str:
        first, *rest = self.some(k)
        return first + "".join(w.capitalize() for w in rest)

    def pascal(self, k: int = 2) -> str:
        return "".join(w.capitalize() for w in self.some(k))

    def sentence(self, low: int = 6, high: int = 16) -> str:
        words = self.some(self.rng.randint(low, high))
        return " ".join(words).capitalize() + "."


# --- blocks of each language ----------------------------------------------------------------------
# A file is a header, then blocks drawn from a per-language pool until it reaches its size. Each
# block holds the marker "@@", replaced per block and file, so no two files and no two blocks of
# a file are alike, and every file is valid in its language.

MARK = "@@"


def _py_block(w: _Words, rng: random.Random) -> str:
    name, args = w.snake(), w.some(rng.randint(1, 4))
    doc = w.sentence()
    if rng.random() < 0.3:
        methods = []
        for _ in range(rng.randint(1, 3)):
            m, a = w.snake(), w.one()
            methods.append(
                f"    def {m}(self, {a}: int) -> int:\n"
                f'        """{w.sentence()}"""\n'
                f"        return self.{w.one()}_{MARK} + {a} * {rng.randint(2, 99)}\n"
            )
        return f'class {w.pascal()}{MARK}:\n    """{doc}"""\n\n' + "\n".join(methods) + "\n\n"
    body = [f"    {args[0]}_total = {args[0]}"]
    for _ in range(rng.randint(1, 6)):
        a, b = rng.choice(args), w.one()
        body.append(
            rng.choice(
                (
                    f"    if {a} is None:\n        return {rng.randint(0, 9)}",
                    f"    for {b} in range({rng.randint(2, 64)}):\n        {args[0]}_total += {b}",
                    f"    {args[0]}_total = {args[0]}_total * {rng.randint(2, 9)} + {a}",
                    f"    # {w.sentence(4, 10)}",
                )
            )
        )
    params = ", ".join(args)
    return (
        f"def {name}_{MARK}({params}):\n"
        f'    """{doc}"""\n' + "\n".join(body) + f"\n    return {args[0]}_total\n\n\n"
    )


def _ts_block(w: _Words, rng: random.Random) -> str:
    if rng.random() < 0.35:
        fields = "".join(
            f"  {w.camel()}{'?' if rng.random() < 0.3 else ''}: "
            f"{rng.choice(('string', 'number', 'boolean', 'string[]'))};\n"
            for _ in range(rng.randint(2, 7))
        )
        return f"/** {w.sentence()} */\nexport interface {w.pascal()}{MARK} {{\n{fields}}}\n\n"
    args = w.some(rng.randint(1, 3))
    params = ", ".join(f"{a}: {rng.choice(('number', 'string'))}" for a in args)
    lines = [f"  const {args[0]}Out = String({args[0]});"]
    for _ in range(rng.randint(1, 5)):
        a = rng.choice(args)
        lines.append(
            rng.choice(
                (
                    f"  if (!{a}) {{\n    return {args[0]}Out;\n  }}",
                    f"  console.debug('{w.sentence(3, 6)}', {a});",
                    f"  // {w.sentence(4, 10)}",
                )
            )
        )
    return (
        f"/** {w.sentence()} */\n"
        f"export async function {w.camel()}{MARK}({params}): Promise<string> {{\n"
        + "\n".join(lines)
        + f"\n  return {args[0]}Out;\n}}\n\n"
    )


def _js_block(w: _Words, rng: random.Random) -> str:
    args = w.some(rng.randint(1, 3))
    return (
        f"// {w.sentence()}\n"
        f"function {w.camel()}{MARK}({', '.join(args)}) {{\n"
        f"  const {args[0]}Seen = new Map();\n"
        f"  for (const item of [{', '.join(args)}]) {{\n"
        f"    {args[0]}Seen.set(item, ({args[0]}Seen.get(item) || 0) + {rng.randint(1, 9)});\n"
        f"  }}\n  return {args[0]}Seen;\n}}\n"
        f"module.exports.{w.camel()}{MARK} = {rng.randint(0, 999)};\n\n"
    )


def _go_block(w: _Words, rng: random.Random) -> str:
    if rng.random() < 0.3:
        fields = "".join(
            f"\t{w.pascal()} {rng.choice(('int', 'string', 'bool', '[]byte'))}\n"
            for _ in range(rng.randint(2, 6))
        )
        name = w.pascal() + MARK
        return f"// {name} {w.sentence()}\ntype {name} struct {{\n{fields}}}\n\n"
    a, b, name = w.one(), w.one() + "2", w.pascal() + MARK
    return (
        f"// {name} {w.sentence()}\n"
        f"func {name}({a} int, {b} string) (int, error) {{\n"
        f"\tif {a} < {rng.randint(0, 99)} {{\n"
        f'\t\treturn 0, fmt.Errorf("{w.sentence(3, 6)}: %s", {b})\n\t}}\n'
        f"\tfor i := 0; i < {rng.randint(2, 32)}; i++ {{\n\t\t{a} += i\n\t}}\n"
        f"\treturn {a}, nil\n}}\n\n"
    )


def _rust_block(w: _Words, rng: random.Random) -> str:
    if rng.random() < 0.3:
        fields = "".join(
            f"    pub {w.snake()}: {rng.choice(('u32', 'String', 'bool', 'Vec<u8>'))},\n"
            for _ in range(rng.randint(2, 6))
        )
        head = f"/// {w.sentence()}\n#[derive(Debug, Clone)]\n"
        return f"{head}pub struct {w.pascal()}{MARK} {{\n{fields}}}\n\n"
    a = w.one()
    return (
        f"/// {w.sentence()}\n"
        f"pub fn {w.snake()}_{MARK}({a}: u32, label: &str) -> Result<u32, String> {{\n"
        f"    if label.is_empty() {{\n"
        f'        return Err(format!("{w.sentence(3, 6)}: {{}}", {a}));\n    }}\n'
        f"    let mut total = {a};\n"
        f"    for step in 0..{rng.randint(2, 32)} {{\n        total += step;\n    }}\n"
        f"    Ok(total)\n}}\n\n"
    )


def _md_block(w: _Words, rng: random.Random) -> str:
    parts = [f"## {w.sentence(2, 5)[:-1].title()} {MARK}\n\n"]
    for _ in range(rng.randint(1, 3)):
        parts.append(" ".join(w.sentence() for _ in range(rng.randint(2, 5))) + "\n\n")
    shape = rng.random()
    if shape < 0.3:
        parts.append("".join(f"- {w.sentence(3, 8)}\n" for _ in range(rng.randint(2, 5))) + "\n")
    elif shape < 0.45:
        parts.append(f"```sh\n{w.one()} --{w.one()} {w.one()}\n```\n\n")
    return "".join(parts)


def _json_block(w: _Words, rng: random.Random) -> str:
    item = {
        "id": f"{w.one()}-{MARK}",
        "name": w.sentence(2, 4),
        "enabled": rng.random() < 0.7,
        "weight": rng.randint(0, 10_000),
        "tags": w.some(rng.randint(0, 4)),
    }
    return "  " + json.dumps(item, sort_keys=True)


def _yaml_block(w: _Words, rng: random.Random) -> str:
    env = "".join(f"    - {w.one().upper()}={w.one()}\n" for _ in range(rng.randint(1, 4)))
    return (
        f"{w.snake()}_{MARK}:\n  enabled: {str(rng.random() < 0.7).lower()}\n"
        f"  replicas: {rng.randint(1, 9)}\n"
        f"  image: registry.example/{w.one()}:{rng.randint(1, 40)}\n"
        f"  # {w.sentence(3, 8)}\n  env:\n{env}"
    )


def _sh_block(w: _Words, rng: random.Random) -> str:
    return (
        f"{w.snake()}_{MARK}() {{\n  # {w.sentence(3, 8)}\n"
        f'  local {w.one()}="${{1:-{w.one()}}}"\n'
        f'  {w.one()} --{w.one()} {rng.randint(1, 99)} "$@"\n}}\n\n'
    )


def _css_block(w: _Words, rng: random.Random) -> str:
    return (
        f".{w.one()}-{w.one()}-{MARK} {{\n  margin: {rng.randint(0, 32)}px;\n"
        f"  color: #{rng.randrange(1 << 24):06x};\n"
        f"  display: {rng.choice(('flex', 'grid'))};\n}}\n\n"
    )


def _toml_block(w: _Words, rng: random.Random) -> str:
    return (
        f"[{w.snake()}_{MARK}]\nenabled = {str(rng.random() < 0.5).lower()}\n"
        f'name = "{w.sentence(2, 4)}"\nlimit = {rng.randint(1, 5000)}\n\n'
    )


def _csv_block(w: _Words, rng: random.Random) -> str:
    return f"{MARK},{w.one()},{w.one()},{rng.randint(0, 10**6)},{rng.random():.6f}\n"


def _log_block(w: _Words, rng: random.Random) -> str:
    level = rng.choice(("INFO", "INFO", "DEBUG", "WARN"))
    return f"2024-05-{rng.randint(10, 28)} {level} [{w.one()}] {MARK} {w.sentence(4, 12)}\n"


@dataclass(frozen=True, slots=True)
class Language:
    """How to write one kind of text file: its block, and what surrounds the blocks."""

    block: Callable[[_Words, random.Random], str]
    header: Callable[[_Words, str], str]
    separator: str = ""
    footer: str = ""


LANGUAGES: dict[str, Language] = {
    "python": Language(
        _py_block,
        lambda w, tag: (
            f'"""{w.sentence()} ({tag})"""\n\nfrom __future__ import annotations\n\n'
            "import os\nimport sys\n\n\n"
        ),
    ),
    "typescript": Language(
        _ts_block,
        lambda w, tag: f"// {tag}: {w.sentence()}\nimport {{ strict }} from './base';\n\n",
    ),
    "javascript": Language(_js_block, lambda w, tag: f"'use strict';\n// {tag}\n\n"),
    "go": Language(
        _go_block,
        lambda w, tag: f'// Package {w.one()}: {tag}\npackage {w.one()}\n\nimport "fmt"\n\n',
    ),
    "rust": Language(_rust_block, lambda w, tag: f"//! {w.sentence()} ({tag})\n\n"),
    "markdown": Language(
        _md_block, lambda w, tag: f"# {w.sentence(2, 5)[:-1].title()}\n\n{tag}\n\n"
    ),
    "json": Language(_json_block, lambda w, tag: "[\n", separator=",\n", footer="\n]\n"),
    "yaml": Language(_yaml_block, lambda w, tag: f"# {tag}\nversion: 2\n"),
    "shell": Language(_sh_block, lambda w, tag: f"#!/bin/sh\n# {tag}\nset -eu\n\n"),
    "css": Language(_css_block, lambda w, tag: f"/* {tag} */\n"),
    "toml": Language(_toml_block, lambda w, tag: f"# {tag}\n\n"),
    "csv": Language(_csv_block, lambda w, tag: "id,name,group,count,score\n"),
    "log": Language(_log_block, lambda w, tag: ""),
}

# Magic numbers of the binary kinds; the rest of such a file is random, so it never compresses.
BINARY_HEADERS: dict[str, bytes] = {
    ".png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    ".jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00",
    ".woff2": b"wOF2\x00\x01\x00\x00",
    ".sqlite": b"SQLite format 3\x00",
    ".bin": b"\x7fELF\x02\x01\x01\x00",
}


# --- the kinds of file and where they live --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    area: str  # the top folder
    language: str | None  # None: binary
    extensions: tuple[str, ...]
    share: float  # of the file count
    median: int  # bytes, before scaling to the byte budget
    naming: str = "snake"  # snake | camel | kebab | test


KINDS = (
    Kind("docs", "docs", "markdown", (".md",), 0.12, 3000, "kebab"),
    Kind("python", "src/app", "python", (".py",), 0.24, 4500),
    Kind("tests", "tests", "python", (".py",), 0.09, 3500, "test"),
    Kind("typescript", "web/src", "typescript", (".ts", ".ts", ".tsx"), 0.14, 3000, "camel"),
    Kind("javascript", "web/lib", "javascript", (".js",), 0.05, 2500, "camel"),
    Kind("go", "services", "go", (".go",), 0.08, 4500),
    Kind("rust", "crates", "rust", (".rs",), 0.07, 4500),
    Kind("json", "config", "json", (".json",), 0.06, 1800, "kebab"),
    Kind("yaml", "deploy", "yaml", (".yaml", ".yml"), 0.05, 1200, "kebab"),
    Kind("binary", "assets", None, tuple(BINARY_HEADERS), 0.06, 9000, "kebab"),
    Kind("shell", "scripts", "shell", (".sh",), 0.015, 1500, "kebab"),
    Kind("css", "web/styles", "css", (".css",), 0.015, 2000, "kebab"),
    Kind("toml", "config/toml", "toml", (".toml",), 0.01, 800, "kebab"),
)
# The 1-8 MiB files: (folder, extension, language or None for binary), taken in turn.
BIG_KINDS = (
    ("assets/media", ".bin", None),
    ("tests/fixtures", ".json", "json"),
    ("assets/media", ".png", None),
    ("data", ".csv", "csv"),
    ("assets/db", ".sqlite", None),
    ("data/logs", ".txt", "log"),
)

GITIGNORE = """\
# build output and dependencies
node_modules/
dist/
build/
__pycache__/
*.pyc
.venv/
*.log
.cas/
"""
WEB_GITIGNORE = "coverage/\n*.tsbuildinfo\n"


@dataclass(slots=True)
class GeneratedTree:
    """What `generate` wrote. Paths are POSIX, relative to ``root``, sorted by their bytes."""

    root: Path
    files: int = 0
    bytes: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [files, bytes]
    paths: list[str] = field(default_factory=list)  # every file written
    secrets: list[tuple[str, str]] = field(default_factory=list)  # (path, what was planted)
    ignored: list[str] = field(default_factory=list)  # files a .gitignore rule leaves out
    big: list[str] = field(default_factory=list)  # the 1-8 MiB files

    def add(self, kind: str, rel: str, size: int) -> None:
        counts = self.by_kind.setdefault(kind, [0, 0])
        counts[0] += 1
        counts[1] += size
        self.files += 1
        self.bytes += size
        self.paths.append(rel)


class _Writer:
    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.words = _Words(self.rng)
        self.pools = {
            name: [lang.block(self.words, self.rng) for _ in range(POOL_BLOCKS)]
            for name, lang in LANGUAGES.items()
        }
        self.taken: set[str] = set()
        self.serial = 0
        self.made_dirs: set[Path] = set()

    def write(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        if path.parent not in self.made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.made_dirs.add(path.parent)
        path.write_bytes(data)

    def text(self, language: str, size: int, tag: str) -> bytes:
        """About ``size`` bytes of ``language``: whole blocks, so the file stays valid."""
        lang = LANGUAGES[language]
        self.serial += 1
        head = lang.header(self.words, tag)
        pool = self.pools[language]
        parts: list[str] = []
        total = len(head) + len(lang.footer)
        # Draw blocks in groups (one `choices` call each), stopping once the size is reached.
        while total < size:
            for block in self.rng.choices(pool, k=16):
                unique = f"{self.serial:x}x{len(parts):x}"
                piece = block.replace(MARK, unique)
                parts.append(piece)
                total += len(piece) + len(lang.separator)
                if total >= size:
                    break
        return (head + lang.separator.join(parts) + lang.footer).encode()

    def binary(self, ext: str, size: int) -> bytes:
        head = BINARY_HEADERS[ext]
        return head + self.rng.randbytes(max(0, size - len(head)))

    def name(self, folder: str, kind: Kind, ext: str) -> str:
        w = self.words
        while True:
            if kind.naming == "camel":
                stem = w.camel()
            elif kind.naming == "kebab":
                stem = "-".join(w.some(2))
            elif kind.naming == "test":
                stem = "test_" + w.snake()
            else:
                stem = w.snake()
            rel = f"{folder}/{stem}{ext}"
            if rel not in self.taken:
                self.taken.add(rel)
                return rel

    def folders(self, area: str, count: int) -> list[str]:
        """``count`` folders below ``area``, nested like a real project (each new one goes into
        a random earlier one, at most four levels down)."""
        out = [area]
        while len(out) < count + 1:
            parent = self.rng.choice(out)
            if parent.count("/") - area.count("/") >= 4:
                continue
            child = f"{parent}/{self.words.one()}"
            if child not in out:
                out.append(child)
        return out[1:] if count else out


def _sizes(
    rng: random.Random, kinds: Sequence[Kind], counts: Sequence[int], budget: int
) -> list[list[int]]:
    """Log-normal sizes per kind, scaled together so they sum to about ``budget`` bytes."""
    raw = [
        [k.median * math.exp(SIZE_SIGMA * rng.gauss()) for _ in range(n)]
        for k, n in zip(kinds, counts, strict=True)
    ]
    total = sum(sum(r) for r in raw) or 1.0
    scale = max(budget, 0) / total
    return [[int(min(max(s * scale, SMALLEST), LARGEST_REGULAR)) for s in sizes] for sizes in raw]


def _secret_files(rng: random.Random, w: _Words) -> list[tuple[str, str, str]]:
    """(path, what, content) of the planted fake secrets. Each value is joined from pieces here,
    so this file never contains one whole."""
    alnum = string.ascii_letters + string.digits
    upper = string.ascii_uppercase + string.digits

    def rand(chars: str, n: int) -> str:
        return "".join(rng.choices(chars, k=n))

    begin, end = "-----" + "BEGIN", "-----" + "END"
    key_body = "\n".join(rand(alnum + "+/", 64) for _ in range(6))
    pem = f"{begin} OPENSSH PRIVATE KEY-----\n{key_body}\n{end} OPENSSH PRIVATE KEY-----\n"
    aws = "AK" + "IA" + rand(upper, 16)
    github = "gh" + "p_" + rand(alnum, 36)
    slack = "xo" + "xb-" + rand(string.digits, 12) + "-" + rand(alnum, 24)
    openai = "s" + "k-" + rand(alnum, 48)
    db_password = rand(alnum, 24)
    return [
        (".env", "env file", f"DATABASE_URL=postgres://app:{db_password}@db:5432/app\nDEBUG=0\n"),
        ("deploy/keys/id_ed25519", "ssh private key", pem),
        (
            "src/app/settings_prod.py",
            "AWS access key id",
            f'"""Production settings."""\n\nREGION = "eu-west-1"\nAWS_ACCESS_KEY_ID = "{aws}"\n',
        ),
        (
            ".github/workflows/release.yml",
            "GitHub token",
            f"name: release\non: push\nenv:\n  {w.one().upper()}_TOKEN: {github}\n",
        ),
        (
            "web/src/notify.ts",
            "Slack token",
            f"export const slackClient = makeClient('{slack}');\n",
        ),
        (
            "docs/ops/llm-runbook.md",
            "OpenAI key",
            f"# LLM runbook\n\nThe staging key is `{openai}` until rotation.\n",
        ),
    ]


def _project_files(w: _Words, name: str) -> list[tuple[str, str]]:
    return [
        (
            "README.md",
            f"# {name}\n\n{w.sentence()} {w.sentence()}\n\n## Layout\n\n{w.sentence()}\n",
        ),
        ("LICENSE", "Permission is hereby granted, free of charge, to any person.\n" * 3),
        ("pyproject.toml", f'[project]\nname = "{name}"\nversion = "1.0.0"\n'),
        ("package.json", json.dumps({"name": name, "private": True}, indent=2) + "\n"),
        ("go.mod", f"module example.com/{name}\n\ngo 1.22\n"),
        ("Cargo.toml", f'[workspace]\nmembers = ["crates/*"]\n# {name}\n'),
        ("Makefile", "all:\n\tpython -m pytest\n"),
        (".gitignore", GITIGNORE),
        ("web/.gitignore", WEB_GITIGNORE),
    ]


def generate(
    root: Path, files: int = 20_000, total_bytes: int = 300 * MIB, seed: int = SEED
) -> GeneratedTree:
    """Write the tree below ``root`` (created if missing; it should be empty)."""
    if files < 20:
        raise ValueError("a generated tree needs at least 20 files")
    root.mkdir(parents=True, exist_ok=True)
    out = GeneratedTree(root)
    writer = _Writer(root, seed)
    rng, w = writer.rng, writer.words
    fixed: list[tuple[str, str, bytes]] = []  # (kind, path, content)
    for rel, text in _project_files(w, w.one()):
        fixed.append(("project", rel, text.encode()))
    if files >= 100:
        for rel, what, text in _secret_files(rng, w):
            fixed.append(("secret", rel, text.encode()))
            out.secrets.append((rel, what))
    # A few files the .gitignore rules leave out (a pack and git skip them; restic does not).
    ignored = [
        ("dist/app.bundle.min.js", writer.text("javascript", 60_000, "bundle")),
        ("web/node_modules/leftpad/index.js", writer.text("javascript", 900, "dependency")),
        ("web/coverage/lcov.info", writer.text("log", 4000, "coverage")),
        ("build/debug.log", writer.text("log", 3000, "build log")),
    ]
    for rel, data in ignored:
        fixed.append(("ignored", rel, data))
        out.ignored.append(rel)
    for _kind, rel, _data in fixed:
        writer.taken.add(rel)

    fixed_bytes = sum(len(data) for _, _, data in fixed)
    budget = total_bytes - fixed_bytes
    n_big = min((files - len(fixed)) // 1000, int(BIG_SHARE * budget / ((BIG_MIN + BIG_MAX) / 2)))
    big_sizes = [rng.randint(BIG_MIN, BIG_MAX) for _ in range(max(n_big, 0))]
    regular = files - len(fixed) - len(big_sizes)
    counts = [int(k.share * regular) for k in KINDS]
    counts[1] += regular - sum(counts)  # the rounding remainder goes to Python
    sizes = _sizes(rng, KINDS, counts, budget - sum(big_sizes))

    for kind_name, rel, data in fixed:
        writer.write(rel, data)
        out.add(kind_name, rel, len(data))
    for kind, kind_sizes in zip(KINDS, sizes, strict=True):
        folders = writer.folders(kind.area, max(1, round(len(kind_sizes) / FILES_PER_DIR)))
        for size in kind_sizes:
            ext = rng.choice(kind.extensions)
            rel = writer.name(rng.choice(folders), kind, ext)
            if kind.language is None:
                data = writer.binary(ext, size)
            else:
                data = writer.text(kind.language, size, rel)
            writer.write(rel, data)
            out.add(kind.name, rel, len(data))
    for i, size in enumerate(big_sizes):
        folder, ext, language = BIG_KINDS[i % len(BIG_KINDS)]
        rel = writer.name(folder, Kind("big", folder, language, (ext,), 0, 0, "kebab"), ext)
        data = writer.binary(ext, size) if language is None else writer.text(language, size, rel)
        writer.write(rel, data)
        out.add("big", rel, len(data))
        out.big.append(rel)
    set_fixed_mtimes(root)
    out.paths.sort(key=lambda p: p.encode())
    out.secrets.sort(key=lambda s: s[0].encode())
    return out


def set_fixed_mtimes(root: Path, rels: Sequence[str] | None = None) -> None:
    """Give every file and folder below ``root`` (or just ``rels``) the fixed mtime."""
    stamp = (FIXED_MTIME_NS, FIXED_MTIME_NS)
    if rels is not None:
        for rel in rels:
            os.utime(root / rel, ns=stamp, follow_symlinks=False)
        return
    for folder, dirs, names in os.walk(root, topdown=False):
        for name in [*names, *dirs]:
            os.utime(os.path.join(folder, name), ns=stamp, follow_symlinks=False)
    os.utime(root, ns=stamp)


# --- changing a tree and putting it back ----------------------------------------------------------


@dataclass(slots=True)
class Edits:
    """Files changed in place by `edit_files`; `restore` puts the old bytes and mtime back."""

    root: Path
    originals: dict[str, bytes] = field(default_factory=dict)

    def restore(self) -> None:
        for rel, data in self.originals.items():
            (self.root / rel).write_bytes(data)
        set_fixed_mtimes(self.root, sorted(self.originals))
        self.originals.clear()


def pick(paths: Sequence[str], fraction: float, seed: int) -> list[str]:
    """A deterministic sample of ``fraction`` of ``paths`` (at least one), sorted by bytes."""
    if not paths:
        return []
    ordered = sorted(paths, key=lambda p: p.encode())
    k = min(len(ordered), max(1, round(len(ordered) * fraction)))
    return sorted(random.Random(seed).sample(ordered, k), key=lambda p: p.encode())


def edit_files(root: Path, rels: Sequence[str], tag: str) -> Edits:
    """Append one line naming ``tag`` to each file: new content, new digest, same path."""
    edits = Edits(root)
    line = f"\n# edited: {tag}\n".encode()
    for rel in rels:
        path = root / rel
        data = path.read_bytes()
        edits.originals[rel] = data
        path.write_bytes(data + line)
    return edits


def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("dir", type=Path, help="where to write the tree (must not exist)")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=float, default=300.0, help="total size in MiB")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.dir.exists():
        parser.error(f"{args.dir} exists")
    tree = generate(args.dir, args.files, int(args.mb * MIB), args.seed)
    for kind, (n, size) in sorted(tree.by_kind.items()):
        print(f"{kind:<12}{n:>8,} files{size / MIB:>10,.1f} MiB")
    print(f"{'total':<12}{tree.files:>8,} files{tree.bytes / MIB:>10,.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
