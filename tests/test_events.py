"""cas.events: one progress event type for every long operation, drawn only by the CLI.

Each library entry point that reports progress (verify, gc, the packer's build and search
index, and the remote's push, pull, verify and gc through `Meter`) takes a `ProgressSink` and
sends it `ProgressEvent`s whose counts only grow within a stage and end at the stage's result.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas import Store
from cas.events import ProgressEvent, emit
from cas.gc import collect
from cas.progress import Progress
from cas.remote.transfer import Meter
from cas.verify import verify
from packer.build import Packer
from packer.config import load_config
from tests.conftest import ROOT
from tests.packfixture import build_tree


def _growing(events: list[ProgressEvent]) -> None:
    """Within each stage, done and nbytes never go back."""
    last: dict[str, ProgressEvent] = {}
    for e in events:
        assert isinstance(e, ProgressEvent)
        before = last.get(e.stage)
        if before is not None:
            assert e.done >= before.done and e.nbytes >= before.nbytes, (before, e)
        last[e.stage] = e


def test_only_the_cli_draws_progress() -> None:
    """The terminal display is the CLI's: no other module imports `Progress`, and no library
    module has a progress convention of its own (a ``Progress = Callable[...]`` alias)."""
    offenders = []
    for package in ("cas", "packer"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "cas.progress"
                    and any(a.name == "Progress" for a in node.names)
                    and not rel.startswith("casapp/cli/")
                ):
                    offenders.append(f"{rel}:{node.lineno} imports Progress")
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "Progress" for t in node.targets
                ):
                    offenders.append(f"{rel}:{node.lineno} defines its own Progress")
    assert offenders == []


def test_verify_sends_blobs_of_the_total_and_bytes_hashed(store: Store) -> None:
    for i in range(70):  # more than one group of blobs
        store.put(f"blob {i}\n".encode() * (i + 1))
    events: list[ProgressEvent] = []
    report = verify(store, all_blobs=True, progress=events.append)
    assert report.ok and events
    _growing(events)
    assert {e.stage for e in events} == {"verify"}
    last = events[-1]
    assert last.done == last.total == report.checked == 70
    assert last.nbytes == report.bytes_checked > 0


def test_gc_sends_its_stages_in_order(store: Store) -> None:
    for i in range(5):
        store.put(f"unreferenced {i}\n".encode())
    events: list[ProgressEvent] = []
    report = collect(store, grace_ns=0, require_roots=False, progress=events.append)
    assert report.pruned == 5
    stages = [e.stage for e in events]
    assert stages == ["roots", "mark", "sweep", "index"]
    assert next(e for e in events if e.stage == "sweep").total == 5


def test_the_packer_sends_scan_then_store(tmp_path: Path) -> None:
    root = build_tree(tmp_path / "r", with_specials=False)
    events: list[ProgressEvent] = []
    with Store.create(root / ".cas") as store:
        report = Packer(root, store, load_config(root), progress=events.append).run()
    _growing(events)
    stages = list(dict.fromkeys(e.stage for e in events))
    assert stages == ["scan", "store"]
    stored = [e for e in events if e.stage == "store"]
    assert stored[-1].total == report.files
    assert stored[-1].done == report.files
    assert stored[-1].nbytes >= report.bytes_read > 0  # the files' sizes, read or withheld


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 10_000)), max_size=30))
def test_a_meter_sends_running_totals(steps: list[tuple[int, int]]) -> None:
    """The remote's meter: every event holds the objects moved of those expected so far and
    their bytes, whatever order work is found and done in."""
    events: list[ProgressEvent] = []
    meter = Meter("pull", events.append)
    expected = moved = nbytes = 0
    for more, size in steps:
        meter.expect(more)
        expected += more
        meter.moved(size)
        moved += 1
        nbytes += size
        assert events[-1] == ProgressEvent("pull", moved, expected, nbytes)
    _growing(events)
    assert (meter.objects, meter.nbytes) == (moved, nbytes)
    Meter("push", None).moved(5)  # no sink: nothing to send, nothing raised


def test_the_terminal_display_draws_events() -> None:
    out = io.StringIO()
    with Progress("gc", stream=out, interval=0, stages=True) as bar:
        assert bar.sink is not None
        bar.sink(ProgressEvent("sweep", 3, 4, 2048))
        assert out.getvalue().split("\r")[-1].startswith("gc: sweep: 3/4 (75%), 2.0 KiB at ")
        emit(bar.sink, "mark", 7)  # a stage whose total is not known
        assert out.getvalue().split("\r")[-1].rstrip() == "gc: mark: 7"
    assert Progress("quiet", enabled=False).sink is None


@pytest.mark.parametrize("stages", [False, True])
def test_the_label_names_the_stage_only_when_asked(stages: bool) -> None:
    out = io.StringIO()
    bar = Progress("packing", stream=out, interval=0, stages=stages)
    bar.show(ProgressEvent("scan", 10))
    line = out.getvalue().split("\r")[-1]
    assert line.startswith("packing: scan: 10" if stages else "packing: 10")
