"""Tier rules: first match wins, the built-in rules, scope rules first, priorities, demotion,
age conditions counted from a path's date to the classifier's day."""

from __future__ import annotations

import datetime as dt
import functools
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas.errors import ConfigError
from packer.config import TIERS, Rule, glob_problem, glob_spec, load_config
from packer.rules import age_days, path_date
from packer.tiers import (
    DEFAULT_RULES,
    TIER_ORDER,
    TierDecision,
    TierRules,
    demote,
    rules_for_scope,
)
from tests.gitoracle import Git


def rule(
    globs: str | tuple[str, ...],
    tier: str,
    reason: str = "",
    *,
    min_age: int | None = None,
    max_age: int | None = None,
) -> Rule:
    globs = (globs,) if isinstance(globs, str) else globs
    return Rule(globs, tier, reason or tier, False, None, 0, "config", min_age, max_age)


DEFAULTS = TierRules(DEFAULT_RULES)


def test_first_match_wins() -> None:
    rules = TierRules([rule("src/**", "high", "first"), rule("*.py", "low", "second")])
    assert rules.classify("src/a.py") == TierDecision("high", "first", False, 2, 0)
    assert rules.classify("lib/a.py") == TierDecision("low", "second", False, -2, 1)


def test_no_match_is_low_after_the_last_rule() -> None:
    rules = TierRules([rule("docs/**", "high")])
    assert rules.classify("src/a.py") == TierDecision("low", "no rule matched", False, -4, 1)


def test_negation_inside_one_rule() -> None:
    rules = TierRules([rule(("docs/**", "!docs/old/**"), "high", "docs"), rule("**", "low")])
    assert rules.classify("docs/guide.md").tier == "high"
    assert rules.classify("docs/old/guide.md").tier == "low"


@pytest.mark.parametrize(
    ("path", "tier", "reason", "weight"),
    [
        ("README.md", "high", "project overview", 4),
        ("README", "high", "project overview", 4),
        ("packer/README.rst", "high", "documentation", -1),
        ("AGENTS.md", "high", "agent guide", 4),
        ("CLAUDE.md", "high", "agent guide", 4),
        ("DESIGN.md", "high", "design document", 1),
        ("ARCHITECTURE.md", "high", "design document", 1),
        ("CONTRIBUTING.md", "high", "contributor guide", 0),
        ("CHANGELOG.md", "medium", "changelog", -4),
        ("docs/releases/5.1.txt", "medium", "changelog", -4),
        ("LICENSE", "low", "license", -4),
        ("docs/guide.md", "high", "documentation", -1),
        ("docs/conf.py", "medium", "build script", -3),
        ("notes/plan.md", "high", "documentation", -1),
        ("doc/md_docs.go", "high", "source", 0),
        ("docs/spelling_wordlist.txt", "low", "word list", -4),
        ("django/conf/locale/de/LC_MESSAGES/django.po", "low", "locale catalog", -4),
        ("django/conf/locale/de/LC_MESSAGES/django.mo", "low", "locale catalog", -4),
        ("package-lock.json", "low", "lock file", -4),
        ("web/yarn.lock", "low", "lock file", -4),
        ("uv.lock", "low", "lock file", -4),
        ("go.sum", "low", "lock file", -4),
        ("Cargo.lock", "low", "lock file", -4),
        ("tests/test_store.py", "high", "test", -3),
        ("tests/helpers.py", "high", "test", -3),
        ("tests/data.txt", "high", "test", -3),
        ("pkg/tests/conftest.py", "high", "test", -3),
        ("cas/test_digest.py", "high", "test", -3),
        ("cas/digest_test.py", "high", "test", -3),
        ("pkg/server_test.go", "high", "test", -3),
        ("lib/sqlalchemy/testing/fixtures.py", "high", "test", -3),  # a harness in the source
        ("internal/testutil/server.go", "high", "test", -3),
        ("src/pkg/test_helpers/factories.rb", "high", "test", -3),
        ("src/click/testing.py", "high", "source", 0),  # a module of the API, not a folder
        ("src/app.test.ts", "high", "test", -3),
        ("src/app.spec.jsx", "high", "test", -3),
        ("src/__tests__/app.js", "high", "test", -3),
        ("spec/models/user_spec.rb", "high", "test", -3),
        ("examples/demo/README.md", "high", "example", -2),
        ("_examples/app/main.go", "high", "example", -2),
        ("bench/run.py", "high", "benchmark", -3),
        ("tests/fixtures/README.md", "low", "fixture", -4),
        ("pkg/testdata/input.go", "low", "fixture", -4),
        ("static/app.min.js", "low", "generated", -4),
        ("static/app.js.map", "low", "generated", -4),
        ("proto/api_pb2.py", "low", "generated", -4),
        ("dist/bundle.js", "low", "generated", -4),
        ("build/lib/x.py", "low", "generated", -4),
        ("src/schema.generated.ts", "low", "generated", -4),
        ("PKG-INFO", "low", "generated", -4),
        ("vendor/github.com/x/y.go", "low", "vendored", -4),
        ("web/node_modules/left-pad/README.md", "low", "vendored", -4),
        ("data/rows.csv", "low", "data", -4),
        ("model/weights.npy", "low", "data", -4),
        ("docs/diagram.png", "low", "binary", -4),
        ("assets/logo.png", "low", "binary", -4),
        ("fonts/a.woff2", "low", "binary", -4),
        ("lib/native.so", "low", "binary", -4),
        ("paper.pdf", "low", "binary", -4),
        ("cas/store.py", "high", "source", 0),
        ("web/src/app.tsx", "high", "source", 0),
        ("cmd/main.go", "high", "source", 0),
        ("src/lib.rs", "high", "source", 0),
        ("db/schema.sql", "high", "source", 0),
        ("scripts/run.sh", "medium", "build script", -3),
        ("pyproject.toml", "high", "project metadata", 1),
        ("tsconfig.json", "high", "project metadata", 1),
        ("go.mod", "high", "project metadata", 1),
        ("pkg/pyproject.toml", "high", "configuration", -2),
        (".github/workflows/ci.yml", "medium", "build script", -3),
        ("Makefile", "medium", "build script", -3),
        ("docker/Dockerfile", "medium", "build script", -3),
        ("docs/Makefile", "medium", "build script", -3),
        ("docs/make.bat", "medium", "build script", -3),
        ("requirements.txt", "high", "configuration", -2),
        ("config/app.yaml", "high", "configuration", -2),
        (".ci/run", "medium", "other", -4),
        ("weird.xyz", "medium", "other", -4),
    ],
)
def test_default_rules(path: str, tier: str, reason: str, weight: int) -> None:
    decision = DEFAULTS.classify(path)
    assert (decision.tier, decision.reason, decision.weight) == (tier, reason, weight)
    assert decision.required is False


def test_source_outranks_everything_but_the_readme_and_agent_guides() -> None:
    """The issue's order: the project's own source weighs more than any default but the
    top-level README and agent guides."""
    source = DEFAULTS.classify("pkg/core.py").weight
    above = {r.reason for r in DEFAULT_RULES if r.priority is not None and r.priority > source}
    assert above <= {"project overview", "agent guide", "design document", "project metadata"}
    assert DEFAULTS.classify("README.md").weight > source
    assert DEFAULTS.classify("CHANGELOG.md").weight < source
    assert DEFAULTS.classify("docs/index.rst").weight < source


def test_tests_beat_source() -> None:
    test_rule = next(i for i, r in enumerate(DEFAULT_RULES) if r.reason == "test")
    source_rule = next(i for i, r in enumerate(DEFAULT_RULES) if r.reason == "source")
    assert test_rule < source_rule
    assert DEFAULTS.classify("tests/test_x.py").reason == "test"


def test_default_rules_are_well_formed() -> None:
    assert [r.index for r in DEFAULT_RULES] == list(range(len(DEFAULT_RULES)))
    assert {r.origin for r in DEFAULT_RULES} == {"default"}
    assert all(r.tier in TIERS and not r.required for r in DEFAULT_RULES)
    assert all(r.priority is not None and -4 <= r.priority <= 4 for r in DEFAULT_RULES)
    assert all(glob_problem(g) is None for r in DEFAULT_RULES for g in r.globs)
    assert DEFAULT_RULES[-1].globs == ("**",)


def test_user_rule_overrides_a_default(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "tests/**"\ntier = "high"\nreason = "tests are the spec"\n'
    )
    config = load_config(tmp_path)
    rules = rules_for_scope(config, config.scopes[0])
    assert rules.classify("tests/test_x.py") == TierDecision(
        "high", "tests are the spec", False, 2, 0
    )
    # everything else still falls through to the built-in rules
    assert rules.classify("cas/x.py").reason == "source"


def test_scope_rules_come_first(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "*.py"\ntier = "low"\nreason = "global"\n'
        '[scopes.core]\nroots = ["src"]\n'
        '[[scopes.core.rules]]\nglob = "src/core.py"\ntier = "high"\nreason = "scope"\n'
        '[scopes.other]\nroots = ["lib"]\n'
    )
    config = load_config(tmp_path)
    core, other = config.scopes
    assert rules_for_scope(config, core).classify("src/core.py") == TierDecision(
        "high", "scope", False, 2, 0
    )
    assert rules_for_scope(config, core).classify("src/util.py") == TierDecision(
        "low", "global", False, -2, 1
    )
    # another scope does not see them
    assert rules_for_scope(config, other).classify("src/core.py").reason == "global"


def test_priority_is_the_weight_class_else_the_tier_gives_it(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "a/**"\ntier = "high"\n'
        '[[rules]]\nglob = "b/**"\ntier = "high"\npriority = 4\nrequired = true\n'
        '[[rules]]\nglob = "c/**"\ntier = "high"\npriority = -3\n'
        '[[rules]]\nglob = "d/**"\ntier = "medium"\n'
    )
    config = load_config(tmp_path)
    rules = rules_for_scope(config, config.scopes[0])
    assert rules.classify("a/x").weight == 2
    b = rules.classify("b/x")
    assert (b.weight, b.required, b.rule_index) == (4, True, 1)
    assert rules.classify("c/x").weight == -3
    assert rules.classify("d/x").weight == 0
    # a built-in rule keeps its own weight class after the configured ones
    assert rules.classify("x.py").weight == 0 and rules.classify("x.py").rule_index > 3


def test_a_priority_outside_the_weight_classes_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text('[[rules]]\nglob = "a/**"\ntier = "high"\npriority = 7\n')
    with pytest.raises(ConfigError, match=r"rules\[1\].priority: must be from -4 to 4"):
        load_config(tmp_path)


def test_unknown_tier_in_a_hand_built_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tier"):
        TierRules([rule("x", "urgent")])


def test_demote_and_order() -> None:
    assert [demote("high"), demote("medium"), demote("low")] == ["medium", "low", None]
    assert sorted(TIERS, key=TIER_ORDER.__getitem__) == ["low", "medium", "high"]
    with pytest.raises(ValueError):
        demote("top")


# --- age conditions ----------------------------------------------------------------------------

DAY = dt.date(2026, 3, 1)


def days_before(n: int, now: dt.date = DAY) -> str:
    return (now - dt.timedelta(days=n)).isoformat()


@pytest.mark.parametrize(
    ("path", "date"),
    [
        ("logs/2026-11-24.md", dt.date(2026, 11, 24)),
        ("notes/standup-2026-02-28-am.txt", dt.date(2026, 2, 28)),
        ("2024-02-29.md", dt.date(2024, 2, 29)),
        ("x/2026-13-01_2026-01-02.md", dt.date(2026, 1, 2)),  # the first calendar date
        ("2025-02-29.md", None),  # not a calendar date
        ("12026-11-24.md", None),  # inside a longer run of digits
        ("2026-11-24/notes.md", None),  # a folder's name is not the file's date
        ("README.md", None),
    ],
)
def test_a_paths_date_is_the_first_calendar_date_in_its_file_name(
    path: str, date: dt.date | None
) -> None:
    assert path_date(path) == date


def test_age_rules_match_by_the_date_in_the_name_counted_to_now() -> None:
    rules = [
        rule("logs/*.md", "high", "fresh", max_age=7),
        rule("logs/*.md", "medium", "middle", min_age=8, max_age=30),
        rule("logs/*.md", "low", "old", min_age=31),
        rule("**", "medium", "other"),
    ]
    tiers = TierRules(rules, now=DAY)
    assert tiers.now == DAY
    assert tiers.classify(f"logs/{days_before(0)}.md").reason == "fresh"
    assert tiers.classify(f"logs/{days_before(7)}.md").reason == "fresh"
    assert tiers.classify(f"logs/{days_before(8)}.md").reason == "middle"
    assert tiers.classify(f"logs/{days_before(30)}.md").reason == "middle"
    assert tiers.classify(f"logs/{days_before(31)}.md").reason == "old"
    assert tiers.classify(f"logs/{days_before(5000)}.md").reason == "old"
    # dated after now, undated, or no now at all: no age rule matches
    assert tiers.classify(f"logs/{days_before(-1)}.md").reason == "other"
    assert tiers.classify("logs/today.md").reason == "other"
    undated = TierRules(rules)
    assert undated.classify(f"logs/{days_before(0)}.md").reason == "other"
    # a file time never counts: the same name is the same decision whatever the file
    assert age_days("a/2026-02-27.md", DAY) == 2 and age_days("a.md", DAY) is None
    assert age_days("a/2026-02-27.md", None) is None


def test_a_decision_that_depends_on_now_is_never_served_on_another_day() -> None:
    rules = [rule("*.md", "high", "recent", max_age=3), rule("**", "low", "rest")]
    path = "notes/2026-03-01.md"
    decided = []
    for now in (dt.date(2026, 3, 2), dt.date(2026, 3, 20), dt.date(2026, 3, 2)):
        tiers = TierRules(rules, now=now)
        first = tiers.classify(path)
        assert tiers.classify(path) is first  # remembered within its day
        decided.append(first.reason)
    assert decided == ["recent", "rest", "recent"]
    # classify_aged ignores both the name's date and now, and remembers nothing
    tiers = TierRules(rules, now=dt.date(2026, 3, 2))
    assert tiers.classify_aged(path, 10).reason == "rest"
    assert tiers.classify_aged(path, None).reason == "rest"
    assert tiers.classify(path).reason == "recent"


def test_age_conditions_load_from_cas_toml_and_show_in_the_rules_description(
    tmp_path: Path,
) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "notes/*.md"\ntier = "high"\nreason = "this week"\n'
        "max_age_days = 7\n"
        '[[rules]]\nglob = "notes/*.md"\ntier = "low"\nreason = "old notes"\nmin_age_days = 60\n'
    )
    config = load_config(tmp_path)
    first, second = config.rules[:2]
    assert (first.min_age_days, first.max_age_days) == (None, 7)
    assert (second.min_age_days, second.max_age_days) == (60, None)
    rules = rules_for_scope(config, config.scopes[0], now=DAY)
    assert rules.classify(f"notes/{days_before(3)}.md").reason == "this week"
    assert rules.classify(f"notes/{days_before(61)}.md").reason == "old notes"
    assert rules.classify(f"notes/{days_before(20)}.md").reason == "documentation"
    assert "at most 7 days old" in rules.describe(0)
    assert "at least 60 days old" in rules.describe(1)
    assert rules_for_scope(config, config.scopes[0]).classify(
        f"notes/{days_before(3)}.md"
    ).reason == "documentation"  # fmt: skip


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("max_age_days = -1", "rules[1].max_age_days: must be from 0 to 36500 days, got -1"),
        ("min_age_days = 40000", "rules[1].min_age_days: must be from 0 to 36500 days"),
        ('max_age_days = "7"', "rules[1].max_age_days: must be an integer, not a string"),
        ("max_age_days = 7.5", "rules[1].max_age_days: must be an integer, not a float"),
        ("max_age_days = true", "rules[1].max_age_days: must be an integer, not a boolean"),
        (
            "min_age_days = 9\nmax_age_days = 8",
            "rules[1].max_age_days: must be at least min_age_days (9), got 8",
        ),
    ],
)
def test_a_bad_age_condition_is_one_line_naming_the_key(
    tmp_path: Path, text: str, says: str
) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "notes/*.md"\ntier = "high"\n' + text + "\n"
    )
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    message = str(err.value)
    assert says in message and "\n" not in message


# The documented table of age tiers: the memory's tiers (memory.ages) as packer rules.
def table_tier(age: int, full: int, summary: int, keep: int) -> str | None:
    if age < 0:
        return None
    if age <= full:
        return "high"
    if age <= summary:
        return "medium"
    if age <= keep:
        return "low"
    return None


@given(
    st.integers(0, 400),
    st.integers(0, 400),
    st.integers(0, 400),
    st.integers(-100, 1500),
    st.dates(dt.date(1990, 1, 1), dt.date(2200, 1, 1)),
)
@example(7, 30, 90, 7, DAY).via("the source design's numbers")
@example(0, 0, 0, 0, DAY)
@example(0, 0, 0, 1, DAY)
def test_age_rules_classify_by_the_documented_table_for_any_age_and_bounds(
    a: int, b: int, c: int, age: int, now: dt.date
) -> None:
    full, summary, keep = sorted((a, b, c))
    rules = [
        rule("logs/*.md", "high", "full", max_age=full),
        rule("logs/*.md", "medium", "summary", max_age=summary),
        rule("logs/*.md", "low", "pointer", max_age=keep),
    ]
    tiers = TierRules(rules, now=now)
    path = f"logs/{(now - dt.timedelta(days=age)).isoformat()}.md"
    decision = tiers.classify(path)
    tier = None if decision.rule_index == len(rules) else decision.tier
    assert tier == table_tier(age, full, summary, keep)
    assert tiers.classify_aged(path, age) == decision
    assert TierRules(rules).classify(path).rule_index == len(rules)  # no now: no age match


PATH_PARTS = st.sampled_from(
    ["src", "tests", "docs", "a", "README.md", "x.py", "y.min.js", "z.lock", "é.txt", "Makefile"]
)


@given(st.lists(PATH_PARTS, min_size=1, max_size=5).map("/".join))
def test_defaults_classify_every_path_with_a_matching_rule(path: str) -> None:
    decision = DEFAULTS.classify(path)
    assert decision.tier in TIERS
    assert 0 <= decision.rule_index < len(DEFAULT_RULES)  # the final ** catches everything
    # first match: no earlier rule matches
    matched = DEFAULT_RULES[decision.rule_index]
    assert (decision.tier, decision.reason) == (matched.tier, matched.reason)
    for earlier in DEFAULT_RULES[: decision.rule_index]:
        assert TierRules([earlier]).classify(path).reason == "no rule matched"


_SEGMENTS = st.sampled_from(
    ["src", "docs", "tests", "a", "README.md", "x.py", "y.test.ts", "go.sum", "pkg", "dist", "ü"]
)


@functools.cache
def _default_rules_both_ways() -> list[tuple[tuple[str, ...], Any, Any]]:
    """Each built-in rule's globs, compiled by wildmatch and by pathspec (once: both are pure)."""
    from pathspec import GitIgnoreSpec

    from packer.tiers import DEFAULT_RULES, TierRules

    rules = TierRules(DEFAULT_RULES)
    return [
        (tuple(rule.globs), spec, GitIgnoreSpec.from_lines(list(rule.globs)))
        for rule, spec in zip(rules.rules, rules._specs, strict=True)
    ]


@given(st.lists(_SEGMENTS, min_size=1, max_size=5).map("/".join))
def test_default_rules_match_exactly_like_pathspec_did(path: str) -> None:
    """packer.wildmatch replaced pathspec: the built-in rules match what they matched."""
    for globs, spec, before in _default_rules_both_ways():
        assert spec.match_file(path) == before.match_file(path), (globs, path)


_GLOBS = st.sampled_from(
    ["*.py", "*.md", "*.min.js", "*.tar-gz", "*_test.go", "docs/", "/dist/", "**/fixtures/",
     "README*", "a*.txt", "src/**/*.rs", "x.py", "*.", "*.c", "*.cc", "pkg/*.go", "ü*"]
)  # fmt: skip
_PATH_SEGMENTS = st.sampled_from(
    ["src", "docs", "dist", "fixtures", "pkg", "a.txt", "x.py", "y.md", "m.min.js", "k.tar-gz",
     "t_test.go", "README", "READMEx", "lib.rs", "f.c", "g.cc", "c.", "ü.py", "z"]
)  # fmt: skip


@given(
    st.lists(_GLOBS, min_size=1, max_size=6, unique=True),
    st.lists(_PATH_SEGMENTS, min_size=1, max_size=5).map("/".join),
)
@example(globs=["*.py", "*.md", "*.c"], path="src/src/src/src/f.c")
@example(globs=["*.min.js", "*.py", "*.cc"], path="m.min.js/g.cc")
def test_rule_globs_match_like_pathspec_did_for_any_globs(globs: list[str], path: str) -> None:
    """One regular expression per rule (packer.wildmatch) answers as pathspec did, negations
    included."""
    from pathspec import GitIgnoreSpec

    def before_of(lines: list[str]) -> bool:
        combined = GitIgnoreSpec.from_lines(lines).match_file(path)
        one_by_one = False
        for line in lines:
            if GitIgnoreSpec.from_lines([line.lstrip("!")]).match_file(path):
                one_by_one = not line.startswith("!")
        if combined == one_by_one:
            return combined
        # pathspec 1.1 answers differently for the lines together than one at a time (its
        # combined expression misses `*.c` on `src/src/src/src/f.c`): git itself decides.
        with tempfile.TemporaryDirectory() as scratch:
            found = Git(Path(scratch)).ignored([x.encode() for x in lines], [path.encode()])
        return bool(found)

    for listed in (globs, [*globs, "!" + globs[0]], ["!" + globs[-1], *globs]):
        before = before_of(listed)
        assert glob_spec(tuple(listed)).match_file(path) == before, (listed, path)


_RULE_GLOBS = st.sampled_from(
    ["*.py", "*.md", "*.min.js", "docs/", "/dist/**", "**/fixtures/**", "README*", "/README*",
     "a*.txt", "src/**/*.rs", "x.py", "*.c", "pkg/*.go", "ü*", "!x.py", "!docs/", "**", "*",
     "*wordlist*", "/*.gemspec", "Makefile", "tests/", "**/tests/**", "*_test.go", "/docs/conf.py"]
)  # fmt: skip


@given(
    st.lists(st.lists(_RULE_GLOBS, min_size=1, max_size=4), min_size=1, max_size=8),
    st.lists(_PATH_SEGMENTS, min_size=1, max_size=5).map("/".join),
)
@example([["!x.py", "*.py"], ["x.py"]], "x.py")
@example([["*.md"], ["/README*"], ["**"]], "README.md")
def test_a_path_is_tried_against_few_rules_and_the_first_match_still_decides(
    globs: list[list[str]], path: str
) -> None:
    """Classifying tries only the rules a path's keys can match (`GlobList.keys`); the decision
    is the first rule that matches when every rule is tried in order."""
    rules = [
        Rule(tuple(g), "high", f"rule {i}", False, None, i, "config") for i, g in enumerate(globs)
    ]
    every = next(
        (i for i, r in enumerate(rules) if glob_spec(r.globs).match_file(path)), len(rules)
    )
    assert TierRules(rules).classify(path).rule_index == every
    assert TierRules([*rules, *DEFAULT_RULES]).classify(path).rule_index == next(
        i for i, r in enumerate([*rules, *DEFAULT_RULES]) if glob_spec(r.globs).match_file(path)
    )
