"""`cas report` and `cas show --tree` end to end on a packed project, and the page seen in a real
browser: Debian's Chromium, headless, takes a screenshot (which must show the treemap in the
tiers' colours) and dumps the DOM its script built (which must list the omitted and withheld
files, hostile names as text). `.ci/run` installs Chromium where it runs as root."""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from cas import manifest as mf
from packer.picture import page_data
from tests.conftest import run_cas
from tests.packfixture import build_tree

CHROMIUM = shutil.which("chromium")
# As root on a closed network: no sandbox (root cannot have one), and none of the background
# requests Chromium makes at start (each refused here, some retried).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium (`.ci/run` installs Debian's package as root)"
)
TIER_RGB = {  # the page's colours of the tiers (packer/picture.py)
    "full": (0x2F, 0x9E, 0x44),
    "summary": (0x42, 0x63, 0xEB),
    "omitted": (0xAD, 0xB5, 0xBD),
    "withheld": (0xE0, 0x31, 0x31),
}
# names that would run or add markup if a page wrote them as HTML
SCRIPT_DIR = "<script>document.body.setAttribute('data-pwned','1')<"
IMG_NAME = "<img src=x onerror=document.body.setAttribute('data-img','1')>.md"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_tree(tmp_path_factory.mktemp("picture") / "repo")
    (root / SCRIPT_DIR).mkdir()
    (root / SCRIPT_DIR / "script>.py").write_text("def hostile():\n    return 1\n")
    (root / "docs" / IMG_NAME).write_text("# Image\n\nA name with a tag in it.\n")
    (root / "data").mkdir()
    for i in range(12):
        rows = "".join(f"{j},{j * j}\n" for j in range(200))
        (root / "data" / f"table_{i:02}.csv").write_text("a,b\n" + rows)
    (root / "cas.toml").write_text(
        '[scopes.repo]\nroots = ["."]\n[scopes.repo.targets.small]\ntarget = 400\nmax = 500\n'
    )
    assert run_cas("init", "--store-only", cwd=root).code == 0
    r = run_cas("pack", cwd=root, timeout=300)
    assert r.code == 0, r.err
    return root


def manifest_of(root: Path) -> mf.Manifest:
    return mf.decode((root / "manifests" / "repo.small.pack").read_bytes())


def test_report_writes_one_page_the_same_every_time(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "pack.html"
    r = run_cas("report", "repo.small", "-o", out, cwd=project)
    assert (r.code, r.out, r.err) == (0, "", "")
    page = out.read_bytes()
    assert page.startswith(b"<!DOCTYPE html>")
    again = run_cas("report", "manifests/repo.small.pack", cwd=project)
    assert again.code == 0 and again.stdout_bytes == page
    # the page holds the manifest's digest, so it names the pack it shows
    digest = run_cas("show", "repo.small", "--json", cwd=project)
    assert json.loads(digest.out)["digest"].encode() in page


def test_report_exit_codes(project: Path, tmp_path: Path) -> None:
    r = run_cas("report", "nope", cwd=project)
    assert r.code == 1 and "pack 'nope' not found" in r.err and r.out == ""
    r = run_cas("report", "repo.small", "-o", "/dev/full", cwd=project)
    assert r.code == 2 and "cannot write /dev/full" in r.err
    (tmp_path / "folder").mkdir()
    r = run_cas("report", "repo.small", "-o", tmp_path / "folder", cwd=project)
    assert r.code == 2 and r.err.count("\n") == 1


def test_show_tree_totals_each_folder_by_tier(project: Path) -> None:
    m = manifest_of(project)
    r = run_cas("show", "repo.small", "--tree", cwd=project)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith(str(project / "manifests" / "repo.small.pack"))
    assert lines[1].split()[-1] == "path"
    root = lines[2].split()
    assert root[-1] == "./" and int(root[0]) == sum(e.tokens for e in m.entries)
    assert int(root[2]) == len(m.entries) and int(root[6]) == 2  # .env and keys/id_rsa
    data = next(line.split() for line in lines if line.split()[-1] == "data/")
    assert data[:3] == ["0", str(12 * 1748), "12"] and data[5] == "12"  # every table omitted
    assert any(line.endswith("      table_00.csv") for line in lines)
    top = [line for line in lines[3:] if re.match(r"(\s+\d+){7}    \S", line)]
    assert [int(t.split()[0]) for t in top] == sorted(
        (int(t.split()[0]) for t in top), reverse=True
    )
    # the first level sorted by tokens, the levels below indented under their folder
    assert len(top) == 11 and any(re.match(r"(\s+\d+){7}      \S", line) for line in lines)
    shallow = run_cas("show", "repo.small", "--tree", "--depth", "1", cwd=project)
    assert shallow.out.splitlines()[3:] == top
    r = run_cas("show", "repo.small", "--tree", "--json", cwd=project)
    assert r.code == 2 and "--tree" in r.err


# --- in the browser --------------------------------------------------------------------------


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    return proc


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """The width, height and rows (RGB, 3 bytes a pixel) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", head)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        prev = line
        rows.append(bytes(line) if bpp == 3 else bytes(v for i, v in enumerate(line) if i % 4 != 3))
    return width, height, rows


@needs_chromium
def test_the_page_shows_the_treemap_in_the_tiers_colours(project: Path, tmp_path: Path) -> None:
    page = tmp_path / "pack.html"
    assert run_cas("report", "repo.small", "-o", page, cwd=project).code == 0
    shot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    width, height, rows = read_png(shot.read_bytes())
    assert (width, height) == (1200, 900)
    pixels: Counter[bytes] = Counter()
    for row in rows:
        pixels.update(row[i : i + 3] for i in range(0, len(row), 3))
    white = pixels[b"\xff\xff\xff"]
    assert white < width * height * 3 // 4, "the page is mostly blank"
    assert len(pixels) > 16
    # Each tier's colour covers at least half the area the layout gives it (drawn a little
    # smaller than the layout's 1200 wide, with a thin white edge around every file); the
    # legend's swatches and the budget bar are far smaller than that.
    data = page_data(manifest_of(project), "repo.small", "")
    files = data["layouts"]["tokens"]["files"]
    area = Counter[str]()
    for i, f in enumerate(data["files"]):
        area[data["tiers"][f[1]]] += files[4 * i + 2] * files[4 * i + 3]
    assert {t for t, a in area.items() if a} >= {"full", "omitted", "withheld"}
    for tier, rgb in TIER_RGB.items():
        assert pixels[bytes(rgb)] >= area[tier] // 2, (tier, pixels[bytes(rgb)], area[tier])


@needs_chromium
def test_the_page_lists_omitted_and_withheld_files_names_as_text(
    project: Path, tmp_path: Path
) -> None:
    page = tmp_path / "pack.html"
    assert run_cas("report", "repo.small", "-o", page, cwd=project).code == 0
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout.decode("utf-8")
    m = manifest_of(project)
    omitted = [e for e in m.entries if e.tier == "low" and not e.withheld]
    withheld = [e for e in m.entries if e.withheld]
    assert len(omitted) > 12 and [e.path for e in withheld] == [".env", "keys/id_rsa"]

    def rows_of(table: str) -> list[str]:
        found = re.search(rf'<table id="{table}">(.*?)</table>', dom, re.S)
        assert found, table
        return re.findall(r'<td class="p">(.*?)</td>', found.group(1))

    assert rows_of("omitted") == [html.escape(e.path, quote=False) for e in omitted]
    assert rows_of("withheld") == [".env", "keys/id_rsa"]
    assert f"({len(omitted)})" in dom
    # hostile names are text in the page, in the lists and the treemap's titles alike
    held = f"{SCRIPT_DIR}/script>.py"
    assert m.entry(held) is not None and m.entry(f"docs/{IMG_NAME}") is not None
    assert html.escape(held, quote=False) in dom
    assert html.escape(f"docs/{IMG_NAME}", quote=False) in dom
    assert "data-pwned=" not in dom and "data-img=" not in dom
    assert "<img" not in dom and dom.count("<script") == 2
    assert "<title>cas report: repo.small</title>" in dom


@needs_chromium
def test_the_filter_narrows_the_treemap_and_the_lists(project: Path, tmp_path: Path) -> None:
    page = tmp_path / "pack.html"
    assert run_cas("report", "repo.small", "-o", page, cwd=project).code == 0
    dom = chromium(tmp_path, "--dump-dom", page.as_uri() + "#filter=DATA%2Ftable_0").stdout
    text = dom.decode("utf-8")
    m = manifest_of(project)
    omitted = [e for e in m.entries if e.tier == "low" and not e.withheld]
    assert '<input type="search" id="filter"' in text
    assert f"10 of {len(m.entries)} files match" in text  # by substring, in any case
    assert f'<span class="count" id="omitted-count">(10 of {len(omitted)})</span>' in text
    assert '<span class="count" id="withheld-count">(0 of 2)</span>' in text
    rows = re.findall(r'<tr( class="off")?><td class="p">(.*?)</td>', text)
    shown = [path for off, path in rows if not off]
    assert shown == [f"data/table_0{i}.csv" for i in range(10)]
    # the files that match keep their colour, the others fade
    assert len(re.findall(r'<rect class="f t2"[ >]', text)) == 10
    assert len(re.findall(r'<rect class="f t\d off"', text)) == len(m.entries) - 10
