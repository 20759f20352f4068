"""Project configuration: strict loading, defaults, where it is found, and scope assignment."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.errors import ConfigError
from packer.config import (
    DEFAULT_BUDGET,
    MAX_NUMBER,
    Budget,
    Config,
    Scope,
    Target,
    assign_scopes,
    default_config,
    find_project_root,
    load_config,
)
from packer.tiers import DEFAULT_RULES
from tests.conftest import run_cas

FULL = """
[pack]
tokenizer = "cl100k_base"
budget = { target = 9000, max = 9500 }
exclude = ["*.min.js"]

[[rules]]
glob = "docs/**"
tier = "high"
reason = "canonical docs"
required = true
priority = 3

[[rules]]
globs = ["*.py", "!*_pb2.py"]
tier = "medium"

[scopes.core]
roots = ["./cas/", "packer", "cas"]
include = ["**/*.py"]
exclude = ["**/fixtures/**"]

[scopes.core.targets.claude]
target = 10000
max = 12000

[scopes.core.targets.small]
target = 2000

[[scopes.core.rules]]
glob = "cas/errors.py"
tier = "high"
reason = "error contract"

[scopes.docs]
roots = ["docs", "README.md"]
"""


def write(root: Path, text: str, name: str = "cas.toml") -> Path:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(root: Path, text: str, name: str = "cas.toml") -> ConfigError:
    path = write(root, text, name)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    err = info.value
    assert err.file == str(path)
    assert str(err).startswith(f"{path}: {err.key}: " if err.key else f"{path}: ")
    return err


# --- a good configuration -------------------------------------------------------------------------


def test_full_configuration_loads_into_dataclasses(tmp_path: Path) -> None:
    source = write(tmp_path, FULL)
    config = load_config(tmp_path)
    assert config.source == str(source)
    assert config.root == str(tmp_path.absolute())
    assert config.tokenizer == "cl100k_base"
    assert config.budget == Budget(9000, 9500)
    assert config.exclude == ("*.min.js",)
    first, second = config.rules[:2]
    assert (first.globs, first.tier, first.reason) == (("docs/**",), "high", "canonical docs")
    assert (first.required, first.priority, first.index, first.origin) == (True, 3, 0, "config")
    assert second.globs == ("*.py", "!*_pb2.py")
    assert (second.reason, second.required, second.priority, second.index) == (
        "*.py, !*_pb2.py",
        False,
        None,
        1,
    )
    assert config.rules[2:] == DEFAULT_RULES  # default_rules defaults to true

    core, docs = config.scopes
    assert core.name == "core"
    assert core.roots == ("cas", "packer")  # normalized, duplicates dropped, order kept
    assert core.include == ("**/*.py",)
    assert core.exclude == ("**/fixtures/**",)
    assert core.targets == (
        Target("claude", Budget(10000, 12000)),
        Target("small", Budget(2000, 2000)),  # max defaults to the target
    )
    assert [(r.globs, r.tier, r.index) for r in core.rules] == [(("cas/errors.py",), "high", 0)]
    # a scope without targets packs once, unnamed, with the [pack] budget
    assert docs.roots == ("docs", "README.md")
    assert docs.targets == (Target("", Budget(9000, 9500)),)
    assert docs.rules == ()


def test_default_rules_can_be_turned_off(tmp_path: Path) -> None:
    write(tmp_path, '[pack]\ndefault_rules = false\n[[rules]]\nglob = "**"\ntier = "low"\n')
    config = load_config(tmp_path)
    assert [r.origin for r in config.rules] == ["config"]


def test_no_configuration_gives_the_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == default_config(tmp_path)
    assert config.source is None
    assert config.tokenizer == "o200k_base"
    assert config.budget == DEFAULT_BUDGET == Budget(10000, 12000)
    assert config.rules == DEFAULT_RULES
    assert config.scopes == (Scope("repo", (".",), (), (), (Target("", DEFAULT_BUDGET),), ()),)


def test_empty_cas_toml_gives_defaults_with_its_source(tmp_path: Path) -> None:
    write(tmp_path, "# nothing yet\n")
    config = load_config(tmp_path)
    assert config.source == str(tmp_path / "cas.toml")
    assert [s.name for s in config.scopes] == ["repo"]


def test_pyproject_tool_cas_is_used(tmp_path: Path) -> None:
    write(
        tmp_path,
        '[project]\nname = "x"\n[tool.cas.pack]\ntokenizer = "cl100k_base"\n'
        '[tool.cas.scopes.lib]\nroots = ["src"]\n',
        "pyproject.toml",
    )
    config = load_config(tmp_path)
    assert config.source == str(tmp_path / "pyproject.toml")
    assert config.tokenizer == "cl100k_base"
    assert [s.name for s in config.scopes] == ["lib"]


def test_pyproject_errors_name_the_full_key(tmp_path: Path) -> None:
    err = config_error(tmp_path, "[tool.cas.pack]\nbudget = { target = -1 }\n", "pyproject.toml")
    assert err.key == "tool.cas.pack.budget.target"
    assert "positive" in err.problem


def test_pyproject_without_tool_cas_gives_defaults(tmp_path: Path) -> None:
    write(tmp_path, '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n', "pyproject.toml")
    assert load_config(tmp_path) == default_config(tmp_path)


def test_cas_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path, '[tool.cas.pack]\ntokenizer = "cl100k_base"\n', "pyproject.toml")
    write(tmp_path, '[pack]\ntokenizer = "o200k_base"\n')
    config = load_config(tmp_path)
    assert config.source == str(tmp_path / "cas.toml")
    assert config.tokenizer == "o200k_base"


# --- strictness: one test per kind of mistake ----------------------------------------------------


def test_unknown_key_at_top_level(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[packs]\ntokenizer = "o200k_base"\n')
    assert err.key == "packs"
    assert "unknown key" in err.problem and "pack, rules, scopes" in err.problem


def test_unknown_key_in_pack(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[pack]\ntokeniser = "o200k_base"\n')
    assert err.key == "pack.tokeniser"
    assert "tokenizer" in err.problem


def test_unknown_key_in_a_rule(tmp_path: Path) -> None:
    err = config_error(
        tmp_path,
        '[[rules]]\nglob = "a"\ntier = "low"\n[[rules]]\nglob = "b"\ntier = "low"\nteir = "x"\n',
    )
    assert err.key == "rules[2].teir"
    assert "glob, globs, tier, reason, required, priority" in err.problem


def test_unknown_key_in_a_scope(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[scopes.core]\nroots = ["."]\nroot = "x"\n')
    assert err.key == "scopes.core.root"
    assert "roots, include, exclude, targets, rules" in err.problem


def test_unknown_key_in_a_target(tmp_path: Path) -> None:
    err = config_error(
        tmp_path, '[scopes.core]\nroots = ["."]\n[scopes.core.targets.claude]\nmaximum = 3\n'
    )
    assert err.key == "scopes.core.targets.claude.maximum"
    assert "target, max" in err.problem


def test_bad_tier(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[[rules]]\nglob = "a"\ntier = "hi"\n')
    assert err.key == "rules[1].tier"
    assert "'hi'" in err.problem and "high, medium, low" in err.problem


def test_missing_tier(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[[rules]]\nglob = "a"\n')
    assert err.key == "rules[1]" and "tier" in err.problem


@pytest.mark.parametrize(
    ("glob", "words"),
    [
        ("[z-a]", "not a valid gitignore pattern"),  # pathspec: bad character range
        ("docs\\\\", "not a valid gitignore pattern"),  # a trailing backslash
        ("!", "not a valid gitignore pattern"),
        ("#comment", "matches nothing"),
        ("a[", "matches nothing"),
        ("", "blank"),
        (" docs/**", "whitespace"),
    ],
)
def test_bad_glob(tmp_path: Path, glob: str, words: str) -> None:
    err = config_error(tmp_path, f'[[rules]]\nglobs = ["ok/**", "{glob}"]\ntier = "low"\n')
    assert err.key == "rules[1].globs[2]"
    assert words in err.problem


def test_bad_single_glob(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[[rules]]\nglob = "[z-a]"\ntier = "low"\n')
    assert err.key == "rules[1].glob"
    assert "bad character range" in err.problem and "position" not in err.problem


def test_bad_glob_in_scope_exclude(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[scopes.core]\nroots = ["."]\nexclude = ["[z-a]"]\n')
    assert err.key == "scopes.core.exclude[1]"


def test_rule_needs_exactly_one_of_glob_and_globs(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[[rules]]\nglob = "a"\nglobs = ["b"]\ntier = "low"\n')
    assert err.key == "rules[1]" and "exactly one" in err.problem
    err = config_error(tmp_path, '[[rules]]\ntier = "low"\n')
    assert err.key == "rules[1]" and "exactly one" in err.problem


def test_rule_of_only_negations_matches_nothing(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[[rules]]\nglobs = ["!a"]\ntier = "low"\n')
    assert err.key == "rules[1]" and "'!'" in err.problem


def test_budget_max_below_target(tmp_path: Path) -> None:
    err = config_error(
        tmp_path,
        '[scopes.core]\nroots = ["."]\n[scopes.core.targets.claude]\ntarget = 10000\nmax = 9000\n',
    )
    assert err.key == "scopes.core.targets.claude.max"
    assert "at least the target (10000)" in err.problem and "9000" in err.problem


def test_pack_budget_max_below_target(tmp_path: Path) -> None:
    err = config_error(tmp_path, "[pack]\nbudget = { target = 10, max = 5 }\n")
    assert err.key == "pack.budget.max"


def test_budget_needs_a_target(tmp_path: Path) -> None:
    err = config_error(tmp_path, "[pack]\nbudget = { max = 5 }\n")
    assert err.key == "pack.budget" and "target" in err.problem


@pytest.mark.parametrize("value", ["0", "-10"])
def test_negative_or_zero_budget(tmp_path: Path, value: str) -> None:
    err = config_error(tmp_path, f"[pack]\nbudget = {{ target = {value} }}\n")
    assert err.key == "pack.budget.target"
    assert "positive integer" in err.problem and value in err.problem


@pytest.mark.parametrize("name", ["Core", "-core", "co re", "c.re", "x" * 65, "ü"])
def test_bad_scope_name(tmp_path: Path, name: str) -> None:
    err = config_error(tmp_path, f'[scopes."{name}"]\nroots = ["."]\n')
    assert err.key.startswith("scopes.")
    assert "[a-z0-9]" not in err.problem  # explained in words
    assert "lowercase letters, digits" in err.problem and repr(name) in err.problem


def test_longest_scope_name_is_allowed(tmp_path: Path) -> None:
    name = "a" + "-_0" * 21  # 64 characters
    write(tmp_path, f'[scopes.{name}]\nroots = ["."]\n')
    assert load_config(tmp_path).scopes[0].name == name


def test_bad_target_name(tmp_path: Path) -> None:
    err = config_error(
        tmp_path, '[scopes.core]\nroots = ["."]\n[scopes.core.targets.Claude]\ntarget = 1\n'
    )
    assert err.key == "scopes.core.targets.Claude"
    assert "target name 'Claude'" in err.problem


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("[pack]\ntokenizer = 5\n", "pack.tokenizer", "must be a string, not an integer"),
        ('[pack]\ndefault_rules = "yes"\n', "pack.default_rules", "true or false"),
        ('[pack]\nexclude = "*.log"\n', "pack.exclude", "array of strings, not a string"),
        ("[pack]\nexclude = [1]\n", "pack.exclude[1]", "must be a string"),
        ('[pack]\nbudget = { target = "10" }\n', "pack.budget.target", "integer, not a string"),
        ("[pack]\nbudget = { target = true }\n", "pack.budget.target", "not a boolean"),
        ("[pack]\nbudget = { target = 1.5 }\n", "pack.budget.target", "not a float"),
        ("pack = 3\n", "pack", "must be a table"),
        ('[rules]\nglob = "a"\n', "rules", "array of tables"),
        ('[[rules]]\nglob = "a"\ntier = "low"\nrequired = 1\n', "rules[1].required", "true"),
        ('[[rules]]\nglob = "a"\ntier = "low"\npriority = "1"\n', "rules[1].priority", "integer"),
        ('[scopes.core]\nroots = "src"\n', "scopes.core.roots", "array"),
        ("[scopes]\ncore = 1\n", "scopes.core", "must be a table"),
    ],
)
def test_wrong_type(tmp_path: Path, text: str, key: str, words: str) -> None:
    err = config_error(tmp_path, text)
    assert err.key == key
    assert words in err.problem


def test_unknown_tokenizer(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[pack]\ntokenizer = "gpt2"\n')
    assert err.key == "pack.tokenizer"
    assert "o200k_base, cl100k_base" in err.problem


def test_empty_roots(tmp_path: Path) -> None:
    err = config_error(tmp_path, "[scopes.core]\nroots = []\n")
    assert err.key == "scopes.core.roots" and "at least one" in err.problem


def test_missing_roots(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[scopes.core]\ninclude = ["*.py"]\n')
    assert err.key == "scopes.core" and "roots" in err.problem


@pytest.mark.parametrize("root", ["../x", "a/../../b", "/etc", "a\\\\b", ""])
def test_roots_stay_inside_the_tree(tmp_path: Path, root: str) -> None:
    err = config_error(tmp_path, f'[scopes.core]\nroots = ["ok", "{root}"]\n')
    assert err.key == "scopes.core.roots[2]"
    assert "inside the project root" in err.problem


def test_duplicate_scope_is_refused_by_toml(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[scopes.a]\nroots = ["x"]\n[scopes.a]\nroots = ["y"]\n')
    assert "invalid TOML" in err.problem and "line 3" in err.problem


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    err = config_error(tmp_path, '[pack]\ntokenizer = "o200k_base"\nbudget = {target = }\n')
    assert err.key == ""
    assert "invalid TOML" in err.problem and "line 3" in err.problem
    assert str(tmp_path / "cas.toml") in str(err)


def test_non_utf8_config_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_bytes(b'[pack]\ntokenizer = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(tmp_path)


# --- scopes --------------------------------------------------------------------------------------


def scope(
    name: str, roots: tuple[str, ...], include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> Scope:
    return Scope(name, roots, include, exclude, (Target("", DEFAULT_BUDGET),), ())


def with_scopes(*scopes: Scope, exclude: tuple[str, ...] = ()) -> Config:
    base = default_config("/nonexistent")
    return Config("cas.toml", base.root, "o200k_base", DEFAULT_BUDGET, exclude, (), scopes)


def test_assign_scopes_roots_include_exclude(tmp_path: Path) -> None:
    config = with_scopes(
        scope("code", ("src", "tool.py"), include=("*.py",), exclude=("**/fixtures/**",)),
        scope("docs", ("docs", "README.md")),
        exclude=("*.min.js",),
    )
    paths = [
        "src/b.py",
        "src/a.py",
        "src/fixtures/f.py",
        "src/readme.md",
        "srcx/c.py",  # not under "src"
        "tool.py",
        "docs/z.md",
        "docs/app.min.js",
        "README.md",
        "other/README.md",
    ]
    assert assign_scopes(config, paths) == {
        "code": ["src/a.py", "src/b.py", "tool.py"],
        "docs": ["README.md", "docs/z.md"],
    }


def test_assign_scopes_sorts_by_utf8_bytes() -> None:
    config = with_scopes(scope("all", (".",)))
    paths = ["b", "\uff21", "a/z", "\u00e9", "a-b", "A"]
    assert assign_scopes(config, paths)["all"] == sorted(paths, key=lambda p: p.encode())


def test_overlapping_scopes_name_the_path_and_both_scopes() -> None:
    config = with_scopes(scope("a", ("src",)), scope("b", ("src/widgets.py", "docs")))
    with pytest.raises(ConfigError) as info:
        assign_scopes(config, ["docs/x.md", "src/widgets.py", "src/other.py"])
    err = info.value
    assert err.file == "cas.toml" and err.key == "scopes"
    assert "path 'src/widgets.py' is claimed by scopes 'a' and 'b'" in str(err)
    assert "disjoint" in str(err)


def test_default_scope_takes_everything(tmp_path: Path) -> None:
    assert assign_scopes(default_config(tmp_path), ["b", "a/c"]) == {"repo": ["a/c", "b"]}


SEGMENTS = st.sampled_from(["a", "b", "c", "d", "x.py", "y.md", "é", "A", "a b"])


def md_inside(path: str) -> bool:
    """Whether gitignore's `*.md` excludes `path`: it matches a directory and all below it."""
    return any(part.endswith(".md") for part in path.split("/"))


PATHS = st.lists(st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join), max_size=40)


@given(
    paths=PATHS,
    owners=st.lists(st.sampled_from(["s1", "s2", "s3", None]), min_size=4, max_size=4),
    excluded=st.booleans(),
)
def test_disjoint_scopes_partition_the_paths(
    paths: list[str], owners: list[str | None], excluded: bool
) -> None:
    # Top-level names a-d are dealt to up to three scopes (or to none): roots never overlap.
    tops = ["a", "b", "c", "d"]
    names = sorted({o for o in owners if o is not None})
    scopes = [
        scope(n, tuple(t for t, o in zip(tops, owners, strict=True) if o == n), (), ("*.md",))
        if excluded
        else scope(n, tuple(t for t, o in zip(tops, owners, strict=True) if o == n))
        for n in names
    ]
    result = assign_scopes(with_scopes(*scopes), paths)
    assert set(result) == set(names)
    seen: list[str] = []
    for s in scopes:
        got = result[s.name]
        assert got == sorted(set(got), key=lambda p: p.encode())
        for p in got:
            assert p.split("/")[0] in s.roots
            assert not (excluded and md_inside(p))
        seen.extend(got)
    assert len(seen) == len(set(seen))
    owner_of = dict(zip(tops, owners, strict=True))
    expected = {
        p
        for p in paths
        if owner_of.get(p.split("/")[0]) is not None and not (excluded and md_inside(p))
    }
    assert set(seen) == expected


# --- numbers and nesting a parser or msgpack cannot take ----------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[pack]\nbudget = { target = 99999999999999999999 }\n", "pack.budget.target"),
        ("[pack]\nbudget = { target = 10, max = 1000000001 }\n", "pack.budget.max"),
        (
            '[scopes.a]\nroots = ["."]\n[scopes.a.targets.t]\ntarget = 18446744073709551616\n',
            "scopes.a.targets.t.target",
        ),
    ],
)
def test_a_budget_over_the_maximum(tmp_path: Path, text: str, key: str) -> None:
    err = config_error(tmp_path, text)
    assert err.key == key
    assert f"at most {MAX_NUMBER} tokens" in err.problem


def test_the_largest_budget_loads(tmp_path: Path) -> None:
    write(tmp_path, f"[pack]\nbudget = {{ target = {MAX_NUMBER} }}\n")
    assert load_config(tmp_path).budget == Budget(MAX_NUMBER, MAX_NUMBER)


@pytest.mark.parametrize("value", ["-99999999999999999999999999999", "1000000001"])
def test_a_priority_out_of_range(tmp_path: Path, value: str) -> None:
    err = config_error(tmp_path, f'[[rules]]\nglob = "*.py"\ntier = "high"\npriority = {value}\n')
    assert err.key == "rules[1].priority" and "must be from" in err.problem
    assert len(str(err)) < 200  # a huge number is shown shortened


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 50_000 + "]" * 50_000 + "\n",
        "a = " + "{ b = " * 5_000 + "1" + " }" * 5_000 + "\n",
    ],
)
def test_nesting_too_deep_names_the_file(tmp_path: Path, text: str) -> None:
    err = config_error(tmp_path, text)
    assert "nested too deeply" in err.problem
    (tmp_path / "p").mkdir()
    pyproject_err = config_error(tmp_path / "p", "[tool.cas]\n" + text, "pyproject.toml")
    assert "nested too deeply" in pyproject_err.problem
    # find_project_root reads pyproject.toml files too: a deep one is no marker, and no crash.
    (tmp_path / "cas.toml").unlink()
    assert find_project_root(tmp_path / "p") == tmp_path / "p"


def test_a_huge_budget_through_the_cli_is_one_line_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "[pack]\nbudget = { target = 99999999999999999999 }\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    r = run_cas("pack", cwd=tmp_path)
    assert r.code == 2
    assert r.err.strip() == (
        f"cas: error: {tmp_path / 'cas.toml'}: pack.budget.target: must be at most "
        f"{MAX_NUMBER} tokens, got 99999999999999999999"
    )
    write(tmp_path, "a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    r = run_cas("pack", cwd=tmp_path)
    assert r.code == 2 and "nested too deeply" in r.err and "internal error" not in r.err


def test_memory_settings_load_with_the_source_designs_defaults(tmp_path: Path) -> None:
    from packer.config import DEFAULT_MEMORY_TARGETS, MemoryConfig

    assert default_config(tmp_path).memory == MemoryConfig(7, 30, 90, DEFAULT_MEMORY_TARGETS)
    assert [(t.name, t.budget.target, t.budget.max) for t in DEFAULT_MEMORY_TARGETS] == [
        ("common", 2500, 3000), ("chatgpt", 5000, 6000), ("claude", 10000, 12000),
    ]  # fmt: skip
    (tmp_path / "cas.toml").write_text(
        "[memory]\nfull_days = 2\nkeep_days = 40\n[memory.targets.tiny]\ntarget = 500\n"
    )
    got = load_config(tmp_path).memory
    assert (got.full_days, got.summary_days, got.keep_days) == (2, 30, 40)
    assert got.targets == (Target("tiny", Budget(500, 500)),)
    assert got.recent_changes_share == 20
    (tmp_path / "cas.toml").write_text("[memory]\nrecent_changes_share = 0\n")
    assert load_config(tmp_path).memory.recent_changes_share == 0


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("[memory]\nfull_days = -1\n", "memory.full_days", "from 0 to 36500"),
        ("[memory]\nfull_days = 40\n", "memory.summary_days", "at least full_days (40)"),
        ("[memory]\nkeep_days = 10\n", "memory.keep_days", "at least summary_days (30)"),
        ("[memory]\nkeep = 10\n", "memory.keep", "unknown key"),
        ('[memory]\nfull_days = "7"\n', "memory.full_days", "must be an integer"),
        ("[memory.targets]\n", "memory.targets", "at least one target"),
        (
            "[memory]\nrecent_changes_share = 101\n",
            "memory.recent_changes_share",
            "must be a percentage from 0 to 100, got 101",
        ),
        (
            "[memory]\nrecent_changes_share = -5\n",
            "memory.recent_changes_share",
            "must be a percentage from 0 to 100, got -5",
        ),
        (
            "[memory]\nrecent_changes_share = 12.5\n",
            "memory.recent_changes_share",
            "must be an integer, not a float",
        ),
    ],
)
def test_bad_memory_settings_name_the_key(tmp_path: Path, text: str, key: str, words: str) -> None:
    (tmp_path / "cas.toml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    assert key in str(err.value) and words in str(err.value) and "\n" not in str(err.value)
