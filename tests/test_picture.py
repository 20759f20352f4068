"""`cas report`'s page and `cas show --tree`'s table, built from manifests in memory: the same
manifest gives the same bytes, names never become markup, and the page asks for nothing from
elsewhere. The page in a real browser: tests/test_picture_in_chromium.py."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from cas.digest import Digest
from cas.manifest import Entry, Manifest
from packer.picture import HEIGHT, WIDTH, html_report, page_data, token_tree

DIGEST = Digest(bytes(range(32)))
HOSTILE = [
    "</script><script>alert(1)</script>.py",
    "<img src=x onerror=alert(1)>.md",
    "q\"uote's & amp.txt",
    "ctl\x01\x1b[31m\n.md",
    "\u202eevil.txt",
]


def manifest(entries: list[Entry], **totals: object) -> Manifest:
    entries = sorted(entries, key=lambda e: e.path.encode("utf-8", "surrogateescape"))
    return Manifest("repo", "claude", "o200k_base", 100, 120, tuple(entries), totals=dict(totals))


def sample() -> Manifest:
    return manifest(
        [
            Entry("README.md", DIGEST, 300, "high", 60, reason="project overview"),
            Entry("src/app.py", DIGEST, 900, "medium", 25, summary=DIGEST, reason="source"),
            Entry("src/util.py", DIGEST, 400, "low", 0, reason="source"),
            Entry("data/big.csv", DIGEST, 50_000, "low", 8, reason="data", listed=True),
            Entry(".env", None, 40, "low", 0, reason="secret: env file"),
        ],
        tokens={"markdown": 110},
    )


def data_block(page: str) -> dict:  # type: ignore[type-arg]
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert found
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_the_page_holds_every_file_its_tier_and_the_budget() -> None:
    data = page_data(sample(), "repo.claude", str(DIGEST))
    assert [f[:2] for f in data["files"]] == [
        [".env", 3],
        ["README.md", 0],
        ["data/big.csv", 2],
        ["src/app.py", 1],
        ["src/util.py", 2],
    ]
    assert data["budget"] == {"target": 100, "max": 120}
    assert data["used"] == 110 and data["overhead"] == 110 - 93
    assert data["totals"]["files"] == [1, 1, 2, 1]
    assert data["totals"]["tokens"] == [60, 25, 8, 0]
    assert data["totals"]["bytes"] == [300, 900, 50_400, 40]
    for measure in ("tokens", "bytes"):
        files = data["layouts"][measure]["files"]
        assert len(files) == 4 * len(data["files"])
        areas = [files[i + 2] * files[i + 3] for i in range(0, len(files), 4)]
        assert sum(areas) == WIDTH * HEIGHT and min(areas) > 0
    by_bytes = data["layouts"]["bytes"]["files"]
    assert by_bytes[4 * 2 + 2] * by_bytes[4 * 2 + 3] > WIDTH * HEIGHT * 9 // 10  # the csv
    assert [f[0] for f in data["folders"]] == [".", "data", "src"]


def test_the_same_manifest_gives_the_same_bytes() -> None:
    a = html_report(sample(), "repo.claude", str(DIGEST))
    b = html_report(sample(), "repo.claude", str(DIGEST))
    assert a == b
    assert a.isascii()
    assert html_report(sample(), "repo.claude", "blake3:" + "0" * 64) != a


def test_the_page_asks_for_nothing_from_elsewhere() -> None:
    page = html_report(sample(), "repo.claude", str(DIGEST))
    assert not re.search(r"\b(src|href)\s*=|@import|url\(|@font-face", page)
    # the one address is the SVG namespace, a name and never fetched
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"] * 2
    assert "default-src 'none'" in page


@given(st.lists(st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s), max_size=5))
def test_no_name_becomes_markup(extra: list[str]) -> None:
    names = sorted(set(HOSTILE + extra))
    m = manifest([Entry(n, DIGEST, 10, "low", 0, reason=f"why <{n}>") for n in names])
    page = html_report(m, "repo.claude", str(DIGEST))
    rest = page.partition('<script type="application/json" id="data">')[2]
    block, _, tail = rest.partition("</script>")
    assert not re.search(r"[<>&]", block)
    assert page.count("<script") == 2 and page.count("</script>") == 2
    data = data_block(page)
    shown = [f[0] for f in data["files"]]
    assert "</script><script>alert(1)</script>.py" in shown
    assert '"ctl\\x01\\x1b[31m\\n.md"' in shown and '"\\u202eevil.txt"' in shown
    assert len(shown) == len(names)
    # the script writes names as text only
    assert "innerHTML" not in tail and "insertAdjacentHTML" not in tail
    assert "document.write" not in tail


def test_token_tree_sorts_by_tokens_and_stops_at_the_depth() -> None:
    lines = list(token_tree(sample(), depth=3))
    head = ["tokens", "bytes", "files", "full", "summary", "omitted", "withheld", "path"]
    assert lines[0].split() == head
    rows = [line.split() for line in lines[1:]]
    assert rows[0] == ["93", "51640", "5", "1", "1", "2", "1", "./"]
    assert [r[-1] for r in rows[1:]] == [
        "README.md",
        "src/",
        "app.py",
        "util.py",
        "data/",
        "big.csv",
        ".env",
    ]
    assert rows[2] == ["25", "1300", "2", "0", "1", "1", "0", "src/"]
    assert rows[-1] == ["0", "40", "1", "0", "0", "0", "1", ".env"]
    shallow = [line.split()[-1] for line in token_tree(sample(), depth=1)]
    assert shallow[2:] == ["README.md", "src/", "data/", ".env"]
    assert len(list(token_tree(sample(), depth=0))) == 2


def test_token_tree_shows_names_on_one_line() -> None:
    m = manifest([Entry("a\nb/c\x1b.py", DIGEST, 1, "high", 3)])
    lines = list(token_tree(m))
    assert len(lines) == 4
    assert lines[2].endswith('"a\\nb/"') and lines[3].endswith('"c\\x1b.py"')
