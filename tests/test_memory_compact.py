"""memory.compact: old logs become what is worth keeping, by rules or by a decider command."""

from __future__ import annotations

import random
import string
import sys
import textwrap
from pathlib import Path

import pytest

from cas import Store
from cas.errors import DeciderFailed
from memory.compact import by_rules, command_decider, compact
from memory.edits import get
from memory.entries import without_ids
from memory.ops import remember
from memory.state import CURATED, JOURNAL, head, history, read_file, rollback
from packer.config import MemoryConfig
from tests.secret_corpus import Values, pieces

CONFIG = MemoryConfig()  # 7 / 30 / 90 days


def month(store: Store) -> None:
    """Logs of 2026-10-01 .. 2026-10-30: each a decision, a measurement and some noise."""
    for day in range(1, 31):
        date = f"2026-10-{day:02d}"
        remember(store, "global", f"decided to try plan {day}", date=date)
        remember(store, "global", f"measured {day} ms for the pull\nwith details", date=date)
        remember(store, "global", f"noise {day}", date=date)


def text_of(store: Store, path: str) -> str:
    """A file of the newest state, its entries' ids left out (they have their own test)."""
    return without_ids((read_file(store, head(store, "global"), path) or b"").decode())


def test_rules_promote_decisions_compress_the_rest_and_leave_recent_days_alone(
    store: Store,
) -> None:
    month(store)
    done = compact(store, "global", "2026-10-30", CONFIG)
    # Logs 8..29 days old: 2026-10-01 .. 2026-10-22 (the rest are at most 7 days old).
    compacted = sorted({d.log for d in done.decisions})
    assert compacted == [f"logs/2026-10-{d:02d}.md" for d in range(1, 23)]
    assert {d.decision for d in done.decisions} == {"PROMOTE", "COMPRESS"}
    curated = text_of(store, CURATED)
    assert "- 2026-10-01: decided to try plan 1" in curated
    assert "plan 23" not in curated
    assert text_of(store, "logs/2026-10-05.md") == (
        "# 2026-10-05 (compacted)\n\n- measured 5 ms for the pull\n- noise 5\n"
    )
    assert "with details" in text_of(store, "logs/2026-10-23.md")  # recent: untouched
    journal = text_of(store, JOURNAL)
    assert journal.count("compact logs/") == len(done.decisions) == 22 * 3
    # Compacted once: the same day again does nothing, and no new state is made.
    states = len(list(history(store, "global")))
    assert compact(store, "global", "2026-10-30", CONFIG).decisions == ()
    assert len(list(history(store, "global"))) == states


def test_a_dry_run_changes_nothing_and_rollback_undoes_a_compaction(store: Store) -> None:
    month(store)
    before = head(store, "global")
    planned = compact(store, "global", "2026-10-30", CONFIG, dry_run=True)
    assert planned.decisions and head(store, "global") == before
    compact(store, "global", "2026-10-30", CONFIG)
    assert before.digest is not None
    back = rollback(store, "global", before.digest, date="2026-10-31")
    assert {p: d for p, d in back.files.items() if p != JOURNAL} == {
        p: d for p, d in before.files.items() if p != JOURNAL
    }


# A planted secret of the GitHub token shape, made at run time (no secret sits in the sources).
TOKEN = "ghp_" + Values(random.Random(5)).pick(string.ascii_letters + string.digits, 36)
DECIDER = textwrap.dedent(
    f"""
    import json, sys
    TOKEN = {TOKEN!r}
    request = json.load(sys.stdin)
    out = []
    for e in request["entries"]:
        if e["text"].startswith("noise"):
            out.append({{"index": e["index"], "decision": "DELETE"}})
        elif e["text"].startswith("decided"):
            out.append({{"index": e["index"], "decision": "PROMOTE",
                        "text": e["text"].upper() + " token " + TOKEN}})
        else:
            out.append({{"index": e["index"], "decision": "KEEP"}})
    print(json.dumps({{"decisions": out}}))
    """
)


def test_a_decider_command_decides_and_what_it_writes_is_cut_of_secrets(
    store: Store, tmp_path: Path
) -> None:
    script = tmp_path / "decide.py"
    script.write_text(DECIDER)
    month(store)
    done = compact(
        store, "global", "2026-10-30", CONFIG, decide=command_decider(f"{sys.executable} {script}")
    )
    assert {d.by for d in done.decisions} == {"llm"}
    assert text_of(store, "logs/2026-10-05.md") == (
        "# 2026-10-05 (compacted)\n\n- measured 5 ms for the pull\n  with details\n"
    )
    curated = text_of(store, CURATED)
    assert "- 2026-10-05: DECIDED TO TRY PLAN 5 token [REDACTED: GitHub token]" in curated
    assert TOKEN not in curated


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("print('not json')", "not JSON"),
        ("print('{}')", 'no "decisions" list'),
        ("print('{\"decisions\": []}')", "decided 0 of 3"),
        (
            'print(\'{"decisions": [{"index": 0, "decision": "MAYBE"}]}\')',
            "the decision for entry 0 is a string of 5 characters, not one of",
        ),
        ("import sys; sys.exit(3)", "exited 3"),
    ],
)
def test_a_bad_answer_stops_with_one_line_and_changes_nothing(
    store: Store, tmp_path: Path, answer: str, says: str
) -> None:
    script = tmp_path / "bad.py"
    script.write_text("import sys, json\nsys.stdin.read()\n" + answer + "\n")
    remember(store, "global", "a", date="2026-10-01")
    remember(store, "global", "b", date="2026-10-01")
    remember(store, "global", "c", date="2026-10-01")
    before = head(store, "global")
    with pytest.raises(DeciderFailed, match=says) as failed:
        compact(store, "global", "2026-10-30", CONFIG,
                decide=command_decider(f"{sys.executable} {script}"))  # fmt: skip
    assert "\n" not in str(failed.value)
    assert head(store, "global") == before


@pytest.mark.parametrize(
    ("decision", "says"),
    [
        ('{"index": 0, "decision": TOKEN}', "decision for entry 0 is a string of 40 char"),
        ('{"index": TOKEN, "decision": "KEEP"}', "the index of decision 1 is a string of 40"),
        ('{"index": 0, "decision": "KEEP", "text": [TOKEN]}', "entry 0 is a list of 1 item"),
        ("TOKEN", "decision 1 is a string of 40 characters, not an object"),
    ],
)
def test_a_bad_answer_is_described_by_its_shape_and_never_repeated(
    store: Store, tmp_path: Path, decision: str, says: str
) -> None:
    script = tmp_path / "echo.py"
    script.write_text(
        f"import json, sys\nTOKEN = {TOKEN!r}\nsys.stdin.read()\n"
        f'print(json.dumps({{"decisions": [{decision}]}}))\n'
    )
    remember(store, "global", "a", date="2026-10-01")
    before = head(store, "global")
    with pytest.raises(DeciderFailed, match=says) as failed:
        compact(store, "global", "2026-10-30", CONFIG,
                decide=command_decider(f"{sys.executable} {script}"))  # fmt: skip
    assert not any(p in str(failed.value) for p in pieces(TOKEN))
    assert head(store, "global") == before


def test_what_a_decider_writes_is_scanned_as_it_is_laid_out_where_it_goes(
    store: Store, tmp_path: Path
) -> None:
    """A promoted text becomes one line of MEMORY.md and a kept one an entry of its log: a
    secret the decider broke over lines is found whole in either, and the journal says so."""
    pw = Values(random.Random(6)).pick(string.ascii_letters + string.digits, 20)
    p = "pass" + "word"
    script = tmp_path / "split.py"
    script.write_text(
        "import json, sys\n"
        f"SPLIT = {p + ' =' + chr(10) + chr(34) + pw + chr(34)!r}\n"
        "request = json.load(sys.stdin)\n"
        "out = [{'index': e['index'], 'decision': 'PROMOTE' if e['index'] == 0 else 'KEEP',\n"
        "        'text': 'note ' + SPLIT} for e in request['entries']]\n"
        "print(json.dumps({'decisions': out}))\n"
    )
    remember(store, "global", "decided one", date="2026-10-01")
    remember(store, "global", "kept two", date="2026-10-01")
    done = compact(store, "global", "2026-10-30", CONFIG,
                   decide=command_decider(f"{sys.executable} {script}"))  # fmt: skip
    kind = f"high-entropy assignment to '{p}'"
    assert [d.secrets for d in done.decisions] == [(kind,), (kind,)]
    curated = text_of(store, CURATED)
    assert f'- 2026-10-01: note {p} = "[REDACTED: {kind}]"\n' in curated
    assert text_of(store, "logs/2026-10-01.md") == (
        f'# 2026-10-01 (compacted)\n\n- note {p} =\n  "[REDACTED: {kind}]"\n'
    )
    assert f"(by llm) (secret cut out: {kind})" in text_of(store, JOURNAL)
    for digest in store.iterate():
        assert pw.encode() not in store.get(digest)


def test_entries_keep_their_ids_through_a_compaction(store: Store) -> None:
    """A kept or compressed entry keeps its id in its log, a promoted one in MEMORY.md: an
    agent holding an id still reaches the entry after the compaction."""
    made = [
        remember(store, "global", text, date="2026-10-01").id
        for text in ("decided to try plan 1", "measured 1 ms\nwith details", "noise 1")
    ]

    def keep_last(request: dict[str, object]) -> list[dict[str, object]]:
        return [{**d, "decision": "KEEP"} if d["index"] == 2 else d for d in by_rules(request)]

    compact(store, "global", "2026-10-20", CONFIG, decide=keep_last)
    state = head(store, "global")
    log = (read_file(store, state, "logs/2026-10-01.md") or b"").decode()
    assert log == (
        f"# 2026-10-01 (compacted)\n\n- measured 1 ms ^{made[1]}\n- noise 1 ^{made[2]}\n"
    )
    curated = (read_file(store, state, CURATED) or b"").decode()
    assert curated == f"# Memory\n\n- 2026-10-01: decided to try plan 1 ^{made[0]}\n"
    assert [get(store, "global", i).text for i in made] == [
        "2026-10-01: decided to try plan 1", "measured 1 ms", "noise 1",
    ]  # fmt: skip
