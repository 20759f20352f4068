"""Which tier a path gets: ordered rules, the first match decides.

A scope classifies with its own rules, then the configured global ones, then `DEFAULT_RULES`
(unless ``default_rules = false``; `packer.config` appends them to `Config.rules`). The built-in
rules are ordered so that what a file *is* beats where it looks like it belongs: vendored,
generated, lock, binary and data files first (a README under ``node_modules/`` is still
vendored), then fixtures (their ``.md`` files are test data), then the project's overview and
``docs/``, then tests (before the generic documentation and source rules, so
``tests/test_x.py`` is a test and ``tests/data.txt`` is not documentation), then source, then
configuration, and a final ``**`` for the rest.

A decision's `priority` is the rule's explicit priority, else minus the rule's position in the
combined list, so earlier rules rank higher (see `packer.config`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packer.config import TIERS, Config, Rule, Scope, glob_spec

__all__ = [
    "DEFAULT_RULES",
    "TIER_ORDER",
    "TierDecision",
    "TierRules",
    "demote",
    "rules_for_scope",
]

TIER_ORDER = {"high": 2, "medium": 1, "low": 0}
NO_MATCH_REASON = "no rule matched"


_JS = ("ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs")


def _ext(*extensions: str) -> tuple[str, ...]:
    return tuple(f"*.{e}" for e in extensions)


# (globs, tier, reason), in match order.
_DEFAULTS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("**/node_modules/**", "vendor/**", "third_party/**"), "low", "vendored"),
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
        ),
        "low",
        "generated",
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
    ),
    (
        _ext(
            *("csv", "tsv", "parquet", "jsonl", "ndjson", "sqlite", "sqlite3", "db"),
            *("pkl", "pickle", "npy", "npz", "h5", "hdf5", "feather", "arrow", "avro"),
        ),
        "low",
        "data",
    ),
    (("**/fixtures/**", "**/testdata/**", "**/__snapshots__/**"), "low", "fixture"),
    (("README*", "DESIGN*", "ARCHITECTURE*", "OVERVIEW*"), "high", "project overview"),
    (("AGENTS*", "CLAUDE.md", "CONTRIBUTING*"), "high", "contributor guide"),
    (("CHANGELOG*", "CHANGES*", "HISTORY*", "NEWS*"), "medium", "changelog"),
    (("LICENSE*", "LICENCE*", "COPYING*", "NOTICE*"), "low", "license"),
    (("docs/**", "doc/**"), "high", "documentation"),
    (
        (
            "**/tests/**",
            "**/test/**",
            "__tests__/",
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
        "low",
        "test",
    ),
    (("requirements*.txt", "constraints*.txt", "CMakeLists.txt"), "medium", "configuration"),
    (_ext("md", "markdown", "rst", "txt", "adoc", "org"), "high", "documentation"),
    (
        _ext(
            *("py", "pyi", "pyx", *_JS),
            *("go", "rs", "java", "kt", "kts", "scala", "groovy", "clj", "cljs"),
            *("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "cs", "fs", "vb"),
            *("rb", "php", "swift", "dart", "lua", "pl", "pm", "r", "R", "jl", "zig", "nim"),
            *("ex", "exs", "erl", "hrl", "hs", "ml", "mli", "elm", "sol", "v"),
            *("sh", "bash", "zsh", "fish", "ps1", "bat", "cmd"),
            *("sql", "graphql", "gql", "proto", "thrift"),
            *("html", "htm", "css", "scss", "sass", "less", "vue", "svelte", "astro"),
        ),
        "medium",
        "source",
    ),
    (
        (
            *_ext("toml", "yaml", "yml", "json", "json5", "ini", "cfg", "conf", "xml"),
            *("Makefile", "*.mk", "Dockerfile", "*.dockerfile", "Containerfile"),
            *("Justfile", "Rakefile", "Gemfile", "Procfile", "*.gradle", "*.bazel", "BUILD"),
            *(".editorconfig", ".gitattributes", ".gitignore", ".env.example"),
        ),
        "medium",
        "configuration",
    ),
    (("**",), "low", "other"),
)

DEFAULT_RULES: tuple[Rule, ...] = tuple(
    Rule(globs, tier, reason, False, None, i, "default")
    for i, (globs, tier, reason) in enumerate(_DEFAULTS)
)


@dataclass(frozen=True)
class TierDecision:
    tier: str
    reason: str
    required: bool
    priority: int
    rule_index: int  # position in the combined list; len(list) when no rule matched


class TierRules:
    """An ordered list of rules with each rule's globs compiled once."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        for rule in rules:
            if rule.tier not in TIERS:
                raise ValueError(f"rule {rule.globs!r} has unknown tier {rule.tier!r}")
        self.rules = tuple(rules)
        # each rule's globs: one regular expression when none is a negation (packer.wildmatch)
        self._specs = [glob_spec(rule.globs) for rule in self.rules]
        self._memo: dict[str, TierDecision] = {}

    def classify(self, path: str) -> TierDecision:
        """The first matching rule's decision for a root-relative POSIX path.

        A path no rule matches (possible only with the built-in rules turned off) is LOW.
        Decisions are remembered: a pack classifies each path once per target.
        """
        known = self._memo.get(path)
        if known is None:
            known = self._memo[path] = self._classify(path)
        return known

    def _classify(self, path: str) -> TierDecision:
        for index, spec in enumerate(self._specs):
            if spec.match_file(path):
                return self.decision_at(index)
        return self.decision_at(len(self.rules))

    def decision_at(self, index: int) -> TierDecision:
        """The decision of the rule at ``index`` (``len(rules)``: no rule matched)."""
        if index >= len(self.rules):
            n = len(self.rules)
            return TierDecision("low", NO_MATCH_REASON, False, -n, n)
        rule = self.rules[index]
        priority = -index if rule.priority is None else rule.priority
        return TierDecision(rule.tier, rule.reason, rule.required, priority, index)

    def remember(self, path: str, index: int) -> None:
        """Record a decision known from an earlier run (same rules), sparing the match."""
        self._memo[path] = self.decision_at(index)


def rules_for_scope(config: Config, scope: Scope) -> TierRules:
    """The rules a scope classifies with: its own, then the global (and built-in) ones."""
    return TierRules((*scope.rules, *config.rules))


def demote(tier: str) -> str | None:
    """The next tier down: high -> medium -> low -> None."""
    if tier not in TIER_ORDER:
        raise ValueError(f"unknown tier {tier!r}")
    return {"high": "medium", "medium": "low", "low": None}[tier]
