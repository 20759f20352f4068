"""The search index is a cache that heals (issue 21), through the real `cas`: an index damaged
in any way is set aside with one note and rebuilt, and every command answers exactly as with a
sound index; no link under .cas is ever followed; what a rebuild cannot mend is one line with
exit 2; writers and readers at once never take each other's work for damage."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cas.digest import Digest
from cas.store import Store
from cas.textindex import INDEX_DIR, TextIndex
from tests.conftest import cas_env, run_cas

FILES = {
    "src/cart.py": "def compute_cart_total(cart):\n    return sum(cart.prices)\n",
    "src/discount.py": "def apply_discount(total, percent):\n    return total * percent\n",
    "src/router.py": "class NewRouter:\n    def add_route(self, path):\n        return path\n",
    "docs/guide.md": "# Guide\n\nCarts hold prices; a router adds a route.\n",
}
Answers = dict[tuple[str, ...], str]
# Every command that reads the index, as an agent would run it.
COMMANDS: list[tuple[str, ...]] = [
    ("search", "cart total", "--json"),
    ("load", "How does compute_cart_total work?", "--dry-run", "--json"),
    ("mem", "search", "postgres", "--json"),
    ("search", "router postgres", "--memory-scope", "global", "--json"),
]


def answers(root: Path) -> Answers:
    """What each command prints (its JSON), checked to have gone without a word on stderr."""
    out = {}
    for cmd in COMMANDS:
        r = run_cas(*cmd, cwd=root)
        assert r.code == 0, (cmd, r.err)
        assert r.err == "", (cmd, r.err)
        out[cmd] = r.out
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Answers]:
    """A packed project with a memory, made once, and what every command answers in it with
    a sound index."""
    root = tmp_path_factory.mktemp("made") / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    assert run_cas("pack", cwd=root).code == 0
    r = run_cas("mem", "add", "--date", "2026-11-20", "the database is postgres 16", cwd=root)
    assert r.code == 0, r.err
    return root, answers(root)


@pytest.fixture
def proj(made: tuple[Path, Answers], tmp_path: Path) -> Path:
    """A copy of the made project, its store and sound index with it."""
    root = tmp_path / "proj"
    shutil.copytree(made[0], root, symlinks=True)
    return root


@pytest.fixture
def sound(made: tuple[Path, Answers]) -> Answers:
    return made[1]


def folder_of(root: Path) -> Path:
    return root / ".cas" / INDEX_DIR


def segments(root: Path) -> list[Path]:
    return sorted(folder_of(root).glob("*.cix"))


def notes(err: str, *needles: str) -> list[str]:
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("cas: note: search index: ") for line in lines), err
    for needle in needles:
        assert all(needle in line for line in lines), (needle, err)
    return lines


def no_failure(err: str) -> None:
    for word in ("Traceback", "internal error", "busy"):
        assert word not in err, err


def garbage_over_a_third(path: Path) -> None:
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = random.Random(21).randbytes(third)
    path.write_bytes(bytes(data))


def zeros_in_the_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = bytes(third)
    path.write_bytes(bytes(data))


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def header_flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[20] ^= 0x10  # the count of terms: sizes no longer match the length
    path.write_bytes(bytes(data))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbage over a third": garbage_over_a_third,
    "zeros in the middle": zeros_in_the_middle,
    "truncated": truncated,
    "a flipped header": header_flipped,
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_every_command_heals_a_damaged_index_and_answers_as_a_sound_one(
    proj: Path, sound: Answers, kind: str
) -> None:
    """Damaged, the index is set aside and rebuilt by whichever command meets it first; that
    command answers exactly what it answered with the sound index, with one note per segment
    set aside (none with -q); the next finds it sound again. Never 'internal error', never a
    stale answer."""
    damage = DAMAGE[kind]
    for cmd in COMMANDS:
        for seg in segments(proj):
            damage(seg)
        r = run_cas(*cmd, cwd=proj)
        assert r.code == 0, r.err
        no_failure(r.err)
        notes(r.err, "set aside", "rebuilt from the store")
        assert r.out == sound[cmd], cmd
    for seg in segments(proj):
        damage(seg)
    quiet = run_cas("-q", *COMMANDS[0], cwd=proj)
    assert quiet.code == 0 and quiet.err == "" and quiet.out == sound[COMMANDS[0]]
    again = run_cas(*COMMANDS[1], cwd=proj)
    assert again.err == "" and again.out == sound[COMMANDS[1]]  # healed: no note any more


def test_a_lost_segment_is_indexed_again_without_a_word(proj: Path, sound: Answers) -> None:
    """A segment removed (by hand, by a crash before its rename): its bodies are simply not
    indexed, so the next command indexes them; nothing was wrong to note."""
    for seg in segments(proj):
        seg.unlink()
    for cmd in COMMANDS:
        r = run_cas(*cmd, cwd=proj)
        assert r.code == 0 and r.err == "", r.err
        assert r.out == sound[cmd]


def test_a_damaged_index_is_healed_by_cas_pack_too(proj: Path, sound: Answers) -> None:
    for seg in segments(proj):
        garbage_over_a_third(seg)
    r = run_cas("pack", cwd=proj)
    assert r.code == 0, r.err
    no_failure(r.err)
    notes(r.err, "set aside")
    healed = run_cas(*COMMANDS[0], cwd=proj)
    assert healed.err == "" and healed.out == sound[COMMANDS[0]]
    (proj / "src" / "tax.py").write_text("def add_sales_tax(total):\n    return total\n")
    for seg in segments(proj):
        zeros_in_the_middle(seg)
    r = run_cas("pack", cwd=proj)
    assert r.code == 0, r.err
    notes(r.err, "set aside")
    found = run_cas("search", "add_sales_tax", "--json", cwd=proj)
    assert found.code == 0 and found.err == "", found.err
    assert json.loads(found.out)["hits"][0]["path"] == "src/tax.py"


def test_a_symlinked_segment_is_removed_never_followed(
    proj: Path, tmp_path: Path, sound: Answers
) -> None:
    """A link in place of a segment (or of the folder): what it names is never opened,
    written or grown; the link goes, a real index is made, and the search answers as before."""
    outside = tmp_path / "outside.cix"
    outside.write_bytes(b"another program's file\n" * 100)
    before = outside.read_bytes()
    first = segments(proj)[0]
    first.unlink()
    first.symlink_to(outside)
    r = run_cas(*COMMANDS[0], cwd=proj)
    assert r.code == 0, r.err
    notes(r.err, "a symlink")
    assert r.out == sound[COMMANDS[0]]
    assert outside.read_bytes() == before
    assert not any(p.is_symlink() for p in folder_of(proj).iterdir())
    # the folder itself a link to a folder elsewhere: the link goes, that folder stays as it was
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "theirs.txt").write_text("keep me\n")
    shutil.rmtree(folder_of(proj))
    folder_of(proj).symlink_to(elsewhere)
    r = run_cas(*COMMANDS[0], cwd=proj)
    assert r.code == 0, r.err
    notes(r.err, "a symlink")
    assert r.out == sound[COMMANDS[0]]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["theirs.txt"]
    assert folder_of(proj).is_dir() and not folder_of(proj).is_symlink()


def test_what_is_not_a_segment_is_set_aside(proj: Path, sound: Answers) -> None:
    (folder_of(proj) / "stray.cix").mkdir()
    (folder_of(proj) / "stray.cix" / "notes.txt").write_text("someone's notes\n")
    r = run_cas(*COMMANDS[0], cwd=proj)
    assert r.code == 0, r.err
    notes(r.err, "stray.cix")
    assert r.out == sound[COMMANDS[0]]
    shutil.rmtree(folder_of(proj))
    folder_of(proj).write_text("a file where the folder goes\n")
    r = run_cas(*COMMANDS[0], cwd=proj)
    assert r.code == 0, r.err
    notes(r.err, "not a folder")
    assert r.out == sound[COMMANDS[0]]


def test_a_read_only_index_is_searched_and_writing_it_is_one_line(
    proj: Path, sound: Answers
) -> None:
    """Read-only (for root too: the command runs without the right to override file
    permissions): what it holds is searched; what must be indexed first is one line that says
    to make it writable, exit 2, never 'busy'; `cas pack` stands, with a note."""
    os.chmod(folder_of(proj), 0o555)
    try:
        r = run_cas(*COMMANDS[0], cwd=proj, unprivileged=True)
        assert r.code == 0, r.err
        assert r.out == sound[COMMANDS[0]] and r.err == ""
        (proj / "src" / "tax.py").write_text("def add_sales_tax(total):\n    return total\n")
        packed = run_cas("pack", cwd=proj, unprivileged=True)
        assert packed.code == 0, packed.err
        assert "note: search index not updated" in packed.err and "cannot be written" in packed.err
        r = run_cas("search", "add_sales_tax", cwd=proj, unprivileged=True)
        assert r.code == 2
        line = r.err.strip()
        assert "\n" not in line and "cannot use the search index" in line, r.err
        assert "cannot be written" in line and "writable" in line
        no_failure(r.err)
    finally:
        os.chmod(folder_of(proj), 0o755)
    r = run_cas("search", "add_sales_tax", "--json", cwd=proj)
    assert r.code == 0 and r.err == "", r.err
    assert json.loads(r.out)["hits"][0]["path"] == "src/tax.py"


def test_two_commands_meeting_one_damaged_index_both_answer(proj: Path, sound: Answers) -> None:
    """Two commands find the same damage at once: both answer as a sound index would, and the
    segment is set aside once (the second finds it gone, which is no news)."""
    for seg in segments(proj):
        garbage_over_a_third(seg)
    runs = [
        subprocess.Popen(
            [sys.executable, "-P", "-m", "cas", *COMMANDS[0]],
            cwd=proj,
            env=cas_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    results = [(p.wait(120), *p.communicate()) for p in runs]
    seen: list[str] = []
    for code, out, err in results:
        assert code == 0, err
        assert out.decode() == sound[COMMANDS[0]]
        seen += err.decode().strip().splitlines()
    assert 1 <= len(seen) <= 2 * len(segments(proj)) + 2, seen
    assert all("set aside" in line for line in seen), seen


def _write_many(where: str, count: int) -> None:
    """Index ``count`` bodies, one segment each, as many packs one after the other would."""
    index = TextIndex.open(where)
    assert index is not None
    with index:
        for n in range(count):
            body = f"def shared_name_{n}(x):\n    return x + {n}\n".encode()
            index.add([Digest.of(body)], lambda d, body=body: body)


def test_a_writer_at_work_is_never_taken_for_damage(tmp_path: Path) -> None:
    """While one process writes segment after segment (and merges them), another opens and
    reads the index again and again: nothing is ever set aside, and what it reads is whole."""
    with Store.create(tmp_path / ".cas") as store:
        where = str(store.path)
    ctx = multiprocessing.get_context("spawn")
    writer = ctx.Process(target=_write_many, args=(where, 60))
    writer.start()
    seen: list[str] = []
    reads = 0
    while writer.is_alive() or reads < 20:
        opened = TextIndex.open(where, note=seen.append)
        assert opened is not None
        with opened:
            found = opened.windows(("shared",))
            assert len({d for d, _, _ in found}) == len(found) <= opened.count()
        reads += 1
    writer.join(120)
    assert writer.exitcode == 0
    assert seen == []
    final = TextIndex.open(where, note=seen.append)
    assert final is not None
    with final:
        assert final.count() == 60 and len(final.windows(("shared",))) == 60
    assert seen == []


def test_verify_checks_the_index_in_full_and_sets_a_damaged_one_aside(proj: Path) -> None:
    r = run_cas("verify", "--json", cwd=proj)
    assert r.code == 0, r.err
    assert json.loads(r.out)["search_index"] == "sound"
    for seg in segments(proj):
        data = bytearray(seg.read_bytes())
        data[-3] ^= 0x40  # a posting: no lookup of the commands above reads it
        seg.write_bytes(bytes(data))
    r = run_cas("verify", cwd=proj)
    assert r.code == 0, r.err  # a cache: the store is whole
    assert "set aside" in r.err and "the next search rebuilds it" in r.err
    assert segments(proj) == []
    shutil.rmtree(folder_of(proj))
    r = run_cas("verify", "--json", cwd=proj)
    assert json.loads(r.out)["search_index"] == "absent"
