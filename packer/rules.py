"""A tier rule, and the built-in ones (`DEFAULT_RULES`).

A rule gives the paths its globs match a tier, a reason, a weight class and whether the file is
required (`packer.tiers` classifies with rules, `packer.config` reads them from ``cas.toml`` and
appends these unless ``default_rules = false``). This module imports neither: both build on it.

The built-in rules are ordered so that what a file *is* beats where it looks like it belongs:
vendored, generated, lock, binary, data, fixture and locale files first (a README under
``node_modules/`` is still vendored), then the top-level README and agent guides, which outrank
everything, then changelogs, licenses, build scripts, examples, tests and benchmarks, then
documentation, project metadata and configuration, then source, and a final ``**`` for the rest.
The project's source weighs more than anything but the top-level README and agent guides; a
folder named ``doc`` or ``docs`` holds documentation only in document formats (a Go package
named ``doc`` is source).

A rule may also have an *age condition*: ``min_age_days`` and/or ``max_age_days``. Then it
matches only a path that is dated, at an age within those bounds (both inclusive). A path's
date is the first ``YYYY-MM-DD`` in its file name that is a calendar date (`path_date`:
``logs/2026-11-24.md``, ``notes/2026-11-24-standup.md``; never a file time), and its age is
the whole days from that date to the day the classifier is given (``now``, `age_days`). A
rule with an age condition never matches an undated path, a path dated after ``now``, or any
path when no ``now`` is given.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from cas.display import echoed
from cas.errors import UsageError

__all__ = ["DEFAULT_RULES", "NOT_CONTENT", "TIERS", "Rule", "age_days", "parse_day", "path_date"]

TIERS = ("high", "medium", "low")


@dataclass(frozen=True)
class Rule:
    globs: tuple[str, ...]
    tier: str  # high | medium | low
    reason: str
    required: bool
    priority: int | None  # None: by position in the list the rule is classified in
    index: int  # position in the list it was declared in ([[rules]], a scope's, the built-ins)
    origin: str  # "config", "default", or the module that made it ("memory")
    min_age_days: int | None = None  # the age condition: both None for a rule without one
    max_age_days: int | None = None

    @property
    def aged(self) -> bool:
        """Whether the rule has an age condition."""
        return self.min_age_days is not None or self.max_age_days is not None

    def accepts_age(self, age: int | None) -> bool:
        """Whether a path ``age`` days old (None: undated, or no day to count to) passes the
        rule's age condition; a rule without one accepts any."""
        if not self.aged:
            return True
        if age is None or age < 0:
            return False
        low = self.min_age_days or 0
        return low <= age and (self.max_age_days is None or age <= self.max_age_days)


# A date in a file name: four digits, two, two, not inside a longer run of digits.
_DATE = re.compile(r"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})(?![0-9])")


def path_date(path: str) -> dt.date | None:
    """The first ``YYYY-MM-DD`` in the file name of ``path`` that is a calendar date, or None."""
    name = path.rstrip("/").rpartition("/")[2]
    for m in _DATE.finditer(name):
        try:
            return dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            continue
    return None


def parse_day(text: str) -> dt.date:
    """The calendar date ``text`` writes as ``YYYY-MM-DD`` (a ``--now``); `UsageError` else."""
    m = _DATE.fullmatch(text)
    if m is not None:
        try:
            return dt.date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            pass
    raise UsageError(f"date {echoed(text)} is not a calendar date written YYYY-MM-DD")


def age_days(path: str, now: dt.date | None) -> int | None:
    """Whole days from the date of ``path`` to ``now``: negative for a later date, None for an
    undated path or no ``now``."""
    if now is None:
        return None
    date = path_date(path)
    return None if date is None else (now - date).days


_JS = ("ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs")


def _ext(*extensions: str) -> tuple[str, ...]:
    return tuple(f"*.{e}" for e in extensions)


_DOC_EXTENSIONS = ("md", "markdown", "rst", "txt", "adoc", "asciidoc", "org", "rdoc", "textile")
_SOURCE_EXTENSIONS = (
    *("py", "pyi", "pyx", *_JS),
    *("go", "rs", "java", "kt", "kts", "scala", "groovy", "clj", "cljs"),
    *("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "ipp", "m", "mm", "cs", "fs", "vb"),
    *("rb", "rake", "php", "swift", "dart", "lua", "pl", "pm", "r", "R", "jl", "zig", "nim"),
    *("ex", "exs", "erl", "hrl", "hs", "ml", "mli", "elm", "sol", "v"),
    *("sh", "bash", "zsh", "fish", "ps1", "bat", "cmd"),
    *("sql", "graphql", "gql", "proto", "thrift"),
    *("html", "htm", "css", "scss", "sass", "less", "vue", "svelte", "astro"),
)
_METADATA = (
    *("/pyproject.toml", "/setup.cfg", "/package.json", "/go.mod", "/Cargo.toml"),
    *("/*.gemspec", "/Gemfile", "/pom.xml", "/build.gradle", "/build.gradle.kts", "/*.csproj"),
    *("/composer.json", "/deno.json", "/tsconfig.json", "/*.cabal", "/mix.exs", "/Package.swift"),
    "/CMakeLists.txt",
)

# (globs, tier, reason, weight class), in match order.
_DEFAULTS: tuple[tuple[tuple[str, ...], str, str, int], ...] = (
    (
        ("**/node_modules/**", "vendor/**", "**/vendor/**", "third_party/**", "**/third_party/**"),
        "low",
        "vendored",
        -4,
    ),
    (
        (
            "package-lock.json",
            "npm-shrinkwrap.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            "bun.lockb",
            "poetry.lock",
            "Pipfile.lock",
            "pdm.lock",
            "uv.lock",
            "Cargo.lock",
            "go.sum",
            "Gemfile.lock",
            "composer.lock",
            "packages.lock.json",
            "flake.lock",
        ),
        "low",
        "lock file",
        -4,
    ),
    (
        (
            "dist/**",
            "build/**",
            "*.min.js",
            "*.min.css",
            "*.map",
            "*_pb2.py",
            "*_pb2_grpc.py",
            "*.pb.go",
            "*.generated.*",
            "*.egg-info/",
            "__pycache__/",
            "PKG-INFO",
        ),
        "low",
        "generated",
        -4,
    ),
    (
        _ext(
            *("png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tif", "tiff", "svg", "psd"),
            *("mp3", "wav", "ogg", "flac", "mp4", "mov", "avi", "mkv", "webm"),
            *("zip", "tar", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "jar", "war", "whl"),
            *("ttf", "otf", "woff", "woff2", "eot", "pdf"),
            *("exe", "bin", "o", "a", "obj", "lib", "so", "dll", "dylib", "wasm", "class"),
            *("pyc", "pyo", "pyd"),
        ),
        "low",
        "binary",
        -4,
    ),
    (
        _ext(
            *("csv", "tsv", "parquet", "jsonl", "ndjson", "sqlite", "sqlite3", "db"),
            *("pkl", "pickle", "npy", "npz", "h5", "hdf5", "feather", "arrow", "avro"),
        ),
        "low",
        "data",
        -4,
    ),
    (("**/fixtures/**", "**/testdata/**", "**/__snapshots__/**"), "low", "fixture", -4),
    (
        ("*.po", "*.pot", "*.mo", "**/locale/**", "**/locales/**", "**/LC_MESSAGES/**"),
        "low",
        "locale catalog",
        -4,
    ),
    (("*wordlist*", "*word_list*", "*.dic", "*.aff"), "low", "word list", -4),
    (("/README*", "/readme*", "/Readme*"), "high", "project overview", 4),
    (
        ("/AGENTS.md", "/CLAUDE.md", "/GEMINI.md", "/.github/copilot-instructions.md"),
        "high",
        "agent guide",
        4,
    ),
    (
        (
            "CHANGELOG*",
            "CHANGES*",
            "HISTORY*",
            "NEWS*",
            "RELEASE*",
            "**/releases/**",
            "**/release-notes/**",
            "**/changelog.d/**",
            "**/changelog/**",
        ),
        "medium",
        "changelog",
        -4,
    ),
    (("LICENSE*", "LICENCE*", "COPYING*", "NOTICE*", "AUTHORS*"), "low", "license", -4),
    (
        (
            "Makefile",
            "make.bat",
            "*.mk",
            "/docs/conf.py",
            "/doc/conf.py",
            "noxfile.py",
            "tox.ini",
            "/setup.py",
            "Dockerfile*",
            "*.dockerfile",
            "Containerfile",
            "Justfile",
            "Rakefile",
            "Procfile",
            "/.github/**",
            "/.gitlab-ci.yml",
            "/.travis.yml",
            "/.circleci/**",
            "Jenkinsfile",
            "/.pre-commit-config.yaml",
            "/.readthedocs.y*ml",
            "/codecov.y*ml",
            ".editorconfig",
            ".gitattributes",
            "/scripts/**",
        ),
        "medium",
        "build script",
        -3,
    ),
    (
        ("**/examples/**", "**/example/**", "**/_examples/**", "**/samples/**", "**/demo/**"),
        "high",
        "example",
        -2,
    ),
    (
        (
            "**/tests/**",
            "**/test/**",
            "**/__tests__/**",
            # a package's test harness weighs as tests do, even inside the source tree
            "**/testing/**",
            "**/testutil/**",
            "**/testutils/**",
            "**/test_utils/**",
            "**/testhelpers/**",
            "**/test_helpers/**",
            "spec/**",
            "test_*.py",
            "*_test.py",
            "conftest.py",
            "*_test.go",
            *(f"*.{kind}.{e}" for kind in ("test", "spec") for e in _JS),
            "*_spec.rb",
            "*Test.java",
            "*Tests.java",
            "*Test.kt",
            "*Tests.cs",
        ),
        "high",
        "test",
        -3,
    ),
    (("/bench/**", "/benchmarks/**", "/benchmark/**"), "high", "benchmark", -3),
    (("/DESIGN*", "/ARCHITECTURE*", "/OVERVIEW*"), "high", "design document", 1),
    (("/CONTRIBUTING*",), "high", "contributor guide", 0),
    (_METADATA, "high", "project metadata", 1),
    (("requirements*.txt", "constraints*.txt", "CMakeLists.txt"), "high", "configuration", -2),
    (_ext(*_DOC_EXTENSIONS), "high", "documentation", -1),
    (_ext(*_SOURCE_EXTENSIONS), "high", "source", 0),
    (
        (
            *_ext("toml", "yaml", "yml", "json", "json5", "jsonc", "ini", "cfg", "conf", "xml"),
            *("*.gradle", "*.bazel", "BUILD", "Gemfile", ".env.example"),
        ),
        "high",
        "configuration",
        -2,
    ),
    (("**",), "medium", "other", -4),
)
# Rules whose matches are not content at all: the pack's own configuration and ignore files.
NOT_CONTENT = ("/cas.toml", ".gitignore", ".casignore")

DEFAULT_RULES: tuple[Rule, ...] = tuple(
    Rule(globs, tier, reason, False, weight, i, "default")
    for i, (globs, tier, reason, weight) in enumerate(_DEFAULTS)
)
