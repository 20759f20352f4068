"""Where the project is: the nearest marker at or above the start, and a pyproject.toml marks it
only with a [tool.cas] section that can be read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cas.errors import ConfigError
from packer.project import find_project_root, parse_toml, tool_cas


def test_the_nearest_marker_wins(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == deep  # nothing anywhere: the start itself
    (tmp_path / ".git").mkdir()
    assert find_project_root(deep) == tmp_path
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert find_project_root(deep) == tmp_path  # no [tool.cas]: no marker
    (tmp_path / "a" / "b" / "pyproject.toml").write_text("[tool.cas]\n")
    assert find_project_root(deep) == tmp_path / "a" / "b"
    (deep / "cas.toml").write_text("")
    assert find_project_root(deep) == deep
    (deep / "f.py").write_text("")
    assert find_project_root(deep / "f.py") == deep  # a file: its folder
    # from the top of the file system there is that folder alone to look in
    assert find_project_root(Path("/")) == Path("/")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"[tool.cas\n", "invalid TOML"),
        (b"\xff\xfe", "not UTF-8"),
        (b"a = " + b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    ],
)
def test_an_unreadable_file_is_one_config_error_and_no_marker(
    tmp_path: Path, data: bytes, says: str
) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_bytes(data)
    with pytest.raises(ConfigError, match=says):
        parse_toml(sub / "pyproject.toml")
    (tmp_path / ".git").mkdir()
    assert find_project_root(sub) == tmp_path


def test_tool_cas_is_the_section_or_none() -> None:
    assert tool_cas({"tool": {"cas": {"budget": 1}}}) == {"budget": 1}
    assert tool_cas({"tool": {"black": {}}}) is None
    assert tool_cas({"tool": "cas"}) is None  # not a table
    assert tool_cas({}) is None


def test_finding_the_root_parses_no_toml_where_no_pyproject_is_read(tmp_path: Path) -> None:
    (tmp_path / "cas.toml").write_text("[tool.cas\n")  # broken, and never read to find the root
    code = (
        "import sys; from packer.project import find_project_root; "
        f"print(find_project_root({str(tmp_path)!r})); print('tomllib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(tmp_path), "False"]
