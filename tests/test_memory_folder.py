"""memory.folder: a memory exported as Markdown, edited, imported and watched (real watchdog)."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import string
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cas import Store
from cas.errors import NotFound, UsageError
from cas.textindex import TextIndex
from memory.folder import MARKER, MAX_FILE_BYTES, Watch, export, import_folder
from memory.ops import curate, put_fact, remember
from memory.search import search
from memory.state import JOURNAL, Change, changes, commit, head, read_file, rollback
from tests.secret_corpus import Values

DAY = "2026-11-29"
_scopes = itertools.count()


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` but hidden ones (the marker, the store): name -> bytes."""
    out = {}
    for p in sorted(folder.rglob("*")):
        name = p.relative_to(folder).as_posix()
        if p.is_file() and not any(part.startswith(".") for part in name.split("/")):
            out[name] = p.read_bytes()
    return out


def files(store: Store, scope: str) -> dict[str, bytes]:
    """The files of the newest state of ``scope`` but the journal."""
    state = head(store, scope)
    return {p: store.get(d) for p, d in state.files.items() if p != JOURNAL}


@pytest.fixture
def memory(store: Store) -> Store:
    remember(store, "global", "decided to keep the pack format at 2", date="2026-11-20")
    remember(store, "global", "the pull profile:\nLMDB puts 0.5 s", date="2026-11-20")
    remember(store, "global", "a quiet day", date="2026-11-21")
    put_fact(store, "global", "db", "postgres 14", date="2026-11-20")
    put_fact(store, "global", "db", "postgres 16", date="2026-11-21")
    put_fact(store, "global", "os", "linux", date="2026-11-21")
    put_fact(store, "global", "os", None, date="2026-11-22")
    curate(store, "global", "Packs are judged by what agents answer", date="2026-11-22")
    return store


def test_export_writes_the_designs_folder_and_leaves_the_journal_in_the_store(
    memory: Store, tmp_path: Path
) -> None:
    done = export(memory, "global", tmp_path / "out")
    assert sorted(tree(tmp_path / "out")) == [
        "DailyLogs/2026-11-20.md", "DailyLogs/2026-11-21.md", "MEMORY.md", "facts/db.md",
        "facts/os.md",
    ]  # fmt: skip
    state = head(memory, "global")
    assert done.state == state.digest and done.files == 5 and len(done.written) == 5
    assert tree(tmp_path / "out")["DailyLogs/2026-11-20.md"] == read_file(
        memory, state, "logs/2026-11-20.md"
    )
    # again: every file already holds its bytes, nothing is written
    again = export(memory, "global", tmp_path / "out")
    assert again.written == () and again.removed == ()


def test_an_unchanged_export_imports_as_no_new_state(memory: Store, tmp_path: Path) -> None:
    export(memory, "global", tmp_path)
    before = head(memory, "global").digest
    done = import_folder(memory, tmp_path, date=DAY)
    assert done.changes == () and done.written == () and done.state == before
    assert head(memory, "global").digest == before


def test_an_edit_a_new_file_and_a_removal_are_one_state_journalled_per_file(
    memory: Store, tmp_path: Path
) -> None:
    export(memory, "global", tmp_path)
    before = files(memory, "global")
    log = tmp_path / "DailyLogs" / "2026-11-21.md"
    log.write_bytes(log.read_bytes() + b"- the kiwi deploy broke\n")
    (tmp_path / "facts" / "os.md").unlink()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "plan.md").write_bytes(b"# Plan\n\nship it\n")
    done = import_folder(memory, tmp_path, date=DAY)
    state = head(memory, "global")
    assert done.state == state.digest and state.parent is not None
    assert changes(memory, state) == [
        f"{DAY} import: remove facts/os.md",
        f"{DAY} import: edit logs/2026-11-21.md",
        f"{DAY} import: add notes/plan.md",
    ]  # by path
    after = files(memory, "global")
    assert set(before) ^ set(after) == {"facts/os.md", "notes/plan.md"}
    assert after["logs/2026-11-21.md"] == log.read_bytes()
    assert [p for p in before if p in after and before[p] != after[p]] == ["logs/2026-11-21.md"]
    found = search(memory, TextIndex.open(memory.path), "global", "kiwi", mode="lexical")
    assert [(h.path, h.first) for h in found] == [("logs/2026-11-21.md", 4)]


words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "pack", "store", "42"]),
                 min_size=1, max_size=6).map(" ".join)  # fmt: skip
dates = st.sampled_from(["2026-11-01", "2026-11-02", "2026-12-31"])
actions = st.one_of(
    st.tuples(st.just("remember"), dates, words),
    st.tuples(st.just("fact"), st.sampled_from(["db", "os", "ci.runner"]), words),
    st.tuples(st.just("unset"), st.sampled_from(["db", "os"]), st.just("")),
    st.tuples(st.just("curate"), dates, words),
    st.tuples(st.just("other"), st.sampled_from(["sessions/1.md", "a/b/c.txt"]), words),
)


def build(store: Store, scope: str, steps: list[tuple[str, str, str]]) -> None:
    for kind, arg, text in steps:
        if kind == "remember":
            remember(store, scope, text, date=arg)
        elif kind == "fact":
            put_fact(store, scope, arg, text, date="2026-11-03")
        elif kind == "unset":
            with contextlib.suppress(NotFound):  # never set: nothing to delete
                put_fact(store, scope, arg, None, date="2026-11-03")
        elif kind == "curate":
            curate(store, scope, text, date=arg)
        else:
            body = f"# {arg}\n\n{text}\n".encode()
            commit(store, scope, lambda _s, a=arg, b=body: Change({a: b}, (f"write {a}",)),
                   date="2026-11-03")  # fmt: skip


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(actions, min_size=1, max_size=10), st.data())
def test_any_memory_round_trips_byte_exactly_and_one_edit_changes_one_file(
    store: Store, steps: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    n = next(_scopes)
    scope, copy = f"user:a{n}", f"user:b{n}"
    build(store, scope, steps)
    with tempfile.TemporaryDirectory() as tmp:
        one, two = Path(tmp) / "one", Path(tmp) / "two"
        export(store, scope, one)
        # imported into another scope: the same files, byte for byte
        done = import_folder(store, one, date=DAY, scope=copy)
        assert files(store, copy) == files(store, scope)
        assert done.written == () and done.removed == ()
        export(store, copy, two)
        assert tree(two) == tree(one)
        # imported again: nothing changes
        kept = head(store, scope).digest
        assert import_folder(store, one, date=DAY).state == kept
        # one file edited: exactly that file changes, and the folder holds the new state
        names = sorted(tree(one))
        if not names:  # a memory with no file (only a fact deleted that was never set)
            return
        name = data.draw(st.sampled_from(names))
        (one / name).write_bytes((one / name).read_bytes() + b"- an edit with epsilon\n")
        before = files(store, scope)
        import_folder(store, one, date=DAY)
        after = files(store, scope)
        assert set(after) == set(before)
        assert [p for p in after if after[p] != before[p]] == [
            "logs/" + name[len("DailyLogs/") :] if name.startswith("DailyLogs/") else name
        ]
        export(store, scope, two, force=True)
        assert tree(two) == tree(one)


def test_a_secret_in_an_edited_file_is_cut_out_and_the_folder_written_clean(
    memory: Store, tmp_path: Path
) -> None:
    token = "gh" + "p_" + Values(random.Random(7)).pick(string.ascii_letters + string.digits, 36)
    export(memory, "global", tmp_path)
    path = tmp_path / "MEMORY.md"
    path.write_bytes(path.read_bytes() + f"- ci uses {token}\n".encode())
    done = import_folder(memory, tmp_path, date=DAY)
    assert [(c.path, c.secrets) for c in done.changes] == [("MEMORY.md", ("GitHub token",))]
    assert done.written == ("MEMORY.md",)
    stored = read_file(memory, head(memory, "global"), "MEMORY.md") or b""
    assert token.encode() not in stored and b"[REDACTED: GitHub token]" in stored
    assert path.read_bytes() == stored
    assert "secret cut out: GitHub token" in changes(memory, head(memory, "global"))[0]


@pytest.mark.parametrize(
    ("name", "body", "why"),
    [
        ("DailyLogs/2026-13-01.md", b"x\n", "YYYY-MM-DD.md files only"),
        ("DailyLogs/notes.md", b"x\n", "YYYY-MM-DD.md files only"),
        ("facts/a key.md", b"x\n", "not a memory file's name"),
        ("facts/sub/k.md", b"x\n", "KEY.md files only"),
        ("journal.md", b"x\n", "the journal is the store's record"),
        ("logs/2026-11-20.md", b"x\n", "daily logs go in DailyLogs/"),
        ("image.png", b"\x89PNG\r\n\x1a\n\0\0", "not text"),
        ("latin1.md", "caf\xe9\n".encode("latin-1"), "not text"),
        ("big.md", b"a" * (MAX_FILE_BYTES + 1), "over the limit"),
    ],
)
def test_a_file_that_is_not_a_memory_file_stops_the_import_before_anything_is_written(
    memory: Store, tmp_path: Path, name: str, body: bytes, why: str
) -> None:
    export(memory, "global", tmp_path)
    (tmp_path / "MEMORY.md").write_bytes(b"# Memory\n\n- edited too\n")
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_bytes(body)
    before, folder = head(memory, "global").digest, tree(tmp_path)
    with pytest.raises(UsageError, match="not memory files") as err:
        import_folder(memory, tmp_path, date=DAY)
    assert why in str(err.value) and "\n" not in str(err.value)
    assert head(memory, "global").digest == before and tree(tmp_path) == folder


def test_links_and_a_path_that_is_not_a_folder_are_refused(memory: Store, tmp_path: Path) -> None:
    export(memory, "global", tmp_path / "out")
    os.symlink("MEMORY.md", tmp_path / "out" / "link.md")
    with pytest.raises(UsageError, match=r"'link.md' \(a link\)"):
        import_folder(memory, tmp_path / "out", date=DAY)
    (tmp_path / "file").write_bytes(b"x")
    for bad in (tmp_path / "file", tmp_path / "missing"):
        with pytest.raises(UsageError, match=r"is not a folder|does not exist"):
            import_folder(memory, bad, date=DAY)
    with pytest.raises(UsageError, match="is not a folder"):
        export(memory, "global", tmp_path / "file")


def test_what_editors_leave_beside_a_file_is_ignored(memory: Store, tmp_path: Path) -> None:
    export(memory, "global", tmp_path)
    for junk in (".MEMORY.md.swp", "MEMORY.md~", "#MEMORY.md#", "x.swp", ".git/config"):
        (tmp_path / junk).parent.mkdir(exist_ok=True)
        (tmp_path / junk).write_bytes(b"\0junk")
    before = head(memory, "global").digest
    assert import_folder(memory, tmp_path, date=DAY).state == before


def test_export_refuses_a_folder_that_is_not_its_export_unless_forced(
    memory: Store, tmp_path: Path
) -> None:
    (tmp_path / "mine.txt").write_bytes(b"my own file\n")
    with pytest.raises(UsageError, match="is not an export of a memory"):
        export(memory, "global", tmp_path)
    assert tree(tmp_path) == {"mine.txt": b"my own file\n"}
    export(memory, "global", tmp_path, force=True)
    assert "MEMORY.md" in tree(tmp_path) and tree(tmp_path)["mine.txt"] == b"my own file\n"
    (tmp_path / "mine.txt").unlink()
    remember(memory, "user:x", "another scope", date=DAY)
    with pytest.raises(UsageError, match="is an export of memory 'global'"):
        export(memory, "user:x", tmp_path)
    (tmp_path / "MEMORY.md").write_bytes(b"# Memory\n\n- edited, not imported\n")
    with pytest.raises(UsageError, match=r"has edits not imported yet \(MEMORY.md\)"):
        export(memory, "global", tmp_path)
    assert (tmp_path / "MEMORY.md").read_bytes() == b"# Memory\n\n- edited, not imported\n"


def test_an_earlier_state_exports_and_a_later_export_removes_what_it_no_longer_holds(
    memory: Store, tmp_path: Path
) -> None:
    first = head(memory, "global")
    remember(memory, "global", "a new day", date="2026-11-25")
    export(memory, "global", tmp_path)
    assert "DailyLogs/2026-11-25.md" in tree(tmp_path)
    assert first.digest is not None
    rollback(memory, "global", first.digest, date=DAY)
    done = export(memory, "global", tmp_path)
    assert done.removed == ("DailyLogs/2026-11-25.md",)
    assert not (tmp_path / "DailyLogs" / "2026-11-25.md").exists()
    old = tmp_path.parent / (tmp_path.name + "-old")
    export(memory, "global", old, at=first.digest)
    assert tree(old) == tree(tmp_path)


def test_a_folder_edit_goes_over_the_newest_state_and_a_clash_needs_force(
    memory: Store, tmp_path: Path
) -> None:
    export(memory, "global", tmp_path)
    # the store moves on (another day's log); the folder edits MEMORY.md: both are kept
    remember(memory, "global", "written by an agent", date="2026-11-23")
    (tmp_path / "MEMORY.md").write_bytes(b"# Memory\n\n- edited by hand\n")
    done = import_folder(memory, tmp_path, date=DAY)
    assert [c.journal() for c in done.changes] == ["import: edit MEMORY.md"]
    assert done.written == ("DailyLogs/2026-11-23.md",)
    now = files(memory, "global")
    assert now["MEMORY.md"] == b"# Memory\n\n- edited by hand\n" and "logs/2026-11-23.md" in now
    # both change the same file: refused, unless the folder's is kept on purpose
    remember(memory, "global", "the agent again", date="2026-11-23")
    log = tmp_path / "DailyLogs" / "2026-11-23.md"
    log.write_bytes(log.read_bytes() + b"- and by hand\n")
    before = head(memory, "global").digest
    with pytest.raises(UsageError, match=r"both changed DailyLogs/2026-11-23.md"):
        import_folder(memory, tmp_path, date=DAY)
    assert head(memory, "global").digest == before
    done = import_folder(memory, tmp_path, date=DAY, force=True)
    assert [c.journal() for c in done.changes] == [
        "import: edit logs/2026-11-23.md (over a change made in the store since the export)"
    ]
    assert files(memory, "global")["logs/2026-11-23.md"] == log.read_bytes()


@contextlib.contextmanager
def watched(store: Store, face: Path) -> Iterator[tuple[Watch, list[str]]]:
    """A real watch of ``face`` running in a thread, stopped at the end; the lines it said."""
    lines: list[str] = []
    watch = Watch(store, face, date=lambda: DAY, report=lines.append,
                  problem=lambda line: lines.append("problem: " + line))  # fmt: skip
    stop = threading.Event()
    runner = threading.Thread(target=watch.run, args=(stop,))
    runner.start()
    try:
        yield watch, lines
    finally:
        stop.set()
        runner.join(timeout=20)
        assert not runner.is_alive()


@pytest.fixture
def watching(memory: Store, tmp_path: Path) -> Iterator[tuple[Watch, list[str]]]:
    with watched(memory, tmp_path / "face") as done:
        yield done


def until(check: Callable[[], bool], timeout: float = 20.0) -> float:
    """Seconds until ``check()`` is true (fails after ``timeout``)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, "not seen in time"
        time.sleep(0.02)
    return time.monotonic() - start


def test_a_watched_folder_is_imported_on_save_and_written_when_the_store_moves(
    memory: Store, tmp_path: Path, watching: tuple[Watch, list[str]]
) -> None:
    watch, lines = watching
    face = tmp_path / "face"
    assert (face / MARKER).is_file() and "MEMORY.md" in tree(face)
    index = TextIndex.open(memory.path)
    assert index is not None
    time.sleep(0.3)  # the observer is up
    log = face / "DailyLogs" / "2026-11-21.md"
    log.write_bytes(log.read_bytes() + b"- the papaya build is slow\n")

    def found() -> bool:
        return bool(search(memory, index, "global", "papaya", mode="lexical"))

    print(f"watch: saved to searchable in {until(found):.3f} s")
    assert changes(memory, head(memory, "global")) == [f"{DAY} import: edit logs/2026-11-21.md"]
    # a state made elsewhere reaches the folder; writing it imports nothing
    remember(memory, "global", "an agent's mango note", date="2026-11-26")
    until((face / "DailyLogs" / "2026-11-26.md").is_file)
    time.sleep(0.5)
    assert changes(memory, head(memory, "global")) == ["2026-11-26 add logs/2026-11-26.md"]
    assert tree(face)["DailyLogs/2026-11-26.md"] == files(memory, "global")["logs/2026-11-26.md"]
    # a bad file is said once and the watch goes on; fixed, the edit goes in
    (face / "bad name.md").write_bytes(b"x\n")
    until(lambda: any(line.startswith("problem: ") for line in lines))
    (face / "bad name.md").unlink()
    (face / "MEMORY.md").write_bytes(b"# Memory\n\n- fixed\n")
    until(lambda: files(memory, "global")["MEMORY.md"] == b"# Memory\n\n- fixed\n")
    assert sum(line.startswith("problem: ") for line in lines) == 1
    assert watch.scope == "global"


def test_saves_in_quick_succession_are_never_written_over_by_the_watch(
    memory: Store, tmp_path: Path
) -> None:
    """An import writes the folder again from its new state; a file saved after the import
    read it holds a newer edit, and is left for the next import, not written over. Each save
    here comes the moment the last one is a state, while the watch writes the folder."""
    for day in range(1, 29):
        remember(memory, "global", f"day {day}", date=f"2026-10-{day:02d}")
    face = tmp_path / "face"
    letters = string.ascii_lowercase
    words = ["quick" + "".join(random.Random(n).choices(letters, k=8)) for n in range(12)]
    logs = [f"DailyLogs/2026-10-{day:02d}.md" for day in range(1, 29)]
    with watched(memory, face):
        time.sleep(0.3)
        for n, word in enumerate(words):
            before = head(memory, "global").digest
            path = face / logs[(n * 5) % len(logs)]
            path.write_bytes(path.read_bytes() + f"- {word}\n".encode())
            until(lambda was=before: head(memory, "global").digest != was)

        def held() -> bool:
            return all(w.encode() in b"".join(files(memory, "global").values()) for w in words)

        until(held)
        time.sleep(0.5)
    assert all(w.encode() in b"".join(tree(face).values()) for w in words)


def test_a_watch_refuses_a_folder_that_is_not_this_scopes_export(
    memory: Store, tmp_path: Path
) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.md").write_bytes(b"mine\n")
    with pytest.raises(UsageError, match=r"not an export of a memory .*import it first"):
        Watch(memory, tmp_path / "mine", date=lambda: DAY)
    export(memory, "global", tmp_path / "face")
    with pytest.raises(UsageError, match="watch it with --scope global"):
        Watch(memory, tmp_path / "face", "user:x", date=lambda: DAY)
    assert Watch(memory, tmp_path / "face", date=lambda: DAY).scope == "global"
