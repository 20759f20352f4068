"""What a path is to a pack: ordered rules, the first match decides.

A rule gives the paths it matches a *tier* (the most a pack may show of them: ``high`` in full,
``medium`` a summary, ``low`` only a line in the omitted index), a *reason* (what the file is, as
a render says it), a *weight* class and whether the file is *required*. Fitting
(`packer.fitting`) weighs every file by its rating (`packer.rating`) times two to the power of
its weight, then chooses on value per token; a required file gets at least its tier.

A scope classifies with its own rules, then the configured global ones, then `DEFAULT_RULES`
(unless ``default_rules = false``; `packer.config` appends them to `Config.rules`). The built-in
rules are ordered so that what a file *is* beats where it looks like it belongs: vendored,
generated, lock, binary, data, fixture and locale files first (a README under ``node_modules/``
is still vendored), then the top-level README and agent guides, which outrank everything, then
changelogs, licenses, build scripts, examples, tests and benchmarks, then documentation, project
metadata and configuration, then source, and a final ``**`` for the rest. The project's source
weighs more than anything but the top-level README and agent guides; a folder named ``doc`` or
``docs`` holds documentation only in document formats (a Go package named ``doc`` is source).

A user rule without an explicit ``priority`` weighs by its tier: ``high`` 2, ``medium`` 0,
``low`` -2; an explicit priority is the weight class itself (-4 to 4).
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
# A user rule's weight class by its tier, when it gives no priority.
TIER_WEIGHTS = {"high": 2, "medium": 0, "low": -2}
MIN_WEIGHT, MAX_WEIGHT = -4, 4


@dataclass(frozen=True)
class TierDecision:
    tier: str  # the most a pack may show: high (in full), medium (a summary), low (a line)
    reason: str
    required: bool
    weight: int  # the weight class, MIN_WEIGHT..MAX_WEIGHT
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
        self._decisions: dict[int, TierDecision] = {}  # one shared object per rule

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
        """The decision of the rule at ``index`` (``len(rules)``: no rule matched). Decisions
        are immutable, so every path a rule decides shares one object."""
        index = min(index, len(self.rules))
        known = self._decisions.get(index)
        if known is None:
            known = self._decisions[index] = self._decision(index)
        return known

    def _decision(self, index: int) -> TierDecision:
        if index >= len(self.rules):
            return TierDecision("low", NO_MATCH_REASON, False, MIN_WEIGHT, len(self.rules))
        rule = self.rules[index]
        weight = TIER_WEIGHTS[rule.tier] if rule.priority is None else rule.priority
        weight = max(MIN_WEIGHT, min(MAX_WEIGHT, weight))
        return TierDecision(rule.tier, rule.reason, rule.required, weight, index)

    def describe(self, index: int) -> str:
        """The rule at ``index`` in words: where it comes from, its globs, tier and weight."""
        if index >= len(self.rules):
            return NO_MATCH_REASON
        rule = self.rules[index]
        d = self.decision_at(index)
        where = "built-in rule" if rule.origin == "default" else "configured rule"
        required = ", required" if rule.required else ""
        globs = ", ".join(rule.globs[:6]) + (", ..." if len(rule.globs) > 6 else "")
        return (
            f"{where} #{rule.index + 1} ({globs}): {rule.reason!r}, at most {rule.tier}, "
            f"weight class {d.weight}{required}"
        )

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
