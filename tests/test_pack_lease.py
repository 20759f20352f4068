"""`cas pack` holds a lease from before its first store lookup until its last manifest file is
written, and publishes nothing once that lease was lost (a gc may have pruned its blobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cas import Store
from cas.errors import LeaseLost
from cas.events import ProgressEvent
from cas.lease import leases
from packer.build import Packer
from packer.config import load_config
from tests.packfixture import build_tree


def test_lease_is_held_while_packing_and_released_after(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", with_specials=False)
    Store.create(root / ".cas").close()
    seen: dict[str, set[str]] = {}
    with Store.at(root / ".cas") as store:

        def tick(event: ProgressEvent) -> None:
            seen.setdefault(event.stage, set()).update(f"{r.kind}:{r.pid}" for r in leases(store))

        report = Packer(root, store, load_config(root), progress=tick).run()
        assert report.results and all(r.path.is_file() for r in report.results)
        assert leases(store) == []
    assert seen["scan"] and seen["store"]
    assert all(
        len(holders) == 1 and next(iter(holders)).startswith("pack:") for holders in seen.values()
    )


def test_lost_lease_publishes_no_manifest(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", with_specials=False)
    Store.create(root / ".cas").close()
    with Store.at(root / ".cas") as store:
        packer = Packer(root, store, load_config(root))

        def tick(event: ProgressEvent) -> None:
            # What a gc does to a lease it judged stale: deletes it. The next heartbeat notices.
            lease = packer._lease
            assert lease is not None
            if event.stage == "store" and not lease.lost:
                store.refs.delete_leases([lease.id])
                lease.beat()

        packer.progress = tick
        with pytest.raises(LeaseLost):
            packer.run()
        assert leases(store) == []
    assert not (root / "manifests").exists() or not list((root / "manifests").iterdir())
