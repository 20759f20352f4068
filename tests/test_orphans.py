"""Orphan packs (`packer.orphans`): what the configuration makes, and what else is left alone."""

from __future__ import annotations

from pathlib import Path

from cas import manifest as mf
from packer.config import load_config
from packer.orphans import find_orphans, produced, prune


def _write(folder: Path, name: str, m: mf.Manifest) -> None:
    (folder / f"{name}.pack").write_bytes(mf.encode(m))


def test_produced_names_every_scope_and_target_and_the_rest_is_an_orphan(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text(
        '[scopes.docs]\nroots = ["docs"]\n[scopes.docs.targets.claude]\ntarget = 5000\n'
        '[scopes.code]\nroots = ["src"]\n'
    )
    config = load_config(tmp_path)
    assert produced(config) == {"docs.claude", "code"}
    folder = tmp_path / "manifests"
    folder.mkdir()
    lite = mf.Manifest("docs", "chatgpt", "o200k_base", 10, 12, ())
    _write(folder, "docs.claude", lite._replace(target="claude"))
    _write(folder, "code", lite._replace(scope="code", target=None))
    _write(folder, "docs.chatgpt", lite)  # a target no longer configured
    _write(folder, "old", lite._replace(scope="old", target=None))  # a scope removed
    _write(folder, "why", lite._replace(scope="load", target=None, kind="load", query="why"))
    _write(folder, "mem.global.common", lite._replace(scope="mem.global", target="common"))
    (folder / "junk.pack").write_bytes(b"not a manifest")
    (folder / "notes.txt").write_text("not a pack\n")
    found = find_orphans(tmp_path, config)
    assert [p.name for p in found] == ["docs.chatgpt.pack", "junk.pack", "old.pack"]
    prune(found)
    prune(found)  # gone already: no error
    assert sorted(p.name for p in folder.iterdir()) == [
        "code.pack", "docs.claude.pack", "mem.global.common.pack", "notes.txt", "why.pack"
    ]  # fmt: skip


def test_without_a_manifests_folder_there_is_no_orphan(tmp_path: Path) -> None:
    assert find_orphans(tmp_path, load_config(tmp_path)) == []
    assert produced(load_config(tmp_path)) == {"repo"}  # the defaults: one pack, repo
