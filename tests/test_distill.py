"""The recent-changes document: distilled from real git history (scripted commits with fixed
dates), within each target's budget, the same bytes every run, never a secret."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.errors import DistillBudgetError, HistoryError, UnknownName, UsageError
from packer.config import load_config
from packer.diff import Change, PackDiff
from packer.distill import (
    MAX_COMMITS,
    Commit,
    RecentChanges,
    Window,
    choose_targets,
    configured_targets,
    distill,
    distill_text,
    read_window,
)
from packer.tokens import TokenCounter
from tests.conftest import ROOT
from tests.gitrepo import Repo, scripted_history

COUNTER = TokenCounter("o200k_base")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    repo = Repo(tmp_path_factory.mktemp("long") / "repo")
    scripted_history(repo, 150)
    return repo


def commit_lines(text: str) -> list[str]:
    return re.findall(r"^- ([0-9a-f]{10}) ", text, re.M)


# --- what the document says ------------------------------------------------------------------


def test_layout_subjects_first_paragraphs_and_folders(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    first = repo.commit("Start the project\n", {"README.md": "hello\n", "src/a.py": "a = 1\n"})
    repo.commit(
        "Teach the parser\nto read tables\n\nThe parser reads tables now,\nrow by row.\n\n"
        "Details nobody needs in a summary.\n\nSigned-off-by: A <a@example.com>\n"
        "Co-authored-by: B <b@example.com>\n",
        {"src/parse.py": "p = 1\n", "src/a.py": "a = 2\n", "docs/parse.md": "# p\n"},
    )
    last = repo.commit(
        "Fix a typo\n\nSigned-off-by: A <a@example.com>\n", {"docs/parse.md": "# parse\n"}
    )
    r = distill(repo.root, 2500)
    text = r.text
    assert text.startswith("# Recent changes\n\n3 commits, ")
    assert "4 files changed in 3 folders" in text
    # newest first, short hashes, the commit's own date
    assert commit_lines(text) == [last[:10], commit_lines(text)[1], first[:10]]
    assert f"- {last[:10]} 2024-01-01 Fix a typo\n" in text
    # subject joined, first body paragraph on one line, the rest and the trailers dropped
    assert "Teach the parser to read tables\n  The parser reads tables now, row by row.\n" in text
    assert "Details nobody" not in text and "Signed-off-by" not in text
    assert "Co-authored-by" not in text
    # files grouped by top-level folder, with counts, most changed first
    assert "- src/ (2 files): a.py, parse.py\n" in text
    assert "- docs/ (1 file): parse.md\n" in text
    assert "- ./ (1 file): README.md\n" in text
    assert "diff --git" not in text and "@@" not in text
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert (r.commits, r.shown, r.bodies, r.files, r.folders) == (3, 3, 1, 4, 3)
    assert r.tokens == COUNTER.count(text)


def test_order_is_the_chain_not_the_dates(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    hashes = []
    for i in range(4):
        repo.ticks = 10 - 3 * i  # each commit dated before its parent
        hashes.append(repo.commit(f"step {i}\n", {f"f{i}.txt": "x\n"}))
    text = distill(repo.root, 2500).text
    assert commit_lines(text) == [h[:10] for h in reversed(hashes)]


def test_first_parent_chain_and_merges(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("base\n", {"a.txt": "a\n"})
    repo.git("checkout", "-q", "-b", "side")
    side = repo.commit("side work\n", {"side/s.txt": "s\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main work\n", {"b.txt": "b\n"})
    repo.ticks += 1
    repo.git("merge", "-q", "--no-ff", "-m", "Merge branch 'side'", "side")
    text = distill(repo.root, 2500).text
    assert side[:10] not in text  # off the first-parent chain
    assert "Merge branch 'side'" in text
    assert "- side/ (1 file): s.txt\n" in text  # what the merge brought in


def test_window_commits_and_since(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    hashes = [repo.commit(f"c{i}\n", {"f.txt": f"{i}\n"}) for i in range(6)]
    assert [c.id for c in read_window(repo.root, commits=2).commits] == hashes[:3:-1]
    since = read_window(repo.root, since=hashes[2][:12])
    assert [c.id for c in since.commits] == hashes[:2:-1] and not since.cut
    assert read_window(repo.root, since="HEAD").commits == ()
    tagged = read_window(repo.root, since="main~1")
    assert [c.id for c in tagged.commits] == [hashes[-1]]
    assert MAX_COMMITS >= 1000


DAY = 86_400
EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z, as tests.gitrepo dates its commits


def test_until_keeps_the_commits_dated_that_day_or_before_whatever_came_later(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path / "repo")
    dates = [0, 1, 3, 2, 5, 4]  # days after 2024-01-01, not in chain order
    hashes = [
        repo.commit(f"c{i}\n", {"f.txt": f"{i}\n"}, date=f"{EPOCH + d * DAY + 3600} +0000")
        for i, d in enumerate(dates)
    ]

    def ids(until: str, commits: int = 20) -> list[str]:
        return [c.id for c in read_window(repo.root, commits=commits, until=until).commits]

    # the chain's order, newest first, only the commits dated the day or before
    assert ids("2024-01-03") == [hashes[3], hashes[1], hashes[0]]
    assert ids("2024-01-04") == [hashes[3], hashes[2], hashes[1], hashes[0]]
    assert ids("2024-01-06") == hashes[::-1]
    assert ids("2023-12-31") == []
    # a later commit never takes a place in an earlier day's window, however small
    assert ids("2024-01-04", commits=2) == [hashes[3], hashes[2]]
    before = distill(repo.root, 2500, until="2024-01-04")
    for n in range(30):
        repo.commit(f"later {n}\n", {"g.txt": f"{n}\n"}, date=f"{EPOCH + 4 * DAY + n} +0000")
    assert distill(repo.root, 2500, until="2024-01-04") == before
    assert ids("2024-01-05", commits=2)[0] != hashes[3]
    with_since = read_window(repo.root, since=hashes[1], until="2024-01-04")
    assert [c.id for c in with_since.commits] == [hashes[3], hashes[2]]
    for bad in ("2024-02-30", "yesterday", "2024-1-1"):
        with pytest.raises(UsageError):
            read_window(repo.root, until=bad)


def test_until_compares_each_commits_date_in_its_own_zone(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    # 2024-01-05 12:00 UTC is 2024-01-06 in +1400 and 2024-01-04 in -1300
    east = repo.commit("east\n", {"a": "a\n"}, date=f"{EPOCH + 4 * DAY + 12 * 3600} +1400")
    west = repo.commit("west\n", {"b": "b\n"}, date=f"{EPOCH + 4 * DAY + 12 * 3600} -1300")
    assert [c.id for c in read_window(repo.root, until="2024-01-04").commits] == [west]
    assert [c.id for c in read_window(repo.root, until="2024-01-05").commits] == [west]
    both = read_window(repo.root, until="2024-01-06").commits
    assert [(c.id, c.date) for c in both] == [(west, "2024-01-04"), (east, "2024-01-06")]


def test_subfolder_project_sees_its_own_history(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("inside\n", {"proj/src/a.py": "a\n", "other/x.txt": "x\n"})
    repo.commit("outside only\n", {"other/y.txt": "y\n"})
    text = distill(repo.root / "proj", 2500).text
    assert "outside only" not in text and "- src/ (1 file): a.py\n" in text
    assert "other" not in text


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(HistoryError, match="not in a git repository"):
        read_window(plain)
    repo = Repo(tmp_path / "repo")
    assert read_window(repo.root).commits == ()  # no commits yet
    assert "No commits in the window." in distill(repo.root, 500).text
    repo.commit("one\n", {"a": "a\n"})
    for rev in ("no-such-branch", "-n1", "a b", ""):
        with pytest.raises(HistoryError):
            read_window(repo.root, since=rev)
    with pytest.raises(DistillBudgetError) as caught:
        distill(repo.root, 5)
    assert caught.value.exit_code == 1 and "budget of 5" in str(caught.value)


# --- the budget ------------------------------------------------------------------------------


def test_each_target_within_budget_and_mostly_full(history: Repo) -> None:
    """The project's own targets (cas.toml: common, chatgpt, claude): a long history fills
    each budget to more than 80% and never past it; the newest commit is always there."""
    targets = configured_targets(load_config(ROOT))
    assert [t.name for t in targets] == ["common", "chatgpt", "claude"]
    newest = history.git("rev-parse", "HEAD").strip()
    window = read_window(history.root, commits=150)
    assert len(window.commits) == 150
    for t in targets:
        r = distill_text(window, t.budget.target, COUNTER)
        assert r.tokens == COUNTER.count(r.text) <= t.budget.target
        assert r.tokens > 0.8 * t.budget.target, (t.name, r.tokens)
        assert commit_lines(r.text)[0] == newest[:10]
        assert r.bodies < r.commits  # more history than fits: detail was dropped


def test_detail_goes_in_its_fixed_order(history: Repo) -> None:
    window = read_window(history.root, commits=150)
    full = distill_text(window, 10**6, COUNTER)
    assert full.shown == full.bodies == 150 and "older commits" not in full.text
    seen_collapsed = False
    for budget in range(full.tokens - 500, 300, -700):
        r = distill_text(window, budget, COUNTER)
        shown = commit_lines(r.text)
        blocks = re.findall(r"^- [0-9a-f]{10} .*\n(  .*\n)?", r.text, re.M)
        with_body = [bool(b) for b in blocks]
        # 1. bodies go oldest first: those left belong to the newest commits shown
        assert with_body == sorted(with_body, reverse=True)
        rows = re.findall(r"^- \S+/ \(\d+ files?\)(.*)$", r.text, re.M)
        # 2. file lists shrink only once every body has gone
        if any(not rest or rest.endswith(" more") for rest in rows):
            assert not any(with_body)
        if len(shown) < 150:
            # 5. commits go only once every body and every file list has
            assert not any(with_body) and all(not rest for rest in rows)
            assert f"- {150 - len(shown)} older commits not shown\n" in r.text
            seen_collapsed = True
    assert seen_collapsed


def test_same_bytes_every_run(history: Repo) -> None:
    a = distill(history.root, 3000, commits=60)
    b = distill(history.root, 3000, commits=60)
    assert a == b and a.text.encode() == b.text.encode()


# --- secrets ---------------------------------------------------------------------------------


def planted() -> dict[str, str]:
    """Credentials in the shapes the scanner knows, assembled at run time."""
    rng = random.Random(20240101)
    alnum = string.ascii_letters + string.digits
    upper = string.ascii_uppercase + "234567"
    return {
        "github": "gh" + "p_" + "".join(rng.choice(alnum) for _ in range(36)),
        "aws_id": "AK" + "IA" + "".join(rng.choice(upper) for _ in range(16)),
        "aws_secret": "".join(rng.choice(alnum + "+/") for _ in range(40)),
        "path_token": "gh" + "p_" + "".join(rng.choice(alnum) for _ in range(36)),
    }  # fmt: skip


def test_planted_secrets_never_appear(tmp_path: Path) -> None:
    s = planted()
    repo = Repo(tmp_path / "repo")
    repo.commit("Start\n", {"README.md": "hi\n"})
    repo.commit(
        f"Rotate the deploy token {s['github']} for CI\n\n"
        f"The old pair was aws_access_key_id={s['aws_id']}\n"
        f"aws_secret_access_key={s['aws_secret']} and is revoked.\n",
        {"deploy.sh": "echo deploy\n"},
    )
    repo.commit("Back up a token file\n", {f"backup/{s['path_token']}.txt": "nothing\n"})
    repo.commit("Newest\n", {"README.md": "hello\n"})
    for budget in (10_000, 400):
        r = distill(repo.root, budget)
        for value in s.values():
            for i in range(0, len(value) - 8):
                assert value[i : i + 8] not in r.text, (budget, value[:4])
        assert r.redacted >= 4
    text = distill(repo.root, 10_000).text
    assert "Rotate the deploy token [REDACTED: GitHub token] for CI" in text
    assert "[REDACTED: AWS access key id]" in text and "[REDACTED: AWS secret access key]" in text
    assert "backup/ (1 file): [REDACTED: GitHub token].txt" in text


# --- two packs -------------------------------------------------------------------------------


def test_pack_diff_sections() -> None:
    changes = tuple(
        [
            Change("docs/guide.md", "retiered", "high", "medium", 900, 120),
            Change("src/new.py", "added", None, "high", 0, 400),
            Change("src/old.py", "removed", "low", None, 30, 0),
            Change("src/a.py", "changed", "high", "high", 100, 107),
        ]
        + [Change(f"src/m{i}.py", "changed", "high", "high", 50, 50 + i) for i in range(1, 40)]
    )
    pack_diff = PackDiff(changes, 5000, 6000)
    window = Window((Commit("a" * 40, "2024-01-02", "Only commit\n", ("src/a.py",)),))
    text = distill_text(window, 10_000, COUNTER, pack_diff).text
    assert "; pack tokens 5000 -> 6000 (+1000)." in text
    assert "## Re-tiered\n\n- docs/guide.md: high -> medium (-780 tokens)\n" in text
    deltas = text.split("## Token deltas\n\n")[1].splitlines()
    assert deltas[:3] == [
        "- docs/guide.md -780 (retiered)",
        "- src/new.py +400 (added)",
        "- src/m39.py +39 (changed)",
    ]
    assert "- src/old.py -30 (removed)" in deltas
    small = distill_text(window, 200, COUNTER, pack_diff)
    assert small.tokens <= 200 and "Only commit" in small.text
    # token-delta rows go first, smallest first, and say what they held
    assert "- 34 more files: +505 tokens in all\n" in small.text
    assert "- docs/guide.md: high -> medium" in small.text
    # then the re-tiered rows
    smaller = distill_text(window, 100, COUNTER, pack_diff).text
    assert "- 1 re-tiered file\n" in smaller and "- 43 files: +377 tokens in all\n" in smaller


# --- invariants ------------------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=60
)


@st.composite
def windows(draw: st.DrawFn) -> Window:
    n = draw(st.integers(1, 25))
    commits = []
    for i in range(n):
        subject = draw(_TEXT)
        body = draw(_TEXT)
        trailer = draw(st.sampled_from(["", "\n\nSigned-off-by: x <x@example.com>"]))
        paths = draw(
            st.lists(
                st.sampled_from(
                    ["a.py", "src/b.py", "src/c d.py", "docs/ü.md", "x/y/z.txt", "/lead", "t\tab"]
                ),
                max_size=4,
                unique=True,
            )
        )
        commits.append(
            Commit(
                f"{i:040x}",
                "2024-01-01",
                f"{subject}\n\n{body}{trailer}\n",
                tuple(sorted(paths)),
            )
        )
    return Window(tuple(commits))


_TIERS = st.sampled_from(["high", "medium", "low"])


@st.composite
def pack_diffs(draw: st.DrawFn) -> PackDiff:
    changes = []
    for path in sorted(
        draw(
            st.sets(st.from_regex(r"[a-z]{1,3}(/[a-z]{1,8}){0,2}\.py", fullmatch=True), max_size=30)
        )
    ):
        old, new = draw(_TIERS), draw(_TIERS)
        kind = draw(
            st.sampled_from(["added", "removed", "changed", "retiered", "changed+retiered"])
        )
        changes.append(
            Change(path, kind, old, new, draw(st.integers(0, 5000)), draw(st.integers(0, 5000)))
        )
    return PackDiff(tuple(changes), draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)))


def fits(window: Window, budget: int, pack_diff: PackDiff | None) -> RecentChanges | None:
    try:
        return distill_text(window, budget, COUNTER, pack_diff)
    except DistillBudgetError:
        return None


@given(
    window=windows(),
    budget=st.integers(20, 3000),
    smaller=st.integers(1, 2000),
    pack_diff=st.none() | pack_diffs(),
)
def test_any_budget_is_kept_and_shrinking_never_adds(
    window: Window, budget: int, smaller: int, pack_diff: PackDiff | None
) -> None:
    big = fits(window, budget, pack_diff)
    if big is None:
        assert fits(window, max(1, budget - smaller), pack_diff) is None
        return
    assert big.tokens == COUNTER.count(big.text) <= budget
    assert commit_lines(big.text)[0] == window.commits[0].id[:10]
    small = fits(window, max(1, budget - smaller), pack_diff)
    if small is None:
        return
    assert small.tokens <= big.tokens
    assert len(small.text.splitlines()) <= len(big.text.splitlines())
    a, b = commit_lines(small.text), commit_lines(big.text)
    assert a == b[: len(a)]  # the same newest commits, fewer of them
    assert small.bodies <= big.bodies


def test_targets_come_from_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        "[pack]\nbudget = { target = 700, max = 800 }\n"
        '[scopes.a]\nroots = ["a"]\n[scopes.a.targets.small]\ntarget = 100\n'
        "[scopes.a.targets.big]\ntarget = 900\nmax = 1000\n"
        '[scopes.b]\nroots = ["b"]\n[scopes.b.targets.small]\ntarget = 300\n'
        '[scopes.c]\nroots = ["c"]\n'
    )
    config = load_config(tmp_path)
    assert [(t.name, t.budget.target) for t in configured_targets(config)] == [
        ("small", 100),  # the first scope that names it gives the budget
        ("big", 900),
    ]
    assert [t.name for t in choose_targets(config, ["big", "small", "big"])] == ["big", "small"]
    with pytest.raises(UnknownName, match=r"target 'huge' is not configured.*small, big"):
        choose_targets(config, ["huge"])
    (tmp_path / "cas.toml").write_text("[pack]\nbudget = { target = 700, max = 800 }\n")
    (only,) = configured_targets(load_config(tmp_path))
    assert only.name == "" and only.budget.target == 700
