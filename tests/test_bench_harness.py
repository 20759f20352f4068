"""The benchmarks' measured process: its memory is counted with every process below it, and its
exit code is an answer only when the caller says so."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench import harness

MIB = 1 << 20
# Two children at once, each touching 48 MiB and holding it for two seconds (long enough for
# the launcher, which looks for new processes every 50 ms, to see both on a busy machine).
HOLD = "import time; block = b'x' * (48 << 20); time.sleep(2)"
PARENT = f"""
import subprocess, sys
children = [subprocess.Popen([sys.executable, "-c", {HOLD!r}]) for _ in range(2)]
sys.exit(max(child.wait() for child in children))
"""


def test_the_memory_of_a_process_tree_is_the_sum_of_its_processes(tmp_path: Path) -> None:
    proc = harness.measure([sys.executable, "-c", PARENT], dict(os.environ), tmp_path)
    assert proc.processes >= 3
    # ru_maxrss knows one process at a time (the parent, or its largest child once reaped);
    # the tree holds both children's blocks at once.
    assert proc.peak_rss < 2 * 48 * MIB
    assert proc.peak_tree >= 2 * 48 * MIB
    assert proc.peak_tree_anon is not None and proc.peak_tree_anon >= 2 * 48 * MIB


def test_a_lone_process_is_its_own_tree(tmp_path: Path) -> None:
    proc = harness.measure([sys.executable, "-c", HOLD], dict(os.environ), tmp_path)
    assert proc.processes == 1
    assert proc.peak_rss >= 48 * MIB
    assert proc.peak_tree >= proc.peak_rss
    assert proc.peak_tree < 2 * 48 * MIB


def test_an_exit_code_is_an_answer_only_when_allowed(tmp_path: Path) -> None:
    env = dict(os.environ)
    with pytest.raises(harness.BenchError, match="exited 3: nope"):
        harness.measure(["sh", "-c", "echo nope >&2; exit 3"], env, tmp_path)
    done = harness.measure(["sh", "-c", "echo found; exit 1"], env, tmp_path, ok=(0, 1))
    assert done.stdout == b"found\n"
    with pytest.raises(harness.BenchError, match="cannot run"):
        harness.measure([str(tmp_path / "no-such-program")], env, tmp_path)


def test_a_launcher_that_wrote_no_report_reads_as_none() -> None:
    assert harness.read_usage("") is None
    usage = harness.read_usage("1.5 0.25 2048 1024 0 6144 3072 3")
    assert usage is not None
    assert (usage.peak_rss, usage.peak_tree, usage.peak_tree_anon) == (2 * MIB, 6 * MIB, 3 * MIB)
    assert (usage.seconds, usage.cpu_seconds, usage.code, usage.processes) == (1.5, 0.25, 0, 3)


def test_a_cached_corpus_keeps_no_bytecode_written_beside_it(tmp_path: Path) -> None:
    """`without_bytecode`: the ``__pycache__`` folders an import or a compileall wrote into a
    cached corpus go (they would be packed and rated with it); its own files stay."""
    (tmp_path / "pkg" / "sub" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / "pkg" / "sub" / "cache.py").write_text("y = 2\n")
    harness.without_bytecode(tmp_path)
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert left == ["pkg", "pkg/mod.py", "pkg/sub", "pkg/sub/cache.py"]


def test_quality_locates_an_answer_by_its_folder_as_a_path_start(tmp_path: Path) -> None:
    """The quality benchmark's "answer located": the folders of the files that hold an answer,
    named by an output as the start of a path (not inside a longer path)."""
    from bench import quality

    (tmp_path / "pkg" / "net").mkdir(parents=True)
    (tmp_path / "pkg" / "net" / "stack.go").write_text("func New(opts Options) *Stack {\n")
    (tmp_path / "lib.rs").write_text("pub fn from_str(s: &str) {}\n")
    q = [
        quality.Question("a", "?", (("func New(opts Options)   *Stack",),)),
        quality.Question("b", "?", (("pub fn from_str(",),)),
        quality.Question("c", "?", (("not anywhere",),)),
    ]
    places = quality.answer_places(q, tmp_path)
    assert places == {"a": {"pkg/net/"}, "b": {"lib.rs"}, "c": set()}
    assert quality.located(places["a"], "- `pkg/net/` 3 files: Package net")
    assert quality.located(places["a"], "### `pkg/net/stack.go`")
    assert not quality.located(places["a"], "vendor/pkg/net/stack.go")
    assert not quality.located(places["a"], "- `pkg/` 40 files")
    assert quality.located(places["b"], "lib.rs:\n") and not quality.located(places["b"], "xlib.rs")
    assert not quality.located(places["c"], "anything")
