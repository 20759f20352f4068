"""packer.export: the archive's zip is a function of the pack alone; the indexes list every file
once."""

from __future__ import annotations

import io
import unicodedata
import zipfile

from hypothesis import given, settings
from hypothesis import strategies as st

from cas import manifest as mf
from cas.digest import Digest
from packer.export import PackTexts, lite_index, pack_zip, treemap

SEGMENT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"),
    min_size=1,
    max_size=8,
).filter(lambda s: s not in (".", "..") and unicodedata.is_normalized("NFC", s))
PATHS = st.lists(st.lists(SEGMENT, min_size=1, max_size=3).map("/".join), min_size=1, max_size=12,
                 unique=True)  # fmt: skip


def pack_of(paths: list[str], tiers: list[int]) -> tuple[PackTexts, dict[Digest, bytes]]:
    bodies: dict[Digest, bytes] = {}
    entries = []
    names = sorted(paths, key=str.encode)
    # a path may not be both a file and a folder
    names = [p for p in names if not any(q.startswith(p + "/") for q in names)]
    for i, path in enumerate(names):
        body = f"body of {path}\n".encode()
        d = Digest.of(body)
        bodies[d] = body
        tier = ("high", "medium", "low", "withheld")[tiers[i % len(tiers)]]
        if tier == "withheld":
            entries.append(mf.Entry(path, None, len(body), "low", 0))
        else:
            entries.append(mf.Entry(path, d, len(body), tier, 0 if tier == "low" else 5))
    m = mf.Manifest("repo", None, "o200k_base", 100, 120, tuple(entries))
    data = mf.encode(m)
    texts = PackTexts("repo", Digest.of(data), data, m, "", "", "", {"INDEX.md": ""}, "")
    return texts, bodies


@settings(max_examples=60, deadline=None)
@given(PATHS, st.lists(st.integers(0, 3), min_size=1, max_size=5))
def test_the_zip_is_a_function_of_the_pack_and_holds_meta_and_repo_only(
    paths: list[str], tiers: list[int]
) -> None:
    p, bodies = pack_of(paths, tiers)
    data = pack_zip(p, bodies.__getitem__)
    assert pack_zip(p, bodies.__getitem__) == data
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        names = [i.filename for i in infos]
        assert names == sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape"))
        assert all(n.split("/", 1)[0] in ("meta", "repo") for n in names)
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in infos)
        assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
        files = [e for e in p.manifest.entries if e.digest is not None]
        assert sorted(n for n in names if n.startswith("repo/")) == sorted(
            f"repo/{e.path}" for e in files
        )
        for e in files:
            assert e.digest is not None
            assert z.read(f"repo/{e.path}") == bodies[e.digest]
        assert z.read("meta/manifest.pack") == p.data


@settings(max_examples=60, deadline=None)
@given(PATHS, st.lists(st.integers(0, 3), min_size=1, max_size=5))
def test_the_indexes_list_every_file_once(paths: list[str], tiers: list[int]) -> None:
    p, _bodies = pack_of(paths, tiers)
    m = p.manifest
    tree = treemap(m).splitlines()
    leaves = [line for line in tree[1:] if not line.rstrip().endswith("tokens)")]
    assert len(leaves) == len(m.entries)
    index = lite_index(m).splitlines()[2:]
    assert len(index) == len(m.entries)
    withheld = sum(1 for e in m.entries if e.digest is None)
    assert sum(1 for line in index if line.startswith("withheld")) == withheld
    shown = sum(e.tokens for e in m.entries if e.tier != "low" and e.digest is not None)
    assert tree[0] == f"repo/ {shown:,} tokens shown"
