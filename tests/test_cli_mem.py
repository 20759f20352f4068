"""`cas mem`: memory through real `cas` processes: add, show, log, search, facts, rollback."""

from __future__ import annotations

import itertools
import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cas import Store
from cas.digest import Digest
from cas.manifest import Manifest
from cas.manifest import decode as decode_manifest
from tests.conftest import cas_env, run_cas
from tests.secret_corpus import Values, pieces


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert run_cas("init", "--store-only", cwd=tmp_path).code == 0
    return tmp_path


def load_manifest(path: Path) -> Manifest:
    return decode_manifest(path.read_bytes())


def mem(project: Path, *args: str, stdin: bytes | None = None) -> str:
    r = run_cas("mem", *args, cwd=project, input=stdin)
    assert r.code == 0, r.err
    return r.out


def test_a_day_of_memory_end_to_end(project: Path) -> None:
    mem(project, "add", "--date", "2026-11-20", "decided", "to", "keep", "format", "2")
    mem(project, "add", "--date", "2026-11-20", "-", stdin=b"from stdin\nsecond line\n")
    mem(project, "add", "--date", "2026-11-21", "--scope", "session:s1", "a session note")
    mem(project, "fact", "set", "--date", "2026-11-20", "db", "postgres", "14")
    mem(project, "fact", "set", "--date", "2026-11-22", "db", "postgres", "16")
    mem(project, "curate", "--date", "2026-11-22", "Packs are judged by what agents answer")
    assert mem(project, "show", "logs/2026-11-20.md") == (
        "# 2026-11-20\n\n- decided to keep format 2 ^e-igt5gp\n"
        "- from stdin ^e-cghjze\n  second line\n"
    )
    listed = json.loads(mem(project, "show", "--json"))
    assert [f["path"] for f in listed["files"]] == [
        "MEMORY.md", "facts/db.md", "journal.md", "logs/2026-11-20.md",
    ]  # fmt: skip
    assert mem(project, "fact", "get", "db") == "postgres 16\n"
    assert mem(project, "fact", "history", "db").splitlines() == [
        "2026-11-22  postgres 16", "2026-11-20  postgres 14",
    ]  # fmt: skip
    log = json.loads(mem(project, "log", "--json"))["states"]
    assert [s["changes"] for s in log] == [
        ["2026-11-22 curate MEMORY.md"], ["2026-11-22 set fact db"], ["2026-11-20 set fact db"],
        ["2026-11-20 add logs/2026-11-20.md"], ["2026-11-20 add logs/2026-11-20.md"],
    ]  # fmt: skip
    assert all(s["parent"] == n["state"] for s, n in itertools.pairwise(log))
    found = json.loads(mem(project, "search", "--json", "--mode", "lexical", "format"))
    assert found["scope"] == "global" and found["query"] == "format"
    assert found["mode"] == "lexical"
    assert [{k: h[k] for k in ("path", "lines", "snippet")} for h in found["hits"]] == [
        {
            "path": "logs/2026-11-20.md",
            "lines": [3, 3],
            "snippet": [{"line": 3, "text": "- decided to keep format 2 ^e-igt5gp"}],
        }
    ]
    assert (
        json.loads(mem(project, "search", "--json", "--mode", "lexical", "session"))["hits"] == []
    )
    # by meaning (the default, with words): the nearest entries, the one meant first
    hybrid = json.loads(
        mem(project, "search", "--json", "what", "did", "we", "choose", "for", "the", "layout")
    )
    assert hybrid["mode"] == "auto"
    assert (hybrid["hits"][0]["path"], hybrid["hits"][0]["lines"]) == ("logs/2026-11-20.md", [3, 3])
    assert mem(project, "search", "postgres").splitlines() == [  # its value, not its history
        "facts/db.md:3-3",
        "      3: value: postgres 16",
    ]
    assert mem(project, "search", "--mode", "lexical", "nothing", "here") == "no matches\n"
    r = run_cas("mem", "search", "--mode", "vectors", "note", cwd=project)
    assert r.code == 2 and "--mode" in one_line(r.err)
    assert mem(project, "search", "--scope", "session:s1", "note").splitlines() == [
        "logs/2026-11-21.md:3-3",
        "      3: - a session note ^e-fsvlxi",
    ]
    r = run_cas("mem", "search", "what", "is", "the", cwd=project)
    assert r.code == 2 and "no word to search for" in one_line(r.err)

    # Roll back to the state before the facts: the files are exactly those of that state.
    before_facts = log[3]["state"]
    mem(project, "rollback", "--date", "2026-11-23", before_facts)
    now = json.loads(mem(project, "show", "--json"))["files"]
    assert [f["path"] for f in now] == ["journal.md", "logs/2026-11-20.md"]
    r = run_cas("mem", "fact", "get", "db", cwd=project)
    assert r.code == 1 and "no such fact" in one_line(r.err)
    assert mem(project, "show", "--at", log[0]["state"], "MEMORY.md").startswith("# Memory")

    # The history is a root: gc keeps every state; verify checks them all.
    assert run_cas("gc", "--grace", "0", cwd=project).code == 0
    assert len(json.loads(mem(project, "log", "--json"))["states"]) == 6
    r = run_cas("verify", "--all", cwd=project)
    assert r.code == 0, r.out + r.err


def test_planted_secrets_are_never_stored(project: Path) -> None:
    vals = Values(random.Random(11))
    token = "ghp_" + vals.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36)
    key_id = "AKIA" + vals.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    out = mem(project, "add", "--date", "2026-11-20", f"ci uses {token} and {key_id}")
    assert "secret cut out" in out and token not in out
    mem(project, "fact", "set", "--date", "2026-11-20", "deploy", f"token {token}")
    with Store.at(project / ".cas", readonly=True) as store:
        for digest in store.iterate():
            body = store.get(digest)
            assert token.encode() not in body and key_id.encode() not in body
    assert "[REDACTED: GitHub token]" in mem(project, "show", "logs/2026-11-20.md")


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("add", "--scope", "team:x", "hi"), 2, "is not one: use 'global'"),
        (("add", "--date", "2026-02-30", "hi"), 2, "not a calendar date"),
        (("add",), 2, "nothing to remember"),
        (("add", "   "), 2, "the text is empty"),
        (("fact", "set", "bad/key", "v"), 2, "fact key"),
        (("fact", "get", "missing"), 1, "no such fact"),
        (("show", "logs/1999-01-01.md"), 1, "no such file"),
        (("rollback", "blake3:" + "0" * 64), 1, "not in the history"),
        (("rollback", "nonsense"), 2, "digest"),
    ],
)
def test_bad_input_is_one_line_and_its_exit_code(
    project: Path, args: tuple[str, ...], code: int, says: str
) -> None:
    mem(project, "add", "--date", "2026-11-20", "something")
    before = mem(project, "log", "--json")
    r = run_cas("mem", *args, cwd=project)
    assert r.code == code, (r.code, r.err)
    assert says in one_line(r.err)
    assert mem(project, "log", "--json") == before  # nothing changed


def test_without_a_store_it_says_how_to_make_one(tmp_path: Path) -> None:
    r = run_cas("mem", "add", "hello", cwd=tmp_path)
    assert r.code != 0 and "cas init" in one_line(r.err)


def scripted_month(project: Path, days: int = 40, first: str = "2026-09-01") -> list[str]:
    """``days`` daily logs written through the library into the project's store; their dates."""
    import datetime as dt

    from memory.ops import curate, put_fact, remember

    start = dt.date.fromisoformat(first)
    dates = [(start + dt.timedelta(days=n)).isoformat() for n in range(days)]
    with Store.at(project / ".cas") as store:
        for n, date in enumerate(dates):
            remember(store, "global", f"decided to keep option {n}", date=date)
            remember(store, "global", f"a plain note of day {n} " + "and more " * 10, date=date)
        put_fact(store, "global", "db", "postgres 16", date=dates[0])
        curate(store, "global", "Packs are judged by what agents answer", date=dates[0])
    return dates


def test_mem_pack_renders_age_tiers_within_budget_the_same_bytes_every_run(
    project: Path,
) -> None:
    dates = scripted_month(project)
    runs = []
    for seed in ("1", "2"):
        r = run_cas("mem", "pack", "--now", "2026-10-10", "-o", "out", "--json", cwd=project,
                    env={"PYTHONHASHSEED": seed})  # fmt: skip
        assert r.code == 0, r.err
        files = {
            p.relative_to(project).as_posix(): p.read_bytes()
            for folder in ("out", "manifests")
            for p in sorted((project / folder).rglob("*"))
            if p.is_file()
        }
        runs.append((r.stdout_bytes, files))
    assert runs[0] == runs[1]
    out, files = runs[0]
    assert sorted(files) == [
        "manifests/mem.global.chatgpt.pack", "manifests/mem.global.claude.pack",
        "manifests/mem.global.common.pack", "out/chatgpt/memory.md", "out/claude/memory.md",
        "out/common/memory.md",
    ]  # fmt: skip
    packs = {p["target"]: p for p in json.loads(out)["packs"]}
    budgets = {"common": (2500, 3000), "chatgpt": (5000, 6000), "claude": (10000, 12000)}
    for target, (budget, most) in budgets.items():
        p = packs[target]
        assert (p["budget"], p["max"]) == (budget, most) and p["tokens"] <= most
        assert files[f"out/{target}/memory.md"].decode() == p["text"]
    tiers = packs["claude"]["tiers"]
    # 2026-10-10 is day 39: days 32..39 in full (0-7 days old), 9..31 summarized, 0..8 pointers.
    assert [tiers[f"logs/{d}.md"] for d in dates] == ["low"] * 9 + ["medium"] * 23 + ["high"] * 8
    # The pack is a pack: verify checks it and render reads it.
    r = run_cas("verify", "mem.global.claude", cwd=project)
    assert r.code == 0, r.out + r.err
    # One target without -o: the document is printed.
    assert mem(project, "pack", "--now", "2026-10-10", "-t", "claude") == packs["claude"]["text"]


def test_mem_pack_shows_the_projects_recent_changes_up_to_now(tmp_path: Path) -> None:
    from tests.gitrepo import Repo

    repo = Repo(tmp_path / "proj")
    day = 86_400
    start = 1_788_220_800  # 2026-09-01T00:00:00Z
    for n in range(40):
        repo.commit(f"Change of day {n}\n\nWhy it changed.\n", {f"src/m{n % 7}.py": f"{n}\n"},
                    date=f"{start + n * day + 3600} +0000")  # fmt: skip
    assert run_cas("init", "--store-only", cwd=repo.root).code == 0
    scripted_month(repo.root)
    runs = []
    for seed in ("1", "2"):
        if seed == "2":  # commits after --now change nothing
            repo.commit("Tomorrow's change\n", {"late.py": "x\n"}, date=f"{start + 41 * day} +0000")
        r = run_cas("mem", "pack", "--now", "2026-10-10", "--json", cwd=repo.root,
                    env={"PYTHONHASHSEED": seed})  # fmt: skip
        assert r.code == 0, r.err
        manifests = sorted((repo.root / "manifests").glob("mem.*.pack"))
        runs.append((r.stdout_bytes, [p.read_bytes() for p in manifests]))
    assert runs[0] == runs[1]
    packs = {p["target"]: p for p in json.loads(runs[0][0])["packs"]}
    for target, share in (("common", 500), ("chatgpt", 1000), ("claude", 2000)):
        p = packs[target]
        assert p["recent_changes"] == "high" and p["tokens"] <= p["max"]
        text = p["text"]
        assert "## Recent changes (90_recent_changes.md)\n\n20 commits, " in text
        assert "Change of day 39" in text and "Tomorrow" not in text
        m = load_manifest(repo.root / "manifests" / f"mem.global.{target}.pack")
        entry = {e.path: e for e in m.entries}["90_recent_changes.md"]
        assert entry.tier == "high" and entry.tokens <= share
    r = run_cas("verify", "mem.global.common", cwd=repo.root)
    assert r.code == 0, r.out + r.err
    # outside a git repository the pack says so in one line
    out = mem(tmp_path / "proj", "pack", "--now", "2026-10-10", "-t", "common")
    assert "Change of day" in out
    (tmp_path / "plain").mkdir()
    assert run_cas("init", "--store-only", cwd=tmp_path / "plain").code == 0
    out = mem(tmp_path / "plain", "pack", "--now", "2026-10-10", "-t", "common")
    assert out.endswith("## Recent changes (90_recent_changes.md)\n\n"
                        "Not a git repository: no recent changes.\n")  # fmt: skip


def test_cas_toml_memory_settings_change_the_tiers_and_targets(project: Path) -> None:
    dates = scripted_month(project, days=10)
    (project / "cas.toml").write_text(
        "[memory]\nfull_days = 1\nsummary_days = 3\nkeep_days = 5\n"
        "[memory.targets.tiny]\ntarget = 4000\n"
    )
    packs = json.loads(mem(project, "pack", "--now", dates[-1], "--json"))["packs"]
    assert [p["target"] for p in packs] == ["tiny"]
    tiers = packs[0]["tiers"]
    assert [tiers.get(f"logs/{d}.md") for d in dates] == (
        [None] * 4 + ["low"] * 2 + ["medium"] * 2 + ["high"] * 2
    )
    out = mem(project, "prune", "--now", dates[-1], "--dry-run")
    assert out.count("would prune logs/") == 4 and "past the 5-day retention" in out
    assert "would prune fact db: last used 2026-09-01 (9 days ago), used 0 times" in out


def test_mem_prune_at_day_91_removes_exactly_the_logs_past_retention(project: Path) -> None:
    dates = scripted_month(project)
    before = json.loads(mem(project, "log", "--json"))["states"][0]["state"]
    # 2026-12-01 is 91 days after 2026-09-01: only the first log is past the 90 days.
    dry = json.loads(mem(project, "prune", "--now", "2026-12-01", "--dry-run", "--json"))
    assert dry["removed"] == [{"path": f"logs/{dates[0]}.md", "age": 91}] and dry["dry_run"]
    assert dry["facts"] == [{"key": "db", "last_used": dates[0], "days": 91, "uses": 0}]
    assert json.loads(mem(project, "log", "--json"))["states"][0]["state"] == before
    out = mem(project, "prune", "--now", "2026-12-02")
    fact_line = (
        f"prune fact db: last used {dates[0]} (92 days ago), used 0 times; kept are facts used "
        "in the last 7 days or more than 10 times"
    )
    assert out.splitlines() == [
        f"prune logs/{dates[0]}.md: 92 days old, past the 90-day retention",
        f"prune logs/{dates[1]}.md: 91 days old, past the 90-day retention",
        fact_line,
    ]
    log = json.loads(mem(project, "log", "--json"))["states"]
    assert log[0]["changes"] == [
        f"2026-12-02 prune logs/{dates[0]}.md: 92 days old, past the 90-day retention",
        f"2026-12-02 prune logs/{dates[1]}.md: 91 days old, past the 90-day retention",
        f"2026-12-02 {fact_line}",
    ]
    listed = [f["path"] for f in json.loads(mem(project, "show", "--json"))["files"]]
    assert [p for p in listed if p.startswith("logs/")] == [f"logs/{d}.md" for d in dates[2:]]
    assert "nothing past the 90-day retention and no stale fact" in mem(
        project, "prune", "--now", "2026-12-02"
    )
    mem(project, "rollback", "--date", "2026-12-02", before)
    listed = [f["path"] for f in json.loads(mem(project, "show", "--json"))["files"]]
    assert [p for p in listed if p.startswith("logs/")] == [f"logs/{d}.md" for d in dates]


@pytest.mark.parametrize(
    ("args", "toml", "says"),
    [
        (("pack", "--now", "2026-13-01"), "", "not a calendar date"),
        (("pack", "--now", "2026-10-01", "-t", "gpt9"), "", "'gpt9' is not configured"),
        (("pack", "--scope", "team:x", "--now", "2026-10-01"), "", "is not one"),
        (("prune", "--now", "2026-10-01"), "[memory]\nkeep_days = -3\n", "memory.keep_days"),
        (("pack", "--now", "2026-10-01"), "[memory]\nfull_days = 9\nsummary_days = 8\n",
         "memory.summary_days"),
        (("prune", "--now", "2026-10-01"), "[memory]\nentity_days = -1\n", "memory.entity_days"),
        (("prune", "--now", "2026-10-01"), "[memory]\nentity_uses = -1\n", "memory.entity_uses"),
        (("prune", "--now", "2026-10-01"), "[memory]\nentity_uses = 'x'\n", "memory.entity_uses"),
        (("usage", "--scope", "team:x"), "", "is not one"),
    ],
)  # fmt: skip
def test_bad_pack_or_prune_input_is_one_line_exit_2(
    project: Path, args: tuple[str, ...], toml: str, says: str
) -> None:
    if toml:
        (project / "cas.toml").write_text(toml)
    r = run_cas("mem", *args, cwd=project)
    assert r.code == 2, (r.code, r.err)
    assert says in one_line(r.err)


def test_compact_from_the_command_line(project: Path) -> None:
    for day in (1, 2, 20):
        mem(project, "add", "--date", f"2026-10-{day:02d}", f"decided step {day}")
        mem(project, "add", "--date", f"2026-10-{day:02d}", f"detail {day}")
    planned = json.loads(mem(project, "compact", "--now", "2026-10-20", "--dry-run", "--json"))
    assert planned["dry_run"] and len(planned["decisions"]) == 4
    done = json.loads(mem(project, "compact", "--now", "2026-10-20", "--json"))
    assert [(d["log"], d["decision"]) for d in done["decisions"]] == [
        ("logs/2026-10-01.md", "PROMOTE"), ("logs/2026-10-01.md", "COMPRESS"),
        ("logs/2026-10-02.md", "PROMOTE"), ("logs/2026-10-02.md", "COMPRESS"),
    ]  # fmt: skip
    assert "- 2026-10-01: decided step 1" in mem(project, "show", "MEMORY.md")
    assert "nothing to compact" in mem(project, "compact", "--now", "2026-10-20")
    r = run_cas("mem", "compact", "--now", "2026-11-20", "--llm", "no-such-decider-cmd",
                cwd=project)  # fmt: skip
    assert r.code == 2 and "not found" in one_line(r.err)


def test_a_sessions_memory_is_in_search_and_load_only_when_asked_for(project: Path) -> None:
    """Session a's fact is in no search or load of the project, nor in session b's, nor in a
    later default search through the load that drew on it; asked for, it is, once."""
    (project / "src").mkdir()
    (project / "src" / "deploy.py").write_text('def deploy(host):\n    """Ship it."""\n')
    assert run_cas("pack", cwd=project).code == 0
    mem(project, "fact", "set", "--scope", "session:a", "--date", "2026-11-20", "host", "zanzibar")
    mem(project, "add", "--scope", "session:a", "--date", "2026-11-20", "zanzibar deploy went ok")
    mem(project, "add", "--scope", "session:b", "--date", "2026-11-20", "deploy from b")
    mem(project, "pack", "--scope", "session:a", "--now", "2026-11-21")
    assert len(list((project / "manifests").glob("mem.session-a.*.pack"))) == 3

    def search(*args: str) -> list[dict[str, object]]:
        r = run_cas("search", "zanzibar deploy", "--json", *args, cwd=project)
        assert r.code == 0, r.err
        hits: list[dict[str, object]] = json.loads(r.out)["hits"]
        return hits

    def load(*args: str) -> str:
        r = run_cas("load", "zanzibar deploy", "--render", *args, cwd=project)
        assert r.code == 0, r.err
        # the question's own line says its words: what matters is what was drawn on
        return "\n".join(x for x in r.out.splitlines() if not x.startswith("Loaded for"))

    assert [h["path"] for h in search()] == ["src/deploy.py"]
    assert {h["path"] for h in search("--memory-scope", "session:b")} == {
        "src/deploy.py", "memory/session:b/logs/2026-11-20.md",
    }  # fmt: skip
    for hidden in ((), ("--memory-scope", "session:b")):
        rendered = load(*hidden)
        assert "zanzibar" not in rendered
        assert "session:a" not in rendered and "mem." not in rendered
    found = search("--memory-scope", "session:a")
    assert {h["path"] for h in found} == {
        "src/deploy.py", "memory/session:a/facts/host.md", "memory/session:a/logs/2026-11-20.md",
    }  # fmt: skip
    assert {p for h in found for p in h["packs"]} == {"repo", "memory/session:a"}  # type: ignore[attr-defined]
    rendered = load("--memory-scope", "session:a")
    assert rendered.count("### `memory/session:a/logs/2026-11-20.md`") == 1
    assert "zanzibar deploy went ok" in rendered and "mem.session-a" not in rendered
    # the load written drew on session a: a default search or load never reads it
    shown = json.loads(run_cas("show", "load", "--json", cwd=project).out)
    assert "memory/session:a" in json.dumps(shown)
    assert [h["path"] for h in search()] == ["src/deploy.py"]
    assert "zanzibar deploy went ok" not in load("--dry-run")
    r = run_cas("search", "x", "--memory-scope", "team:x", cwd=project)
    assert r.code == 2 and "is not one" in one_line(r.err)


# --- secrets in keys, scope ids, fact values and decider answers (issue 21) ----------------------

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def planted(seed: int) -> tuple[str, str]:
    """A GitHub-shaped token and a password, made at run time."""
    vals = Values(random.Random(seed))
    return "gh" + "p_" + vals.pick(ALNUM, 36), vals.pick(ALNUM, 20)


def kept(project: Path) -> list[bytes]:
    """Everything the project keeps: every blob (decompressed), every pin's name, every usage
    row, the store's own files, every manifest file and its name."""
    out: list[bytes] = []
    with Store.at(project / ".cas", readonly=True) as store:
        out += [store.get(d) for d in store.iterate()]
        out += [name.encode() for name in store.refs.pins()]
        out += [key for key, _record in store.kv.items("usage")]
    out += [p.read_bytes() for p in sorted((project / ".cas").rglob("*")) if p.is_file()]
    folder = project / "manifests"
    if folder.is_dir():
        out += [p.name.encode() + b"\n" + p.read_bytes() for p in sorted(folder.iterdir())]
    return out


def leaks(secret: str, seen: list[bytes]) -> list[bytes]:
    found = [p.encode() for p in pieces(secret)]
    return [data[:200] for data in seen if any(p in data for p in found)]


def test_a_fact_key_or_scope_id_holding_a_secret_is_refused_and_nothing_is_stored(
    project: Path,
) -> None:
    token, _ = planted(61)
    mem(project, "add", "--date", "2026-11-20", "something")
    mem(project, "fact", "set", "--scope", "user:ana", "--date", "2026-11-20", "db", "pg")
    before = [mem(project, "log", "--json", "--scope", s) for s in ("global", "user:ana")]
    seen: list[bytes] = []
    for args in [
        ("fact", "set", token, "harmless"),
        ("fact", "set", f"ci.{token}", "harmless"),
        ("fact", "get", token),
        ("fact", "delete", token),
        ("add", "--scope", f"user:{token}", "note"),
        ("add", "--scope", f"session:ci@{token}", "note"),
        ("curate", "--scope", f"user:{token}", "note"),
        ("fact", "set", "--scope", f"user:{token}", "db", "harmless"),
        ("pack", "--scope", f"user:{token}", "--now", "2026-11-21"),
        ("compact", "--scope", f"user:{token}", "--now", "2026-11-21"),
        ("prune", "--scope", f"user:{token}", "--now", "2026-11-21"),
        ("usage", "--scope", f"user:{token}"),
        ("show", "--scope", f"user:{token}"),
    ]:
        r = run_cas("mem", *args, cwd=project)
        assert r.code == 2, (args, r.code, r.err)
        what = "fact key" if "--scope" not in args else "scope id"
        assert f"the {what} holds a secret (GitHub token) and is refused" in one_line(r.err)
        seen += [r.stdout_bytes, r.err.encode()]
    # the same refusal where an agent's search or load is granted a memory
    r = run_cas("search", "x", "--memory-scope", f"user:{token}", cwd=project)
    assert r.code == 2 and "scope id holds a secret (GitHub token)" in one_line(r.err)
    seen += [r.err.encode()]
    assert mem(project, "fact", "list", "--scope", "user:ana") == "db = pg\n"
    after = [mem(project, "log", "--json", "--scope", s) for s in ("global", "user:ana")]
    assert after == before
    assert not list((project / "manifests").glob("mem.*"))
    assert leaks(token, seen + kept(project)) == []


def test_user_dot_and_dot_dot_are_refused_by_add_as_by_pack(project: Path) -> None:
    for scope in ("user:.", "user:..", "session:x."):
        lines = set()
        for args in (("add", "--scope", scope, "note"), ("pack", "--scope", scope, "--now",
                                                          "2026-11-21")):  # fmt: skip
            r = run_cas("mem", *args, cwd=project)
            assert r.code == 2, (args, r.err)
            lines.add(one_line(r.err))
        assert lines == {f"cas: error: scope {scope!r} is not one: " + SCOPE_RULE}
    with Store.at(project / ".cas", readonly=True) as store:
        assert store.refs.pins() == {}


SCOPE_RULE = (
    "use 'global', 'user:ID' or 'session:ID' (ID: 1 to 64 letters, digits and ._@-, not ending "
    "with a dot)"
)


def test_a_fact_value_is_scanned_as_it_is_stored_whatever_its_line_breaks(project: Path) -> None:
    """The issue's values, a secret on the line after its name: the one line stored, printed,
    searched and packed holds none of it, and neither does anything else kept."""
    token, password = planted(62)
    p = "pass" + "word"
    values = {
        "db": (f'{p} =\n"{password}"', f"{p} = \"[REDACTED: high-entropy assignment to '{p}']\""),
        "auth": (f"Authorization: Bearer\n{token}", "Authorization: Bearer [REDACTED: "),
        "url": (
            f"postgres://app:{password}\n@host/db",
            "postgres://app:[REDACTED: password in URL] @host/db",
        ),
        "split": (f"ci uses {token[:17]}\n{token[17:]} daily", "ci uses [REDACTED: GitHub token]"),
    }
    seen: list[bytes] = []
    for key, (value, stored) in values.items():
        out = mem(project, "fact", "set", "--date", "2026-11-20", key, value)
        assert out.startswith(f"{key} = {stored}")
        assert mem(project, "fact", "get", key).startswith(stored)
        seen += [out.encode(), mem(project, "show", f"facts/{key}.md").encode()]
    mem(project, "add", "--date", "2026-11-20", "-", stdin=f"deploy:\nBearer\n{token}\n".encode())
    seen += [mem(project, *args).encode() for args in [
        ("fact", "list", "--json"), ("log",), ("show", "journal.md"),
        ("show", "logs/2026-11-20.md"), ("search", "postgres", "Authorization", "deploy"),
        ("pack", "--now", "2026-11-21", "--json"),
    ]]  # fmt: skip
    assert "secret cut out" in mem(project, "log")
    assert leaks(password, seen + kept(project)) == []
    assert leaks(token, seen + kept(project)) == []


def test_a_deciders_bad_answer_and_other_echoed_input_never_print_a_secret(project: Path) -> None:
    token, _ = planted(63)
    mem(project, "add", "--date", "2026-10-01", "decided one")
    decider = project / "decide.py"
    decider.write_text(
        f"import json, sys\nsys.stdin.read()\nTOKEN = {token!r}\n"
        'print(json.dumps({"decisions": [{"index": 0, "decision": TOKEN}]}))\n'
    )
    before = mem(project, "log", "--json")
    seen: list[bytes] = []
    for args, code, says in [
        (("compact", "--now", "2026-10-20", "--llm", f"{sys.executable} {decider}"), 1,
         "the decision for entry 0 is a string of 40 characters"),
        (("compact", "--now", "2026-10-20", "--llm", token), 2, "[REDACTED: GitHub token]"),
        (("rollback", token), 2, "malformed digest '[REDACTED: GitHub token]'"),
        (("show", "--at", token), 2, "malformed digest"),
        (("show", f"logs/{token}.md"), 1, "'logs/[REDACTED: GitHub token].md' not found"),
        (("pack", "--now", "2026-10-20", "-t", token), 2, "is not configured"),
        (("add", "--date", token, "x"), 2, "is not a calendar date"),
    ]:  # fmt: skip
        r = run_cas("mem", *args, cwd=project)
        assert r.code == code, (args, r.code, r.err)
        assert says in one_line(r.err)
        seen += [r.stdout_bytes, r.err.encode()]
    assert mem(project, "log", "--json") == before
    assert leaks(token, seen + kept(project)) == []


def test_a_pack_holding_a_memory_is_searched_by_name_only_with_its_scope(project: Path) -> None:
    """`cas search --pack` names a memory pack, or a load drawn on user:1, by name or digest:
    refused in one line naming the flag that grants it, unless --memory-scope user:1 is given
    (the MCP server's rule, `cas.visibility.granted_pack`)."""
    (project / "src").mkdir()
    (project / "src" / "deploy.py").write_text('def deploy(host):\n    """Ship it."""\n')
    assert run_cas("pack", cwd=project).code == 0
    mem(project, "add", "--scope", "user:1", "--date", "2026-11-20", "codeword zanzibar deploy")
    mem(project, "pack", "--scope", "user:1", "--now", "2026-11-21")
    drew = run_cas("load", "zanzibar deploy", "--memory-scope", "user:1", "--name", "drew",
                   cwd=project)  # fmt: skip
    assert drew.code == 0, drew.err
    mem_pack = project / "manifests" / "mem.user-1.claude.pack"
    by_digest = str(Digest.of(mem_pack.read_bytes()))
    for pack in ("mem.user-1.claude", "drew", by_digest, str(mem_pack)):
        for grant in ((), ("--memory-scope", "user:2"), ("--memory-scope", "global")):
            r = run_cas("search", "codeword zanzibar", "--pack", pack, *grant, cwd=project)
            assert r.code == 2, (pack, grant, r.out, r.err)
            assert "--memory-scope user:1" in one_line(r.err), r.err
            assert "zanzibar" not in r.out and r.out == ""
        granted = run_cas("search", "codeword zanzibar", "--pack", pack, "--memory-scope",
                          "user:1", "--json", cwd=project)  # fmt: skip
        assert granted.code == 0, granted.err
        hits = json.loads(granted.out)["hits"]
        assert hits and all(h["packs"] for h in hits)
    # the project's own pack is searched as before, with or without a scope
    for grant in ((), ("--memory-scope", "user:2")):
        r = run_cas("search", "deploy", "--pack", "repo", *grant, cwd=project)
        assert r.code == 0 and r.out.startswith("src/deploy.py:"), r.err


# --- the memory as a folder of Markdown: cas mem export, import, watch ---------------------------


def folder_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".cas-memory"
    }


def states(project: Path, scope: str = "global") -> list[str]:
    log = json.loads(mem(project, "log", "--json", "--scope", scope))["states"]
    return [s["state"] for s in log]


def test_export_edit_import_and_the_edit_is_found(project: Path) -> None:
    mem(project, "add", "--date", "2026-11-20", "decided to keep format 2")
    mem(project, "fact", "set", "--date", "2026-11-20", "db", "postgres 16")
    mem(project, "curate", "--date", "2026-11-20", "Packs are judged by what agents answer")
    out = mem(project, "export", "face")
    assert out.startswith("global blake3:") and out.endswith(" 3 files exported to face\n")
    face = project / "face"
    assert sorted(folder_files(face)) == ["DailyLogs/2026-11-20.md", "MEMORY.md", "facts/db.md"]
    exported = folder_files(face)
    before = states(project)
    assert mem(project, "import", "face") == "global: face holds no change; no new state\n"
    assert states(project) == before
    log = face / "DailyLogs" / "2026-11-20.md"
    log.write_bytes(log.read_bytes() + b"- the quokka deploy broke\n")
    out = mem(project, "import", "--date", "2026-11-21", "face")
    assert out.startswith("global blake3:") and out.endswith(": imported edit logs/2026-11-20.md\n")
    assert len(states(project)) == len(before) + 1
    assert mem(project, "log", "-n", "1").splitlines()[1] == (
        "    2026-11-21 import: edit logs/2026-11-20.md"
    )
    assert mem(project, "search", "--mode", "lexical", "quokka").splitlines() == [
        "logs/2026-11-20.md:4-4",
        "      4: - the quokka deploy broke",
    ]
    # export, import, export: the same bytes; only the edited file differs from the first
    mem(project, "export", "again")
    assert folder_files(project / "again") == folder_files(face)
    assert [n for n in exported if exported[n] != folder_files(face)[n]] == [
        "DailyLogs/2026-11-20.md"
    ]


def test_bad_folders_and_files_are_one_line_exit_2_and_nothing_written(project: Path) -> None:
    mem(project, "add", "--date", "2026-11-20", "a note")
    (project / "plain").write_bytes(b"a file\n")
    for args in (("import", "plain"), ("import", "missing"), ("export", "plain")):
        r = run_cas("mem", *args, cwd=project)
        assert r.code == 2 and r.out == "", r.err
        assert "is not a folder" in one_line(r.err) or "does not exist" in one_line(r.err)
    (project / "mine").mkdir()
    (project / "mine" / "notes.txt").write_bytes(b"mine\n")
    r = run_cas("mem", "export", "mine", cwd=project)
    assert r.code == 2 and "is not an export of a memory" in one_line(r.err)
    assert folder_files(project / "mine") == {"notes.txt": b"mine\n"}
    mem(project, "export", "face")
    before = states(project)
    (project / "face" / "MEMORY.md").write_bytes(b"# Memory\n\n- an edit\n")
    (project / "face" / "DailyLogs" / "yesterday.md").write_bytes(b"x\n")
    (project / "face" / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0\0\x10JFIF")
    r = run_cas("mem", "import", "face", cwd=project)
    line = one_line(r.err)
    assert r.code == 2 and "nothing was imported" in line, r.err
    assert "'DailyLogs/yesterday.md' (DailyLogs/ holds YYYY-MM-DD.md files only)" in line
    assert "'photo.jpg' (not text (binary, or not UTF-8))" in line
    assert states(project) == before and r.out == ""
    r = run_cas("mem", "export", "face", cwd=project)
    assert r.code == 2 and "edits not imported yet" in one_line(r.err)


def test_watch_imports_a_save_at_once_and_writes_back_what_others_add(project: Path) -> None:
    mem(project, "add", "--date", "2026-11-20", "decided to keep format 2")
    watch = subprocess.Popen(
        [sys.executable, "-P", "-m", "cas", "mem", "watch", "--date", "2026-11-22", "face"],
        cwd=project, env=cas_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline().decode()
        assert first.startswith("global blake3:") and "1 files exported to face" in first
        assert watch.stdout.readline().decode() == "global: watching face (Ctrl-C to stop)\n"
        log = project / "face" / "DailyLogs" / "2026-11-20.md"
        time.sleep(0.5)  # the observer is up once the line is printed; a margin all the same
        log.write_bytes(log.read_bytes() + b"- the wombat cache is cold\n")
        saved = time.monotonic()
        while "wombat" not in mem(project, "search", "--mode", "lexical", "wombat"):
            assert time.monotonic() - saved < 20, "the edit was never searchable"
        print(
            f"cas mem watch: saved to found by 'cas mem search' in {time.monotonic() - saved:.3f} s"
        )
        # another writer's state reaches the folder, and is not imported back
        mem(project, "add", "--date", "2026-11-23", "an agent adds a numbat")
        other = project / "face" / "DailyLogs" / "2026-11-23.md"
        start = time.monotonic()
        while not other.is_file():
            assert time.monotonic() - start < 20, "the new state never reached the folder"
            time.sleep(0.05)
        time.sleep(1)
        assert re.fullmatch(
            rb"# 2026-11-23\n\n- an agent adds a numbat \^e-[a-z2-7]{6}\n", other.read_bytes()
        ), other.read_bytes()
        log_now = json.loads(mem(project, "log", "--json"))["states"]
        assert [s["changes"] for s in log_now[:2]] == [
            ["2026-11-23 add logs/2026-11-23.md"],
            ["2026-11-22 import: edit logs/2026-11-20.md"],
        ]
    finally:
        watch.send_signal(signal.SIGTERM)
        out, err = watch.communicate(timeout=20)
    assert watch.returncode == 0, err
    assert err == b""
    lines = out.decode().splitlines()
    assert lines[0].endswith(": imported edit logs/2026-11-20.md"), lines
    assert lines[1].endswith(": wrote to the folder DailyLogs/2026-11-23.md"), lines
    assert len(lines) == 2


def test_a_quiet_watch_prints_nothing_and_a_folder_not_its_export_is_refused(
    project: Path,
) -> None:
    mem(project, "add", "--date", "2026-11-20", "a note")
    (project / "mine").mkdir()
    (project / "mine" / "notes.md").write_bytes(b"mine\n")
    r = run_cas("mem", "watch", "mine", cwd=project)
    assert r.code == 2 and "import it first" in one_line(r.err) and r.out == ""
    watch = subprocess.Popen(
        [sys.executable, "-P", "-m", "cas", "mem", "watch", "--quiet", "face"],
        cwd=project, env=cas_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        marker = project / "face" / ".cas-memory"
        start = time.monotonic()
        while not marker.is_file():
            assert time.monotonic() - start < 20 and watch.poll() is None, "never exported"
            time.sleep(0.05)
        (project / "face" / "MEMORY.md").write_bytes(b"# Memory\n\n- quietly\n")
        while "quietly" not in run_cas("mem", "show", "MEMORY.md", cwd=project).out:
            assert time.monotonic() - start < 20, "the edit was never imported"
            time.sleep(0.05)
    finally:
        watch.send_signal(signal.SIGTERM)
        out, err = watch.communicate(timeout=20)
    assert (watch.returncode, out, err) == (0, b"", b"")


def test_one_entry_by_its_id_get_edit_delete_and_curate(project: Path) -> None:
    """`cas mem add` prints the new entry's id; get, edit, delete and curate --id act on one
    entry by it (or by DATE.N, MEMORY.N, fact:KEY), each a new state that rollback undoes; an
    unknown id exits 1, a malformed one 2, each with one line."""
    out = mem(project, "add", "--date", "2026-11-20", "the login test fails now and then")
    assert out == "remembered e-b4zjk7 in global logs/2026-11-20.md\n"
    first = "e-b4zjk7"
    second = json.loads(mem(project, "add", "--date", "2026-11-20", "--json", "we chose LMDB"))
    assert set(second) == {"scope", "path", "state", "secrets", "id"}
    assert mem(project, "show", "logs/2026-11-20.md") == (
        f"# 2026-11-20\n\n- the login test fails now and then ^{first}\n"
        f"- we chose LMDB ^{second['id']}\n"
    )
    assert mem(project, "get", first) == "the login test fails now and then\n"
    assert mem(project, "get", "2026-11-20.2") == "we chose LMDB\n"
    got = json.loads(mem(project, "get", "--json", first))
    assert got == {
        "scope": "global", "id": first, "kind": "log", "path": "logs/2026-11-20.md",
        "index": 1, "date": "2026-11-20", "text": "the login test fails now and then",
        "state": got["state"],
    }  # fmt: skip
    # search shows the id of the entry it found
    found = mem(project, "search", "--mode", "lexical", "login")
    assert found.splitlines()[1].endswith(f"- the login test fails now and then ^{first}")

    out = mem(project, "edit", "--date", "2026-11-21", first, "the", "login", "test", "is", "fixed")
    assert out == f"edited {first} in global logs/2026-11-20.md\n"
    mem(project, "edit", "--date", "2026-11-21", first, "-", stdin=b"the login test\nis fixed\n")
    assert mem(project, "get", first) == "the login test\nis fixed\n"
    out = mem(project, "curate", "--date", "2026-11-21", "--id", second["id"])
    assert out == f"promoted {second['id']} in global MEMORY.md\n"
    assert mem(project, "get", "MEMORY.1") == "2026-11-20: we chose LMDB\n"
    item = json.loads(mem(project, "curate", "--date", "2026-11-21", "--json", "Packs are judged"))
    assert item["path"] == "MEMORY.md"
    assert json.loads(mem(project, "get", "--json", "MEMORY.2"))["id"] == item["id"]
    mem(project, "fact", "set", "--date", "2026-11-21", "db", "postgres 16")
    assert mem(project, "get", "fact:db") == "postgres 16\n"
    mem(project, "edit", "--date", "2026-11-22", "fact:db", "postgres 17")
    assert mem(project, "fact", "get", "db") == "postgres 17\n"

    out = mem(project, "delete", "--date", "2026-11-22", first)
    assert out == f"deleted {first} from global logs/2026-11-20.md\n"
    listed = json.loads(mem(project, "show", "--json"))["files"]
    assert "logs/2026-11-20.md" not in [f["path"] for f in listed]  # its last entry went
    log = json.loads(mem(project, "log", "--json"))["states"]
    assert log[0]["changes"] == [f"2026-11-22 delete logs/2026-11-20.md entry {first}"]
    assert log[1]["changes"] == ["2026-11-22 set fact db"]

    for args, code, needle in (
        (("get", first), 1, f"memory entry '{first}' not found"),
        (("edit", "e-aaaaaa", "x"), 1, "not found"),
        (("delete", "2026-11-20.1"), 1, "not found"),
        (("get", "fact:nope"), 1, "not found"),
        (("get", "nonsense"), 2, "is not one"),
        (("edit", "2026-13-01.1", "x"), 2, "not a calendar date"),
        (("edit", first), 2, "nothing to remember"),
        (("curate", "--id", first, "text"), 2, "not both"),
        (("curate", "--id", item["id"]), 2, "already an item of MEMORY.md"),
        (("curate", "--id", "fact:db"), 2, "is a fact"),
    ):
        r = run_cas("mem", *args, cwd=project)
        assert r.code == code, (args, r.err)
        assert needle in one_line(r.err), (args, r.err)

    # the history keeps the deleted entry: a rollback brings it back, with its id
    assert mem(project, "get", "--at", log[0]["parent"], first) == "the login test\nis fixed\n"
    mem(project, "rollback", "--date", "2026-11-23", log[0]["parent"])
    assert mem(project, "get", first) == "the login test\nis fixed\n"
