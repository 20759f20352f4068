"""`cas pack` end to end on a fixture repository: tiers, summaries, secrets, budgets, scopes,
rendering from the store alone, diff, and the stale check."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cas import Digest, Store
from cas import manifest as mf
from packer.tokens import TokenCounter
from tests.conftest import ROOT, run_cas, run_cas_capped
from tests.gitrepo import Repo, scripted_history
from tests.packfixture import SECRETS, build_tree


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "repo")


def pack(repo: Path, *args: str) -> dict:  # type: ignore[type-arg]
    r = run_cas("pack", "--json", *args, cwd=repo, timeout=300)
    assert r.code == 0, r.err
    return json.loads(r.out)  # type: ignore[no-any-return]


def load(repo: Path, name: str = "repo") -> mf.Manifest:
    return mf.decode((repo / "manifests" / f"{name}.pack").read_bytes())


def test_default_pack_tiers_and_notes(repo: Path) -> None:
    report = pack(repo)
    assert [p["name"] for p in report["packs"]] == ["repo"]
    m = load(repo)
    tiers = {e.path: e.tier for e in m.entries}
    # the whole tree fits the default budget: every file that may be shown is, in full
    assert tiers["README.md"] == "high"
    assert tiers["docs/guide.md"] == "high"
    assert tiers["src/widgets.py"] == "high"
    assert tiers["tests/test_widgets.py"] == "high"
    # ... and what may not be shown is a line in the omitted list
    assert tiers["assets/logo.png"] == "low"
    assert tiers["package-lock.json"] == "low"
    # the pack's own configuration and ignore files are not content
    assert ".gitignore" not in tiers and "cas.toml" not in tiers
    # the most highly rated come first: the README, then the source
    by_rating = sorted(m.entries, key=lambda e: (-e.rating, e.path.encode()))
    assert by_rating[0].path == "README.md"
    assert "src/ünïcode.md" in tiers
    # ignore rules at both levels
    assert "debug.log" not in tiers and "build/out.js" not in tiers
    assert "src/generated_x.py" not in tiers and "src/generated_keep.py" in tiers
    # the symlink inside is recorded as one; the one leaving the root, the FIFO and the
    # undecodable name are notes, not entries
    link = m.entry("src/link_in.py")
    assert link is not None and link.kind == "symlink" and link.tier == "low"
    assert m.entry("src/link_out") is None and m.entry("src/pipe") is None
    noted = {n["path"]: n["reason"] for n in report["notes"]}
    assert any("pipe" in p for p in noted)
    assert any("bad" in p and "UTF-8" in r for p, r in noted.items())
    assert any("link_out" in p for p in noted)


def test_medium_summaries_hold_signatures_not_bodies(repo: Path, tmp_path: Path) -> None:
    (repo / "cas.toml").write_text(
        '[[rules]]\nglobs = ["src/**"]\ntier = "medium"\nreason = "source"\n'
    )
    pack(repo)
    m = load(repo)
    with Store.at(repo / ".cas") as s:
        for path, present, absent in [
            (
                "src/widgets.py",
                ["class Widget", "def total(self, count: int) -> float"],
                ["secret_body_marker_py", "unique_python_body_statement"],
            ),
            ("src/shapes.ts", ["Square", "makeSquare"], ["unique_ts_body", "unique_ts_fn_body"]),
            ("src/shapes.go", ["Area", "NewCircle"], ["unique_go_body"]),
        ]:
            e = m.entry(path)
            assert e is not None and e.tier == "medium", path
            assert e.summary is not None
            text = s.get(e.summary).decode()
            for p in present:
                assert p in text, (path, p)
            for a in absent:
                assert a not in text, (path, a)
            # the body itself is stored whatever the tier
            assert s.has(e.digest)  # type: ignore[arg-type]


def _all_store_bytes(store: Store) -> bytes:
    return b"\n".join(store.get(d) for d in store.iterate())


def test_secrets_never_reach_the_store_or_a_render(repo: Path, tmp_path: Path) -> None:
    report = pack(repo)
    withheld = {w["path"] for w in report["withheld"]}
    redacted = {w["path"] for w in report["redacted"]}
    for path in [
        ".env",
        "certs/server.pem",
        "keys/id_rsa",
        "src/settings.py",
        "src/gh.md",
        "src/chat.js",
        "src/ai.ts",
        "src/db.yaml",
    ]:
        # Withheld whole, or kept with the secret cut out where its span is exact.
        assert path in withheld or path in redacted, path
    assert {".env", "keys/id_rsa"} <= withheld  # secrets by name are withheld
    m = load(repo)
    for path in withheld:
        e = m.entry(path)
        assert e is not None and e.digest is None and e.tier == "low"
        assert e.reason is not None and e.reason.startswith("secret")
    for path in redacted:
        e = m.entry(path)
        assert e is not None and e.digest is not None
        assert e.reason is not None and "secrets redacted: " in e.reason
    renders = []
    for mode in ("lite", "full"):
        for fmt in ("markdown", "xml", "plain"):
            r = run_cas("render", "repo", "--mode", mode, "--format", fmt, cwd=repo)
            assert r.code == 0, r.err
            renders.append(r.out)
    out_dir = tmp_path / "split"
    assert run_cas("render", "repo", "--mode", "split", "-o", out_dir, cwd=repo).code == 0
    renders += [p.read_text() for p in out_dir.iterdir()]
    pack_out = run_cas("pack", cwd=repo)
    with Store.at(repo / ".cas") as s:
        everything = _all_store_bytes(s)
        cache = b"".join(v for _, v in s.kv.items("cache"))
    for value in SECRETS.values():
        assert value.encode() not in everything, value
        assert value.encode() not in cache
        for text in renders:
            assert value not in text
        assert value not in pack_out.out and value not in pack_out.err
    # ... but the withheld files are listed so the user sees what is missing
    assert ".env" in renders[0] and "src/settings.py" in renders[0]


def test_include_secret_flag_packs_a_named_file(repo: Path) -> None:
    pack(repo, "--include-secret", "src/db.yaml")
    e = load(repo).entry("src/db.yaml")
    assert e is not None and e.digest is not None
    with Store.at(repo / ".cas") as s:
        assert SECRETS["password"].encode() in s.get(e.digest)


def _budget_config(target: int, maximum: int, extra: str = "") -> str:
    return f"[pack]\nbudget = {{ target = {target}, max = {maximum} }}\n{extra}"


def test_budget_respected_after_demotion(repo: Path) -> None:
    big = "\n".join(f"Paragraph {i}: " + "words and more words " * 20 for i in range(60))
    (repo / "docs" / "big.md").write_text("# Big\n\n" + big + "\n")
    (repo / "cas.toml").write_text(_budget_config(600, 800))
    report = pack(repo)
    tokens = report["packs"][0]["tokens"]
    assert max(tokens.values()) <= 800
    m = load(repo)
    big_entry = m.entry("docs/big.md")
    assert big_entry is not None and big_entry.tier != "high"
    assert big_entry.reason == "documentation"
    # more content than budget: the pack fills at least 90% of its target
    assert tokens["markdown"] >= 600 * 9 // 10
    # the count is what the render really emits
    r = run_cas("render", "repo", cwd=repo)
    from packer.tokens import TokenCounter

    assert TokenCounter().count(r.out) == tokens["markdown"]
    for fmt in ("xml", "plain"):
        out = run_cas("render", "repo", "--format", fmt, cwd=repo).out
        assert TokenCounter().count(out) == tokens[fmt] <= 800


def test_required_files_over_the_max_fail_naming_them(repo: Path) -> None:
    (repo / "docs" / "huge.md").write_text("# Huge\n\n" + "lots of words here " * 2000)
    (repo / "cas.toml").write_text(
        _budget_config(
            500,
            700,
            '[[rules]]\nglobs = ["docs/huge.md"]\ntier = "high"\n'
            'reason = "must read"\nrequired = true\n',
        )
    )
    r = run_cas("pack", cwd=repo)
    assert r.code == 1
    assert "docs/huge.md" in r.err and "tokens" in r.err
    assert "Traceback" not in r.err


def test_targets_and_scopes(repo: Path) -> None:
    (repo / "cas.toml").write_text(
        '[scopes.docs]\nroots = ["docs", "README.md"]\n'
        "[scopes.docs.targets.small]\ntarget = 300\nmax = 400\n"
        "[scopes.docs.targets.large]\ntarget = 3000\nmax = 4000\n"
        '[scopes.code]\nroots = ["src"]\n'
    )
    report = pack(repo)
    names = sorted(p["name"] for p in report["packs"])
    assert names == ["code", "docs.large", "docs.small"]
    docs = load(repo, "docs.small")
    assert {e.path for e in docs.entries} == {"README.md", "docs/guide.md"}
    code = load(repo, "code")
    assert all(e.path.startswith("src/") for e in code.entries)


def test_overlapping_scopes_are_a_config_error(repo: Path) -> None:
    (repo / "cas.toml").write_text(
        '[scopes.a]\nroots = ["src"]\n[scopes.b]\nroots = ["src/widgets.py"]\n'
    )
    r = run_cas("pack", cwd=repo)
    assert r.code == 2
    assert "src/widgets.py" in r.err and "'a'" in r.err and "'b'" in r.err


def test_bad_config_is_one_line_exit_2(repo: Path) -> None:
    (repo / "cas.toml").write_text("[pack]\nbudget = { target = 10, max = 5 }\n")
    r = run_cas("pack", cwd=repo)
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "cas.toml" in lines[0] and "max" in lines[0]


def test_render_reads_the_store_only(repo: Path, tmp_path: Path) -> None:
    pack(repo)
    before = run_cas("render", "repo", "--mode", "full", cwd=repo).out
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copytree(repo / "manifests", moved / "manifests")
    store = repo / ".cas"
    for child in list(repo.iterdir()):
        if child.name not in (".cas", "manifests"):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    after = run_cas("--store", store, "render", "repo", "--mode", "full", cwd=moved)
    assert after.code == 0, after.err
    assert after.out == before
    assert "class Widget" in after.out


def test_diff_and_baseline(repo: Path, tmp_path: Path) -> None:
    first = pack(repo)["packs"][0]["digest"]
    old = tmp_path / "old.pack"
    (repo / "manifests" / "repo.pack").rename(old)
    (repo / "README.md").write_text("# Widgets\n\nChanged text.\n")
    (repo / "docs" / "new.md").write_text("# New\n\nA new doc.\n")
    (repo / "docs" / "guide.md").unlink()
    pack(repo, "--baseline", str(old))
    m = load(repo)
    assert m.parent == Digest.parse(first)
    r = run_cas("diff", old, "repo", "--json", cwd=repo)
    assert r.code == 0, r.err
    changes = {c["path"]: c["change"] for c in json.loads(r.out)["changes"]}
    assert changes == {"README.md": "changed", "docs/new.md": "added", "docs/guide.md": "removed"}
    text = run_cas("diff", old, first, cwd=repo).out
    assert "tokens:" in text


def test_show_lists_entries(repo: Path) -> None:
    pack(repo)
    r = run_cas("show", "repo", "--json", cwd=repo)
    data = json.loads(r.out)
    paths = [e["path"] for e in data["entries"]]
    assert paths == sorted(paths, key=lambda p: p.encode())
    assert run_cas("show", "nope", cwd=repo).code == 1


def test_check_detects_stale_manifests(repo: Path) -> None:
    pack(repo)
    assert run_cas("pack", "--check", cwd=repo).code == 0
    (repo / "README.md").write_text("# Widgets\n\nEdited.\n")
    r = run_cas("pack", "--check", cwd=repo)
    assert r.code == 1 and "stale" in r.err


def test_a_fresh_checkout_checked_once_verifies_and_renders(tmp_path: Path) -> None:
    # As CI sees a project: its manifests committed, no store. A check that finds a pack
    # current leaves in the store everything the pack names (summaries and its own copy too),
    # so `cas verify` passes after it; a stale pack's own copy is not stored.
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text("# Shop\n\nCarts and orders, see `src/`.\n")
    for i in range(8):
        body = "".join(
            f'def step_{j}(order: int) -> int:\n    """Step {j} of module {i}."""\n'
            f"    total = order * {j} + {i}\n    return total - {j}\n\n"
            for j in range(12)
        )
        (repo / "src" / f"mod{i}.py").write_text(f'"""Module {i} of the shop."""\n\n{body}')
    (repo / "cas.toml").write_text(_budget_config(1000, 1200))
    pack(repo)
    assert any(e.summary is not None for e in load(repo).entries)  # summaries are verified too
    fresh = tmp_path / "fresh"
    shutil.copytree(repo, fresh, ignore=shutil.ignore_patterns(".cas"))
    assert run_cas("verify", cwd=fresh).code == 2  # no store yet
    r = run_cas("pack", "--check", cwd=fresh)
    assert r.code == 0, r.err
    r = run_cas("verify", cwd=fresh)
    assert r.code == 0, r.out + r.err
    assert run_cas("render", "repo", cwd=fresh).out == run_cas("render", "repo", cwd=repo).out

    stale = tmp_path / "stale"
    shutil.copytree(repo, stale, ignore=shutil.ignore_patterns(".cas"))
    (stale / "README.md").write_text("# Shop\n\nEdited.\n")
    assert run_cas("pack", "--check", cwd=stale).code == 1
    r = run_cas("verify", cwd=stale)
    assert r.code == 1 and "the manifest's own copy" in r.out


def test_this_repository_lite_manifest_is_at_most_a_fifth_of_the_full_render(
    tmp_path: Path,
) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    copy = tmp_path / "self"
    for rel in filter(None, files):
        src = ROOT / rel.decode()
        if src.is_file() and not rel.startswith(b"manifests/"):
            (copy / rel.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy / rel.decode())
    (copy / ".git").mkdir()
    report = pack(copy)
    for p in report["packs"]:
        size = (copy / p["manifest"]).stat().st_size
        full = run_cas("render", p["name"], "--mode", "full", cwd=copy)
        assert full.code == 0, full.err
        assert size <= 0.2 * len(full.out.encode()), (p["name"], size, len(full.out))
        assert max(p["tokens"].values()) <= p["budget"]["max"]


def test_cli_choices_mirror_the_renderer() -> None:
    from casapp.cli import pack_cmds
    from packer import render

    assert pack_cmds.FORMATS == render.FORMATS
    assert pack_cmds.MODES == render.MODES


# --- names and folders that are wrong: one line, the documented exit code ----------------------


@pytest.fixture
def small(tmp_path: Path) -> Path:
    root = tmp_path / "small"
    root.mkdir()
    (root / "cas.toml").write_text(
        '[scopes.docs]\nroots = ["docs"]\n[scopes.docs.targets.claude]\ntarget = 5000\n'
        '[scopes.code]\nroots = ["src"]\n'
    )
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\nRead me.\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main() -> None:\n    pass\n")
    assert run_cas("init", "--store-only", cwd=root).code == 0
    return root


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def test_an_unknown_scope_or_target_is_exit_2_listing_the_configured_ones(small: Path) -> None:
    r = run_cas("pack", "nosuch", cwd=small)
    assert r.code == 2
    assert "scope 'nosuch' is not configured" in one_line(r.err) and "code, docs" in r.err
    r = run_cas("pack", "-t", "nosuch", cwd=small)
    assert r.code == 2
    assert "target 'nosuch' is not configured" in one_line(r.err) and "claude" in r.err
    # A target the named scope lacks, though another scope has it.
    r = run_cas("pack", "code", "-t", "claude", cwd=small)
    assert r.code == 2 and "target 'claude'" in one_line(r.err)
    assert not (small / "manifests").exists()  # refused before any work
    r = run_cas("pack", "--json", "docs", "docs", "-t", "claude", cwd=small)
    assert r.code == 0
    assert [p["name"] for p in json.loads(r.out)["packs"]] == ["docs.claude"]


def test_age_rules_tier_dated_files_by_the_day_given_with_now(tmp_path: Path) -> None:
    root = tmp_path / "dated"
    (root / "notes").mkdir(parents=True)
    (root / "cas.toml").write_text(
        '[[rules]]\nglob = "notes/*.md"\ntier = "low"\nreason = "old note"\nmin_age_days = 30\n'
    )
    for date in ("2026-01-01", "2026-03-01"):
        (root / "notes" / f"{date}.md").write_text(f"# Note of {date}\n\nWhat happened.\n")
    (root / "notes" / "index.md").write_text("# Notes\n")
    assert run_cas("init", "--store-only", cwd=root).code == 0

    def reasons(*args: str) -> dict[str, tuple[str, str | None]]:
        pack(root, *args)
        return {e.path: (e.tier, e.reason) for e in load(root).entries}

    early = reasons("--now", "2026-03-05")
    assert early["notes/2026-01-01.md"] == ("low", "old note")
    assert early["notes/2026-03-01.md"][1] == "documentation"
    # another day, the same files: decided afresh, not served from the last run's memo
    late = reasons("--now", "2026-04-15")
    assert late["notes/2026-03-01.md"] == ("low", "old note")
    # without a day an age rule matches nothing; the undated file never
    undated = reasons()
    assert {undated[p][1] for p in undated} == {"documentation"}
    assert reasons("--now", "2026-03-05") == early
    r = run_cas("pack", "--now", "2026-02-30", cwd=root)
    assert r.code == 2 and "not a calendar date" in one_line(r.err)


def test_render_and_show_of_an_unknown_pack_stay_not_found(small: Path) -> None:
    assert run_cas("pack", cwd=small).code == 0
    for command in ("render", "show"):
        r = run_cas(command, "nosuch", cwd=small)
        assert r.code == 1
        assert "pack 'nosuch' not found" in one_line(r.err) and "docs.claude" in r.err


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_a_manifests_folder_that_is_not_one(small: Path, kind: str) -> None:
    folder = small / "manifests"
    if kind == "file":
        folder.write_text("not a folder")
    else:
        folder.symlink_to("elsewhere")
    r = run_cas("pack", cwd=small)
    assert r.code == 2
    assert f"cannot write {folder}" in one_line(r.err)
    for args in (["gc"], ["gc", "--grace", "0"]):
        r = run_cas(*args, cwd=small)
        assert r.code == 1 and "nothing was deleted" in one_line(r.err)
        assert str(folder) in r.err
    r = run_cas("verify", cwd=small)
    assert r.code == 1 and str(folder) in r.out
    for command in ("render", "show"):
        r = run_cas(command, "code", cwd=small)
        assert r.code == 1
        assert f"{folder} is a" in one_line(r.err) and "not the folder" in r.err
    assert os.path.lexists(folder) and not folder.is_dir()  # left as it was


# --- cas distill -------------------------------------------------------------------------------

DISTILL_TOML = """[pack]
tokenizer = "o200k_base"

[[rules]]
globs = ["docs/**"]
tier = "{docs_tier}"

[scopes.repo]
roots = ["."]
exclude = [".home/**"]

[scopes.repo.targets.common]
target = 2500
max = 3000

[scopes.repo.targets.chatgpt]
target = 5000
max = 6000

[scopes.repo.targets.claude]
target = 10000
max = 12000
"""


def distill_project(root: Path, commits: int) -> Repo:
    repo = Repo(root)
    repo.commit("Configure the packs\n", {"cas.toml": DISTILL_TOML.format(docs_tier="high")})
    scripted_history(repo, commits)
    return repo


def test_distill_writes_each_target_within_budget_same_bytes(tmp_path: Path) -> None:
    repo = distill_project(tmp_path / "repo", 80)
    token = "gh" + "p_" + "Zq8" * 12  # a GitHub token shape the scanner knows
    newest = repo.commit(f"Newest: drop the leaked {token}\n", {f"backup/{token}.txt": "x\n"})
    out = tmp_path / "out"
    r = run_cas("distill", "--all-targets", "--commits", "100", "-o", out, cwd=repo.root)
    assert r.code == 0, r.err
    counter = TokenCounter("o200k_base")
    for target, budget in (("common", 2500), ("chatgpt", 5000), ("claude", 10000)):
        data = (out / target / "90_recent_changes.md").read_bytes()
        assert f"{target}/90_recent_changes.md: " in r.out
        text = data.decode("utf-8")
        assert counter.count(text) <= budget, target
        if target == "claude":  # the whole window fits, with every body (80 commits have one)
            assert "not shown" not in text and text.count("\n  ") == 80
        else:  # more history than fits: most of the budget used
            assert counter.count(text) > 0.8 * budget, target
        assert f"- {newest[:10]} " in text and "[REDACTED: GitHub token]" in text
        assert token[4:20] not in text
    assert not list(out.rglob("*.partial"))
    # One target prints; the same bytes whatever the hash seed, and as written.
    printed = [
        run_cas(
            "distill", "-t", "common", "--commits", "100", cwd=repo.root, env={"PYTHONHASHSEED": s}
        )
        for s in ("0", "4242")
    ]
    assert printed[0].code == printed[1].code == 0
    assert printed[0].stdout_bytes == printed[1].stdout_bytes
    assert printed[0].stdout_bytes == (out / "common" / "90_recent_changes.md").read_bytes()
    # -o FILE for one target; --json says what each document holds
    r = run_cas("distill", "-t", "claude", "--json", "-o", tmp_path / "one.md", cwd=repo.root)
    assert r.code == 0, r.err
    (doc,) = json.loads(r.out)["documents"]
    assert doc["target"] == "claude" and doc["budget"] == 10000 and doc["commits"] == 20
    assert doc["text"] == (tmp_path / "one.md").read_text(encoding="utf-8")
    assert doc["tokens"] == counter.count(doc["text"]) and doc["redacted"] >= 2
    # --budget for every target; --since REV for the window
    r = run_cas("distill", "-t", "common", "--budget", "300", "--since", "HEAD~3", cwd=repo.root)
    assert r.code == 0 and counter.count(r.out) <= 300 and "3 commits" in r.out


def test_distill_shows_retiered_files_and_token_deltas_between_two_packs(tmp_path: Path) -> None:
    repo = distill_project(tmp_path / "repo", 3)
    repo.commit(
        "Add the guide and the app\n",
        {"docs/guide.md": "# Guide\n\nRead this first.\n", "src/app.py": "def main():\n    pass\n"},
    )
    assert run_cas("pack", "-t", "claude", cwd=repo.root, timeout=300).code == 0
    old = tmp_path / "old.pack"
    shutil.copy(repo.root / "manifests" / "repo.claude.pack", old)
    body = "".join(f"def f{i}(x):\n    return x * {i} + {i}\n\n" for i in range(60))
    repo.commit(
        "Demote the docs and grow the app\n\nThe guide is a summary now.\n",
        {"cas.toml": DISTILL_TOML.format(docs_tier="medium"), "src/app.py": body},
    )
    assert run_cas("pack", "-t", "claude", cwd=repo.root, timeout=300).code == 0
    r = run_cas(
        "distill", "-t", "claude", "--commits", "2", "--old", old, "--new", "repo.claude",
        cwd=repo.root,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "## Re-tiered\n\n- docs/guide.md: high -> medium" in r.out
    deltas = r.out.split("## Token deltas\n\n")[1]
    assert re.search(r"^- src/app\.py \+\d+ \(changed\)$", deltas, re.M), deltas
    assert re.search(r"; pack tokens \d+ -> \d+ \(\+\d+\)\.\n", r.out)
    assert "  The guide is a summary now.\n" in r.out


def test_distill_bad_input_is_one_line_and_its_exit_code(tmp_path: Path) -> None:
    repo = distill_project(tmp_path / "repo", 2)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "cas.toml").write_text(DISTILL_TOML.format(docs_tier="high"))
    (tmp_path / "junk.pack").write_bytes(b"not a manifest")
    cases = [
        (plain, ["-t", "common"], 2, "not in a git repository"),
        (repo.root, ["-t", "nosuch"], 2, "target 'nosuch' is not configured"),
        (repo.root, ["-t", "common", "--since", "nosuch"], 2, "unknown revision nosuch"),
        (repo.root, ["-t", "common", "--since", "HEAD", "--commits", "3"], 2, "not both"),
        (repo.root, [], 2, "3 targets (common, chatgpt, claude)"),
        (repo.root, ["-t", "common", "--old", "nosuch", "--new", "nosuch"], 1, "not found"),
        (repo.root, ["-t", "common", "--old", tmp_path / "junk.pack", "--new", "x"], 2, "manifest"),
        (repo.root, ["-t", "common", "--old", "x"], 2, "--old and --new go together"),
        (repo.root, ["-t", "common", "--budget", "5"], 1, "over the budget of 5"),
    ]
    for cwd, args, code, message in cases:
        r = run_cas("distill", *args, cwd=cwd)
        assert r.code == code, (args, r.err)
        assert message in r.err and len(r.err.strip().splitlines()) == 1, (args, r.err)
        assert "Traceback" not in r.err and r.out == ""


def test_a_project_whose_top_folder_is_a_python_package(tmp_path: Path) -> None:
    """Issue 21: an ``__init__.py`` in the project's top folder (``cd src/mypkg && cas pack``)
    made the pack loop for ever, growing until the machine ran out of memory. Under a memory
    cap and a timeout far above what it takes, it packs; module names count from the top."""
    repo = Repo(tmp_path / "mypkg")
    repo.commit(
        "A package packed from its own folder",
        {
            "__init__.py": "from .a import x\nfrom .sub import y\n",
            "a.py": "x = 1\n",
            "sub/__init__.py": "from ..a import x\ny = x\n",
        },
    )
    r = run_cas_capped("--quiet", "pack", cwd=repo.root)
    assert r.code == 0 and r.err == "", r.err
    assert [e.path for e in load(repo.root).entries] == ["__init__.py", "a.py", "sub/__init__.py"]

    def rating(path: str) -> str:
        r = run_cas("--quiet", "pack", "--explain", path, cwd=repo.root, timeout=60)
        assert r.code == 0, r.err
        return next(line for line in r.out.splitlines() if line.startswith("  rating: "))

    # the relative imports of both packages resolve to a.py; the top folder's __init__.py is
    # the top-level package, the one below it a package of it
    assert "imported by 2 files" in rating("a.py")
    assert "top-level package index" in rating("__init__.py")
    below = rating("sub/__init__.py")
    assert "; package index;" in below and "top-level" not in below


def test_a_file_whose_content_another_has_is_shown_once_with_a_pointer(tmp_path: Path) -> None:
    tree = tmp_path / "dup"
    (tree / "src" / "app").mkdir(parents=True)
    (tree / "lib" / "copy").mkdir(parents=True)
    body = "def parse(text: str) -> list[str]:\n" + "    text = text.strip()\n" * 5
    body += "    return []\n"
    for rel in ("src/app/parse.py", "lib/copy/parse.py", "src/app/parse_copy.py"):
        (tree / rel).write_text(body)
    (tree / "src" / "app" / "main.py").write_text("from app.parse import parse\n\nparse('a b')\n")
    (tree / "cas.toml").write_text(_budget_config(4000, 4000))
    pack(tree)
    m = load(tree)
    entries = {
        p: m.entry(p) for p in ("src/app/parse.py", "lib/copy/parse.py", "src/app/parse_copy.py")
    }
    shown = [p for p, e in entries.items() if e is not None and e.tier != "low"]
    assert len(shown) == 1  # one of them, the best rated
    (original,) = shown
    for path, entry in entries.items():
        if path != original:
            assert entry is not None and entry.tier == "low"
            assert entry.reason == f"duplicate; the same content as {original}"
    r = run_cas("render", "repo", cwd=tree)
    assert r.out.count("def parse(text: str)") == 1
    assert f"the same content as {original}" in r.out


def test_a_typescript_modules_compiled_files_beside_it_point_to_it(tmp_path: Path) -> None:
    """`client.js` and `client.d.ts` beside `client.ts` say again what it says: listed with a
    pointer to it, never summarized on their own. A `.js` or `.d.ts` with no `.ts` beside it
    is content like any other."""
    tree = tmp_path / "ts"
    (tree / "src").mkdir(parents=True)
    source = (
        "export interface Options {\n  retries: number;\n  timeout: number;\n}\n\n"
        "export function request(url: string, options: Options): Promise<Response> {\n"
        "  return fetch(url);\n}\n"
    )
    (tree / "src" / "client.ts").write_text(source)
    (tree / "src" / "client.js").write_text(
        "export function request(url, options) {\n  return fetch(url);\n}\n"
    )
    (tree / "src" / "client.d.ts").write_text(
        "export interface Options {\n  retries: number;\n  timeout: number;\n}\n"
        "export declare function request(url: string, options: Options): Promise<Response>;\n"
    )
    (tree / "src" / "alone.js").write_text("export function alone() {\n  return 1;\n}\n")
    (tree / "src" / "alone.d.ts").write_text("export declare function alone(): number;\n")
    (tree / "cas.toml").write_text(_budget_config(4000, 4000))
    pack(tree)
    m = load(tree)
    for rel in ("src/client.js", "src/client.d.ts"):
        entry = m.entry(rel)
        assert entry is not None and entry.tier == "low"
        assert entry.reason == "generated from src/client.ts"
    for rel in ("src/client.ts", "src/alone.js", "src/alone.d.ts"):
        entry = m.entry(rel)
        assert entry is not None and entry.tier != "low", rel
    r = run_cas("render", "repo", cwd=tree)
    assert r.out.count("function request(") == 1
    assert "generated from src/client.ts" in r.out


def test_xml_sections_wrap_only_text_that_holds_markup() -> None:
    """A section whose text holds no markup is its text as it is; one with ``<``, ``&`` or a
    CDATA end (``]]>``, which content may not hold) is CDATA; either way the section parses
    back to the text exactly, and the file's tier is not repeated beside its summary flag."""
    import xml.etree.ElementTree as ET

    from packer.render import XmlRenderer

    xml = XmlRenderer()
    for text, wrapped in (
        ("def run(x):\n    return x\n", False),
        ("if a < b and c & d:\n", True),
        ("s = ']]>'  # <tag>\n", True),
        ("end = ']]>'\n", True),
        ("", False),
    ):
        for summary in (False, True):
            head = xml.section_head("src/a.py", "medium" if summary else "high", summary)
            section = head + xml.section_body(text, "python") + xml.section_close()
            assert ("<![CDATA[" in section) == wrapped
            assert "tier=" not in head
            node = ET.fromstring(section)
            assert (node.text or "").strip("\n") == text.strip("\n")
            assert node.get("summary") == ("true" if summary else None)


def test_orphan_packs_are_named_fail_the_check_and_are_pruned(small: Path) -> None:
    """A scope removed from cas.toml leaves its pack behind: `cas pack` names it, `--check`
    fails on it, `--prune` removes it and gc then frees what only it held. A load and a memory
    pack are not orphans: other commands make them."""
    assert run_cas("pack", cwd=small).code == 0
    guide = Digest.of((small / "docs" / "guide.md").read_bytes())
    shutil.copy(small / "manifests" / "code.pack", small / "manifests" / "mem.global.common.pack")
    (small / "cas.toml").write_text('[scopes.code]\nroots = ["src"]\n')
    (small / "docs" / "guide.md").unlink()
    report = pack(small)
    assert report["orphans"] == ["manifests/docs.claude.pack"] and report["pruned"] is False
    r = run_cas("pack", cwd=small)
    assert "manifests/docs.claude.pack (orphan: " in r.out and "'cas pack --prune'" in r.out
    assert "mem.global" not in r.out
    r = run_cas("pack", "--check", cwd=small)
    assert r.code == 1
    assert "error: manifests/docs.claude.pack is an orphan" in r.err and "mem." not in r.err
    assert run_cas("pack", "--check", "--prune", cwd=small).code == 2
    r = run_cas("pack", "--prune", cwd=small)
    assert r.code == 0 and "manifests/docs.claude.pack (pruned" in r.out
    assert sorted(p.name for p in (small / "manifests").iterdir()) == [
        "code.pack", "mem.global.common.pack"
    ]  # fmt: skip
    assert run_cas("has", str(guide), cwd=small).code == 0
    assert run_cas("gc", "--grace", "0", cwd=small).code == 0
    assert run_cas("has", str(guide), cwd=small).code == 1
    # a load, by its kind whatever its name, is no orphan
    assert run_cas("load", "main", "--name", "asked", cwd=small).code == 0
    assert run_cas("pack", "--check", cwd=small).code == 0
    assert json.loads(run_cas("pack", "--prune", "--json", cwd=small).out)["orphans"] == []
    assert (small / "manifests" / "asked.pack").is_file()


def test_the_reports_share_is_of_the_target_so_a_full_pack_reads_as_full(repo: Path) -> None:
    (repo / "cas.toml").write_text("[pack]\nbudget = { target = 400, max = 480 }\n")
    r = run_cas("pack", cwd=repo)
    assert r.code == 0, r.err
    found = re.search(r"budget: (\d+) tokens, (\d+)% of target 400 \(max 480\)", r.out)
    assert found is not None, r.out
    used, share = int(found[1]), int(found[2])
    assert share == 100 * used // 400 and share >= 90  # more content than budget: filled


def test_cat_summary_works_for_any_file_the_pack_holds(repo: Path) -> None:
    """The README's promise: `cas cat PACK PATH --summary` prints the summary the pack shows,
    or for a file shown in full or left out the one cas makes of it; a binary file or a
    withheld secret gets one line saying why there is none."""
    from packer.summarize import summarize

    (repo / "cas.toml").write_text("[pack]\nbudget = { target = 400, max = 480 }\n")
    pack(repo)
    m = load(repo)
    with Store.at(repo / ".cas") as s:
        bodies = {e.path: s.get(e.digest) for e in m.entries if e.digest is not None}
        summaries = {e.path: s.get(e.summary) for e in m.entries if e.summary is not None}
    tiers = {e.tier for e in m.entries if e.digest is not None}
    assert tiers == {"high", "medium", "low"}, tiers
    for e in m.entries:
        r = run_cas("cat", "repo", e.path, "--summary", cwd=repo)
        if e.digest is None:
            assert r.code == 1 and "withheld as a secret" in one_line(r.err)
        elif e.path == "assets/logo.png":
            assert r.code == 1 and "is binary" in one_line(r.err)
        elif e.summary is not None:
            assert r.code == 0 and r.stdout_bytes == summaries[e.path], e.path
        else:
            assert r.code == 0, (e.path, r.err)
            want = summarize(e.path, bodies[e.path].decode("utf-8", "replace"))
            assert r.out == want and r.out.startswith("# summary ("), e.path
    out = repo / "out.txt"
    low = next(e.path for e in m.entries if e.tier == "low" and e.path.endswith(".py"))
    assert run_cas("cat", "repo", low, "--summary", "-o", out, cwd=repo).code == 0
    assert out.read_text() == summarize(low, bodies[low].decode())
    r = run_cas("cat", "repo", "no/such.py", "--summary", cwd=repo)
    assert r.code == 1 and "not found" in one_line(r.err)
