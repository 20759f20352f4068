"""cas.visibility: which memory scopes a manifest carries, read from the manifest and its
memory state in a real store, and where it may be seen; unknown memories fail closed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Store
from cas import manifest as mf
from cas.digest import Digest
from cas.errors import MemoryNotGranted
from cas.visibility import (
    UNKNOWN,
    carried,
    granted_pack,
    is_memory_pack,
    source_name,
    visible,
)
from memory.ops import remember
from memory.packs import build
from memory.scopes import pack_scope, pin_name
from memory.state import head
from packer.config import MemoryConfig

PROJECT = mf.Manifest("repo", "claude", "o200k_base", 100, 100, ())


def memory_pack(store: Store, scope: str) -> mf.Manifest:
    remember(store, scope, f"a note of {scope}", date="2026-11-01")
    config = MemoryConfig()
    return build(store, head(store, scope), "2026-11-02", config, config.targets[0]).manifest


def test_a_projects_pack_carries_no_memory_and_is_seen_everywhere(store: Store) -> None:
    assert carried(PROJECT, store) == frozenset()
    assert visible(PROJECT, store, ()) and visible(PROJECT, None, ("session:a",))
    assert not is_memory_pack(PROJECT)


def test_a_memory_state_carries_its_scope(store: Store) -> None:
    remember(store, "session:a", "hello", date="2026-11-01")
    state = head(store, "session:a").manifest
    assert state is not None and not is_memory_pack(state)
    assert carried(state, None) == {"session:a"}
    assert not visible(state, store, ())
    assert not visible(state, store, ("session:b",))
    assert visible(state, store, ("session:b", "session:a"))


def test_a_memory_pack_carries_the_scope_of_the_state_it_was_made_from(store: Store) -> None:
    # two scopes whose packs share a name: the state each was made from tells them apart
    at, under = memory_pack(store, "session:x@y"), memory_pack(store, "session:x_at_y")
    assert at.name == under.name == pack_scope("session:x@y") + ".common"
    assert is_memory_pack(at) and is_memory_pack(under)
    assert carried(at, store) == {"session:x@y"}
    assert carried(under, store) == {"session:x_at_y"}
    assert visible(at, store, ("session:x@y",)) and not visible(at, store, ("session:x_at_y",))
    assert not visible(at, store, ())


def test_a_memory_pack_whose_state_cannot_be_read_is_seen_by_no_one(store: Store) -> None:
    m = memory_pack(store, "global")
    for parent in (None, Digest.of(b"not stored"), store.put(mf.encode(PROJECT))):
        orphan = m._replace(parent=parent)
        assert carried(orphan, store) == {UNKNOWN}
        assert not visible(orphan, store, ("global", "session:a"))
    assert carried(m, None) == {UNKNOWN}


def test_a_load_carries_the_memories_among_its_sources() -> None:
    d = Digest.of(b"x")
    load = PROJECT._replace(kind="load", query="q", sources=(("repo", d),))
    assert carried(load, None) == frozenset()
    drawn = load._replace(sources=(("repo", d), (source_name("session:a"), d)))
    assert carried(drawn, None) == {"session:a"}
    assert visible(drawn, None, ("session:a",)) and not visible(drawn, None, ())
    # a load drawn on a memory pack (never made now): whose, it cannot tell
    old = load._replace(sources=(("mem.session-a.common", d),))
    assert carried(old, None) == {UNKNOWN}


@given(st.sampled_from(["global", "user:ana", "session:42", "session:a.b@c-d"]))
def test_a_memorys_source_name_is_its_pin(scope: str) -> None:
    assert source_name(scope) == pin_name(scope)
    assert pack_scope(scope).startswith("mem.")


def test_a_pack_named_outright_is_granted_as_it_is_seen(store: Store, tmp_path: Path) -> None:
    """`granted_pack`: the project's pack for anyone; a memory pack, by name or by digest, only
    where its scope is asked for, refused otherwise with the flag that grants it; an orphan
    memory pack for no one."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    packs = {"repo.claude": PROJECT, "mine": memory_pack(store, "user:1")}
    packs["orphan"] = packs["mine"]._replace(parent=None)
    for name, m in packs.items():
        (folder / f"{name}.pack").write_bytes(mf.encode(m))
    assert granted_pack("repo.claude", folder, store, ()).manifest == PROJECT
    digest = str(store.put(mf.encode(packs["mine"])))
    for spec in ("mine", digest):
        assert granted_pack(spec, folder, store, ("user:1",)).manifest == packs["mine"]
        for scopes in ((), ("user:2",), ("global", "session:1")):
            with pytest.raises(MemoryNotGranted) as refused:
                granted_pack(spec, folder, store, scopes)
            assert refused.value.scopes == ["user:1"] and not refused.value.unknown
            assert "add --memory-scope user:1 to use it" in str(refused.value)
    with pytest.raises(MemoryNotGranted) as refused:
        granted_pack("orphan", folder, store, ("user:1",))
    assert refused.value.unknown and "no --memory-scope grants it" in str(refused.value)
