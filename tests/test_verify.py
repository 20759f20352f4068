"""verify fails closed: every kind of damage is found and named, with the packs it hurts.

Damage is injected into the real LMDB tables (a flipped byte, a truncated value, a deleted blob or
chunk, a zeroed chunk reference) and into real manifest files; packs are written the way
``cas pack`` writes them, without the packer (tests/stress/crash_loop.py: `write_pack`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Digest, Store, roots
from cas import manifest as mf
from cas.errors import NotFound, UsageError
from cas.records import CHUNKREF
from cas.verify import in_subset, verify
from tests import rawstore
from tests.conftest import run_cas
from tests.stress.crash_loop import write_pack

BIG = bytes(range(256)) * 80  # 20 KiB: five chunks in a 4 KiB-chunk store
NOISE = b"".join(Digest.of(bytes([i])) for i in range(10))  # incompressible: stored raw
FILES = {
    "README.md": b"# project\n" * 20,
    "logo.png": NOISE,
    "src/app.py": b"def main() -> None:\n    print('hello')\n" * 10,
    "data/big.bin": BIG,
}
SUMMARIES = {"src/app.py": b"def main() -> None"}


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with a 4 KiB-chunk store and two packs sharing most of their blobs."""
    with Store.create(tmp_path / ".cas", chunk_size=4096) as store:
        write_pack(store, tmp_path, "a", FILES, summaries=SUMMARIES)
        write_pack(store, tmp_path, "b", {**FILES, "extra.txt": b"only in b\n"})
    return tmp_path


def mutate_value(
    store_path: Path, table: str, key: bytes, change: Callable[[bytes], bytes]
) -> None:
    with Store.at(store_path) as store:
        rawstore.change(store, table, key, change)


def delete_key(store_path: Path, table: str, key: bytes) -> None:
    with Store.at(store_path) as store:
        assert rawstore.delete(store, table, key)


def flip_last(value: bytes) -> bytes:
    return value[:-1] + bytes([value[-1] ^ 0x01])


def chunks_of(store_path: Path, digest: Digest) -> list[Digest]:
    from cas import frame

    with Store.at(store_path) as store:
        value = store.raw_value(digest)
    assert value is not None
    return frame.decode_index(value)[2]


def run_verify(project: Path, *args: str) -> tuple[int, str, str]:
    r = run_cas("verify", *args, cwd=project)
    return r.code, r.out, r.err


# --- a clean store -----------------------------------------------------------------------------


def test_clean_packs_verify_and_record_when_verified(project: Path) -> None:
    with Store.at(project / ".cas") as store:
        report = verify(store)
        assert report.ok, report.problems
        # Each pack's own copy, four bodies, a summary, and b's extra file.
        assert report.checked == 2 + 4 + 1 + 1
        assert report.manifests == 2
        assert report.bytes_checked > len(BIG)
        times = [when for _d, when, _size in store.last_verified(store.iterate())]
    assert len([when for when in times if when > 0]) == report.checked
    code, out, err = run_verify(project)
    assert code == 0, err
    assert out.strip().endswith(": ok")
    code, out, _ = run_verify(project, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ok"] is True and data["problems"] == [] and data["checked"] == 8


def test_verified_times_are_kept_per_blob(tmp_path: Path) -> None:
    """`stamp_verified` records a time for each blob still in the store and none for one that is
    not; `last_verified` gives each time (-1: never verified) and size, in key order, the same
    asked for all at once or one at a time."""
    with Store.create(tmp_path / ".cas") as store:
        digests = [store.put(f"blob {i}\n".encode() * (i + 1)) for i in range(40)]
        assert store.stamp_verified(digests[::3], 1_000) == len(digests[::3])
        assert store.stamp_verified(digests[1::3], 2_000) == len(digests[1::3])
        gone = Digest.of(b"not in the store")
        assert store.stamp_verified([gone], 3_000) == 0  # no record for what is not there
        together = store.last_verified([*digests, gone])
        looked_up = [row for d in [*digests, gone] for row in store.last_verified([d])]
        assert sorted(looked_up) == together
        by_digest = {d: (when, size) for d, when, size in together}
        assert by_digest[digests[0]] == (1_000, len("blob 0\n"))
        assert by_digest[digests[1]][0] == 2_000 and by_digest[digests[2]][0] == -1
        assert by_digest[gone] == (-1, 0)


# --- corruption injection: each damage is found and named ------------------------------------


def damage_cases() -> list[tuple[str, str]]:
    return [
        ("flip", "content does not match its digest"),
        ("truncate", "decoded 317 bytes, the frame records 320"),
        ("delete", "missing from the store"),
    ]


@pytest.mark.parametrize(("how", "expected"), damage_cases())
def test_damaged_body_is_found_and_named(project: Path, how: str, expected: str) -> None:
    target = Digest.of(NOISE)
    store_path = project / ".cas"
    if how == "flip":
        mutate_value(store_path, "blobs", target, flip_last)
    elif how == "truncate":
        mutate_value(store_path, "blobs", target, lambda v: v[:-3])
    else:
        delete_key(store_path, "blobs", target)
    with Store.at(store_path) as store:
        report = verify(store)
    assert [p.digest for p in report.problems] == [str(target)]
    problem = report.problems[0]
    assert expected in problem.what
    assert problem.manifests == ("a.pack", "b.pack")
    code, out, err = run_verify(project)
    assert code == 1
    assert out.splitlines()[0] == problem.line()
    assert out.splitlines()[0].startswith(f"{target}  ")
    assert out.splitlines()[0].endswith("(referenced by: a.pack, b.pack)")
    assert one_line_error(err) == "cas: error: verify failed: 1 problem"


def test_flipped_byte_inside_a_compressed_value_is_found(project: Path) -> None:
    target = Digest.of(FILES["src/app.py"])  # repetitive: stored as zstd
    mutate_value(
        project / ".cas", "blobs", target, lambda v: v[:20] + bytes([v[20] ^ 0x40]) + v[21:]
    )
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [p.digest for p in report.problems] == [str(target)]


@pytest.mark.parametrize("how", ["delete", "flip", "unreferenced"])
def test_damaged_chunk_of_a_large_blob_is_found(project: Path, how: str) -> None:
    big = Digest.of(BIG)
    chunk = chunks_of(project / ".cas", big)[2]
    if how == "delete":
        delete_key(project / ".cas", "chunks", chunk)
        expected = f"chunk {chunk} is missing"
    elif how == "flip":
        mutate_value(project / ".cas", "chunks", chunk, flip_last)
        expected = f"chunk {chunk}"
    else:
        # A chunk a live blob lists but whose reference count says nobody does: gc would sweep
        # it, so verify reports it before that happens.
        mutate_value(project / ".cas", "chunkrefs", chunk, lambda v: CHUNKREF.pack(0, 0))
        expected = "no reference count"
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [p.digest for p in report.problems] == [str(big)]
    assert expected in report.problems[0].what
    assert report.problems[0].manifests == ("a.pack", "b.pack")


def test_missing_summary_is_found(project: Path) -> None:
    summary = Digest.of(SUMMARIES["src/app.py"])
    delete_key(project / ".cas", "blobs", summary)
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [(p.digest, p.manifests) for p in report.problems] == [(str(summary), ("a.pack",))]


def test_missing_metadata_record_is_found(project: Path) -> None:
    target = Digest.of(b"only in b\n")
    delete_key(project / ".cas", "meta", target)
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [p.what for p in report.problems] == ["its metadata record is missing"]


def test_all_checks_unreferenced_blobs_too(project: Path) -> None:
    with Store.at(project / ".cas") as store:
        loose = store.put(b"nobody references me" * 10)
    mutate_value(project / ".cas", "blobs", loose, flip_last)
    with Store.at(project / ".cas") as store:
        assert verify(store).ok
        report = verify(store, all_blobs=True)
    assert [(p.digest, p.manifests) for p in report.problems] == [(str(loose), ())]
    code, out, _ = run_verify(project, "--all")
    assert code == 1 and out.splitlines()[0].startswith(f"{loose}  ")


# --- manifests --------------------------------------------------------------------------------


def _other_version(data: bytes) -> bytes:
    obj = msgpack.unpackb(data)
    obj["format"] = 3
    return msgpack.packb(obj)


@pytest.mark.parametrize(
    ("mangle", "expected"),
    [
        (lambda d: d[: len(d) // 2], "not a valid manifest"),
        (lambda d: b"\x00garbage\xff" * 10, "not a valid manifest"),
        (_other_version, "format version 3 is not supported"),
        (lambda d: b"", "empty file"),
    ],
    ids=["truncated", "garbage", "wrong-version", "empty"],
)
def test_bad_manifest_file_is_a_problem(
    project: Path, mangle: Callable[[bytes], bytes], expected: str
) -> None:
    path = project / "manifests" / "a.pack"
    path.write_bytes(mangle(path.read_bytes()))
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert len(report.problems) == 1
    problem = report.problems[0]
    assert problem.manifests == ("a.pack",)
    assert expected in problem.what
    assert problem.digest == str(Digest.of(path.read_bytes()))
    code, out, _ = run_verify(project)
    assert code == 1 and expected in out


def test_manifest_whose_stored_copy_differs_is_a_problem(project: Path, tmp_path: Path) -> None:
    # A valid manifest file whose bytes the store never received (edited, or copied in alone).
    path = project / "manifests" / "a.pack"
    m = mf.decode(path.read_bytes())
    other = mf.Manifest(
        scope=m.scope,
        target=None,
        tokenizer=m.tokenizer,
        budget_target=m.budget_target + 1,
        budget_max=m.budget_max,
        entries=m.entries,
        totals=m.totals,
    )
    path.write_bytes(mf.encode(other))
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [p.digest for p in report.problems] == [str(Digest.of(path.read_bytes()))]
    assert report.problems[0].what == "missing from the store (the manifest's own copy)"


def test_corrupt_stored_copy_of_a_manifest_is_a_problem(project: Path) -> None:
    own = Digest.of((project / "manifests" / "b.pack").read_bytes())
    mutate_value(project / ".cas", "blobs", own, flip_last)
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [(p.digest, p.manifests) for p in report.problems] == [(str(own), ("b.pack",))]
    assert report.problems[0].what.endswith("(the manifest's own copy)")


def test_reference_to_a_missing_blob_names_every_pack(project: Path) -> None:
    with Store.create(project / "other" / ".cas") as other:
        write_pack(other, project, "c", {"ghost.txt": b"stored elsewhere\n"})
    ghost = Digest.of(b"stored elsewhere\n")
    with Store.at(project / ".cas") as store:
        report = verify(store)
    by_digest = {p.digest: p for p in report.problems}
    assert by_digest[str(ghost)].manifests == ("c.pack",)
    assert by_digest[str(ghost)].what == "missing from the store"
    code, out, _ = run_verify(project)
    assert code == 1
    assert f"{ghost}  missing from the store  (referenced by: c.pack)" in out.splitlines()


# --- targets, pins, slices, time limits ------------------------------------------------------


def test_targets_by_name_path_and_digest(project: Path) -> None:
    own = Digest.of((project / "manifests" / "a.pack").read_bytes())
    with Store.at(project / ".cas") as store:
        assert verify(store, ["a"]).checked == 6
        assert verify(store, [str(project / "manifests" / "b.pack")]).checked == 6
        # A manifest named by digest is checked with what it references.
        assert verify(store, [str(own)]).checked == 6
        assert verify(store, [str(Digest.of(BIG))]).checked == 1
        with pytest.raises(NotFound):
            verify(store, ["nope"])
    assert run_cas("verify", "nope", cwd=project).code == 1


def test_pins_are_verified(project: Path) -> None:
    with Store.at(project / ".cas") as store:
        loose = store.put(b"pinned content\n" * 8)
        roots.pin(store, "keepme", loose)
    mutate_value(project / ".cas", "blobs", loose, flip_last)
    with Store.at(project / ".cas") as store:
        report = verify(store)
    assert [(p.digest, p.manifests) for p in report.problems] == [(str(loose), ("pin:keepme",))]
    assert report.pins == 1


def test_pinned_manifest_blob_is_checked_with_its_references(tmp_path: Path) -> None:
    with Store.create(tmp_path / ".cas") as store:
        _path, digest, _m = write_pack(store, tmp_path, "p", {"x.txt": b"x" * 100})
        roots.pin(store, "release", digest)
        (tmp_path / "manifests" / "p.pack").unlink()
        rawstore.delete(store, "blobs", Digest.of(b"x" * 100))
        report = verify(store)
    assert [(p.digest, p.manifests) for p in report.problems] == [
        (str(Digest.of(b"x" * 100)), ("pin:release",))
    ]


@given(st.binary(min_size=32, max_size=32), st.integers(1, 12))
def test_subsets_partition_the_digests(raw: bytes, t: int) -> None:
    digest = Digest(raw)
    assert sum(in_subset(digest, (n, t)) for n in range(1, t + 1)) == 1


def test_subset_slices_cover_everything_once(project: Path) -> None:
    with Store.at(project / ".cas") as store:
        full = verify(store, all_blobs=True)
        slices = [verify(store, all_blobs=True, subset=(n, 3)) for n in (1, 2, 3)]
    assert sum(s.checked for s in slices) == full.checked
    assert all(s.outside_subset == full.checked - s.checked for s in slices)
    r = run_cas("verify", "--subset", "2/3", "--json", cwd=project)
    assert r.code == 0 and json.loads(r.out)["subset"] == "2/3"
    assert run_cas("verify", "--subset", "4/3", cwd=project).code == 2


def test_max_duration_stops_cleanly_and_the_stalest_go_first(project: Path) -> None:
    with Store.at(project / ".cas") as store:
        everything = verify(store, all_blobs=True, record=False)
        stopped = verify(store, all_blobs=True, max_duration_s=0)
        assert stopped.ok and stopped.checked == 0
        assert stopped.not_reached == everything.checked
        # Verify one blob; the next run must leave it for last.
        first = Digest.of(FILES["README.md"])
        verify(store, [str(first)])
        from cas import verify as verify_mod

        order = verify_mod._stalest_first(store, sorted(store.iterate()))
    assert order[-1][0] == first
    r = run_cas("verify", "--all", "--max-duration", "0s", cwd=project)
    assert r.code == 0
    assert "not reached (time limit)" in r.out
    assert "not reached before the time limit" in r.err


# --- many blobs, many threads -----------------------------------------------------------------


def _report_facts(report: object) -> tuple[object, ...]:
    from cas.verify import VerifyReport

    assert isinstance(report, VerifyReport)
    problems = [(p.digest, p.what, p.manifests) for p in report.problems]
    return report.ok, report.checked, report.bytes_checked, problems, report.not_reached


@pytest.mark.parametrize("how", ["flip", "truncate", "delete", "flip header size"])
def test_threads_find_one_damaged_blob_among_many_and_report_as_one_thread(
    tmp_path: Path, how: str
) -> None:
    # Hundreds of small bodies travel in groups whose zstd frames are decoded in one call: a
    # damaged one must fail alone and be named, the others pass, whatever the thread count.
    files = {
        f"src/m{i:03}.py": f"def f{i}() -> int:\n    return {i}\n".encode() * 9 for i in range(300)
    }
    files["data/big.bin"] = BIG
    with Store.create(tmp_path / ".cas", chunk_size=4096) as store:
        write_pack(store, tmp_path, "many", files)
    target = Digest.of(files["src/m150.py"])
    store_path = tmp_path / ".cas"
    if how == "flip":
        mutate_value(store_path, "blobs", target, lambda v: v[:20] + bytes([v[20] ^ 0x40]) + v[21:])
    elif how == "truncate":
        mutate_value(store_path, "blobs", target, lambda v: v[:-3])
    elif how == "flip header size":
        mutate_value(store_path, "blobs", target, lambda v: v[:11] + bytes([v[11] ^ 0x01]) + v[12:])
    else:
        delete_key(store_path, "blobs", target)
    with Store.at(store_path) as store:
        one = verify(store, all_blobs=True, workers=1, record=False)
        many = verify(store, all_blobs=True, workers=4, record=False)
    assert [p.digest for p in one.problems] == [str(target)]
    assert one.checked == len(files) + 1  # every body and the manifest, the damaged one too
    assert _report_facts(many) == _report_facts(one)


# --- fails closed -----------------------------------------------------------------------------


def test_no_store_is_one_line_exit_2(tmp_path: Path) -> None:
    r = run_cas("verify", cwd=tmp_path)
    assert r.code == 2
    assert "no cas store found" in one_line_error(r.err)


def test_nothing_to_verify_is_not_a_pass(tmp_path: Path) -> None:
    Store.create(tmp_path / ".cas").close()
    r = run_cas("verify", cwd=tmp_path)
    assert r.code == 2
    assert "nothing to verify" in one_line_error(r.err)
    assert run_cas("verify", "--all", cwd=tmp_path).code == 0


def test_missing_recorded_root_folder_is_a_problem(project: Path, tmp_path: Path) -> None:
    extra = tmp_path / "archive"
    extra.mkdir()
    with Store.at(project / ".cas") as store:
        roots.add_root_dir(store, extra)
    extra.rmdir()
    r = run_cas("verify", cwd=project)
    assert r.code == 1
    assert "root folder is missing" in r.out


def test_damaged_lmdb_file_is_one_line(project: Path) -> None:
    data = project / ".cas" / "data.mdb"
    with open(data, "r+b") as handle:
        handle.write(os.urandom(16384))
    r = run_cas("verify", cwd=project)
    assert r.code == 2
    assert "damaged store" in one_line_error(r.err)
    assert r.out.startswith("-  damaged store: meta page 0")  # verify lists what it found


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv to drop root's override")
def test_permission_denied_is_one_line(project: Path) -> None:
    store_dir = project / ".cas"
    store_dir.chmod(0)
    try:
        r = run_cas("verify", cwd=project, unprivileged=True)
    finally:
        store_dir.chmod(0o755)
    assert r.code == 2
    line = one_line_error(r.err)
    assert "permission" in line.lower() or "cannot open store" in line


def test_read_only_store_verifies_without_recording(project: Path) -> None:
    with Store.at(project / ".cas", readonly=True) as store:
        report = verify(store)
        assert report.ok and not report.recorded
        assert all(when == -1 for _d, when, _size in store.last_verified(store.iterate()))


def test_unknown_manifest_version_fails_the_cli(project: Path) -> None:
    path = project / "manifests" / "b.pack"
    path.write_bytes(_other_version(path.read_bytes()))
    r = run_cas("verify", "--json", cwd=project)
    assert r.code == 1
    problems = json.loads(r.out)["problems"]
    assert [p["manifests"] for p in problems] == [["b.pack"]]
    assert "format version 3" in problems[0]["what"]


def test_bad_arguments_are_usage_errors(project: Path) -> None:
    assert run_cas("verify", "--max-duration", "soon", cwd=project).code == 2
    assert run_cas("verify", "blake3:00", cwd=project).code == 2
    with Store.at(project / ".cas") as store, pytest.raises(UsageError):
        verify(store, subset=(0, 3))


def test_remote_flags_that_do_not_go_together_are_usage_errors(project: Path) -> None:
    deep = run_cas("verify", "--deep", cwd=project)
    assert deep.code == 2 and "--deep goes with --remote" in deep.err
    mixed = run_cas("verify", "--remote", "origin", "--all", cwd=project)
    assert mixed.code == 2 and "--remote checks a whole remote" in mixed.err
    unknown = run_cas("verify", "--remote", "nowhere", cwd=project)
    assert unknown.code == 1 and "remote 'nowhere' not found" in unknown.err


def test_all_still_finds_an_unreferenced_blob_whose_meta_row_is_gone(project: Path) -> None:
    """`--all` lists blobs through the small meta rows; when the tables disagree it walks the
    blobs themselves, so a blob that lost its meta row is still checked and reported."""
    with Store.at(project / ".cas") as store:
        loose = store.put(b"nobody references me either" * 10)
    delete_key(project / ".cas", "meta", loose)
    with Store.at(project / ".cas") as store:
        assert loose in set(store.iterate())
        report = verify(store, all_blobs=True)
    assert [(p.digest, p.what) for p in report.problems] == [
        (str(loose), "its metadata record is missing")
    ]
