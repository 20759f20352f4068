"""The stat cache and derived-fact caches: an unchanged file is never re-read, a changed one
always is, and a file changed within the timestamp granularity is re-read next time."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgpack
from hypothesis import given
from hypothesis import strategies as st

from cas import Store
from packer.build import Packer
from packer.config import load_config
from packer.scan import RACY_NS
from tests.packfixture import build_tree

_ANY_MAP = st.dictionaries(
    st.one_of(st.text(max_size=8), st.integers(-1000, 1000)),
    st.one_of(st.integers(-3, 9), st.text(max_size=3), st.booleans(), st.none()),
    max_size=6,
)


def _age(root: Path, seconds: float = 10) -> None:
    """Make every file look old enough to be outside the racy window."""
    then = time.time_ns() - int(seconds * 1e9)
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.utime(p, ns=(then, then))


def _run(root: Path) -> tuple[object, bytes]:
    with Store.at(root / ".cas") as store:
        report = Packer(root, store, load_config(root)).run()
    return report, report.results[0].path.read_bytes()


def test_warm_pack_reads_nothing_and_gives_the_same_manifest(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    Store.create(root / ".cas").close()
    cold, first = _run(root)
    assert cold.stat_hits == 0 and cold.bytes_read > 0  # type: ignore[attr-defined]
    warm, second = _run(root)
    assert warm.results  # type: ignore[attr-defined]
    assert warm.bytes_read == 0  # type: ignore[attr-defined]
    assert warm.stat_hits == warm.files  # type: ignore[attr-defined]
    assert second == first


def test_changed_file_is_reread(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    Store.create(root / ".cas").close()
    _run(root)
    readme = root / "README.md"
    readme.write_text("# Widgets\n\nA changed overview.\n")
    then = time.time_ns() - 10**10
    os.utime(readme, ns=(then, then))
    report, data = _run(root)
    assert report.stat_hits == report.files - 1  # type: ignore[attr-defined]
    assert b"changed overview" not in data  # manifests hold digests, not text
    with Store.at(root / ".cas") as s:
        from cas import manifest as mf

        e = mf.decode(data).entry("README.md")
        assert e is not None and e.digest is not None
        assert s.get(e.digest) == readme.read_bytes()


def test_racily_clean_file_is_not_trusted(tmp_path: Path) -> None:
    """A file written within the timestamp granularity of the scan could change again with the
    same size, mtime and ctime (coarse kernel clocks tick every few ms); it must not be recorded,
    so the next pack reads it again."""
    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    readme = root / "README.md"
    readme.write_text("# Widgets\n\nJust written.\n")  # mtime: now, inside the racy window
    Store.create(root / ".cas").close()
    _run(root)
    report, _ = _run(root)
    assert report.stat_hits == report.files - 1  # type: ignore[attr-defined]
    assert report.bytes_read == readme.stat().st_size  # type: ignore[attr-defined]
    assert RACY_NS >= 1_000_000_000


def test_pruned_blob_named_by_the_cache_is_read_again(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    Store.create(root / ".cas").close()
    _, data = _run(root)
    from cas import manifest as mf

    e = mf.decode(data).entry("docs/guide.md")
    assert e is not None and e.digest is not None
    with Store.at(root / ".cas") as s:
        s.delete([e.digest])
    report, _ = _run(root)
    assert report.stat_hits == report.files - 1  # type: ignore[attr-defined]
    with Store.at(root / ".cas") as s:
        assert s.has(e.digest)


def test_a_memo_whose_summary_was_pruned_is_made_again(tmp_path: Path) -> None:
    """A warm pack reuses the memo's manifest only if every blob it references is stored: the
    bodies the ingest just found, and the summaries, looked up apart. One pruned: the manifest
    is made again, the same bytes, and the summary is stored again."""
    from cas import manifest as mf

    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    Store.create(root / ".cas").close()
    _, data = _run(root)
    summaries = [e.summary for e in mf.decode(data).entries if e.summary is not None]
    assert summaries  # the fixture's budget leaves some files summarised
    with Store.at(root / ".cas") as s:
        s.delete([summaries[0]])
    report, again = _run(root)
    assert again == data
    assert report.stat_hits == report.files  # type: ignore[attr-defined]
    with Store.at(root / ".cas") as s:
        assert s.has(summaries[0])


def test_cached_prices_and_memo_give_the_bytes_a_cold_store_gives(tmp_path: Path) -> None:
    """After edits, a pack that reuses cached outlines, lexicons, token counts, the stat cache
    and the memo writes the same manifest as a pack into a fresh store that computes
    everything again."""
    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    Store.create(root / ".cas").close()
    _run(root)
    (root / "docs" / "guide.md").write_text("# Guide\n\nRewritten, with more to say.\n" * 40)
    (root / "docs" / "new-page.md").write_text("# A page that did not exist\n")
    (root / "README.md").unlink()
    _age(root)
    _, warm = _run(root)
    import shutil

    shutil.rmtree(root / ".cas")
    Store.create(root / ".cas").close()
    _, cold = _run(root)
    assert warm == cold
    with Store.at(root / ".cas") as store:
        keys = [k for k, _ in store.kv.items("cache")]
        assert any(b"lex:" in k for k in keys) and any(b"priced:" in k for k in keys)
        assert any(b"line-tokens:" in k for k in keys)


def test_line_counts_are_remembered_exactly_and_not_counted_again(tmp_path: Path) -> None:
    """A pack keeps the token counts of the lines it counted (each file's listed line, the
    sections' headings) for the next: each is the tokenizer's count, and a pack that fits
    afresh (`--explain`) counts none of them again."""
    from packer.pricing import LINES_KEY, _decode_lines, line_key
    from packer.render import renderer

    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)
    Store.create(root / ".cas").close()
    _run(root)
    with Store.at(root / ".cas") as store:
        packer = Packer(root, store, load_config(root))
        raw = packer.cache.get(packer.pricer.lines_namespace, LINES_KEY)
        remembered = _decode_lines(raw)
        assert len(remembered) >= 10
        # The headings of the files a pack may show were priced: those are remembered by
        # their keys, each with the tokenizer's count of the heading itself.
        md = renderer("markdown")
        paths = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
        headings = [
            md.section_head(path, tier, summary)
            for path in paths
            for tier, summary in (("medium", True), ("high", False))
        ]
        found = [text for text in headings if line_key(text) in remembered]
        assert len(found) >= 10
        for text in found:
            assert remembered[line_key(text)] == packer.counter.count(text), text
        packer.run(explain="README.md")
        assert packer.pricer.lines_counted == 0


def test_damaged_remembered_line_counts_are_none() -> None:
    from packer.pricing import _decode_lines, _encode_lines, line_key

    good = {line_key("- `a.py` (3 lines)\n"): 9, line_key("## x\n"): 3, (1 << 64) - 1: 0}
    assert _decode_lines(_encode_lines(good)) == good
    raw = _encode_lines(good)
    odd = msgpack.packb([b"\0" * 8, b"\0" * 3], use_bin_type=True)  # counts not whole
    wrong = msgpack.packb(["keys", "counts"], use_bin_type=True)  # not bytes
    for bad in (b"", b"\x00", raw[:-1], raw + b"x", odd, wrong):
        assert _decode_lines(bad) == {}, bad
    assert _decode_lines(None) == {}


def test_damaged_cached_outlines_are_misses() -> None:
    from packer.outline import Outline, Symbol
    from packer.pricing import Priced, _decode_priced, _encode_priced

    good = Priced(
        Outline("python", 3, ("doc",), (Symbol("f", "function", ("def f(): ...",)),)), 5, (7,)
    )
    assert _decode_priced(_encode_priced(good)) == good
    raw = _encode_priced(good)
    for bad in (b"", b"\x00", raw[:-1], b"\x93\x01\x02\x03", raw + b"x"):
        assert _decode_priced(bad) is None, bad


def test_remembered_rule_decisions_follow_the_rules_and_a_damaged_entry_is_a_miss(
    tmp_path: Path,
) -> None:
    """Each path's rule is kept from one pack to the next under the same rules: rules changed
    in cas.toml classify afresh, and a damaged entry is ignored; every pack gives the bytes a
    cold store gives."""
    import shutil

    from cas.cache import Cache
    from packer.build import DECISIONS_NS
    from tests import rawstore

    root = build_tree(tmp_path / "r", with_specials=False)
    _age(root)

    def cold() -> bytes:
        shutil.rmtree(root / ".cas", ignore_errors=True)
        Store.create(root / ".cas").close()
        return _run(root)[1]

    first = cold()
    config = root / "cas.toml"
    before = config.read_text() if config.exists() else ""
    config.write_text(before + '\n[[rules]]\nglobs = ["docs/**"]\ntier = "low"\nreason = "x"\n')
    warm = _run(root)[1]
    assert warm != first  # the new rule changed what the pack shows
    assert warm == cold()
    with Store.at(root / ".cas") as store:
        rows = [(k, v) for k, v in store.kv.items("cache") if DECISIONS_NS.encode() in k]
        assert len(rows) == 1
        key, value = rows[0]
        rawstore.put(store, "cache", key, value[:-3] + b"\xff\xff\xff")
        assert Cache(store).get(DECISIONS_NS, key.split(b"\2", 1)[1]) is None
    (root / "src" / "new_module.py").write_text("def added():\n    return 1\n")
    _age(root)
    warm = _run(root)[1]
    assert warm == cold()


@given(st.one_of(st.binary(max_size=200), st.builds(msgpack.packb, _ANY_MAP)))
def test_any_remembered_decisions_decode_to_paths_and_rule_indexes_or_nothing(raw: bytes) -> None:
    from packer.build import _decode_decisions

    known = _decode_decisions(raw, 5)
    assert all(isinstance(p, str) and type(i) is int and 0 <= i <= 5 for p, i in known.items())
