"""packer.wildmatch against git itself, and the work a hostile pattern costs.

git is the oracle: `git check-ignore --no-index` in a scratch repository answers for random short
patterns (stars, ``**``, classes, escapes, negations, non-ASCII bytes) and random paths. Both
ways a line can be matched (its regular expression, when it has one, and the step-counting
matcher every line has) must agree with git. Hostile patterns are bounded by counted steps,
never by wall time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from packer.ignore import IgnoreStack
from packer.wildmatch import GlobList, Work, folder_keys, name_keys, parse_line, path_keys
from tests.conftest import run_cas
from tests.gitoracle import GIT, Git

needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


@pytest.fixture(scope="module")
def git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Git]:
    yield Git(tmp_path_factory.mktemp("wildmatch"))


def _ours(lines: list[bytes], path: bytes, *, counted: bool) -> bool:
    """Whether the walk would leave ``path`` out: a folder above it ignored, or the path itself
    (a file). ``counted`` asks every line's step-counting matcher instead of the stack."""
    parts = path.split(b"/")
    asks = [(b"/".join(parts[:i]), True) for i in range(1, len(parts))] + [(path, False)]
    if not counted:
        stack = IgnoreStack().push("", [x.decode("utf-8", "surrogateescape") for x in lines])
        return any(stack.is_ignored(p.decode("utf-8", "surrogateescape"), d) for p, d in asks)
    parsed = [x for x in map(parse_line, lines) if x is not None]
    for p, is_dir in asks:
        verdict = None
        for line in parsed:
            if line.dir_only and not is_dir:
                continue
            name = p[p.rfind(b"/") + 1 :] if line.basename else p
            if line.glob.match(name, counted=True):
                verdict = not line.negated
        if verdict:
            return True
    return False


# --- random patterns against git -----------------------------------------------------------------

_PIECES = [
    "a", "b", "ab", "*", "**", "***", "?", "/", "[ab]", "[!a]", "[^b]", "[a-c]", "[]a]", "[!]b]",
    "[", "]", "\\", "\\*", "\\/", "-", "!", "[[:alpha:]]", "[[:digit:]x]", "[[:bogus:]]",
    "[[:al]", "é", "ü", " ", "#", "\t", ":",
]  # fmt: skip
_NAMES = [
    "a", "b", "ab", "ba", "aab", "abab", "bb", "é", "ü", "éa", "a b", "*", "[a]", "-", "1", "\\",
    "x", "ax", "a.b", "!a", "]", "#", "a\tb", "a:",
]  # fmt: skip

patterns = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=7).map("".join)
paths = st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4).map("/".join)


@needs_git
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    st.lists(patterns, min_size=1, max_size=3),
    st.lists(paths, min_size=1, max_size=12, unique=True),
)
@example(["a*a*a*a*a*b"], ["aaaaaaaaaaab", "aaaaaaaaaaaa", "b/aab"])
@example(["foo**/bar", "a/**/b"], ["foobar", "foo/bar", "foox/y/bar", "a/b", "a/x/b"])
@example(["**\\/b", "a/**", "/a", "!a/b"], ["b", "x/b", "a", "a/b", "a/c"])
@example(["?", "??"], ["é", "a", "ab"])
@example(["[!/]", "[[:space:]]", "[z-a]", "\\"], ["a", " ", "\t", "z"])
def test_lines_match_like_git(git: Git, lines: list[str], names: list[str]) -> None:
    raw_lines = [x.encode() for x in lines]
    raw_paths = [p.encode() for p in names]
    expected = git.ignored(raw_lines, raw_paths)
    # cas.toml's globs ask the same question of a path when no line is a negation
    globs = GlobList(lines) if not any(x.lstrip(" ").startswith("!") for x in lines) else None
    for path in raw_paths:
        want = path in expected
        assert _ours(raw_lines, path, counted=False) == want, (lines, path)
        assert _ours(raw_lines, path, counted=True) == want, (lines, path)
        if globs is not None:
            assert globs.match_file(path.decode()) == want, (lines, path)


@needs_git
@pytest.mark.parametrize(
    "name",
    [
        "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
        "upper", "xdigit",
    ],
)  # fmt: skip
def test_character_classes_match_like_git_for_every_byte(git: Git, name: str) -> None:
    # in a folder no one-byte class matches, so that git reads no name as pathspec magic (":")
    names = [b"dd/" + bytes([b]) for b in range(1, 256) if b not in (0x2F, 0x2E)]  # "/", "."
    for line in (f"[[:{name}:]]".encode(), f"[![:{name}:]]".encode()):
        expected = git.ignored([line], names)
        parsed = parse_line(line)
        assert parsed is not None
        got = {n for n in names if parsed.matches(n, False)}
        assert got == expected, (line, sorted(got ^ expected))


# --- hostile patterns ----------------------------------------------------------------------------


def _steps(line: str, path: str, is_dir: bool = False) -> tuple[bool, int]:
    Work.steps = 0
    stack = IgnoreStack().push("", [line])
    return stack.is_ignored(path, is_dir), Work.steps


def test_many_stars_cost_at_most_pattern_times_name() -> None:
    """The line that took 33 s against one 40-character name. A name its looser regex lets
    through (it starts with an a, ends with a b and holds an a) goes to the counted matcher:
    steps bounded by pattern length times name length, through the stack the walk uses."""
    hostile = "a*" * 12 + "b"
    assert _steps(hostile, "a" * 40) == (False, 0)  # the name: turned away by the regex
    near = "a" * 11 + "c" * 28 + "b"  # 40 bytes, one a short
    ignored, steps = _steps(hostile, near)
    assert not ignored
    assert 0 < steps <= len(hostile) * len(near)
    assert _steps(hostile, "a" * 12 + "c" * 27 + "b")[0]
    # and far larger: 100 stars against the longest name most file systems allow
    huge = "a*" * 100 + "b"
    near = "a" * 99 + "c" * 155 + "b"
    ignored, steps = _steps(huge, near)
    assert not ignored
    assert 0 < steps <= len(huge) * len(near)
    assert _steps(huge, "a" * 254 + "b")[0]


def test_many_globstars_cost_at_most_segments_times_components() -> None:
    line = "**/a/" * 20 + "**/b"
    deep = "/".join(["a"] * 400)
    ignored, steps = _steps(line, deep)
    assert not ignored
    assert steps <= (line.count("/") + 1) * 401 * 2
    assert _steps(line, deep + "/b")[0]


def test_the_regex_path_is_kept_for_usual_patterns() -> None:
    """Usual lines keep their one regular expression (fast, in C); the step-counting matcher is
    for the rest."""
    for usual in ["*.py", "build/", "/dist", "**/node_modules", "docs/**", "a/**/b", "*.py[cod]"]:
        line = parse_line(usual)
        assert line is not None and line.glob.regex is not None, usual
    for other in ["a*b*c", "**/a/**/b/**/c", "*.*"]:
        line = parse_line(other)
        assert line is not None and line.glob.regex is None, other


def test_config_globs_use_the_same_matcher() -> None:
    hostile = "a*" * 12 + "b"
    near = "a" * 11 + "c" * 28 + "b"
    Work.steps = 0
    globs = GlobList([hostile])
    assert not globs.match_file("a" * 40)
    assert not globs.match_file(near)
    assert not globs.match_file("src/" + near)
    assert 0 < Work.steps <= 2 * len(hostile) * len(near)
    assert globs.match_file("src/" + "a" * 39 + "b")


def test_a_hostile_ignore_line_and_glob_do_not_stall_a_pack(tmp_path: Path) -> None:
    """A real `cas pack` with the hostile line in .gitignore and as a cas.toml glob: it ends
    normally (it used to stall for minutes, and its lease went stale)."""
    hostile = "a*" * 12 + "b"
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text(hostile + "\n")
    (root / "cas.toml").write_text(f'[[rules]]\nglob = "{hostile}"\ntier = "high"\n')
    (root / ("a" * 40)).write_text("forty\n")
    (root / "src").mkdir()
    (root / "src" / ("a" * 60)).write_text("sixty\n")
    done = run_cas("pack", "--json", cwd=root, timeout=120)
    assert done.code == 0, done.err
    # nothing matched (no name ends in b): both files are packed; .gitignore and cas.toml
    # steer the pack and are not content
    assert '"files": 2' in done.out


def test_config_globs_see_a_top_level_file_and_each_folder_of_a_deeper_one() -> None:
    # a negation makes every line be asked in turn, of the path and of each of its folders
    globs = GlobList(["a*b*c", "!zz"])
    assert globs.match_file("a1b2c")  # a file at the top: no folders to ask about
    assert globs.match_file("axbyc/f.py") and globs.match_file("d/axbyc/e/f.py")
    assert not globs.match_file("f.py") and not globs.match_file("d/e/f.py")
    assert not globs.match_file("")
    assert not GlobList(["axbyc/", "!zz"]).match_file("axbyc")  # a folder line, not a file


# --- keys: what a path must show for a glob to match it ------------------------------------------

_KEY_PIECES = [
    *_PIECES, ".", ".py", ".min", "x", "src", "tests", "README", "**/", "/**", "/", "*.", "CHA",
]  # fmt: skip
_KEY_NAMES = [*_NAMES, "src", "tests", "x.py", "a.min.py", "READMEx", "README", ".py", "CHANGES"]
key_patterns = st.lists(st.sampled_from(_KEY_PIECES), min_size=1, max_size=6).map("".join)
key_paths = st.lists(st.sampled_from(_KEY_NAMES), min_size=1, max_size=4).map("/".join)


@given(st.lists(key_patterns, min_size=1, max_size=3), st.lists(key_paths, max_size=12))
@example(["*.py"], ["a.min.py", "x.py/a", "a"])
@example(["/*.gemspec", "README*"], ["x.gemspec", "a/x.gemspec", "READMEx/b", "a/README"])
@example(["**/tests/**", "src/**", "/a", "ab"], ["x/tests/y", "src", "a/b", "b/ab/c", "b/a"])
def test_a_glob_list_matches_only_paths_showing_one_of_its_keys(
    globs: list[str], names: list[str]
) -> None:
    """`GlobList.keys` is a necessary condition: a path without any of them never matches, so
    the tier rules may skip a rule for it (`packer.tiers`)."""
    spec = GlobList(globs)
    keys = spec.keys()
    for name in names:
        if keys is not None and not keys & path_keys(name):
            assert not spec.match_file(name), (globs, name, keys)


def test_usual_globs_have_keys_and_a_negation_has_none() -> None:
    assert GlobList(["*.py", "Makefile"]).keys() == {("ext", ".py"), ("name", "Makefile")}
    assert GlobList(["**/node_modules/**", "vendor/**"]).keys() == {
        ("name", "node_modules"),
        ("top", "vendor"),
    }
    assert GlobList(["/README*", "CHANGELOG*"]).keys() == {
        ("top-lead", "REA"),
        ("lead", "CHA"),
    }
    assert GlobList(["/*.gemspec"]).keys() == {("top-ext", ".gemspec")}
    assert GlobList(["*.py", "!x.py"]).keys() is None
    assert GlobList(["*wordlist*"]).keys() is None
    assert GlobList([]).keys() == frozenset()


@given(key_paths)
@example("a.b/c.d")
@example("README")
def test_a_paths_keys_are_its_components_and_its_first_ones(path: str) -> None:
    """`path_keys` (the union of `folder_keys` and `name_keys`, as `packer.tiers` looks them
    up) is: each component's name, first three characters and last extension, and the same
    of the first component as the top."""
    parts = path.split("/")
    expected = {("top", parts[0]), ("top-lead", parts[0][:3])}
    if "." in parts[0]:
        expected.add(("top-ext", "." + parts[0].rsplit(".", 1)[1]))
    for part in parts:
        expected |= {("name", part), ("lead", part[:3])}
        if "." in part:
            expected.add(("ext", "." + part.rsplit(".", 1)[1]))
    assert path_keys(path) == expected
    folder, _, name = path.rpartition("/")
    assert folder_keys(folder) | name_keys(name, top=not folder) == expected
