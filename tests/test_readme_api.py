"""The README's Python API example runs as written, in a new project, in a new process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, cas_env, run_cas


def _api_example(n: int = 0) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API\n") :]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks and "make_pack" in blocks[0] and "MemoryManager" in blocks[0]
    assert "add_turn" in blocks[1] and "get_context" in blocks[1]
    return str(blocks[n])


def test_the_readme_python_api_example_runs_as_written(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src" / "shop").mkdir(parents=True)
    (project / "src" / "shop" / "__init__.py").write_text(
        '"""A shop."""\n\n\ndef checkout(cart: list[int]) -> int:\n    return sum(cart)\n'
    )
    (project / "docs").mkdir()
    (project / "docs" / "usage.md").write_text("# Usage\n\nCall `checkout(cart)`.\n")
    (project / "README.md").write_text("# Shop\n\nSee docs/usage.md.\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _api_example()],
        cwd=project, env=cas_env(), capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"repo\.pack blake3:[0-9a-f]{64} \d+ tokens", lines[0]), lines
    assert lines[1] == "us-east-2"
    assert re.fullmatch(
        r"\[\('(\d{4}-\d\d-\d\d)', 'us-east-2'\), \('\1', 'eu-west-1'\)\]", lines[2]
    ), lines[2]
    assert lines[3].startswith("logs/") and "login page test" in lines[3]
    assert lines[4].startswith("MemoryStats(scope='user:ana', facts=1,")
    assert lines[5] == "['docs', 'repo']"
    assert re.fullmatch(r"\d+ tokens: \[.*'src/shop/__init__\.py'.*\]", lines[6]), lines[6]
    assert len(lines) == 7
    assert sorted(p.name for p in (project / "manifests").iterdir()) == ["docs.pack", "repo.pack"]
    assert proc.stderr == ""


def test_the_readme_conversation_example_runs_as_written(tmp_path: Path) -> None:
    """The design's quick start: MemoryManager(scope=, data_dir=, llm_client=), add_turn,
    get_context, set_fact, get_fact, in a packed project."""
    project = tmp_path / "project"
    (project / "src" / "shop").mkdir(parents=True)
    (project / "src" / "shop" / "__init__.py").write_text(
        '"""A shop."""\n\n\ndef checkout(cart: list[int]) -> int:\n    return sum(cart)\n'
    )
    (project / "tests").mkdir()
    (project / "tests" / "test_checkout.py").write_text(
        "from shop import checkout\n\n\ndef test_checkout():\n    assert checkout([1, 2]) == 3\n"
    )
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert run_cas("pack", cwd=project, timeout=300).code == 0
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _api_example(1)],
        cwd=project, env=cas_env(), capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Ana s1", "True 1", "['facts/user_name.md'] 1"]
    assert proc.stderr == ""
