"""Hostile file names in every output: renders, reports, notes, warnings and errors.

A name may hold a newline (forging a ``### FORGED`` heading or a report line), CR and ESC
(rewriting a terminal), bidirectional controls and line separators. Every output shows such a
name escaped and quoted (`cas.display.shown`), so no line of any output starts with text from a
forged name and no raw control character from a name reaches it; JSON keeps the real string.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.display import ECHO_LIMIT, echoed, human_bytes, json_safe, one_line, shown
from tests.conftest import Result, run_cas

# each name's second line would start a line of its own if printed raw
HOSTILE = [
    "forged\n### FORGED heading.py",
    "esc\x1b[31mRED\x1b[0m.py",
    "cr\rFORGED overwrite.md",
    "bidi\u202eyp.txt",
    "sep\u2028FORGED line.md",
    "tick`FORGED`.py",
    'quote"d.py',
    "tab\tname.txt",
    "del\x7fname.txt",
    "c1\x9bname.txt",
]
FOLDER = "evil\nFORGEDDIR"
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _tree(root: Path) -> None:
    (root / ".git").mkdir(parents=True)
    (root / "README.md").write_text("# Project\n\nA project with odd names.\n")
    for i, name in enumerate(HOSTILE):
        (root / name).write_text(f"value_{i} = {i}\n")
    (root / FOLDER).mkdir()
    (root / FOLDER / "inner.py").write_text("inner = 1\n")
    (root / "id_rsa\nFORGED key").write_text("not really a key\n")  # withheld by its name
    os.symlink("target\nFORGED link", root / "link\x1b]0;title\x07.txt")
    os.mkfifo(root / "fifo\x1b[2J")


def _no_forgery(text: str, where: str) -> None:
    assert not RAW_CONTROLS.search(text), (where, RAW_CONTROLS.findall(text)[:5])
    for line in text.splitlines():
        body = line.lstrip(" \t-*#=<`\"'")
        assert not body.startswith("FORGED"), (where, line)
    for name in [*HOSTILE, FOLDER]:
        if shown(name) != name:  # (a backtick or a quote alone is printable: shown as it is)
            assert name not in text, (where, name)


def _ok(result: Result, where: str) -> Result:
    assert result.code == 0, (where, result.err)
    return result


def test_no_output_lets_a_name_forge_a_line_or_reach_the_terminal(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _tree(root)
    first = _ok(run_cas("pack", cwd=root), "pack")
    _no_forgery(first.out + first.err, "pack")
    assert shown("id_rsa\nFORGED key") in first.out  # the withheld list names it, escaped
    assert shown("fifo\x1b[2J") in first.err  # the note about the FIFO
    old = tmp_path / "old.pack"
    shutil.copy(root / "manifests" / "repo.pack", old)

    for fmt in ("markdown", "xml", "plain"):
        for mode in ("lite", "full"):
            out = _ok(run_cas("render", "repo", "--format", fmt, "--mode", mode, cwd=root), fmt)
            _no_forgery(out.out, f"render {fmt} {mode}")
            if fmt == "xml":
                ET.fromstring(out.out)  # well-formed: no control character in an attribute
            if fmt == "markdown":
                heads = [x for x in out.out.splitlines() if x.startswith("### ")]
                assert all(x.startswith("### `") for x in heads), heads
        split = tmp_path / f"split-{fmt}"
        _ok(
            run_cas("render", "repo", "--format", fmt, "--mode", "split", "-o", split, cwd=root), ""
        )
        for part in split.iterdir():
            _no_forgery(part.read_text(), f"split {fmt} {part.name!r}")

    (root / "new\nFORGED added.py").write_text("added = 1\n")
    (root / HOSTILE[0]).write_text("changed = 2\n")
    second = _ok(run_cas("pack", cwd=root), "second pack")
    _no_forgery(second.out + second.err, "second pack")
    for args in (
        ("show", "repo"),
        ("show", "repo", "--tree"),
        ("report", "repo"),
        ("diff", str(old), "repo"),
        ("verify",),
    ):
        out = _ok(run_cas(*args, cwd=root), " ".join(args))
        _no_forgery(out.out + out.err, " ".join(args))

    listed = _ok(run_cas("put", "-r", root / FOLDER, cwd=root), "put -r")
    _no_forgery(listed.out + listed.err, "put -r")
    missing = run_cas("put", root / "gone\nFORGED missing.txt", cwd=root)
    assert missing.code == 2
    _no_forgery(missing.out + missing.err, "put of a missing file")
    assert len(missing.err.splitlines()) == 1


def test_json_keeps_the_real_names(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _tree(root)
    packed = _ok(run_cas("pack", "--json", cwd=root), "pack --json")
    assert not RAW_CONTROLS.search(packed.out)  # escaped the JSON way, never raw
    report = json.loads(packed.out)
    assert "id_rsa\nFORGED key" in [w["path"] for w in report["withheld"]]
    assert "fifo\x1b[2J" in [n["path"] for n in report["notes"]]
    entries = json.loads(_ok(run_cas("show", "repo", "--json", cwd=root), "show").out)["entries"]
    paths = {e["path"] for e in entries}
    assert set(HOSTILE) <= paths
    assert f"{FOLDER}/inner.py" in paths


def _unshown(text: str) -> str:
    """The name `shown` was given: its quoted form read back (the test of unambiguity)."""
    if not text.startswith('"'):
        return text
    assert text.endswith('"') and len(text) >= 2
    out, i, body = [], 0, text[1:-1]
    simple = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"'}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            assert ch != '"'
            out.append(ch)
            i += 1
            continue
        kind = body[i + 1]
        if kind in simple:
            out.append(simple[kind])
            i += 2
        else:
            width = {"x": 2, "u": 4, "U": 8}[kind]
            code = int(body[i + 2 : i + 2 + width], 16)
            out.append(chr(code + 0xDC00) if kind == "x" and code >= 0x80 else chr(code))
            i += 2 + width
    return "".join(out)


@pytest.mark.parametrize("name", [*HOSTILE, FOLDER, "plain.py", "\udcff-not-utf8", '"q', "a\\n"])
def test_shown_is_one_line_and_reads_back(name: str) -> None:
    text = shown(name)
    assert not RAW_CONTROLS.search(text) and "\n" not in text
    assert _unshown(text) == name


@given(st.text())
def test_any_text_is_shown_on_one_line_and_reads_back(text: str) -> None:
    for out in (shown(text), one_line(text)):
        assert not RAW_CONTROLS.search(out)
        assert len(out.splitlines()) <= 1
    assert _unshown(shown(text)) == text
    back = json.loads(json_safe(json.dumps(text, ensure_ascii=False)))
    assert back == text


@given(st.text(max_size=3 * ECHO_LIMIT), st.integers(1, 2 * ECHO_LIMIT), st.booleans())
def test_an_echoed_value_is_its_first_characters_and_a_count_of_the_rest(
    value: str, limit: int, quoted: bool
) -> None:
    out = echoed(value, quoted=quoted, limit=limit)
    head, more = value[:limit], len(value) - limit
    written = repr(head) if quoted else shown(head)
    if more <= 0:
        assert out == written  # nothing cut, nothing said
    else:
        assert out == f"{written}... ({more:,} more character{'s' if more != 1 else ''})"
    # what is shown reads back to the value's first characters, on one line
    assert (ast.literal_eval(written) if quoted else _unshown(written)) == head
    assert len(one_line(out).splitlines()) <= 1


def test_a_megabyte_is_echoed_in_a_short_line() -> None:
    value = "the " * (1 << 18)
    out = echoed(value)
    assert out.startswith("'the the ") and out.endswith("... (1,048,376 more characters)")
    assert len(out) < ECHO_LIMIT + 40


def test_byte_counts_read_as_people_read_them() -> None:
    assert human_bytes(0) == "0 B" and human_bytes(1023) == "1023 B"
    assert human_bytes(1024) == "1.0 KiB" and human_bytes(1536) == "1.5 KiB"
    assert human_bytes(300 << 20) == "300.0 MiB" and human_bytes(5 << 40) == "5.0 TiB"
    assert human_bytes(1 << 60) == f"{(1 << 60) / (1 << 40):.1f} TiB"  # no unit past TiB
