"""Same tree content, same manifest bytes: whatever the absolute path, mtimes, creation order,
locale, time zone or time of day."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cas import Store
from packer.build import Packer
from packer.config import load_config
from tests.conftest import run_cas

names = st.text(alphabet="abcdeé_", min_size=1, max_size=6)
files = st.dictionaries(
    st.lists(names, min_size=1, max_size=3).map(lambda parts: "/".join(parts) + ".md"),
    st.text(alphabet="abc xyz\n#é`", max_size=200),
    min_size=1,
    max_size=8,
)


def _materialize(root: Path, tree: dict[str, str], order: list[str], mtime: int) -> None:
    for rel in order:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(tree[rel], encoding="utf-8")
        os.utime(p, ns=(mtime, mtime))


def _pack(root: Path) -> bytes:
    with Store.create(root / ".cas") as store:
        report = Packer(root, store, load_config(root)).run()
    return report.results[0].path.read_bytes()


@settings(max_examples=20, deadline=None)
@given(files, st.randoms(use_true_random=False), st.integers(0, 2**40))
def test_shuffled_creation_two_dirs_different_mtimes(
    tmp_path_factory: object, tree: dict[str, str], rnd: random.Random, mtime: int
) -> None:
    # A path that is a prefix directory of another path cannot also be a file.
    keys = sorted(tree)
    if any(b.startswith(a[:-3] + "/") for a in keys for b in keys):
        return
    one = tmp_path_factory.mktemp("one")  # type: ignore[attr-defined]
    two = tmp_path_factory.mktemp("second-dir") / "nested" / "deeper"  # type: ignore[attr-defined]
    order = list(tree)
    _materialize(one, tree, order, 10**18)
    rnd.shuffle(order)
    _materialize(two, tree, order, mtime)
    assert _pack(one) == _pack(two)


def test_locale_timezone_and_time_do_not_matter(tmp_path: Path) -> None:
    from tests.packfixture import build_tree

    outputs = []
    for i, env in enumerate(
        [
            {"TZ": "UTC", "LC_ALL": "C", "LANG": "C"},
            {"TZ": "Asia/Kathmandu", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PYTHONHASHSEED": "7"},
        ]
    ):
        root = build_tree(tmp_path / f"r{i}" / ("x" * (i * 30 + 1)), with_specials=False)
        r = run_cas("pack", cwd=root, env=env)
        assert r.code == 0, r.err
        outputs.append((root / "manifests" / "repo.pack").read_bytes())
    assert outputs[0] == outputs[1]


def test_searches_and_loads_by_meaning_are_the_same_bytes_anywhere(tmp_path: Path) -> None:
    """Two copies of a project at other paths, other hash seeds and locales, one of them with
    its vectors made by an earlier search and the other's made by this one: the same hits in
    every mode and the same load manifest."""
    files = {
        "docs/ops.md": "# Operations\n\n- the staging server runs out of disk every Friday\n"
        "- backups are kept for 35 days\n\n## Releases\n\nWe ship every second Tuesday.\n",
        "src/cache.py": '"""Eviction of the least recently used items once the size cap is '
        'hit."""\n\n\ndef evict(cache, cap):\n    while len(cache) > cap:\n'
        "        cache.popitem(last=False)\n",
        "src/login.py": "def sign_in(user, password):\n    return check(user, password)\n",
    }
    questions = ["how are stale objects thrown out when full", "when do we publish new versions"]
    outputs = []
    for i, env in enumerate(
        [
            {"PYTHONHASHSEED": "0", "LC_ALL": "C", "TZ": "UTC"},
            {"PYTHONHASHSEED": "4242", "LC_ALL": "C.UTF-8", "TZ": "Asia/Kathmandu"},
        ]
    ):
        root = tmp_path / f"p{i}" / ("deep" * i)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        assert run_cas("pack", cwd=root, env=env).code == 0
        if i == 0:  # its vectors made before, by another search
            assert run_cas("search", "--mode", "semantic", "anything at all", cwd=root).code == 0
        seen = []
        for q in questions:
            for mode in ("hybrid", "semantic", "lexical"):
                r = run_cas("search", "--json", "--mode", mode, q, cwd=root, env=env)
                assert r.code == 0, r.err
                seen.append(r.out)
        r = run_cas("load", "--budget", "400", questions[0], cwd=root, env=env)
        assert r.code == 0, r.err
        seen.append((root / "manifests" / "load.pack").read_bytes().hex())
        outputs.append(seen)
    assert outputs[0] == outputs[1]
    hybrid = json.loads(outputs[0][0])["hits"]
    assert "src/cache.py" in [h["path"] for h in hybrid[:2]]
