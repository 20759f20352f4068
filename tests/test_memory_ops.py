"""memory.ops: remembering, facts and the curated memory, each in its own scope."""

from __future__ import annotations

import random
import string

import pytest

from cas import Store
from cas.errors import NotFound, SecretInName
from memory.ops import curate, facts, get_fact, put_fact, remember
from memory.state import head, read_file
from tests.secret_corpus import Values


def test_facts_keep_their_history_and_a_deleted_fact_is_gone_but_remembered(
    store: Store,
) -> None:
    put_fact(store, "user:a", "db", "postgres 14", date="2026-11-01")
    put_fact(store, "user:a", "db", "postgres   16", date="2026-11-09")
    put_fact(store, "user:a", "os", "linux", date="2026-11-09")
    assert get_fact(store, "user:a", "db").value == "postgres 16"
    assert [f.key for f in facts(store, "user:a")] == ["db", "os"]
    put_fact(store, "user:a", "db", None, date="2026-11-10")
    assert [f.key for f in facts(store, "user:a")] == ["os"]
    assert get_fact(store, "user:a", "db").history == (
        ("2026-11-10", "(deleted)"), ("2026-11-09", "postgres 16"), ("2026-11-01", "postgres 14"),
    )  # fmt: skip
    with pytest.raises(NotFound):
        get_fact(store, "user:b", "db")
    with pytest.raises(NotFound):
        put_fact(store, "user:a", "never", None, date="2026-11-10")


def test_remember_appends_to_the_days_log_and_curate_to_memory_md(store: Store) -> None:
    done = remember(store, "global", "the pull profile shows LMDB puts", date="2026-11-01")
    remember(store, "global", "two\nlines", date="2026-11-01")
    assert (done.scope, done.path, done.secrets) == ("global", "logs/2026-11-01.md", ())
    assert done.id == "e-g5y6ga"  # the same on every machine (memory.edits)
    curated = curate(store, "global", "Pull into an empty store beats restic", date="2026-11-04")
    assert (curated.path, curated.id) == ("MEMORY.md", "e-ig2jxg")
    state = head(store, "global")
    assert curated.state == state.digest
    assert read_file(store, state, "logs/2026-11-01.md") == (
        b"# 2026-11-01\n\n- the pull profile shows LMDB puts ^e-g5y6ga\n- two ^e-gsr5vc\n  lines\n"
    )
    assert read_file(store, state, "MEMORY.md") == (
        b"# Memory\n\n- Pull into an empty store beats restic ^e-ig2jxg\n"
    )
    assert head(store, "session:other").digest is None


def test_a_key_or_scope_holding_a_secret_is_refused_before_anything_is_written(
    store: Store,
) -> None:
    token = "gh" + "p_" + Values(random.Random(51)).pick(string.ascii_letters + string.digits, 36)
    with pytest.raises(SecretInName, match="fact key"):
        put_fact(store, "global", token, "harmless", date="2026-11-01")
    with pytest.raises(SecretInName, match="fact key"):
        put_fact(store, "global", f"ci.{token}", None, date="2026-11-01")
    with pytest.raises(SecretInName, match="scope id"):
        remember(store, f"user:{token}", "note", date="2026-11-01")
    with pytest.raises(SecretInName, match="scope id"):
        curate(store, f"session:{token}", "note", date="2026-11-01")
    assert store.refs.pins() == {} and list(store.iterate()) == [] and store.kv.items("usage") == []


def test_a_fact_value_is_stored_as_the_one_line_that_was_scanned(store: Store) -> None:
    pw = Values(random.Random(52)).pick(string.ascii_letters + string.digits, 20)
    p = "pass" + "word"
    fact = put_fact(store, "global", "db", f'{p} =\n"{pw}"', date="2026-11-01")
    assert fact.value == f"{p} = \"[REDACTED: high-entropy assignment to '{p}']\""
    state = head(store, "global")
    assert get_fact(store, "global", "db") == fact
    journal = (read_file(store, state, "journal.md") or b"").decode()
    assert journal.endswith(f"set fact db (secret cut out: high-entropy assignment to '{p}')\n")
    for digest in store.iterate():
        assert pw.encode() not in store.get(digest)
