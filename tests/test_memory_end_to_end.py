"""A month of agent memory end to end, as the issue's "done when" says, on two machines.

Two projects stand for two machines: each is a git repository with the same dated commits, and
writes the same scripted month (dated entries, facts, a curated line, a planted secret, a
session's note) in a process of its own, under another time zone, locale and hash seed. Then,
through the `cas` command:

* the memories are the same state, and memory packs at any ``--now`` are the same bytes, each
  log in the tier its age says, each target within its budget, their recent changes the
  commits dated ``--now`` or before;
* the planted secret is in no blob of the store and no pack;
* pruning at day 91 removes exactly the log past the retention and the stale facts, and
  journals each; rolling back restores the memory exactly;
* the session's note is never seen from the global memory.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from cas import Store
from tests.conftest import ROOT, cas_env, run_cas
from tests.gitrepo import Repo
from tests.secret_corpus import Values

FIRST = dt.date(2026, 9, 1)
DAYS = 30
# A GitHub token made at run time (never written in a source file), planted in day 3's log.
TOKEN = "ghp_" + Values(random.Random(13)).pick(string.ascii_letters + string.digits, 36)
BUDGETS = {"common": (2500, 3000), "chatgpt": (5000, 6000), "claude": (10000, 12000)}

SCRIPT = """
import datetime as dt, sys
from cas import Store
from memory import usage
from memory.ops import curate, put_fact, remember

first, days, token = dt.date.fromisoformat(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
day = lambda n: (first + dt.timedelta(days=n)).isoformat()
with Store.at(".cas") as store:
    for n in range(days):
        if n % 5 == 0:
            remember(store, "global", f"decided to ship release 1.{n} of the packer", date=day(n))
        remember(store, "global", f"day {n}: reviewed the gc lease code " + "and more " * 12,
                 date=day(n))
        if n == 3:
            remember(store, "global", f"pushed with token {token} to the mirror", date=day(n))
    put_fact(store, "global", "db", "postgres 16", date=day(0))
    put_fact(store, "global", "db", "postgres 17", date=day(25))
    put_fact(store, "global", "editor", "helix", date=day(2))
    put_fact(store, "global", "ci", "github actions", date=day(29))
    curate(store, "global", "Packs are judged by what an agent can answer", date=day(0))
    remember(store, "session:s1", "the session-only note about zebra stripes", date=day(4))
    for _ in range(11):  # an agent read the editor fact eleven times: kept however old
        usage.used(store, "global", ["fact:editor"], day(10))
"""


def day(n: int) -> str:
    return (FIRST + dt.timedelta(days=n)).isoformat()


COMMITS = range(0, DAYS, 3)  # a commit on every third day: "ship step N"


def machine(root: Path, tz: str, seed: str) -> tuple[Path, dict[str, str]]:
    repo = Repo(root)
    repo.write(".gitignore", ".cas/\nmanifests/\n")
    for n in COMMITS:
        noon = dt.datetime.combine(FIRST + dt.timedelta(days=n), dt.time(12), dt.UTC)
        repo.commit(f"ship step {n}", {f"src/step{n}.py": f"STEP = {n}\n"},
                    date=f"{int(noon.timestamp())} +0000")  # fmt: skip
    env = {"TZ": tz, "PYTHONHASHSEED": seed, "LC_ALL": "C"}
    assert run_cas("init", "--store-only", cwd=root, env=env).code == 0
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, FIRST.isoformat(), str(DAYS), TOKEN],
        cwd=root,
        env={**cas_env(), **env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return root, env


def mem(project: Path, env: dict[str, str], *args: str) -> str:
    r = run_cas("mem", *args, cwd=project, env=env)
    assert r.code == 0, r.err
    return r.out


def tier(age: int) -> str | None:
    """The source design's table, written out again: 0-7 full, 8-30 summary, 31-90 pointer."""
    if age < 0 or age > 90:
        return None
    return "high" if age <= 7 else "medium" if age <= 30 else "low"


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, dict[str, str]]]:
    where = tmp_path_factory.mktemp("month")
    return [
        machine(where / "one", "UTC", "1"),
        machine(where / "two", "Pacific/Kiritimati", "2"),  # UTC+14: another calendar day
    ]


@pytest.mark.slow
def test_the_same_month_is_the_same_memory_and_the_same_packs_at_any_now(
    machines: list[tuple[Path, dict[str, str]]],
) -> None:
    states = {json.loads(mem(p, e, "log", "--json"))["states"][0]["state"] for p, e in machines}
    assert len(states) == 1
    for offset in (0, 7, 8, 29, 30, 31, 60, 90, 91, 119, 120):
        now = day(offset)
        outs = [mem(p, e, "pack", "--now", now, "--json") for p, e in machines]
        assert outs[0] == outs[1], now
        packs = {p["target"]: p for p in json.loads(outs[0])["packs"]}
        assert set(packs) == set(BUDGETS)
        for target, (budget, most) in BUDGETS.items():
            pack = packs[target]
            assert (pack["budget"], pack["max"]) == (budget, most)
            assert pack["tokens"] <= most, (now, target)
            assert TOKEN not in pack["text"] and "zebra" not in pack["text"]
            assert pack["text"].count("90_recent_changes.md") == 1
        # The recent changes are the commits dated --now or before, never later ones.
        text = packs["claude"]["text"]
        assert [n for n in COMMITS if f"ship step {n}\n" in text] == [
            n for n in COMMITS if n <= offset
        ], now
        # The claude budget holds the whole month: every log is in the tier its age says.
        tiers = packs["claude"]["tiers"]
        for n in range(DAYS):
            assert tiers.get(f"logs/{day(n)}.md") == tier(offset - n), (now, n)
    manifests = [sorted((p / "manifests").glob("mem.*.pack")) for p, _ in machines]
    assert [f.name for f in manifests[0]] == [f.name for f in manifests[1]]
    for a, b in zip(*manifests, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_a_planted_secret_is_in_no_blob_and_no_pack(
    machines: list[tuple[Path, dict[str, str]]],
) -> None:
    project, env = machines[0]
    mem(project, env, "pack", "--now", day(DAYS - 1))  # its own packs, whatever ran before
    shown = mem(project, env, "show", f"logs/{day(3)}.md")
    assert "[REDACTED: " in shown and TOKEN not in shown
    with Store.at(project / ".cas", readonly=True) as store:
        blobs = list(store.iterate())
        assert blobs
        assert not [d for d in blobs if TOKEN.encode() in store.get(d)]
    packs = list((project / "manifests").iterdir())
    assert packs
    for pack in packs:
        assert TOKEN.encode() not in pack.read_bytes()


@pytest.mark.slow
def test_pruning_at_day_91_removes_exactly_what_the_rules_say_and_rollback_restores_it(
    machines: list[tuple[Path, dict[str, str]]],
) -> None:
    project, env = machines[1]
    before = json.loads(mem(project, env, "show", "--json"))
    now = day(91)  # day 0's log is 91 days old; day 1's is 90, still kept
    out = mem(project, env, "prune", "--now", now)
    keep = "kept are facts used in the last 7 days or more than 10 times"
    assert out.splitlines() == [
        f"prune logs/{day(0)}.md: 91 days old, past the 90-day retention",
        f"prune fact ci: last used {day(29)} (62 days ago), used 0 times; {keep}",
        f"prune fact db: last used {day(25)} (66 days ago), used 0 times; {keep}",
    ]
    log = json.loads(mem(project, env, "log", "--json"))["states"]
    assert log[0]["changes"] == [f"{now} {line}" for line in out.splitlines()]
    after = json.loads(mem(project, env, "show", "--json"))
    logs = [f["path"] for f in after["files"] if f["path"].startswith("logs/")]
    assert logs == [f"logs/{day(n)}.md" for n in range(1, DAYS)]
    facts = json.loads(mem(project, env, "fact", "list", "--json"))
    assert facts == {"editor": "helix"}
    # Nothing else goes, and doing it again changes nothing.
    assert "nothing past the 90-day retention and no stale fact" in mem(
        project, env, "prune", "--now", now
    )
    mem(project, env, "rollback", "--date", now, before["state"])
    restored = json.loads(mem(project, env, "show", "--json"))
    drop = {"journal.md"}
    assert [f for f in restored["files"] if f["path"] not in drop] == [
        f for f in before["files"] if f["path"] not in drop
    ]
    # What the prune took (day 0's log, the facts) reads as it did; of the rest, which kept
    # their paths and sizes, the newest and the oldest log left are read too.
    kept_logs = [f["path"] for f in before["files"] if f["path"].startswith("logs/")][1:]
    touched = {f"logs/{day(0)}.md", kept_logs[0], kept_logs[-1]}
    touched |= {f["path"] for f in before["files"] if not f["path"].startswith("logs/")}
    for path in sorted(touched - drop):
        assert mem(project, env, "show", path) == mem(
            project, env, "show", "--at", before["state"], path
        )


def test_a_sessions_note_is_seen_from_its_scope_only(
    machines: list[tuple[Path, dict[str, str]]],
) -> None:
    project, env = machines[0]
    assert "zebra" in mem(project, env, "search", "--scope", "session:s1", "zebra")
    assert "zebra" not in mem(project, env, "search", "zebra")
    assert "zebra" not in mem(project, env, "search", "--scope", "session:s2", "zebra")
