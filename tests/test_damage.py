"""A damaged store is refused, never a crash: every command, every kind of damage.

Damage is done to real stores as a disk or a careless copy would do it: the data file cut short,
bits flipped in its pages (tests/stress/damage_fuzz.py does hundreds of them, in every kind of
page), records of the wrong length written into the store's tables. Every command then runs in
a real `cas` process: it may exit 0 (the damage is somewhere it does not read), 1 (a blob or
record it needs is corrupt) or 2 (the data file is damaged: "damaged store"), with one line on
stderr; it may never die of a signal, print a traceback or an internal error.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cas import Digest, Store, datafile
from cas.errors import StoreDamaged
from cas.records import CHUNKREF, META
from cas.store_tables import KEY_SIZES
from tests import rawstore
from tests.conftest import ROOT, run_cas
from tests.stress import damage_fuzz

COMMANDS = [
    ["verify"],
    ["verify", "--all"],
    ["ls"],
    ["info"],
    ["render", "repo.claude"],
    ["show", "repo.claude"],
    ["gc", "--dry-run"],
    ["gc"],
    ["pack"],
]


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A populated project: packs, a pin, a chunked blob, a few hundred small blobs."""
    root = tmp_path_factory.mktemp("pristine") / "project"
    return root, damage_fuzz.build_project(root)


@pytest.fixture
def project(pristine: tuple[Path, dict[str, str]], tmp_path: Path) -> Path:
    """A private copy of the pristine project (without its seal)."""
    copy = tmp_path / "project"
    shutil.copytree(pristine[0], copy, ignore=shutil.ignore_patterns(datafile.SEAL_NAME))
    return copy


def current_state(data: Path) -> datafile.State:
    fd = os.open(data, os.O_RDONLY)
    try:
        return datafile.inspect(fd)
    finally:
        os.close(fd)


def flip(data: Path, offset: int, mask: int) -> None:
    with open(data, "r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ mask]))


def inline_node_of(data: Path, table: str) -> int:
    """The file offset of the header of an inline value's node in ``table``: found by
    following the pages from the current meta page, the way LMDB does."""
    state = current_state(data)
    raw = data.read_bytes()
    psize = state.psize

    def page(pgno: int) -> int:
        return pgno * psize

    def nodes(pgno: int) -> list[int]:
        lower = struct.unpack_from("<H", raw, page(pgno) + 12)[0]
        count = (lower - 16) // 2
        return [page(pgno) + p for p in struct.unpack_from(f"<{count}H", raw, page(pgno) + 16)]

    def first_leaf(pgno: int) -> int:
        while struct.unpack_from("<H", raw, page(pgno) + 10)[0] == datafile.P_BRANCH:
            lo, hi, top, _k = struct.unpack_from("<HHHH", raw, nodes(pgno)[0])
            pgno = lo | hi << 16 | top << 32
        return pgno

    root = None
    for node in nodes(first_leaf(state.main.root)):
        ksize = struct.unpack_from("<H", raw, node + 6)[0]
        if raw[node + 8 : node + 8 + ksize] == table.encode():
            root = datafile.Db.parse(raw, node + 8 + ksize).root
    assert root is not None, table
    for node in nodes(first_leaf(root)):
        if struct.unpack_from("<H", raw, node + 4)[0] == 0:  # no F_BIGDATA: inline
            return node
    raise AssertionError(f"no inline value in the first leaf of {table}")


# --- the data file ------------------------------------------------------------------------------


def test_a_truncated_data_file_is_a_damaged_store_for_every_command(
    project: Path, pristine: tuple[Path, dict[str, str]]
) -> None:
    data = project / ".cas" / "data.mdb"
    needs = current_state(data).needed_bytes
    cut = needs // 2 + 100
    os.truncate(data, cut)
    expected = f"data.mdb is {cut} bytes, its last committed page needs {needs}"
    big = pristine[1]["big"]
    for cmd in [*COMMANDS, ["get", big], ["stat", big], ["put", "cas.toml"], ["pins"]]:
        r = run_cas(*cmd, cwd=project)
        assert r.code == 2, (cmd, r.code, r.err)  # before: 135, SIGBUS
        line = one_line_error(r.err)
        assert "damaged store" in line and expected in line, (cmd, line)
        assert "restore" in line
    r = run_cas("verify", "--json", cwd=project)
    assert r.code == 2 and '"damaged"' in r.out and expected in r.out


def test_a_flipped_value_size_is_found_before_lmdb_reads_past_the_page(project: Path) -> None:
    """A high bit of an inline value's size, flipped: LMDB would copy two gigabytes from a
    four-kilobyte page, past the end of the map, and the process would die."""
    data = project / ".cas" / "data.mdb"
    node = inline_node_of(data, "blobs")
    flip(data, node + 3, 0x40)  # bit 30 of the value's size
    for cmd in [["verify", "--all"], ["ls"], ["pack"], ["render", "repo.claude"]]:
        r = run_cas(*cmd, cwd=project)
        assert r.code == 2, (cmd, r.code, r.err)
        assert "damaged store" in one_line_error(r.err)
        assert "runs past the page" in r.err
    r = run_cas("verify", cwd=project)
    assert "-  damaged store: page " in r.out and "table blobs" in r.out


def test_a_node_pointed_past_the_end_of_the_file_is_found_before_lmdb_follows_it(
    project: Path,
) -> None:
    """The last page in use, near the end of the file: its first node pointer with its top bit
    flipped points 32 KiB further, past the end of the file. Before the walk existed, `cas
    verify --all` died of SIGBUS here (exit -7)."""
    data = project / ".cas" / "data.mdb"
    state = current_state(data)
    fd = os.open(data, os.O_RDONLY)
    try:
        live = datafile.walk(fd, state).live
    finally:
        os.close(fd)
    raw = data.read_bytes()
    pgno = max(
        p
        for p in range(2, len(live))
        if live[p]
        and struct.unpack_from("<H", raw, p * state.psize + 10)[0]
        in (datafile.P_BRANCH, datafile.P_LEAF)
    )
    assert (pgno + 8) * state.psize >= state.size  # within 32 KiB of the end
    flip(data, pgno * state.psize + datafile.HEADER + 1, 0x80)
    for cmd in (["verify", "--all"], ["ls"], ["info"], ["gc", "--dry-run"], ["pack"]):
        r = run_cas(*cmd, cwd=project)
        assert r.code == 2, (cmd, r.code, r.err)
        line = one_line_error(r.err)
        assert "damaged store" in line and f"page {pgno} " in line, line


def test_a_branch_pointed_past_a_level_is_found_before_lmdb_steps_onto_it(
    project: Path,
) -> None:
    """A child pointer of a branch page whose children are branches, redirected to one of that
    child's own leaves (one flipped bit did this in the damage fuzz): every page is in the file
    and used at most once, but a leaf now sits one level above the tree's other leaves. LMDB's
    cursor steps between siblings trusting the levels, and `cas pack` died of SIGABRT
    (`Assertion 'IS_LEAF(mp)' failed in mdb_cursor_set()`)."""
    data = project / ".cas" / "data.mdb"
    state = current_state(data)
    psize = state.psize
    fd = os.open(data, os.O_RDONLY)
    try:
        live = datafile.walk(fd, state, KEY_SIZES).live
    finally:
        os.close(fd)
    raw = data.read_bytes()

    def is_page(pgno: int, flags: int) -> bool:
        if not 2 <= pgno < len(live):
            return False
        stored, _pad, found = struct.unpack_from("<QHH", raw, pgno * psize)
        return (stored, found) == (pgno, flags)

    def children(pgno: int) -> list[tuple[int, int]]:
        """(file offset of the node, page it points to) of each node of a branch page."""
        base = pgno * psize
        lower = struct.unpack_from("<H", raw, base + 12)[0]
        count = (lower - datafile.HEADER) // 2
        found = []
        for off in struct.unpack_from(f"<{count}H", raw, base + datafile.HEADER):
            lo, hi, top, _ksize = struct.unpack_from("<HHHH", raw, base + off)
            found.append((base + off, lo | hi << 16 | top << 32))
        return found

    upper = [
        p
        for p in range(2, len(live))
        if live[p]
        and is_page(p, datafile.P_BRANCH)
        and all(is_page(child, datafile.P_BRANCH) for _node, child in children(p))
    ]
    assert upper  # a table three levels deep
    node, child = children(upper[0])[-1]
    _node, leaf = children(child)[0]
    assert is_page(leaf, datafile.P_LEAF)
    with open(data, "r+b") as handle:
        handle.seek(node)
        handle.write(struct.pack("<HHH", leaf & 0xFFFF, leaf >> 16 & 0xFFFF, leaf >> 32))
    for cmd in (["pack"], ["verify", "--all"], ["ls"], ["gc", "--dry-run"]):
        r = run_cas(*cmd, cwd=project)
        assert r.code == 2, (cmd, r.code, r.err)
        line = one_line_error(r.err)
        assert "damaged store" in line and f"page {leaf} " in line, line
        assert "is a leaf page at level" in line, line


def test_the_native_walk_finds_what_the_python_walk_finds(
    pristine: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Bits flipped in every kind of page, and cuts: the walk with its tables' trees walked
    natively (`cas._pages`) gives the problems, the pages in use and the free lists the walk
    in Python gives, on the sound file and on each damaged one."""
    # the project's install compiles cas/_pages.c (a C compiler is part of this machine)
    assert datafile.native_pages() is not None
    source = pristine[0] / ".cas" / "data.mdb"
    damages = [None, *damage_fuzz.plan(source, 160, seed=7)]
    data = tmp_path / "data.mdb"
    compared = damaged = 0
    for damage in damages:
        shutil.copyfile(source, data)
        if damage is not None:
            damage.apply(data)
        fd = os.open(data, os.O_RDONLY)
        try:
            try:
                state = datafile.inspect(fd)
            except datafile.Damage:
                continue  # refused before any walk
            walks = []
            for native in (True, False):
                saved = list(datafile._NATIVE)
                datafile._NATIVE[:] = [] if native else [None]
                try:
                    walks.append(datafile.walk(fd, state, KEY_SIZES))
                finally:
                    datafile._NATIVE[:] = saved
        finally:
            os.close(fd)
        fast, slow = walks
        assert (fast.problems, fast.freed, fast.live) == (slow.problems, slow.freed, slow.live), (
            damage
        )
        compared += 1
        damaged += bool(slow.problems)
        if damage is None:
            assert slow.problems == [] and slow.live_pages > 0
    assert compared >= 100 and damaged >= 20, (compared, damaged)  # the damage reached the walk


def test_a_file_missing_only_free_pages_opens(project: Path) -> None:
    """LMDB never writes a page it allocated and freed in the same commit, so the pages a meta
    page counts may end before the file does only where they are free: the walk tells."""
    data = project / ".cas" / "data.mdb"
    state = current_state(data)
    fd = os.open(data, os.O_RDONLY)
    try:
        # The same file, as if the meta page counted three more (free) pages than it holds.
        longer = state._replace(next_pgno=state.next_pgno + 3)
        assert datafile.short_by(longer) is not None
        assert datafile.walk(fd, longer).problems == []
        # As if the file ended half-way: pages in use are missing, and the walk says so.
        cut = state.identity._replace(size=state.size // 2)
        problems = datafile.walk(fd, state._replace(identity=cut)).problems
    finally:
        os.close(fd)
    assert problems and "past the end of data.mdb" in problems[0]


# Walks the data file named by argv[1] in a fresh interpreter, after limiting its address
# space to what it uses plus argv[2] MiB (argv[3], if given: cut the file to that many bytes
# once its state is read). Prints the problems found and the pages in use.
_WALK_IN_A_CHILD = r"""
import os, resource, sys
from cas import datafile
fd = os.open(sys.argv[1], os.O_RDWR)
state = datafile.inspect(fd)
if len(sys.argv) > 3:
    os.ftruncate(fd, int(sys.argv[3]))
with open("/proc/self/status") as status:
    vm = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) << 10
resource.setrlimit(resource.RLIMIT_AS, (vm + (int(sys.argv[2]) << 20), resource.RLIM_INFINITY))
walk = datafile.walk(fd, state)
print(walk.live_pages)
print("\n".join(walk.problems))
"""


def _walk_in_a_child(data: Path, headroom_mib: int, cut_to: int | None = None) -> list[str]:
    argv = [sys.executable, "-P", "-c", _WALK_IN_A_CHILD, str(data), str(headroom_mib)]
    done = subprocess.run(
        [*argv, *([str(cut_to)] if cut_to is not None else [])],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_the_walk_leaves_nothing_of_the_file_in_memory(tmp_path: Path) -> None:
    """The walk reads pages with pread and maps nothing: it runs in a process whose address
    space could not take a map of the file. (Through a map, the pages faulted in around each
    overflow value's first page stayed resident: 0.4 to 1 GiB in a `cas get` or `cas verify`
    opening a just-written store of a 1 GiB blob.)"""
    with Store.create(tmp_path / ".cas") as s:
        s.put(random.Random(7).randbytes(48 << 20))  # 48 chunks of 1 MiB: overflow values
    data = tmp_path / ".cas" / "data.mdb"
    assert data.stat().st_size > 48 << 20
    pages, *problems = _walk_in_a_child(data, headroom_mib=16)
    assert problems == [] and int(pages) * current_state(data).psize > 48 << 20


def test_a_file_cut_short_during_the_walk_is_a_problem_not_a_crash(project: Path) -> None:
    """The file loses its second half after its meta pages were read: the pages past the new
    end are a problem the walk names. (A walk through a map of the file raised instead, or died
    of SIGBUS when the cut came after the map was made.)"""
    data = project / ".cas" / "data.mdb"
    state = current_state(data)
    out = _walk_in_a_child(data, headroom_mib=256, cut_to=state.size // 2)
    assert any("data.mdb ends before byte" in line for line in out[1:]), out


def test_a_seal_spares_the_walk_but_never_hides_later_damage(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_dir = project / ".cas"
    walks: list[int] = []
    real_walk = datafile.walk

    def counting_walk(*args: object, **kwargs: object) -> datafile.Walk:
        walks.append(1)
        return real_walk(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(datafile, "walk", counting_walk)
    time.sleep(0.15)  # older than the seal's settling time: a walk that passes seals it
    with Store.at(store_dir, readonly=True):
        pass
    assert len(walks) == 1 and (store_dir / datafile.SEAL_NAME).is_file()
    with Store.at(store_dir, readonly=True) as store:
        assert len(walks) == 1  # the seal matched: no second walk
        store.check_file()  # verify's own walk does not trust a seal
        assert len(walks) == 2
    node = inline_node_of(store_dir / "data.mdb", "meta")
    flip(store_dir / "data.mdb", node + 3, 0x40)  # any write changes the file's ctime
    with pytest.raises(StoreDamaged):
        Store.at(store_dir, readonly=True)


def test_a_writer_leaves_the_seal_only_when_its_own_commits_are_all_that_changed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that found the file sound and changed it only by its own commits seals the file
    as its last commit left it (so the command after a pack does not walk again); anything
    else writing to the file between its commits, or after the last, leaves no seal, and
    damage done after the last commit is still refused by the next opener."""
    store_dir = project / ".cas"
    data = store_dir / "data.mdb"
    walks: list[int] = []
    real_walk = datafile.walk

    def counting_walk(*args: object, **kwargs: object) -> datafile.Walk:
        walks.append(1)
        return real_walk(*args, **kwargs)  # type: ignore[arg-type]

    def opened_walks() -> int:
        before = len(walks)
        with Store.at(store_dir, readonly=True):
            pass
        return len(walks) - before

    monkeypatch.setattr(datafile, "walk", counting_walk)
    with Store.at(store_dir) as store:  # the copy has no seal: walked
        assert len(walks) == 1
        store.put(b"one")
        store.put(b"two")
    assert opened_walks() == 0  # sealed as its last commit left it
    with Store.at(store_dir, readonly=True) as store:
        assert store.get(Digest.of(b"two")) == b"two"
    # something else writes to the file between two commits: no seal
    with Store.at(store_dir) as store:
        store.put(b"three")
        os.utime(data)  # any write behind LMDB's back moves the ctime, as this does
        store.put(b"four")
    assert opened_walks() == 1
    # another process commits between two commits of this one: this one cannot vouch for it
    # (the other may seal what it left, but this one's last commit came after)
    (project / "six.txt").write_bytes(b"six")
    with Store.at(store_dir) as store:
        store.put(b"five")
        assert run_cas("put", "six.txt", cwd=project).code == 0
        store.put(b"seven")
    assert opened_walks() == 1
    # damage after a writer's last commit, before it closes: refused by the next opener
    with Store.at(store_dir) as store:
        store.put(b"eight")
        node = inline_node_of(data, "meta")
        flip(data, node + 3, 0x40)
    with pytest.raises(StoreDamaged):
        Store.at(store_dir, readonly=True)


@pytest.mark.slow
def test_every_command_survives_hundreds_of_damages(
    pristine: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Bits flipped in meta, branch, leaf and overflow pages (headers, node pointers, node
    headers, keys, values) and truncations at page edges and anywhere: no command may die of a
    signal, print a traceback or an internal error, or exit with anything but 0, 1 or 2."""
    seed = int(os.environ.get("CAS_DAMAGE_SEED", random.randrange(1 << 30)))
    root, digests = pristine
    damages = damage_fuzz.plan(root / ".cas" / "data.mdb", 120, seed)
    outcomes = damage_fuzz.run(root, damages, damage_fuzz.commands(digests), tmp_path / "work")
    failures = [
        (damages[o.damage], o.command, why, o.err[-300:])
        for o in outcomes
        if (why := damage_fuzz.bad(o)) is not None
    ]
    assert not failures, (seed, failures[:5])
    assert len({(o.damage, o.command) for o in outcomes}) == len(damages) * len(
        damage_fuzz.commands(digests)
    )
    wheres = {d.where for d in damages}
    for kind in ("meta fields", "branch node header", "leaf node header", "overflow page header"):
        assert kind in wheres, (seed, wheres)
    refused = [o for o in outcomes if o.code == 2 and "damaged store" in o.err]
    assert refused, seed  # the defence was exercised, not just never reached
    # A cut is refused as a damaged store, unless it removed only free pages (LMDB may leave
    # those unwritten), after which every command runs as on the whole file.
    truncated = {i for i, d in enumerate(damages) if d.kind == "truncate"}
    by_cut: dict[int, set[int]] = {}
    for o in outcomes:
        if o.damage in truncated:
            by_cut.setdefault(o.damage, set()).add(o.code)
    assert all(codes in ({2}, {0}) for codes in by_cut.values()), (seed, by_cut)
    assert any(codes == {2} for codes in by_cut.values()), seed


# --- records of the wrong length in the store's tables --------------------------------------


def put_raw(store_dir: Path, table: str, key: bytes, value: bytes) -> None:
    with Store.at(store_dir) as store:
        rawstore.put(store, table, key, value)


def test_a_damaged_metadata_row_is_a_corrupt_blob_kept_by_gc_and_mended_by_a_put(
    project: Path,
) -> None:
    target = project / "notes5.md"
    digest = Digest.of(target.read_bytes())
    put_raw(project / ".cas", "meta", digest, b"\x00" * 5)
    for cmd in (["stat", str(digest)], ["ls"]):
        r = run_cas(*cmd, cwd=project)
        assert r.code == 1, (cmd, r.err)
        line = one_line_error(r.err)
        assert str(digest) in line and "metadata record is damaged" in line
    r = run_cas("verify", "--all", cwd=project)
    assert r.code == 1 and f"{digest}  its metadata record is damaged" in r.out
    r = run_cas("gc", "--grace", "0", cwd=project)
    assert r.code == 0, r.err
    assert run_cas("has", str(digest), cwd=project).code == 0  # kept: no time to judge it by
    # The same content put again rebuilds the row from the blob.
    assert run_cas("put", str(target), cwd=project).code == 0
    r = run_cas("stat", str(digest), "--json", cwd=project)
    assert r.code == 0 and f'"raw_size": {target.stat().st_size}' in r.out
    assert run_cas("verify", "--all", cwd=project).code == 0


def test_a_damaged_chunk_reference_row_is_reported_and_never_swept(
    project: Path, pristine: tuple[Path, dict[str, str]]
) -> None:
    from cas import frame

    big = Digest.parse(pristine[1]["big"])
    with Store.at(project / ".cas") as store:
        value = store.raw_value(big)
        assert value is not None
        chunk = frame.decode_index(value)[2][0]
    put_raw(project / ".cas", "chunkrefs", chunk, b"\x07")
    r = run_cas("verify", "--all", cwd=project)
    assert r.code == 1 and "chunk reference record is damaged" in r.out
    run_cas("unpin", "keep", cwd=project)
    assert run_cas("gc", "--grace", "0", cwd=project).code == 0
    with Store.at(project / ".cas") as store:
        assert store.has_chunks([chunk]) == {chunk}  # an unknown count is never taken for zero
    # A put that needs that chunk's count fails cleanly instead of guessing it.
    r = run_cas("put", "blob.bin", cwd=project)
    assert r.code == 1 and "chunk reference record is damaged" in one_line_error(r.err)


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        (b"chunk_size", b"lots", "info table holds"),
        (b"level", b"99", "impossible chunk size or level"),
    ],
)
def test_a_damaged_info_record_is_a_damaged_store(
    project: Path, key: bytes, value: bytes, what: str
) -> None:
    put_raw(project / ".cas", "info", key, value)
    for cmd in (["info"], ["ls"], ["verify"], ["pack"]):
        r = run_cas(*cmd, cwd=project)
        assert r.code == 2, (cmd, r.err)
        line = one_line_error(r.err)
        assert "damaged store" in line and what in line


def test_damaged_totals_are_a_damaged_store_and_a_verify_problem(project: Path) -> None:
    put_raw(project / ".cas", "info", b"totals", b"\xc1garbage")
    r = run_cas("info", cwd=project)
    assert r.code == 2 and "running totals" in one_line_error(r.err)
    r = run_cas("verify", cwd=project)
    assert r.code == 1 and "running totals in its info table are damaged" in r.out
    r = run_cas("put", "cas.toml", cwd=project)
    assert r.code == 2 and "running totals" in one_line_error(r.err)


def test_records_shorter_than_their_layout_never_reach_struct(project: Path) -> None:
    """Every table whose rows have a fixed layout, with a row of each wrong length: the
    commands that read them say what is damaged (exit 1), never 'internal error'."""
    digest = Digest.of((project / "notes7.md").read_bytes())
    for size in (0, 1, META.size - 1, META.size + 1):
        put_raw(project / ".cas", "meta", digest, b"\x01" * size)
        for cmd in (["stat", str(digest)], ["ls"], ["verify", "--all"], ["gc", "--dry-run"]):
            r = run_cas(*cmd, cwd=project)
            assert r.code in (0, 1), (size, cmd, r.err)
            assert "internal error" not in r.err and "Traceback" not in r.err
    assert CHUNKREF.size == 12


def test_damaged_cache_values_are_misses(project: Path) -> None:
    manifests = {p.name: p.read_bytes() for p in (project / "manifests").iterdir()}
    with Store.at(project / ".cas") as store:
        rows = store.kv.items("cache")
        assert rows
        for i, (key, value) in enumerate(rows):
            spoiled = value[:-1] if i % 2 else value[:-1] + bytes([value[-1] ^ 0x55])
            rawstore.put(store, "cache", key, spoiled or b"x")
    r = run_cas("pack", "--json", cwd=project)
    assert r.code == 0, r.err
    assert '"stat_hits": 0' in r.out  # every stat entry was damaged: a miss, read again
    assert {p.name: p.read_bytes() for p in (project / "manifests").iterdir()} == manifests
