"""`cas export` end to end: the design's layout, a zip that is the same bytes from another
copy of the project at another path, archives never deleted, bad input one line."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from tests.conftest import run_cas

FILES = {
    "README.md": "# Shop\n\nCarts and discounts.\n",
    "src/shop/cart.py": '"""Carts."""\n\n\ndef total(items):\n    return sum(items)\n',
    "src/shop/discount.py": '"""Discounts."""\n\n\ndef apply(total, pct):\n'
    "    return total * (100 - pct) // 100\n",
    "docs/guide.md": "# Guide\n\nAdd items, then pay.\n",
}
CONFIG = """\
[pack]
history = 0

[scopes.code]
roots = ["src"]

[scopes.code.targets.small]
target = 300
max = 400

[scopes.docs]
roots = ["docs", "README.md"]
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "one" / "shop"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cas.toml").write_text(CONFIG)
    r = run_cas("pack", cwd=root, timeout=300)
    assert r.code == 0, r.err
    return root


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_layout_and_a_zip_the_same_from_another_copy(shop: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_cas("export", str(out), "--json", cwd=shop)
    assert r.code == 0, r.err
    report = json.loads(r.out)
    digests = {p["name"]: p["digest"] for p in report["packs"]}
    assert sorted(digests) == ["code.small", "docs"]
    files = tree(out)
    for name, digest in digests.items():
        archive = f"archive/{name}-{digest.removeprefix('blake3:')[:12]}"
        assert f"FULL/{name}.md" in files and f"LITE/{name}.md" in files
        assert f"SPLIT/{name}/INDEX.md" in files
        for txt in ("FULL", "FULL-TREEMAP", "LITE-INDEX", "SPLIT-INDEX"):
            assert f"{archive}/{name}-{txt}.txt" in files, txt
        with zipfile.ZipFile(io.BytesIO(files[f"{archive}/pack.zip"])) as z:
            names = z.namelist()
            assert {n.split("/", 1)[0] for n in names} == {"meta", "repo"}
            assert (
                z.read("meta/manifest.pack") == (shop / "manifests" / f"{name}.pack").read_bytes()
            )
            for n in names:
                if n.startswith("repo/"):
                    assert z.read(n) == (shop / n.removeprefix("repo/")).read_bytes()
    small = next(p for p in report["packs"] if p["name"] == "code.small")
    treemap = files[f"{small['archive']}/code.small-FULL-TREEMAP.txt"].decode()
    assert "cart.py (" in treemap and "discount.py (" in treemap and "shop/ (" in treemap
    # Another copy of the project, at another path, another time zone: the same zip bytes.
    copy = tmp_path / "two" / "elsewhere" / "shop"
    shutil.copytree(shop, copy)
    r = run_cas("export", "code.small", str(tmp_path / "out2"), cwd=copy,
                env={"TZ": "Asia/Tokyo", "LC_ALL": "C"})  # fmt: skip
    assert r.code == 0, r.err
    again = tree(tmp_path / "out2")
    zips = [k for k in again if k.endswith("pack.zip")]
    assert len(zips) == 1 and again[zips[0]] == files[zips[0]]
    # The same export again writes nothing.
    r = run_cas("export", str(out), "--json", cwd=shop)
    assert all(p["written"] == [] for p in json.loads(r.out)["packs"])


def test_earlier_archives_are_kept_and_stale_split_parts_removed(
    shop: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert run_cas("export", "docs", str(out), cwd=shop).code == 0
    before = tree(out)
    (shop / "docs" / "guide.md").unlink()
    (shop / "README.md").write_text("# Shop\n\nNow with a new line.\n")
    assert run_cas("pack", cwd=shop, timeout=300).code == 0
    r = run_cas("export", "docs", str(out), cwd=shop)
    assert r.code == 0, r.err
    assert "removed SPLIT/docs/docs.md" in r.out
    after = tree(out)
    for rel, data in before.items():
        if rel.startswith("archive/"):
            assert after[rel] == data, rel  # never deleted, never written over
    assert len({k.split("/")[1] for k in after if k.startswith("archive/")}) == 2
    assert "SPLIT/docs/docs.md" not in after


def test_bad_input_is_one_line(shop: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for args, code, needle in (
        (("export", str(a_file / "sub")), 2, "cannot write"),
        (("export", "nosuch", str(tmp_path / "o")), 1, "nosuch"),
        (("export",), 2, "DIR"),
    ):
        r = run_cas(*args, cwd=shop)
        assert r.code == code, (args, r.code, r.err)
        assert needle in r.err and len(r.err.strip().split("\n")) == 1, (args, r.err)
        assert "Traceback" not in r.err
