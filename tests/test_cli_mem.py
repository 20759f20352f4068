"""`cas mem`: memory through real `cas` processes: add, show, log, search, facts, rollback."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from cas import Store
from tests.conftest import run_cas
from tests.secret_corpus import Values


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert run_cas("init", cwd=tmp_path).code == 0
    return tmp_path


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
        "# 2026-11-20\n\n- decided to keep format 2\n- from stdin\n  second line\n"
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
    hits = json.loads(mem(project, "search", "--json", "format"))["hits"]
    assert hits == [{"path": "logs/2026-11-20.md", "line": 3, "text": "- decided to keep format 2"}]
    assert json.loads(mem(project, "search", "--json", "session"))["hits"] == []
    assert "a session note" in mem(project, "search", "--scope", "session:s1", "note")

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
