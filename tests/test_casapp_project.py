"""casapp.project: the services the CLI, the MCP server and Python programs share, checked
against what the command line prints for the same project and store."""

from __future__ import annotations

import doctest
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import casapp
from cas.errors import NotFound, StoreNotFound, UsageError
from cas.store import Store
from casapp import Project
from casapp import project as project_mod
from tests.conftest import cas_env, run_cas
from tests.remotefixture import add, aws_env, prefix
from tests.s3server import SeaweedS3, s3server

__all__ = ["prefix", "s3server"]  # fixtures, imported so pytest finds them here


def _shop(root: Path) -> Path:
    (root / "src" / "shop").mkdir(parents=True)
    (root / "src" / "shop" / "__init__.py").write_text(
        '"""A shop."""\n\n\ndef checkout(cart: list[int]) -> int:\n    return sum(cart)\n'
    )
    (root / "src" / "shop" / "cart.py").write_text(
        "from shop import checkout\n\n\nclass Cart:\n    def total(self) -> int:\n"
        "        return checkout([1, 2])\n"
    )
    (root / "README.md").write_text("# Shop\n\nCall `checkout(cart)` to pay.\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = _shop(tmp_path / "shop")
    assert run_cas("-q", "pack", cwd=root).code == 0
    return root


def test_the_module_example_runs(tmp_path: Path) -> None:
    found = doctest.testmod(project_mod, extraglobs={"project": str(_shop(tmp_path / "p"))})
    assert found.attempted >= 2 and found.failed == 0, found


def test_open_finds_the_project_and_its_store_as_the_cli_does(shop: Path) -> None:
    (shop / "src" / "deep").mkdir()
    with Project.open(shop / "src" / "deep") as p:
        assert p.root == shop and p.store.path == shop / ".cas"
        assert p.manifests == shop / "manifests"
    (shop.parent / "elsewhere").mkdir()
    with pytest.raises(StoreNotFound):
        Project.open(shop.parent / "elsewhere")
    with Project.open(shop.parent / "elsewhere", create=True) as p:
        assert (p.store.path / "data.mdb").is_file()
    with Store.at(shop / ".cas") as store:
        with Project(shop, store) as p:
            assert [i.name for i in p.packs()] == ["repo"]
        assert store.stats()  # a store given stays open


def test_render_read_search_load_match_the_command_line(shop: Path) -> None:
    with Project.open(shop) as p:
        for mode in ("lite", "full"):
            for fmt in ("markdown", "xml", "plain"):
                cli = run_cas("render", "repo", "--mode", mode, "--format", fmt, cwd=shop)
                assert p.render("repo", mode, fmt) == cli.out, (mode, fmt)
        split = p.render_split("repo")
        assert "INDEX.md" in split and len(split) > 1
        cat = run_cas("cat", "repo", "src/shop/cart.py", cwd=shop)
        assert p.read_text("repo", "src/shop/cart.py") == cat.out
        assert p.read_text("repo", "src/shop/cart.py", first=4, last=4) == "class Cart:\n"
        with p.open_file("repo", "src/shop/cart.py") as reader:
            assert b"".join(reader.chunks()).decode() == cat.out
        hits = p.search("checkout")
        cli_hits = json.loads(run_cas("search", "checkout", "--json", cwd=shop).out)["hits"]
        assert [h.path for h in hits] == [h["path"] for h in cli_hits]
        result = p.load("how does checkout work", budget=2000)
        assert not (shop / "manifests" / "load.pack").exists()  # not written unless asked
        assert any(e.path == "src/shop/__init__.py" for e in result.manifest.entries)
        written = p.load("how does checkout work", budget=2000, name="q1", write=True)
        assert (shop / "manifests" / "q1.pack").read_bytes() == written.data
        assert run_cas("verify", "q1", cwd=shop).code == 0
        assert p.verify().ok


def test_bad_requests_are_the_errors_every_surface_gives(shop: Path) -> None:
    with Project.open(shop) as p:
        with pytest.raises(UsageError, match="mode 'split': use 'lite' or 'full'"):
            p.render("repo", "split")
        with pytest.raises(UsageError, match="format"):
            p.render("repo", "lite", "html")
        with pytest.raises(NotFound):
            p.render("nosuch")
        with pytest.raises(NotFound):
            p.read_text("repo", "no/such.py")
        with pytest.raises(UsageError, match="past the end"):
            p.read_text("repo", "src/shop/cart.py", first=99)
        with pytest.raises(UsageError, match="budget"):
            p.load("checkout", budget=0)
        with pytest.raises(UsageError):
            p.memory()  # no scope named, none granted
    with pytest.raises(UsageError):
        Project.open(shop, scopes=["team:x"])
    with pytest.raises(UsageError, match="no such folder"):
        Project.open(shop / "gone", create=True)
    assert not (shop / "gone").exists()


def test_a_granted_project_sees_only_its_memories_and_names_packs_by_name(shop: Path) -> None:
    with Project.open(shop, scopes=["user:a"]) as owner:
        owner.memory().set_fact("host", "db1")
        owner.memory().remember("the db1 host moved racks")
        owner.memory("user:b").set_fact("secretplan", "b's only")
    manifest = str(shop / "manifests" / "repo.pack")
    with Project.open(shop, scopes=["user:a"], granted_only=True) as p:
        assert [i.name for i in p.packs()] == ["repo", "memory/user:a"]
        assert p.fact("user:a", "host") == "db1"
        assert [h.path for h in p.recall("user:a", "racks")] == ["logs/" + _today() + ".md"]
        with pytest.raises(UsageError, match="not one this server may use"):
            p.memory("user:b")
        with pytest.raises(UsageError, match="not one this server may use"):
            p.fact("user:b", "secretplan")
        with pytest.raises(UsageError, match="not a path"):
            p.render(manifest)
        assert "db1" in p.read_text("memory/user:a", "memory/user:a/facts/host.md")
        with pytest.raises(NotFound):
            p.render("memory/user:b")
        hits = p.search("db1", packs=["memory/user:a"])
        mine = {f"memory/user:a/{p}" for p in ("facts/host.md", f"logs/{_today()}.md")}
        assert hits and {h.path for h in hits} <= mine
    with Project.open(shop) as owner:  # the owner reads a pack by its file too
        assert owner.render(manifest) == owner.render("repo")


def _today() -> str:
    import datetime

    return datetime.date.today().isoformat()


def test_the_api_names_are_exported_lazily(tmp_path: Path) -> None:
    assert set(casapp.__all__) == {"PackInfo", "Project"}
    assert casapp.Project is project_mod.Project
    with pytest.raises(AttributeError):
        casapp.nothing  # noqa: B018
    project = _shop(tmp_path / "p")
    code = (
        "from casapp import Project\n"
        "with Project.open('.', create=True) as p:\n"
        "    print([r.path.name for r in p.pack().results])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", code], cwd=project, env=cas_env(), capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "['repo.pack']\n"
    shutil.rmtree(project / ".cas")


def test_push_pull_gc_and_diff_are_the_commands_services(
    shop: Path, tmp_path: Path, s3server: SeaweedS3, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against a real S3 server: what `Project.push` uploads, `Project.pull` brings back into
    another project whole; `gc` keeps what the packs hold and prunes what none does; `diff`
    says what a new pack changed."""
    aws_env(monkeypatch, s3server, tmp_path / "home")
    add(s3server, shop, prefix)
    with Project.open(shop) as p:
        first = p.locate("repo").digest
        pushed = p.push()
        assert [m["name"] for m in pushed.manifests] == ["repo"] and pushed.blobs_uploaded > 0
        assert p.push("origin", ["repo"]).blobs_uploaded == 0  # all there already
        loose = p.store.put(b"nothing references this")
        kept = p.gc(grace_s=0)
        assert kept.pruned == 1 and not p.store.has(loose)
        assert p.verify().ok
    other = _shop(tmp_path / "other")
    Store.create(other / ".cas").close()
    add(s3server, other, prefix)
    (other / "manifests").mkdir()
    shutil.copy(shop / "manifests" / "repo.pack", other / "manifests" / "repo.pack")
    with Project.open(other) as q:
        pulled = q.pull()
        assert pulled.blobs_downloaded > 0
        assert q.render("repo") == run_cas("render", "repo", cwd=shop).out
    (shop / "src" / "shop" / "tax.py").write_text("def tax(total: int) -> int:\n    return 0\n")
    assert run_cas("-q", "pack", cwd=shop).code == 0
    with Project.open(shop) as p:
        changes = p.diff(str(first), "repo")
        assert [(c.path, c.change) for c in changes.changes if c.change == "added"] == [
            ("src/shop/tax.py", "added")
        ]
        assert changes.new_tokens > changes.old_tokens


def test_pack_takes_a_pack_scope_as_make_pack_does(shop: Path) -> None:
    from packer import PackScope

    with Project.open(shop) as p:
        report = p.pack([PackScope("code", roots=("src",), budget=(500, 800))])
        assert [r.path.name for r in report.results] == ["code.pack"]
        assert [e.path for e in report.results[0].manifest.entries] == [
            "src/shop/__init__.py",
            "src/shop/cart.py",
        ]
        assert p.pack(check=True).stale == []  # the configured pack is as it was
