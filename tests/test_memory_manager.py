"""memory.manager: the memory's Python API (`MemoryManager`, `MemoryScope`), against what the
``cas mem`` commands read from the same store."""

from __future__ import annotations

import doctest
import json
import random
import string
from pathlib import Path
from typing import Any

import pytest

import memory
from cas.errors import NotFound, SecretInName, StoreNotFound, UsageError
from cas.store import Store
from memory import MemoryManager, MemoryScope
from memory import manager as manager_mod
from tests.conftest import run_cas
from tests.secret_corpus import Values


def test_the_module_examples_run(tmp_path: Path) -> None:
    found = doctest.testmod(manager_mod, extraglobs={"project": str(tmp_path)})
    assert found.attempted >= 4 and found.failed == 0, found


def test_facts_keep_their_history_and_the_cli_reads_the_same(tmp_path: Path) -> None:
    with MemoryManager(tmp_path, "user:ana") as mem:
        mem.set_fact("db", "postgres 14", date="2026-11-01")
        mem.set_fact("db", "postgres 16", date="2026-11-09")
        mem.set_fact("os", "linux", date="2026-11-09")
        assert mem.facts() == {"db": "postgres 16", "os": "linux"}
        deleted = mem.delete_fact("db", date="2026-11-10")
        assert deleted.value is None
        assert mem.get_fact("db") is None and mem.get_fact("db", "none") == "none"
        assert mem.get_fact("never") is None
        assert mem.get_fact_history("db") == [
            ("2026-11-10", "(deleted)"), ("2026-11-09", "postgres 16"),
            ("2026-11-01", "postgres 14"),
        ]  # fmt: skip
        with pytest.raises(NotFound):
            mem.get_fact_history("never")
        with pytest.raises(NotFound):
            mem.delete_fact("db")
    got = run_cas("mem", "fact", "history", "db", "--scope", "user:ana", "--json", cwd=tmp_path)
    assert got.code == 0, got.err
    assert [h["value"] for h in json.loads(got.out)["history"]] == [
        "(deleted)", "postgres 16", "postgres 14",
    ]  # fmt: skip


def test_logs_curated_memory_and_stats(tmp_path: Path) -> None:
    mem = MemoryManager(tmp_path, MemoryScope.session("42"))
    try:
        assert mem.get_stats().states == 0 and mem.get_stats().state is None
        mem.remember("first thing", date="2026-11-01")
        mem.remember("two\nlines", date="2026-11-01")
        mem.remember("later", date="2026-11-03")
        mem.curate("Pull into an empty store beats restic", date="2026-11-04")
        mem.set_fact("k", "v", date="2026-11-04")
        assert mem.log("2026-11-01") == ["first thing", "two\nlines"]
        assert mem.log("2026-11-02") == []
        assert mem.log_days() == ["2026-11-01", "2026-11-03"]
        assert "- Pull into an empty store beats restic" in mem.curated()
        stats = mem.get_stats()
        assert (stats.scope, stats.facts, stats.deleted_facts) == ("session:42", 1, 0)
        assert (stats.logs, stats.entries, stats.curated, stats.states) == (2, 3, 1, 5)
        assert (stats.first_log, stats.last_log) == ("2026-11-01", "2026-11-03")
        assert stats.files == 4 and stats.bytes > 0 and stats.state is not None
        shown = run_cas("mem", "show", "--scope", "session:42", "--json", cwd=tmp_path)
        assert shown.code == 0 and stats.state in shown.out
    finally:
        mem.close()


def test_one_entry_by_its_id(tmp_path: Path) -> None:
    """remember answers the id; get_entry, edit, delete_entry (forget) and promote act on
    that entry, each a new state; curate_entry answers the new item's id."""
    with MemoryManager(tmp_path, MemoryScope.session("ids")) as mem:
        a = mem.remember("the login test fails", date="2026-11-01").id
        b = mem.remember("we chose LMDB", date="2026-11-01").id
        assert mem.get_entry(a).text == "the login test fails"
        assert mem.edit(a, "the login test is fixed", date="2026-11-02").id == a
        assert mem.log("2026-11-01") == ["the login test is fixed", "we chose LMDB"]
        assert mem.promote(b, date="2026-11-02").path == "MEMORY.md"
        assert mem.get_entry(b).text == "2026-11-01: we chose LMDB"
        item = mem.curate_entry("Packs are judged by answers", date="2026-11-02")
        assert mem.get_entry(item.id).kind == "curated"
        assert mem.forget(a, date="2026-11-03").action == "delete"
        assert mem.log("2026-11-01") == []
        with pytest.raises(NotFound):
            mem.get_entry(a)
        with pytest.raises(UsageError):
            mem.edit("not-an-id", "x")
        assert mem.get_stats().states == 6
        assert mem.for_scope("session:other").curated() == ""


def test_scopes_are_kept_apart_and_checked(tmp_path: Path) -> None:
    with MemoryManager(tmp_path, "user:a") as a, a.for_scope("user:b") as b:
        a.set_fact("color", "blue", date="2026-11-01")
        a.remember("only for a: the blue deploy", date="2026-11-01")
        assert b.get_fact("color") is None and b.facts() == {}
        assert b.get_stats().states == 0
        assert [h.path for h in a.search("blue deploy")] == ["logs/2026-11-01.md", "facts/color.md"]
        assert b.search("blue deploy") == []
    for bad in ("team:x", "user:", "session:a.", "user:" + "x" * 65):
        with pytest.raises(UsageError):
            MemoryScope(bad)
        with pytest.raises(UsageError):
            MemoryManager(tmp_path, bad)
    assert str(MemoryScope.global_()) == "global"


def test_secrets_are_cut_out_and_a_secret_key_is_refused(tmp_path: Path) -> None:
    secret = "gh" + "p_" + Values(random.Random(7)).pick(string.ascii_letters + string.digits, 36)
    with MemoryManager(tmp_path, "global") as mem:
        done = mem.remember(f"the token is {secret}", date="2026-11-01")
        assert done.secrets and secret not in mem.log("2026-11-01")[0]
        kept = mem.set_fact("ci.token", f"use {secret}", date="2026-11-01")
        assert kept.value is not None and secret not in kept.value
        with pytest.raises(SecretInName):
            mem.set_fact(secret, "x", date="2026-11-01")
        with pytest.raises(UsageError):
            mem.remember("x", date="2026-13-01")


def test_where_the_store_is(tmp_path: Path) -> None:
    (tmp_path / "none").mkdir()
    with pytest.raises(StoreNotFound):
        MemoryManager(tmp_path / "none", create=False)
    with pytest.raises(UsageError, match="no such folder"):
        MemoryManager(tmp_path / "gone" / "deeper")
    assert not (tmp_path / "gone").exists()
    (tmp_path / "p" / "sub").mkdir(parents=True)
    with MemoryManager(tmp_path / "p", "global") as mem:  # made at the folder given
        mem.set_fact("a", "1", date="2026-11-01")
        assert mem.store.path == (tmp_path / "p" / ".cas").absolute()
    with MemoryManager(tmp_path / "p" / "sub", "global", create=False) as mem:  # found upward
        assert mem.get_fact("a") == "1"
    with MemoryManager(tmp_path / "p" / ".cas", "global") as mem:  # the store folder itself
        assert mem.get_fact("a") == "1"
    with Store.at(tmp_path / "p" / ".cas") as store:
        with MemoryManager(store, "global") as mem:
            assert mem.get_fact("a") == "1"
        assert store.stats()  # a store given stays open
    with MemoryManager(tmp_path / "p", "global") as mem, mem.for_scope("user:z") as other:
        assert other.store is mem.store and other.get_fact("a") is None
    # the second one closed nothing of the first's: it was open until the first closed it


def test_the_api_names_are_exported_lazily() -> None:
    assert set(memory.__all__) == {"MemoryManager", "MemoryScope", "MemoryStats"}
    assert memory.MemoryManager is manager_mod.MemoryManager
    with pytest.raises(AttributeError):
        memory.nothing  # noqa: B018


def test_a_conversation_through_the_manager_with_a_python_decider(tmp_path: Path) -> None:
    """The design's quick start: MemoryManager(scope=, data_dir=, llm_client=), add_turn, the
    short-term memory managed, and what the statistics say of it."""
    asked: list[dict[str, object]] = []

    def client(request: dict[str, Any]) -> list[dict[str, Any]]:
        asked.append(request)
        return [{"index": e["index"], "decision": "PROMOTE", "text": "kept for good"}
                for e in request["entries"]]  # fmt: skip

    with MemoryManager(scope="user:q", data_dir=tmp_path, llm_client=client, max_tokens=40) as mem:
        assert mem.session == "s1"
        for i in range(3):
            mem.add_turn(f"question {i} " * 4, f"answer {i} " * 4, date="2026-11-29")
        kept = [n for n, _u, _a in mem.short_term()]
        assert kept[-1] == 3 and len(kept) < 3  # flushed past 40 tokens, the newest kept
        assert asked and all(r["choices"] == ["COMPRESS", "PROMOTE", "DELETE"] for r in asked)
        assert "- 2026-11-29: kept for good" in mem.curated()
        done = mem.manage_short_term(max_tokens=1, date="2026-11-29")
        assert [n for n, _u, _a in mem.short_term()] == [3] and done.recent == 1
        stats = mem.get_stats()
        assert (stats.sessions, stats.recent_turns) == (1, 1)
    with MemoryManager(tmp_path, "user:q") as again:
        assert again.session == "s2"  # a new conversation: the next free id
    with pytest.raises(UsageError, match="where or data_dir"):
        MemoryManager(tmp_path, "user:q", data_dir=tmp_path)
    with pytest.raises(UsageError, match="session"):
        MemoryManager(tmp_path, "user:q", session="no good")


def test_export_and_import_folder_as_the_cli_does(tmp_path: Path) -> None:
    with MemoryManager(tmp_path, "user:ana") as mem:
        mem.remember("decided to keep the pack format at 2", date="2026-11-20")
        done = mem.export(tmp_path / "face")
        assert (done.scope, done.files) == ("user:ana", 1)
        log = tmp_path / "face" / "DailyLogs" / "2026-11-20.md"
        log.write_bytes(log.read_bytes() + b"- the axolotl build is green\n")
        imported = mem.import_folder(tmp_path / "face", date="2026-11-21")
        assert [c.journal() for c in imported.changes] == ["import: edit logs/2026-11-20.md"]
        assert mem.log("2026-11-20")[-1] == "the axolotl build is green"
        assert [h.path for h in mem.search("axolotl")] == ["logs/2026-11-20.md"]
        assert mem.import_folder(tmp_path / "face").changes == ()
        assert mem.get_stats().states == 2
    r = run_cas("mem", "import", "--scope", "user:ana", "face", cwd=tmp_path)
    assert r.code == 0 and r.out == "user:ana: face holds no change; no new state\n", r.err
