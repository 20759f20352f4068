"""The cache table and the other tables whose keys callers choose: keys of any length work or
are refused with one clear line, and a damaged cached value is a miss.

LMDB takes keys of at most 511 bytes; a longer one is MDB_BAD_VALSIZE, which once surfaced as
"store is full" after a pack had written its manifest, and then on every later pack.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Store
from cas.cache import Cache
from tests import rawstore
from tests.conftest import run_cas


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


@settings(max_examples=30, deadline=None)
@given(
    entries=st.dictionaries(
        st.binary(min_size=0, max_size=1200), st.binary(max_size=300), min_size=1, max_size=8
    ),
    namespace=st.sampled_from(["stat:1", "summary:3:python", "tokens:o200k_base:2:text"]),
)
def test_any_key_round_trips_through_get_and_preload(
    tmp_path_factory: pytest.TempPathFactory, entries: dict[bytes, bytes], namespace: str
) -> None:
    with Store.create(tmp_path_factory.mktemp("c") / ".cas") as store:
        cache = Cache(store)
        for key, value in entries.items():
            cache.put(namespace, key, value)
        for key, value in entries.items():
            assert cache.get(namespace, key) == value  # pending, before the flush
        cache.flush()
        fresh = Cache(store)
        for key, value in entries.items():
            assert fresh.get(namespace, key) == value
        assert fresh.preload(namespace) == entries
        # Many at once, in one read: the same answers, pending values, misses and repeats too.
        absent = [b"\xff" * 1201, b"\xfe" * 1300]  # longer than any key drawn
        keys = [*entries, *absent, *entries]
        assert fresh.get_many(namespace, keys) == [fresh.get(namespace, k) for k in keys]
        cache.put(namespace, absent[0], b"now pending")
        assert cache.get_many(namespace, absent) == [b"now pending", None]
        assert fresh.preload(namespace + "x") == {}
        assert all(len(k) <= store.max_key_size for k, _v in store.kv.items("cache"))


def test_a_damaged_or_foreign_value_is_a_miss(store: Store) -> None:
    cache = Cache(store)
    cache.put("ns", b"short", b"value one")
    cache.put("ns", b"p" * 700, b"value two")
    cache.flush()
    rows = store.kv.items("cache")
    assert len(rows) == 2
    (k1, v1), (k2, _v2) = rows
    rawstore.put(store, "cache", k1, v1[:-1] + bytes([v1[-1] ^ 1]))
    rawstore.put(store, "cache", k2, v1)  # another key's value
    fresh = Cache(store)
    assert fresh.get("ns", b"short") is None
    assert fresh.get("ns", b"p" * 700) is None
    assert fresh.preload("ns") == {}
    assert fresh.misses == 2 and fresh.hits == 0
    assert fresh.get_many("ns", [b"short", b"p" * 700]) == [None, None]


def test_a_long_relative_path_packs_again_and_again(tmp_path: Path) -> None:
    """A path of 600 bytes: its stat-cache key would be over LMDB's limit. Every pack after
    the first used to fail with 'store is full'; now the second reads nothing."""
    deep = tmp_path / ("a" * 200) / ("b" * 200) / ("c" * 150)
    deep.mkdir(parents=True)
    long_file = deep / "file.txt"
    long_file.write_text("hello\n")
    (tmp_path / "top.txt").write_text("x\n")
    for path in (long_file, tmp_path / "top.txt"):
        os.utime(path, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))  # out of the racy window
    assert len(str(long_file.relative_to(tmp_path)).encode()) > 511
    first = run_cas("pack", "--json", cwd=tmp_path)
    assert first.code == 0, first.err
    second = run_cas("pack", "--json", cwd=tmp_path)
    assert second.code == 0, second.err
    report = json.loads(second.out)
    assert report["stat_hits"] == 2 and report["bytes_read"] == 0
    assert run_cas("verify", cwd=tmp_path).code == 0


def test_names_over_the_key_limit_are_one_clear_line_never_a_full_store(tmp_path: Path) -> None:
    assert run_cas("init", "--store-only", cwd=tmp_path).code == 0
    (tmp_path / "f").write_text("content\n")
    digest = run_cas("put", "f", cwd=tmp_path).out.strip()
    name = "n" * 600
    r = run_cas("pin", name, digest, cwd=tmp_path)
    assert r.code == 2
    assert "is full" not in one_line_error(r.err)
    r = run_cas("unpin", name, cwd=tmp_path)
    assert r.code in (1, 2) and "is full" not in one_line_error(r.err)
    r = run_cas("remote", "remove", name, cwd=tmp_path)
    assert r.code == 1 and "not found" in one_line_error(r.err)
    # The store took no harm.
    assert run_cas("verify", "--all", cwd=tmp_path).code == 0


def test_kv_put_refuses_a_long_key_before_any_transaction(store: Store) -> None:
    from cas.errors import KeyTooLong

    with pytest.raises(KeyTooLong) as info:
        store.kv.put("cache", [(b"k" * 600, b"v")])
    assert "600 bytes" in str(info.value) and "511" in str(info.value)
    assert store.kv.get("cache", b"k" * 600) is None
    assert store.kv.delete("remotes", [b"k" * 600]) == 0
    assert store.kv.items("cache", b"k" * 600) == []


@pytest.mark.parametrize("table", ["pins", "leases", "meta", "info", "blobs"])
def test_the_key_value_calls_reach_only_the_tables_of_caller_chosen_keys(
    store: Store, table: str
) -> None:
    """The store's own tables are its own: their records are read and written through named
    operations only (pins, leases, ...), never by table name."""
    with pytest.raises(ValueError, match="caller-chosen"):
        store.kv.get(table, b"k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="caller-chosen"):
        store.kv.put(table, [(b"k", b"v")])  # type: ignore[arg-type]
    assert rawstore.get(store, table, b"k") is None


def test_an_oversized_key_inside_any_write_is_never_reported_as_a_full_store(
    store: Store,
) -> None:
    from cas.errors import BadRecordSize, StoreFull

    with pytest.raises(BadRecordSize) as info:
        rawstore.put(store, "pins", b"k" * 600, b"v")
    assert not isinstance(info.value, StoreFull) and "nothing was written" in str(info.value)
    # a lookup finds nothing: no key that long can be there
    assert rawstore.get(store, "pins", b"k" * 600) is None
