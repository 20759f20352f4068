"""The project configuration: which scopes to pack, with which budgets and tier rules.

Where it lives: ``cas.toml`` at the project root, or the ``[tool.cas]`` table of
``pyproject.toml``. When both exist, ``cas.toml`` wins and ``pyproject.toml`` is not read. With
neither, or a ``pyproject.toml`` without ``[tool.cas]``, the defaults below apply: one scope named
``repo`` rooted at ``.``, the built-in tier rules, a 10000/12000 budget and ``o200k_base``.

The format (every key is optional unless marked)::

    [pack]
    tokenizer = "o200k_base"                  # or "cl100k_base"
    budget = { target = 10000, max = 12000 }  # for scopes without targets; max defaults to target
    exclude = ["*.min.js"]                    # globs no scope packs
    default_rules = true                      # append the built-in tier rules to the rules below
    history = 200                             # commits of git history the rating reads; 0: none

    [[rules]]                 # tried in order; the first match decides
    glob = "docs/**"          # or globs = ["docs/**", "!docs/old/**"]; exactly one of the two
    tier = "high"             # required: high | medium | low
    reason = "canonical docs" # shown for the file; defaults to the globs
    required = false          # a required file is never demoted to fit a budget
    priority = 2              # weight class -4..4 (each step doubles what its files are worth
                              # to the fit); default by tier: high 2, medium 0, low -2
    min_age_days = 0          # an age condition (either bound, or both, inclusive, 0..36500):
    max_age_days = 7          # only dated paths of that age at --now (packer.rules)

    [scopes.core]             # one pack per scope and target; names: [a-z0-9][a-z0-9_-]*, <= 64
    roots = ["cas", "packer"] # required, non-empty: directories or files; "." is the whole tree
    include = ["**/*.py"]     # only paths matching these (default: everything under the roots)
    exclude = ["**/fixtures/**"]

    [scopes.core.targets.claude]  # a budget per target; target names follow the scope rule
    target = 10000
    max = 12000

    [[scopes.core.rules]]     # rules for this scope only, tried before the global ones
    glob = "cas/errors.py"
    tier = "high"

    [load]                    # what `cas load QUERY` draws on (packer.load)
    core = ["core.claude"]    # packs always drawn on (default: every pack of the project)
    budget = { target = 11000, max = 12000 }  # the total, core included (this is the default)
    fallback = { max = 24000 }  # when the query's names are still not shown (default: 2 x max)

    [load.domains.storage]    # a domain: packs the query's words bring in
    triggers = ["lmdb", "blob", "gc"]  # words or identifiers, matched whole, ignoring case
    packs = ["engine.claude"]

    [memory]                  # agent memory (`cas mem pack`, `cas mem prune`; memory.ages)
    full_days = 7             # a daily log this many days old or younger: in full
    summary_days = 30         # older, up to this many days: a summary
    keep_days = 90            # older, up to this many days: a pointer; older: pruned
    entity_days = 7           # a fact last used longer ago than this is pruned ...
    entity_uses = 10          # ... unless it was used more than this many times
    recent_changes_share = 20 # % of a memory pack's target for 90_recent_changes.md (0: none)
    [memory.targets.claude]   # a memory pack's budget per target (default: common 2500/3000,
    target = 10000            # chatgpt 5000/6000, claude 10000/12000); given, they replace
    max = 12000               # the defaults

All globs are gitignore patterns (git's wildmatch, `packer.wildmatch`) matched against POSIX paths
relative to the project root, whatever the scope's roots: ``*.py`` matches at any depth,
``docs/**`` only at the top, a ``!`` line re-includes what an earlier line of the same list
matched. A scope packs the paths under one of its roots that match its ``include`` (when given)
and neither its ``exclude`` nor ``[pack].exclude``. Scopes must not overlap (`assign_scopes`).
A scope without targets gets one unnamed target (pack ``manifests/<scope>.pack``) with the
``[pack]`` budget. Without any ``[scopes]`` the single ``repo`` scope applies.

A rule's ``priority`` is a weight class from -4 to 4 (`packer.tiers`): the fit weighs a file by
its rating times two to that power. Without one, a rule weighs by its tier (high 2, medium 0,
low -2). A rule's tier is the most a pack may show of its files; ``required`` makes it the least.

Numbers are bounded: a budget is 1 to `MAX_NUMBER` (10^9) tokens (manifests keep them as bounded
msgpack integers, and no tokenizer count comes near).

Loading is strict: an unknown key, a wrong type, a glob pathspec rejects or that matches nothing,
a tier other than the three, a budget max below its target, a number out of its range, an empty
``roots`` or a root leaving the tree is a `ConfigError` naming the file, the dotted key (inside
``pyproject.toml`` prefixed with ``tool.cas.``; items of an array are numbered from 1, as in
``rules[2].tier``) and what is allowed. TOML syntax errors name the line; a document nested too
deeply for the parser is refused naming the file. TOML itself refuses a scope declared twice.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from cas.display import echoed
from cas.errors import ConfigError
from packer.project import CONFIG_FILE, PYPROJECT_FILE, find_project_root, parse_toml, tool_cas
from packer.rules import DEFAULT_RULES, TIERS, Rule
from packer.tokens import SUPPORTED_ENCODINGS
from packer.wildmatch import GlobList, parse_line

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_BUDGET",
    "DEFAULT_SCOPE",
    "DEFAULT_TOKENIZER",
    "MAX_NUMBER",
    "PYPROJECT_FILE",
    "TIERS",
    "Budget",
    "Config",
    "MemoryConfig",
    "Rule",
    "Scope",
    "Target",
    "assign_scopes",
    "default_config",
    "find_project_root",
    "glob_problem",
    "glob_spec",
    "load_config",
]

DEFAULT_TOKENIZER = "o200k_base"
DEFAULT_SCOPE = "repo"
# The largest budget (tokens) or priority magnitude: far above any context window, far below
# the 64-bit integers msgpack encodes.
MAX_NUMBER = 10**9
# A rule's priority is a weight class (packer.tiers): each step doubles what its files are worth.
MIN_PRIORITY, MAX_PRIORITY = -4, 4
# Commits of git history the rating reads by default (packer.history), and at most.
DEFAULT_HISTORY, MAX_HISTORY = 200, 10_000

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_NAME_MAX = 64
_NAME_RULE = "lowercase letters, digits, '_' and '-', starting with a letter or digit, at most 64"
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Budget:
    target: int
    max: int


@dataclass(frozen=True)
class Target:
    name: str  # "" for the implicit target of a scope without targets
    budget: Budget


@dataclass(frozen=True)
class Scope:
    name: str
    roots: tuple[str, ...]  # normalized POSIX, relative to the root; "." is everything
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    targets: tuple[Target, ...]  # never empty
    rules: tuple[Rule, ...]


@dataclass(frozen=True)
class Domain:
    """Packs a query's words bring in (`cas load`): a trigger is a word or identifier."""

    name: str
    triggers: tuple[str, ...]
    packs: tuple[str, ...]


@dataclass(frozen=True)
class LoadConfig:
    """``[load]``: what `cas load` draws on. ``core`` empty: every pack of the project."""

    core: tuple[str, ...] = ()
    budget: Budget = Budget(target=11_000, max=12_000)  # DEFAULT_LOAD_BUDGET
    fallback_max: int = 0  # 0: twice the budget's max
    domains: tuple[Domain, ...] = ()
    configured: bool = False  # a [load] table was given


DEFAULT_MEMORY_TARGETS = (
    Target("common", Budget(target=2_500, max=3_000)),
    Target("chatgpt", Budget(target=5_000, max=6_000)),
    Target("claude", Budget(target=10_000, max=12_000)),
)
# The most days an age setting ([memory], a rule's age condition) may be: a century.
MAX_DAYS = 36_500
# A rule's age condition (packer.rules): both bounds inclusive, in whole days.
AGE_KEYS = ("min_age_days", "max_age_days")


@dataclass(frozen=True)
class MemoryConfig:
    """``[memory]``: the age tiers of daily logs and the retention (`memory.ages`), and the
    memory packs' budgets. Ages are whole days from a log's date to the day asked about."""

    full_days: int = 7
    summary_days: int = 30
    keep_days: int = 90
    targets: tuple[Target, ...] = DEFAULT_MEMORY_TARGETS
    # Entity pruning (`memory.usage`): a fact last used more than ``entity_days`` ago goes,
    # unless it was used more than ``entity_uses`` times.
    entity_days: int = 7
    entity_uses: int = 10
    # The percentage of a target's budget a memory pack's recent changes may take (memory.recent)
    recent_changes_share: int = 20


@dataclass(frozen=True)
class Config:
    source: str | None  # the file read, None for the defaults
    root: str
    tokenizer: str
    budget: Budget
    exclude: tuple[str, ...]
    rules: tuple[Rule, ...]  # the configured rules, then the built-in ones unless turned off
    scopes: tuple[Scope, ...]  # in declaration order; never empty
    history: int = 0  # commits of git history the rating reads (0: none; packer.history)
    load: LoadConfig = field(default_factory=LoadConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)


DEFAULT_BUDGET = Budget(target=10_000, max=12_000)
DEFAULT_LOAD_BUDGET = Budget(target=11_000, max=12_000)


# --- globs ---------------------------------------------------------------------------------------


def glob_problem(glob: str) -> str | None:
    """Why `glob` is not a usable gitignore pattern, or None when it is."""
    if not glob.strip():
        return "is blank"
    if glob != glob.strip():
        return "has leading or trailing whitespace"
    # pathspec (and the regex engines it loads) only when a configuration's globs are checked
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    try:
        pattern = GitIgnoreSpecPattern(glob)
    except re.error as exc:
        # the position in exc points into pathspec's translated regex, not into the glob
        return f"is not a valid gitignore pattern ({exc.msg})"
    except ValueError as exc:
        return f"is not a valid gitignore pattern ({exc})"
    if pattern.include is None or parse_line(glob) is None:
        return "matches nothing (a comment, '/', an unclosed '[' or an unknown '[:class:]')"
    return None


def glob_spec(globs: Iterable[str]) -> GlobList:
    """One matcher for a list of gitignore patterns: the last matching line decides. Matching
    takes time proportional to glob times path for any glob (see `packer.wildmatch`)."""
    return GlobList(globs)


# --- loading -------------------------------------------------------------------------------------


def _key(*parts: str | int) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        else:
            shown = part if _BARE_KEY.fullmatch(part) else '"' + part.replace('"', '\\"') + '"'
            out += ("." if out else "") + shown
    return out


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _shown(number: int) -> str:
    text = str(number)
    return text if len(text) <= 24 else f"{text[:10]}... ({len(text)} digits)"


class _Reader:
    """Type-checks one TOML document, raising ConfigError with the file and the dotted key."""

    def __init__(self, file: str, prefix: tuple[str, ...]) -> None:
        self.file = file
        self.prefix = prefix

    def fail(self, key: tuple[str | int, ...], problem: str) -> NoReturn:
        raise ConfigError(self.file, _key(*self.prefix, *key), problem)

    def table(
        self, value: object, key: tuple[str | int, ...], allowed: Sequence[str] | None
    ) -> Mapping[str, object]:
        if not isinstance(value, dict):
            self.fail(key, f"must be a table, not {_type_name(value)}")
        if allowed is not None:
            for name in value:
                if name not in allowed:
                    self.fail((*key, name), f"unknown key; allowed here: {', '.join(allowed)}")
        return value

    def string(self, value: object, key: tuple[str | int, ...]) -> str:
        if not isinstance(value, str):
            self.fail(key, f"must be a string, not {_type_name(value)}")
        return value

    def boolean(self, value: object, key: tuple[str | int, ...]) -> bool:
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, not {_type_name(value)}")
        return value

    def integer(self, value: object, key: tuple[str | int, ...]) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be an integer, not {_type_name(value)}")
        if not -MAX_NUMBER <= value <= MAX_NUMBER:
            self.fail(key, f"must be from {-MAX_NUMBER} to {MAX_NUMBER}, got {_shown(value)}")
        return value

    def positive(self, value: object, key: tuple[str | int, ...]) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_NUMBER:
            self.fail(key, f"must be at most {MAX_NUMBER} tokens, got {_shown(value)}")
        number = self.integer(value, key)
        if number < 1:
            self.fail(key, f"must be a positive integer, got {number}")
        return number

    def strings(self, value: object, key: tuple[str | int, ...]) -> list[str]:
        if not isinstance(value, list):
            self.fail(key, f"must be an array of strings, not {_type_name(value)}")
        return [self.string(item, (*key, i)) for i, item in enumerate(value)]

    def globs(self, value: object, key: tuple[str | int, ...]) -> tuple[str, ...]:
        globs = self.strings(value, key)
        for i, glob in enumerate(globs):
            problem = glob_problem(glob)
            if problem is not None:
                self.fail((*key, i), f"glob {echoed(glob)} {problem}")
        return tuple(globs)

    def name(self, value: str, key: tuple[str | int, ...], what: str) -> str:
        if len(value) > _NAME_MAX or not _NAME.fullmatch(value):
            self.fail(
                key, f"{what} name {echoed(value)} is not allowed: use {_NAME_RULE} characters"
            )
        return value

    def budget(self, value: object, key: tuple[str | int, ...]) -> Budget:
        table = self.table(value, key, ("target", "max"))
        if "target" not in table:
            self.fail(key, "needs a 'target' (tokens), and optionally a 'max' (default: target)")
        target = self.positive(table["target"], (*key, "target"))
        maximum = self.positive(table.get("max", target), (*key, "max"))
        if maximum < target:
            self.fail((*key, "max"), f"must be at least the target ({target}), got {maximum}")
        return Budget(target=target, max=maximum)

    def rules(self, value: object, key: tuple[str | int, ...]) -> tuple[Rule, ...]:
        if not isinstance(value, list):
            self.fail(key, f"must be an array of tables ([[rules]]), not {_type_name(value)}")
        return tuple(self.rule(item, (*key, i), i) for i, item in enumerate(value))

    def rule(self, value: object, key: tuple[str | int, ...], index: int) -> Rule:
        table = self.table(
            value,
            key,
            ("glob", "globs", "tier", "reason", "required", "priority", *AGE_KEYS),
        )
        if ("glob" in table) == ("globs" in table):
            self.fail(key, "needs exactly one of 'glob' (a string) or 'globs' (an array)")
        if "glob" in table:
            glob = self.string(table["glob"], (*key, "glob"))
            problem = glob_problem(glob)
            if problem is not None:
                self.fail((*key, "glob"), f"glob {echoed(glob)} {problem}")
            globs: tuple[str, ...] = (glob,)
        else:
            globs = self.globs(table["globs"], (*key, "globs"))
            if not globs:
                self.fail((*key, "globs"), "must hold at least one glob")
        if all(g.startswith("!") for g in globs):
            self.fail(key, "needs at least one glob not starting with '!'")
        if "tier" not in table:
            self.fail(key, f"needs a 'tier': one of {', '.join(TIERS)}")
        tier = self.string(table["tier"], (*key, "tier"))
        if tier not in TIERS:
            self.fail((*key, "tier"), f"unknown tier {echoed(tier)}; use one of {', '.join(TIERS)}")
        reason = self.string(table.get("reason", ", ".join(globs)), (*key, "reason"))
        required = self.boolean(table.get("required", False), (*key, "required"))
        priority = None
        if "priority" in table:
            priority = self.integer(table["priority"], (*key, "priority"))
            if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
                self.fail(
                    (*key, "priority"),
                    f"must be from {MIN_PRIORITY} to {MAX_PRIORITY} (a weight class: each step "
                    f"doubles what the files it matches are worth), got {priority}",
                )
        ages = [self.days(table[name], (*key, name)) if name in table else None
                for name in AGE_KEYS]  # fmt: skip
        if ages[0] is not None and ages[1] is not None and ages[1] < ages[0]:
            self.fail(
                (*key, "max_age_days"), f"must be at least min_age_days ({ages[0]}), got {ages[1]}"
            )
        return Rule(globs, tier, reason, required, priority, index, "config", ages[0], ages[1])

    def days(self, value: object, key: tuple[str | int, ...]) -> int:
        number = self.integer(value, key)
        if not 0 <= number <= MAX_DAYS:
            self.fail(key, f"must be from 0 to {MAX_DAYS} days, got {number}")
        return number

    def root(self, value: str, key: tuple[str | int, ...]) -> str:
        text = unicodedata.normalize("NFC", value)
        if not text or text.startswith("/") or "\\" in text or ".." in text.split("/"):
            self.fail(
                key,
                f"root {echoed(value)} must be a non-empty POSIX path inside the project root, "
                "relative to it ('.' for the whole tree), without '..' or backslashes",
            )
        return posixpath.normpath(text)

    def scope(self, name: str, value: object, pack_budget: Budget) -> Scope:
        key: tuple[str | int, ...] = ("scopes", name)
        self.name(name, key, "scope")
        table = self.table(value, key, ("roots", "include", "exclude", "targets", "rules"))
        if "roots" not in table:
            self.fail(key, "needs 'roots': an array of directories or files ('.' for all)")
        roots = self.strings(table["roots"], (*key, "roots"))
        if not roots:
            self.fail((*key, "roots"), "must name at least one directory or file ('.' for all)")
        normalized = [self.root(r, (*key, "roots", i)) for i, r in enumerate(roots)]
        include = self.globs(table.get("include", []), (*key, "include"))
        exclude = self.globs(table.get("exclude", []), (*key, "exclude"))
        targets = []
        for tname, tvalue in self.table(table.get("targets", {}), (*key, "targets"), None).items():
            tkey = (*key, "targets", tname)
            targets.append(Target(self.name(tname, tkey, "target"), self.budget(tvalue, tkey)))
        rules = self.rules(table.get("rules", []), (*key, "rules"))
        return Scope(
            name=name,
            roots=tuple(dict.fromkeys(normalized)),
            include=include,
            exclude=exclude,
            targets=tuple(targets) or (Target("", pack_budget),),
            rules=rules,
        )

    def config(self, doc: object, root: str) -> Config:
        top = self.table(doc, (), ("pack", "rules", "scopes", "load", "memory"))
        pack = self.table(
            top.get("pack", {}),
            ("pack",),
            ("tokenizer", "budget", "exclude", "default_rules", "history"),
        )
        tokenizer = self.string(pack.get("tokenizer", DEFAULT_TOKENIZER), ("pack", "tokenizer"))
        if tokenizer not in SUPPORTED_ENCODINGS:
            self.fail(
                ("pack", "tokenizer"),
                f"unknown tokenizer {echoed(tokenizer)}; use one of "
                f"{', '.join(SUPPORTED_ENCODINGS)}",
            )
        budget = DEFAULT_BUDGET
        if "budget" in pack:
            budget = self.budget(pack["budget"], ("pack", "budget"))
        exclude = self.globs(pack.get("exclude", []), ("pack", "exclude"))
        use_defaults = self.boolean(pack.get("default_rules", True), ("pack", "default_rules"))
        history = self.integer(pack.get("history", DEFAULT_HISTORY), ("pack", "history"))
        if not 0 <= history <= MAX_HISTORY:
            self.fail(
                ("pack", "history"), f"must be from 0 to {MAX_HISTORY} commits, got {history}"
            )
        rules = self.rules(top.get("rules", []), ("rules",))
        scope_tables = self.table(top.get("scopes", {}), ("scopes",), None)
        scopes = tuple(self.scope(n, v, budget) for n, v in scope_tables.items())
        return Config(
            source=self.file,
            root=root,
            tokenizer=tokenizer,
            budget=budget,
            exclude=exclude,
            rules=rules + (DEFAULT_RULES if use_defaults else ()),
            scopes=scopes or _default_scopes(budget),
            history=history,
            load=self.load(top["load"]) if "load" in top else LoadConfig(),
            memory=self.memory(top["memory"]) if "memory" in top else MemoryConfig(),
        )

    def memory(self, value: object) -> MemoryConfig:
        key: tuple[str | int, ...] = ("memory",)
        table = self.table(
            value,
            key,
            (
                *("full_days", "summary_days", "keep_days", "targets"),
                *("entity_days", "entity_uses", "recent_changes_share"),
            ),
        )
        base = MemoryConfig()
        days: dict[str, int] = {}
        for name in ("full_days", "summary_days", "keep_days"):
            days[name] = self.days(table.get(name, getattr(base, name)), (*key, name))
        for lower, upper in (("full_days", "summary_days"), ("summary_days", "keep_days")):
            if days[upper] < days[lower]:
                self.fail(
                    (*key, upper),
                    f"must be at least {lower} ({days[lower]}), got {days[upper]}",
                )
        targets = base.targets
        if "targets" in table:
            found = []
            for tname, tvalue in self.table(table["targets"], (*key, "targets"), None).items():
                tkey = (*key, "targets", tname)
                found.append(Target(self.name(tname, tkey, "target"), self.budget(tvalue, tkey)))
            if not found:
                self.fail((*key, "targets"), "must name at least one target")
            targets = tuple(found)
        entity_days = self.days(table.get("entity_days", base.entity_days), (*key, "entity_days"))
        entity_uses = self.integer(
            table.get("entity_uses", base.entity_uses), (*key, "entity_uses")
        )
        if entity_uses < 0:
            self.fail((*key, "entity_uses"), f"must be 0 or more, got {entity_uses}")
        share_key = (*key, "recent_changes_share")
        share = self.integer(
            table.get("recent_changes_share", base.recent_changes_share), share_key
        )
        if not 0 <= share <= 100:
            self.fail(share_key, f"must be a percentage from 0 to 100, got {share}")
        return MemoryConfig(
            days["full_days"],
            days["summary_days"],
            days["keep_days"],
            targets,
            entity_days=entity_days,
            entity_uses=entity_uses,
            recent_changes_share=share,
        )

    def load(self, value: object) -> LoadConfig:
        key: tuple[str | int, ...] = ("load",)
        table = self.table(value, key, ("core", "budget", "fallback", "domains"))
        core = self.strings(table.get("core", []), (*key, "core"))
        for i, pack in enumerate(core):
            self.pack_name(pack, (*key, "core", i))
        budget = DEFAULT_LOAD_BUDGET
        if "budget" in table:
            budget = self.budget(table["budget"], (*key, "budget"))
        fallback_max = 0
        if "fallback" in table:
            fb = self.table(table["fallback"], (*key, "fallback"), ("max",))
            if "max" in fb:
                fallback_max = self.positive(fb["max"], (*key, "fallback", "max"))
                if fallback_max < budget.max:
                    self.fail(
                        (*key, "fallback", "max"),
                        f"must be at least the budget's max ({budget.max}), got {fallback_max}",
                    )
        domains = []
        for dname, dvalue in self.table(table.get("domains", {}), (*key, "domains"), None).items():
            dkey = (*key, "domains", dname)
            self.name(dname, dkey, "domain")
            dtable = self.table(dvalue, dkey, ("triggers", "packs"))
            triggers = self.strings(dtable.get("triggers", []), (*dkey, "triggers"))
            if not triggers or any(not t.strip() for t in triggers):
                self.fail((*dkey, "triggers"), "must list at least one non-empty word")
            packs = self.strings(dtable.get("packs", []), (*dkey, "packs"))
            if not packs:
                self.fail((*dkey, "packs"), "must name at least one pack ('scope.target')")
            for i, pack in enumerate(packs):
                self.pack_name(pack, (*dkey, "packs", i))
            domains.append(Domain(dname, tuple(t.strip() for t in triggers), tuple(packs)))
        return LoadConfig(tuple(core), budget, fallback_max, tuple(domains), True)

    def pack_name(self, value: str, key: tuple[str | int, ...]) -> None:
        pieces = value.split(".")
        if len(pieces) > 2 or any(len(p) > _NAME_MAX or not _NAME.fullmatch(p) for p in pieces):
            self.fail(key, f"pack name {echoed(value)} is not 'scope' or 'scope.target'")


def read_scope(
    config: Config, name: str, table: Mapping[str, object], budget: object = None
) -> Scope:
    """A scope given outside cas.toml (`packer.packing.PackScope`), read by the rules a
    ``[scopes.NAME]`` table is read by, with the same errors. Without targets its one pack
    has ``budget`` (a ``{target, max}`` table), or ``config``'s."""
    reader = _Reader("the scope given", ())
    pack_budget = config.budget
    if budget is not None:
        pack_budget = reader.budget(budget, ("scopes", name, "budget"))
    return reader.scope(name, dict(table), pack_budget)


def _default_scopes(budget: Budget) -> tuple[Scope, ...]:
    return (Scope(DEFAULT_SCOPE, (".",), (), (), (Target("", budget),), ()),)


def default_config(root: str | os.PathLike[str]) -> Config:
    """The configuration of a project without one."""
    return Config(
        source=None,
        root=str(Path(root).absolute()),
        tokenizer=DEFAULT_TOKENIZER,
        budget=DEFAULT_BUDGET,
        exclude=(),
        rules=DEFAULT_RULES,
        history=DEFAULT_HISTORY,
        scopes=_default_scopes(DEFAULT_BUDGET),
    )


def load_config(root: str | os.PathLike[str]) -> Config:
    """Read the configuration of the project at `root` (see the module doc for where and what)."""
    base = Path(root)
    absolute = str(base.absolute())
    own = base / CONFIG_FILE
    if own.is_file():
        return _Reader(str(own), ()).config(parse_toml(own), absolute)
    pyproject = base / PYPROJECT_FILE
    if pyproject.is_file():
        section = tool_cas(parse_toml(pyproject))
        if section is not None:
            return _Reader(str(pyproject), ("tool", "cas")).config(section, absolute)
    return default_config(base)


# --- scopes --------------------------------------------------------------------------------------


def _under(path: str, root: str) -> bool:
    return root in (".", path) or path.startswith(root + "/")


def assign_scopes(config: Config, paths: Iterable[str]) -> dict[str, list[str]]:
    """Each scope's paths (root-relative POSIX), sorted by their UTF-8 bytes.

    A path no scope claims is not packed; one claimed by two scopes is a ConfigError, reported
    for the first such path in byte order.
    """
    excluded = glob_spec(config.exclude)
    matchers = [
        (
            scope,
            glob_spec(scope.include) if scope.include else None,
            glob_spec(scope.exclude) if scope.exclude else None,
        )
        for scope in config.scopes
    ]
    out: dict[str, list[str]] = {scope.name: [] for scope in config.scopes}
    for path in sorted(set(paths), key=lambda p: p.encode()):
        if excluded.match_file(path):
            continue
        owners = [
            scope.name
            for scope, include, exclude in matchers
            if any(_under(path, r) for r in scope.roots)
            and (include is None or include.match_file(path))
            and (exclude is None or not exclude.match_file(path))
        ]
        if len(owners) > 1:
            a, b = owners[0], owners[1]
            raise ConfigError(
                config.source or f"{config.root} (default configuration)",
                "scopes",
                f"path {path!r} is claimed by scopes {a!r} and {b!r}; "
                "make their roots/include/exclude disjoint",
            )
        if owners:
            out[owners[0]].append(path)
    return out
