"""Tier rules: first match wins, the built-in rules, scope rules first, priorities, demotion."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer.config import TIERS, Rule, glob_problem, load_config
from packer.tiers import (
    DEFAULT_RULES,
    TIER_ORDER,
    TierDecision,
    TierRules,
    demote,
    rules_for_scope,
)


def rule(globs: str | tuple[str, ...], tier: str, reason: str = "") -> Rule:
    globs = (globs,) if isinstance(globs, str) else globs
    return Rule(globs, tier, reason or tier, False, None, 0, "config")


DEFAULTS = TierRules(DEFAULT_RULES)


def test_first_match_wins() -> None:
    rules = TierRules([rule("src/**", "high", "first"), rule("*.py", "low", "second")])
    assert rules.classify("src/a.py") == TierDecision("high", "first", False, 0, 0)
    assert rules.classify("lib/a.py") == TierDecision("low", "second", False, -1, 1)


def test_no_match_is_low_after_the_last_rule() -> None:
    rules = TierRules([rule("docs/**", "high")])
    assert rules.classify("src/a.py") == TierDecision("low", "no rule matched", False, -1, 1)


def test_negation_inside_one_rule() -> None:
    rules = TierRules([rule(("docs/**", "!docs/old/**"), "high", "docs"), rule("**", "low")])
    assert rules.classify("docs/guide.md").tier == "high"
    assert rules.classify("docs/old/guide.md").tier == "low"


@pytest.mark.parametrize(
    ("path", "tier", "reason"),
    [
        ("README.md", "high", "project overview"),
        ("README", "high", "project overview"),
        ("packer/README.rst", "high", "project overview"),
        ("DESIGN.md", "high", "project overview"),
        ("ARCHITECTURE.md", "high", "project overview"),
        ("AGENTS.md", "high", "contributor guide"),
        ("CONTRIBUTING.md", "high", "contributor guide"),
        ("CHANGELOG.md", "medium", "changelog"),
        ("LICENSE", "low", "license"),
        ("docs/guide.md", "high", "documentation"),
        ("docs/conf.py", "high", "documentation"),
        ("notes/plan.md", "high", "documentation"),
        ("package-lock.json", "low", "lock file"),
        ("web/yarn.lock", "low", "lock file"),
        ("uv.lock", "low", "lock file"),
        ("go.sum", "low", "lock file"),
        ("Cargo.lock", "low", "lock file"),
        ("tests/test_store.py", "low", "test"),
        ("tests/helpers.py", "low", "test"),
        ("tests/data.txt", "low", "test"),
        ("pkg/tests/conftest.py", "low", "test"),
        ("cas/test_digest.py", "low", "test"),
        ("cas/digest_test.py", "low", "test"),
        ("pkg/server_test.go", "low", "test"),
        ("src/app.test.ts", "low", "test"),
        ("src/app.spec.jsx", "low", "test"),
        ("src/__tests__/app.js", "low", "test"),
        ("spec/models/user_spec.rb", "low", "test"),
        ("tests/fixtures/README.md", "low", "fixture"),
        ("pkg/testdata/input.go", "low", "fixture"),
        ("static/app.min.js", "low", "generated"),
        ("static/app.js.map", "low", "generated"),
        ("proto/api_pb2.py", "low", "generated"),
        ("dist/bundle.js", "low", "generated"),
        ("build/lib/x.py", "low", "generated"),
        ("src/schema.generated.ts", "low", "generated"),
        ("vendor/github.com/x/y.go", "low", "vendored"),
        ("web/node_modules/left-pad/README.md", "low", "vendored"),
        ("data/rows.csv", "low", "data"),
        ("model/weights.npy", "low", "data"),
        ("docs/diagram.png", "low", "binary"),
        ("assets/logo.png", "low", "binary"),
        ("fonts/a.woff2", "low", "binary"),
        ("lib/native.so", "low", "binary"),
        ("paper.pdf", "low", "binary"),
        ("cas/store.py", "medium", "source"),
        ("web/src/app.tsx", "medium", "source"),
        ("cmd/main.go", "medium", "source"),
        ("src/lib.rs", "medium", "source"),
        ("scripts/run.sh", "medium", "source"),
        ("db/schema.sql", "medium", "source"),
        ("pyproject.toml", "medium", "configuration"),
        (".github/workflows/ci.yml", "medium", "configuration"),
        ("tsconfig.json", "medium", "configuration"),
        ("Makefile", "medium", "configuration"),
        ("docker/Dockerfile", "medium", "configuration"),
        ("requirements.txt", "medium", "configuration"),
        (".ci/run", "low", "other"),
        ("weird.xyz", "low", "other"),
    ],
)
def test_default_rules(path: str, tier: str, reason: str) -> None:
    decision = DEFAULTS.classify(path)
    assert (decision.tier, decision.reason) == (tier, reason)
    assert decision.required is False


def test_tests_beat_source() -> None:
    test_rule = next(i for i, r in enumerate(DEFAULT_RULES) if r.reason == "test")
    source_rule = next(i for i, r in enumerate(DEFAULT_RULES) if r.reason == "source")
    assert test_rule < source_rule
    assert DEFAULTS.classify("tests/test_x.py").tier == "low"


def test_default_rules_are_well_formed() -> None:
    assert [r.index for r in DEFAULT_RULES] == list(range(len(DEFAULT_RULES)))
    assert {r.origin for r in DEFAULT_RULES} == {"default"}
    assert all(r.tier in TIERS and r.priority is None and not r.required for r in DEFAULT_RULES)
    assert all(glob_problem(g) is None for r in DEFAULT_RULES for g in r.globs)
    assert DEFAULT_RULES[-1].globs == ("**",)


def test_user_rule_overrides_a_default(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "tests/**"\ntier = "high"\nreason = "tests are the spec"\n'
    )
    config = load_config(tmp_path)
    rules = rules_for_scope(config, config.scopes[0])
    assert rules.classify("tests/test_x.py") == TierDecision(
        "high", "tests are the spec", False, 0, 0
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
        "high", "scope", False, 0, 0
    )
    assert rules_for_scope(config, core).classify("src/util.py") == TierDecision(
        "low", "global", False, -1, 1
    )
    # another scope does not see them
    assert rules_for_scope(config, other).classify("src/core.py").reason == "global"


def test_priority_explicit_or_by_position(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        '[[rules]]\nglob = "a/**"\ntier = "high"\n'
        '[[rules]]\nglob = "b/**"\ntier = "high"\npriority = 7\nrequired = true\n'
        '[[rules]]\nglob = "c/**"\ntier = "high"\npriority = -3\n'
    )
    config = load_config(tmp_path)
    rules = rules_for_scope(config, config.scopes[0])
    assert rules.classify("a/x").priority == 0
    b = rules.classify("b/x")
    assert (b.priority, b.required, b.rule_index) == (7, True, 1)
    assert rules.classify("c/x").priority == -3
    # a built-in rule ranks by its position after the configured ones
    assert rules.classify("x.py").priority == -rules.classify("x.py").rule_index < -2


def test_unknown_tier_in_a_hand_built_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown tier"):
        TierRules([rule("x", "urgent")])


def test_demote_and_order() -> None:
    assert [demote("high"), demote("medium"), demote("low")] == ["medium", "low", None]
    assert sorted(TIERS, key=TIER_ORDER.__getitem__) == ["low", "medium", "high"]
    with pytest.raises(ValueError):
        demote("top")


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


@given(st.lists(_SEGMENTS, min_size=1, max_size=5).map("/".join))
def test_default_rules_match_exactly_like_pathspec_did(path: str) -> None:
    """packer.wildmatch replaced pathspec: the built-in rules match what they matched."""
    from pathspec import GitIgnoreSpec

    from packer.tiers import DEFAULT_RULES, TierRules

    rules = TierRules(DEFAULT_RULES)
    for rule, spec in zip(rules.rules, rules._specs, strict=True):
        before = GitIgnoreSpec.from_lines(list(rule.globs)).match_file(path)
        assert spec.match_file(path) == before, (rule.globs, path)


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
def test_rule_globs_match_like_pathspec_did_for_any_globs(globs: list[str], path: str) -> None:
    """One regular expression per rule (packer.wildmatch) answers as pathspec did, negations
    included."""
    from pathspec import GitIgnoreSpec

    from packer.tiers import glob_spec

    for listed in (globs, [*globs, "!" + globs[0]], ["!" + globs[-1], *globs]):
        before = GitIgnoreSpec.from_lines(listed).match_file(path)
        assert glob_spec(tuple(listed)).match_file(path) == before, (listed, path)
