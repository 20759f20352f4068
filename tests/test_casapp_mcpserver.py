"""`cas mcp` end to end: the real server in its own process, driven by the official MCP SDK's
own clients (stdio and streamable HTTP) against a project packed by the real `cas pack`.

Every tool is called with good arguments and its answer checked against the files on disk and
the pack's manifest; malformed calls are one-line tool errors after which the server goes on;
nothing outside the store changes while the server runs."""

from __future__ import annotations

import datetime as dt
import json
import queue
import random
import re
import shutil
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from cas import Store
from memory import entries
from tests.conftest import cas_env, run_cas
from tests.secret_corpus import Values, pieces

TOOLS = {"list_packs", "render_pack", "read_file", "search", "load", "verify"}
MEMORY_TOOLS = {"remember", "recall", "facts", "context", "add_turn"}
ENTRY_TOOLS = {
    "memory_write", "memory_get", "memory_edit", "memory_delete", "memory_search", "curate",
    "compact",
}  # fmt: skip
SESSION_TIMEOUT = 120.0

CART_PY = '''"""Shopping carts."""


class Cart:
    """A cart of items."""

    def __init__(self) -> None:
        self.items: list[tuple[str, float]] = []

    def add_item(self, name: str, price: float) -> None:
        """Add one item."""
        self.items.append((name, price))


def compute_cart_total(cart: Cart) -> float:
    """Sum of the prices in CART."""
    return sum(price for _, price in cart.items)
'''

DISCOUNT_PY = '''"""Discounts."""


def apply_discount(total: float, percent: float) -> float:
    """TOTAL reduced by PERCENT."""
    return total * (1 - percent / 100)
'''

CART_TOTAL_DEF = "def compute_cart_total(cart: Cart) -> float:"
DISCOUNT_DEF = "def apply_discount(total: float, percent: float) -> float:"


# --- the project ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small shop packed by `cas pack`: two modules in full, a large generated module, and a
    large data file that the pack omits (tier low)."""
    root = tmp_path_factory.mktemp("mcp") / "shop"
    (root / "src" / "shop").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "README.md").write_text("# Shop\n\nA tiny shop: carts, prices and discounts.\n")
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    (root / "src" / "shop" / "cart.py").write_text(CART_PY)
    (root / "src" / "shop" / "discount.py").write_text(DISCOUNT_PY)
    table = ['"""Generated price table."""', "", "PRICES = {"]
    table += [f'    "item_{i:05d}": {i * 1.25:.2f},  # catalogue item {i}' for i in range(4000)]
    (root / "src" / "shop" / "price_table.py").write_text("\n".join([*table, "}", ""]))
    (root / "data" / "catalogue.csv").write_text(
        "sku,name,price\n" + "".join(f"{i},item number {i},{i * 1.25:.2f}\n" for i in range(20000))
    )
    r = run_cas("pack", cwd=root, timeout=300)
    assert r.code == 0, r.err
    assert sorted(p.name for p in (root / "manifests").iterdir()) == ["repo.pack"]
    return root


def show(project: Path) -> dict[str, Any]:
    r = run_cas("show", "repo", "--json", cwd=project)
    assert r.code == 0, r.err
    out: dict[str, Any] = json.loads(r.out)
    return out


def tiers(project: Path) -> dict[str, str]:
    return {e["path"]: e["tier"] for e in show(project)["entries"]}


def snapshot(project: Path) -> dict[str, bytes]:
    """Every file of the project outside the store, with its bytes."""
    return {
        p.relative_to(project).as_posix(): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file() and ".cas" not in p.relative_to(project).parts
    }


# --- talking to the server --------------------------------------------------------------------


def text(res: types.CallToolResult) -> str:
    assert res.content, res
    block = res.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def ok(res: types.CallToolResult) -> str:
    assert not res.is_error, text(res)
    return text(res)


def structured(res: types.CallToolResult) -> Any:
    assert not res.is_error, text(res)
    assert isinstance(res.structured_content, dict), res.structured_content
    return res.structured_content.get("result", res.structured_content)


def assert_tool_error(res: types.CallToolResult, *needles: str) -> str:
    """A tool error: one content block holding one line that names what was wrong."""
    assert res.is_error, res
    assert len(res.content) == 1, res.content
    msg = text(res)
    assert msg.strip() and "\n" not in msg.strip(), f"not one line: {msg!r}"
    assert "Traceback" not in msg, msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    return msg


async def still_serving(s: ClientSession) -> None:
    packs = structured(await s.call_tool("list_packs", {}))
    assert [p["name"] for p in packs] == ["repo"]


Body = Callable[[ClientSession], Awaitable[None]]


def run_stdio(project: Path, body: Body, *args: str) -> str:
    """Start `cas mcp ARGS` in PROJECT through the SDK's stdio client, run BODY on an
    initialized session, and check nothing outside the store changed. Returns the server's
    stderr."""
    before = snapshot(project)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "cas", "mcp", *args],
        cwd=str(project),
        env=cas_env(),
    )

    async def main(errlog: Any) -> None:
        with anyio.fail_after(SESSION_TIMEOUT):
            async with (
                stdio_client(params, errlog=errlog) as (r, w),
                ClientSession(r, w) as s,
            ):
                init = await s.initialize()
                assert init.server_info.name == "cas"
                assert init.instructions and "list_packs" in init.instructions
                await body(s)

    with tempfile.TemporaryFile("w+") as errlog:
        anyio.run(main, errlog)
        errlog.seek(0)
        err = errlog.read()
    assert "Traceback" not in err, err
    after = snapshot(project)
    assert sorted(after) == sorted(before)
    assert [p for p in before if before[p] != after[p]] == []
    assert not (project / "manifests" / "load.pack").exists()
    return err


# --- the tests -------------------------------------------------------------------------------


def test_every_tool_answers_with_the_projects_content(project: Path) -> None:
    manifest = show(project)
    tier = {e["path"]: e["tier"] for e in manifest["entries"]}
    low = [p for p, t in tier.items() if t == "low"]
    assert low == ["data/catalogue.csv"]  # the large data file is omitted from the render
    assert tier["src/shop/cart.py"] == "high"
    cart_lines = CART_PY.splitlines(keepends=True)
    def_line = cart_lines.index(CART_TOTAL_DEF + "\n") + 1

    async def body(s: ClientSession) -> None:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS | MEMORY_TOOLS | ENTRY_TOOLS
        assert len((await s.list_tools()).tools) == len(TOOLS | MEMORY_TOOLS | ENTRY_TOOLS)

        # list_packs: the one pack, as the manifest on disk has it
        packs = structured(await s.call_tool("list_packs", {}))
        assert [p["name"] for p in packs] == ["repo"]
        (repo,) = packs
        assert repo["digest"] == manifest["digest"]
        assert repo["files"] == len(manifest["entries"]) == 5
        assert repo["tiers"] == {
            t: sum(1 for v in tier.values() if v == t) for t in ("high", "medium", "low")
        }
        assert repo["budget"] == {"target": 3000, "max": 3000}

        # render_pack: lite leaves the low file out, full inlines it
        lite = ok(await s.call_tool("render_pack", {"pack": "repo"}))
        assert lite.startswith("# Context pack `repo`")
        assert CART_TOTAL_DEF in lite and DISCOUNT_DEF in lite
        assert "1 omitted" in lite and "item number 19999" not in lite
        full = ok(await s.call_tool("render_pack", {"pack": "repo", "mode": "full"}))
        assert full.startswith("# Context pack `repo`")
        assert "item number 19999,24998.75" in full
        xml = ok(await s.call_tool("render_pack", {"pack": "repo", "format": "xml"}))
        assert xml != lite and CART_TOTAL_DEF in xml
        # ... and by digest, the same pack
        by_digest = ok(await s.call_tool("render_pack", {"pack": manifest["digest"]}))
        assert by_digest == lite

        # read_file: every file's exact bytes, the omitted one too
        for path in tier:
            body_text = ok(await s.call_tool("read_file", {"pack": "repo", "path": path}))
            assert body_text.encode() == (project / path).read_bytes(), path
        # ... and exactly the lines asked for
        part = ok(
            await s.call_tool(
                "read_file", {"pack": "repo", "path": "src/shop/cart.py", "first": 4, "last": 6}
            )
        )
        assert part == "".join(cart_lines[3:6])
        assert part.startswith("class Cart:\n") and part.count("\n") == 3
        tail = ok(
            await s.call_tool(
                "read_file", {"pack": "repo", "path": "src/shop/cart.py", "first": def_line}
            )
        )
        assert tail == "".join(cart_lines[def_line - 1 :]) and tail.startswith(CART_TOTAL_DEF)
        head = ok(
            await s.call_tool(
                "read_file", {"pack": "repo", "path": "data/catalogue.csv", "last": 2}
            )
        )
        assert head == "sku,name,price\n0,item number 0,0.00\n"

        # search: the file defining the name first, its line range covering the definition
        hits = structured(await s.call_tool("search", {"query": "compute_cart_total"}))
        assert hits[0]["path"] == "src/shop/cart.py"
        first, last = hits[0]["lines"]
        assert first <= def_line <= last
        assert {"line": def_line, "text": CART_TOTAL_DEF} in hits[0]["snippet"]
        assert hits[0]["packs"] == ["repo"]
        assert hits[0]["digest"] == next(
            e["digest"] for e in manifest["entries"] if e["path"] == "src/shop/cart.py"
        )
        one = structured(
            await s.call_tool("search", {"query": "apply_discount", "pack": "repo", "k": 1})
        )
        assert len(one) == 1 and one[0]["path"] == "src/shop/discount.py"
        assert one[0]["lines"][0] <= 4 <= one[0]["lines"][1]

        # load: the question's function in full, with the question named
        loaded = ok(
            await s.call_tool(
                "load", {"query": "How does compute_cart_total add up a cart?", "budget": 2000}
            )
        )
        assert "Loaded for the question" in loaded and "compute_cart_total" in loaded
        assert CART_TOTAL_DEF in loaded
        assert "at most 2000 tokens" in loaded
        default = ok(await s.call_tool("load", {"query": "What does apply_discount do?"}))
        assert "Loaded for the question" in default and DISCOUNT_DEF in default
        # nothing was written: the project still has its one pack
        await still_serving(s)

        # verify: whole, and not recorded
        report = structured(await s.call_tool("verify", {}))
        assert report["ok"] is True and report["problems"] == []
        assert report["manifests"] == 1 and report["checked"] >= 5
        assert report["recorded"] is False

        # resources: each pack's lite render
        uris = [str(r.uri) for r in (await s.list_resources()).resources]
        assert "cas://pack/repo" in uris
        read = await s.read_resource("cas://pack/repo")
        assert len(read.contents) == 1
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert content.text == lite

    run_stdio(project, body)


def test_malformed_calls_are_one_line_tool_errors_and_the_server_goes_on(project: Path) -> None:
    async def body(s: ClientSession) -> None:
        calls: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
            ("render_pack", {"pack": "nope"}, ("'nope'", "not found")),
            ("read_file", {"pack": "nope", "path": "README.md"}, ("'nope'", "not found")),
            ("render_pack", {"pack": "../etc/passwd"}, ("../etc/passwd", "not a path")),
            ("render_pack", {"pack": "/etc/passwd"}, ("/etc/passwd", "not a path")),
            ("read_file", {"pack": "../etc/passwd", "path": "x"}, ("not a path",)),
            ("read_file", {"pack": "/etc", "path": "passwd"}, ("not a path",)),
            ("search", {"query": "cart", "pack": "../repo"}, ("not a path",)),
            ("render_pack", {"pack": ""}, ("not a path",)),
            ("render_pack", {"pack": "blake3:00"}, ("blake3:00",)),
            ("read_file", {"pack": "repo", "path": "../../etc/passwd"}, ("../../etc/passwd",)),
            ("read_file", {"pack": "repo", "path": "/etc/passwd"}, ("/etc/passwd",)),
            ("read_file", {"pack": "repo", "path": "cas.toml"}, ("cas.toml", "not found")),
            ("read_file", {"pack": "repo", "path": ".cas/data.mdb"}, ("not found",)),
            ("read_file", {"pack": "repo", "path": "README.md", "first": 0}, ("first=0",)),
            ("read_file", {"pack": "repo", "path": "README.md", "first": 99}, ("past the end",)),
            (
                "read_file",
                {"pack": "repo", "path": "README.md", "first": 3, "last": 2},
                ("last=2 is before first=3",),
            ),
            ("search", {"query": "cart", "k": 0}, ("k=0",)),
            ("search", {"query": "cart", "k": 101}, ("k=101",)),
            ("load", {"query": "apply_discount", "budget": 0}, ("budget 0",)),
            ("load", {"query": "apply_discount", "budget": -5}, ("budget -5",)),
            ("render_pack", {"pack": "repo", "mode": "bogus"}, ("'bogus'",)),
            ("render_pack", {"pack": "repo", "mode": "split", "part": "no.md"}, ("'no.md'",)),
            ("render_pack", {"pack": "repo", "part": "src.md"}, ("only mode 'split'",)),
            ("render_pack", {"pack": "repo", "format": "json"}, ("'json'",)),
            ("search", {"query": "what is the"}, ("what is the", "stop words")),
            ("load", {"query": "what is the"}, ("what is the", "stop words")),
            ("no_such_tool", {}, ("no_such_tool",)),
        ]
        for name, args, needles in calls:
            assert_tool_error(await s.call_tool(name, args), *needles)
            await still_serving(s)
        # a missing required argument, and one of the wrong type: tool errors, server goes on
        invalid: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"pack": "repo"}),
            ("render_pack", {}),
            ("search", {}),
            ("load", {"budget": 10}),
            ("search", {"query": "cart", "k": "many"}),
        ]
        for name, args in invalid:
            res = await s.call_tool(name, args)
            assert res.is_error, (name, args, res)
            assert "Traceback" not in text(res)
            await still_serving(s)
        # after all that, a good call still answers in full
        cart = ok(await s.call_tool("read_file", {"pack": "repo", "path": "src/shop/cart.py"}))
        assert cart == CART_PY

    run_stdio(project, body)


def test_read_file_gives_lines_first_to_last_counted_from_1_and_refuses_any_other(
    project: Path,
) -> None:
    """1-based and inclusive; a last past the end reads to the end; zero, a negative number, a
    first past the end or a last before the first: one line giving the range there is. (Before:
    last=-1 gave the file without its last line, last=0 gave "".)"""
    lines = CART_PY.splitlines(keepends=True)
    n = len(lines)
    valid = f"src/shop/cart.py has lines 1 to {n}"

    async def body(s: ClientSession) -> None:
        async def read(**lines_asked: int) -> Any:
            args = {"pack": "repo", "path": "src/shop/cart.py", **lines_asked}
            return await s.call_tool("read_file", args)

        assert ok(await read(first=1, last=1)) == lines[0]
        assert ok(await read(first=n, last=n)) == lines[-1]
        assert ok(await read(first=n - 1)) == "".join(lines[-2:])
        assert ok(await read(last=2)) == "".join(lines[:2])
        assert ok(await read(first=2, last=n + 50)) == "".join(lines[1:])
        assert ok(await read(first=1, last=n)) == CART_PY
        for asked, needle in [
            ({"last": -1}, "last=-1"),
            ({"last": 0}, "last=0"),
            ({"first": 0}, "first=0"),
            ({"first": -3, "last": 2}, "first=-3"),
            ({"first": n + 1}, f"first={n + 1} is past the end"),
            ({"first": 5, "last": 4}, "last=4 is before first=5"),
        ]:
            assert_tool_error(await read(**asked), needle, valid)
        await still_serving(s)

    run_stdio(project, body)


def test_an_argument_a_tool_does_not_take_is_refused_by_every_tool(project: Path) -> None:
    """Every tool lists its arguments as all it takes (additionalProperties false) and refuses a
    call with any other, naming it and the ones it takes, before it runs: a misspelt ``k`` is
    not silently a search for 10."""

    async def body(s: ClientSession) -> None:
        tools = (await s.list_tools()).tools
        assert {t.name for t in tools} == TOOLS | MEMORY_TOOLS | ENTRY_TOOLS
        for tool in tools:
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            takes = list(tool.input_schema.get("properties", {}))
            msg = assert_tool_error(
                await s.call_tool(tool.name, {"bogus_arg": 1}), "unknown argument bogus_arg"
            )
            assert msg.startswith(f"{tool.name}: ") and msg.endswith(", ".join(takes) or "none")
        msg = assert_tool_error(
            await s.call_tool("search", {"query": "cart", "K": 1, "packs": ["repo"]}),
            "unknown arguments K, packs",
            "query, pack, k",
        )
        assert_tool_error(
            await s.call_tool("read_file", {"pack": "repo", "path": "README.md", "x" * 10_000: 1}),
            "more characters)",
        )
        # the memory tools too, though this server has no memory: the arguments come first
        assert_tool_error(await s.call_tool("remember", {"text": "t", "scop": "global"}), "scop")
        await still_serving(s)

    run_stdio(project, body)


def test_argument_validation_errors_are_one_line(project: Path) -> None:
    async def body(s: ClientSession) -> None:
        assert_tool_error(await s.call_tool("read_file", {"pack": "repo"}), "path")
        assert_tool_error(await s.call_tool("search", {"query": "x", "k": "many"}), "k")

    run_stdio(project, body)


def test_huge_arguments_are_echoed_cut_with_a_count(project: Path) -> None:
    """A 1 MiB query, a 10 KB pack name: the error line quotes the first characters and counts
    the rest."""
    query = "the " * (1 << 18)

    async def body(s: ClientSession) -> None:
        for tool in ("search", "load"):
            msg = assert_tool_error(
                await s.call_tool(tool, {"query": query}), "stop words", "'the the the"
            )
            assert "... (1,048,376 more characters)" in msg and len(msg) < 500, msg
        for args in ({"pack": "p" * 10_000}, {"pack": "p/" * 5_000}):
            msg = assert_tool_error(await s.call_tool("render_pack", args), "more characters)")
            assert len(msg) < 500, msg
        await still_serving(s)

    run_stdio(project, body)


def _lines(stream: Any, out: queue.Queue[bytes | None]) -> None:
    for line in iter(stream.readline, b""):
        out.put(line)
    out.put(None)


def test_garbage_on_stdin_is_no_traceback_and_the_server_goes_on(project: Path) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "list_packs", "arguments": {}},
    }
    lines = [
        json.dumps(init).encode(),
        b"garbage line {{{ not json",
        b"\xff\xfe not even UTF-8",
        b'{"foo": 1}',
        b"[1, 2]",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        json.dumps(call).encode(),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "cas", "mcp"],
        cwd=project,
        env=cas_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    got: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, got), daemon=True).start()
    out: list[bytes] = []
    try:
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not any(b'"id":2' in line.replace(b" ", b"") for line in out):
            line = got.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, f"stdout closed early: {out!r}"
            out.append(line)
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    while (rest := got.get(timeout=10)) is not None:
        out.append(rest)
    proc.stdout.close()
    stdout = b"".join(out).decode("utf-8", "replace")
    assert "Traceback" not in stdout, stdout
    assert "Traceback" not in err, err
    # nothing but protocol: every line on stdout is a JSON-RPC message
    messages = [json.loads(line) for line in out]
    assert all(m.get("jsonrpc") == "2.0" for m in messages), messages
    answers = {m["id"]: m for m in messages if "id" in m and m["id"] is not None}
    assert answers[1]["result"]["serverInfo"]["name"] == "cas"
    assert answers[2]["result"]["isError"] is False
    assert answers[2]["result"]["structuredContent"]["result"][0]["name"] == "repo"
    assert proc.returncode == 0, err


@pytest.fixture
def http_server(project: Path) -> Iterator[int]:
    """`cas mcp --http PORT` in its own process, until the test is over."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "cas", "mcp", "--http", str(port)],
        cwd=project,
        env=cas_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"cas mcp --http exited {proc.returncode}: {err.decode()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"cas mcp --http did not listen on 127.0.0.1:{port} in 20 s")
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
    assert b"Traceback" not in out + err, (out + err).decode("utf-8", "replace")


def test_http_mode_serves_the_same_tools(project: Path, http_server: int) -> None:
    before = snapshot(project)

    async def main() -> None:
        with anyio.fail_after(SESSION_TIMEOUT):
            url = f"http://127.0.0.1:{http_server}/mcp"
            async with streamable_http_client(url) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                assert {
                    t.name for t in (await s.list_tools()).tools
                } == TOOLS | MEMORY_TOOLS | ENTRY_TOOLS
                await still_serving(s)
                assert_tool_error(
                    await s.call_tool("read_file", {"pack": "repo", "path": "/etc/passwd"}),
                    "/etc/passwd",
                )
                got = ok(
                    await s.call_tool("read_file", {"pack": "repo", "path": "src/shop/discount.py"})
                )
                assert got == DISCOUNT_PY
                await still_serving(s)

    anyio.run(main)
    assert snapshot(project) == before


def test_memory_is_remembered_across_sessions_of_a_scope_and_never_seen_from_another(
    project: Path,
) -> None:
    """Session a remembers a fact and a note; a later server for session a recalls both; a
    server for session b sees neither, and is refused session a's memory when it asks."""

    async def first(s: ClientSession) -> None:
        done = structured(await s.call_tool("remember", {"text": "the flaky test is test_gc"}))
        assert done["scope"] == "session:a" and done["path"].startswith("logs/")
        facts = structured(await s.call_tool("facts", {"key": "db", "value": "postgres 16"}))
        assert facts == {"db": "postgres 16"}

    async def later(s: ClientSession) -> None:
        hits = structured(await s.call_tool("recall", {"query": "flaky"}))
        assert [h["scope"] for h in hits] == ["session:a"]
        assert hits[0]["path"].startswith("logs/") and hits[0]["lines"] == [3, 3]
        (hit,) = hits[0]["snippet"]  # the entry with its id, to act on it by
        assert (
            hit["line"] == 3 and entries.split_id(hit["text"])[0] == "- the flaky test is test_gc"
        )
        assert (
            structured(await s.call_tool("memory_get", {"id": entries.split_id(hit["text"])[1]}))[
                "text"
            ]
            == "the flaky test is test_gc"
        )
        by_value = structured(await s.call_tool("recall", {"query": "postgres"}))
        assert [(h["path"], h["snippet"]) for h in by_value] == [
            ("facts/db.md", [{"line": 3, "text": "value: postgres 16"}])
        ]
        assert structured(await s.call_tool("facts", {})) == {"db": "postgres 16"}
        assert structured(await s.call_tool("facts", {"key": "db"})) == {"db": "postgres 16"}

    async def other(s: ClientSession) -> None:
        assert structured(await s.call_tool("recall", {"query": "flaky"})) == []
        assert structured(await s.call_tool("facts", {})) == {}
        assert_tool_error(
            await s.call_tool("recall", {"query": "flaky", "scope": "session:a"}),
            "'session:a' is not one this server may use",
        )
        assert_tool_error(await s.call_tool("facts", {"key": "db"}), "no such fact")
        await still_serving(s)

    async def none(s: ClientSession) -> None:
        assert_tool_error(await s.call_tool("remember", {"text": "x"}), "--memory-scope")
        await still_serving(s)

    run_stdio(project, first, "--memory-scope", "session:a")
    run_stdio(project, later, "--memory-scope", "session:a", "--memory-scope", "global")
    run_stdio(project, other, "--memory-scope", "session:b")
    run_stdio(project, none)
    r = run_cas("mcp", "--memory-scope", "team:x", cwd=project)
    assert r.code == 2 and "is not one" in r.err


def test_agents_reading_facts_are_counted_as_uses_in_their_scope_only(project: Path) -> None:
    """A fact read by key, found by recall or search, or shown by read_file or load is a use,
    counted in the store for its scope; a listing of every fact, and a person looking with the
    CLI, are not."""

    async def agent(s: ClientSession) -> None:
        ok(await s.call_tool("facts", {"key": "db", "value": "postgres 16"}))
        ok(await s.call_tool("facts", {"key": "editor", "value": "helix"}))
        for _ in range(2):
            assert structured(await s.call_tool("facts", {"key": "db"})) == {"db": "postgres 16"}
        assert structured(await s.call_tool("facts", {})) == {
            "db": "postgres 16",
            "editor": "helix",
        }
        hits = structured(await s.call_tool("recall", {"query": "postgres"}))
        assert [h["path"] for h in hits] == ["facts/db.md"]
        # The memory as a pack: read_file, search and load show the fact too.
        pack = "memory/session:usage"
        path = f"{pack}/facts/db.md"
        got = ok(await s.call_tool("read_file", {"pack": pack, "path": path}))
        assert "postgres 16" in got
        found = structured(await s.call_tool("search", {"query": "postgres"}))
        assert [h["path"] for h in found] == [path]
        loaded = ok(await s.call_tool("load", {"query": "postgres"}))
        assert "value: postgres 16" in loaded

    first_day = dt.date.today().isoformat()
    run_stdio(project, agent, "--memory-scope", "session:usage")
    r = run_cas("mem", "fact", "get", "--scope", "session:usage", "db", cwd=project)
    assert r.code == 0
    r = run_cas("mem", "usage", "--scope", "session:usage", "--json", cwd=project)
    assert r.code == 0, r.err
    rows = json.loads(r.out)["entities"]
    days = {first_day, dt.date.today().isoformat()}  # a run across midnight sees two days
    # two reads by key, a recall, a read_file, a search and a load
    assert [(e["entity"], e["uses"]) for e in rows] == [("fact:db", 6), ("fact:editor", 0)]
    assert {e["last_used"] for e in rows} <= days
    r = run_cas("mem", "usage", "--scope", "session:other", cwd=project)
    assert r.code == 0 and r.out.strip() == "session:other: no facts and no uses counted"


def test_memory_tools_refuse_a_secret_in_a_key_or_scope_as_the_cli_does_and_cut_it_from_values(
    project: Path,
) -> None:
    """A fact key or scope id holding a secret is the command line's refusal as a tool error,
    word for word, and changes nothing; a value or note whose secret is broken over lines is
    stored without it; no answer, error, blob, pin or usage row holds a piece of either."""
    vals = Values(random.Random(71))
    token = "gh" + "p_" + vals.pick(string.ascii_letters + string.digits, 36)
    password = vals.pick(string.ascii_letters + string.digits, 20)
    p = "pass" + "word"
    refused = {}
    for what, args in (("key", ("fact", "set", token, "x")),
                       ("scope", ("add", "--scope", f"user:{token}", "x"))):  # fmt: skip
        r = run_cas("mem", *args, cwd=project)
        assert r.code == 2, r.err
        refused[what] = r.err.strip().removeprefix("cas: error: ")
    seen: list[str] = list(refused.values())

    async def agent(s: ClientSession) -> None:
        for args in ({"key": token, "value": "harmless"}, {"key": token}):
            msg = assert_tool_error(await s.call_tool("facts", args))
            assert msg == refused["key"]  # the command line's line, word for word
            seen.append(msg)
        for tool, args in (
            ("remember", {"text": "note", "scope": f"user:{token}"}),
            ("recall", {"query": "note", "scope": f"user:{token}"}),
            ("facts", {"key": "db", "value": "x", "scope": f"user:{token}"}),
        ):
            msg = assert_tool_error(await s.call_tool(tool, args))
            assert msg == refused["scope"]
            seen.append(msg)
        msg = assert_tool_error(
            await s.call_tool("read_file", {"pack": f"memory/user:{token}", "path": "x"})
        )
        seen.append(msg)
        got = structured(await s.call_tool("facts", {"key": "db", "value": f'{p} =\n"{password}"'}))
        assert got == {"db": f"{p} = \"[REDACTED: high-entropy assignment to '{p}']\""}
        done = structured(
            await s.call_tool("remember", {"text": f"ci uses {token[:9]}\n{token[9:]} daily"})
        )
        assert done["secrets"] == ["GitHub token"]
        seen.append(json.dumps([got, done]))
        seen.append(json.dumps(structured(await s.call_tool("recall", {"query": "ci uses"}))))

    seen.append(run_stdio(project, agent, "--memory-scope", "session:secrets"))
    with Store.at(project / ".cas", readonly=True) as store:
        kept = [store.get(d) for d in store.iterate()]
        kept += [name.encode() for name in store.refs.pins()]
        kept += [key for key, _record in store.kv.items("usage")]
    kept += [text.encode() for text in seen]
    for secret in (token, password):
        found = [piece.encode() for piece in pieces(secret)]
        assert [data[:100] for data in kept if any(x in data for x in found)] == []


def test_pack_tools_see_a_memory_only_on_a_server_granted_its_scope(
    project: Path, tmp_path: Path
) -> None:
    """Session a's fact, its memory packs and a load drawn on it: a server granted session b
    (or nothing) sees none of them through any tool, by name or by digest; a server granted
    session a sees each, the memory itself once."""
    shop = tmp_path / "shop"
    shutil.copytree(project, shop)

    def cas(*args: str) -> str:
        r = run_cas(*args, cwd=shop)
        assert r.code == 0, r.err
        return r.out

    cas("mem", "fact", "set", "--scope", "session:a", "--date", "2026-11-20", "host", "zanzibar")
    cas("mem", "add", "--scope", "session:a", "--date", "2026-11-20", "zanzibar checkout is slow")
    cas("mem", "add", "--scope", "session:b", "--date", "2026-11-20", "b looked at discounts")
    cas("mem", "pack", "--scope", "session:a", "--now", "2026-11-21")
    cas("load", "zanzibar checkout", "--name", "memload", "--memory-scope", "session:a")
    mem_pack = json.loads(cas("show", "mem.session-a.common", "--json"))
    state = json.loads(cas("mem", "show", "--scope", "session:a", "--json"))["state"]
    hidden = {
        "mem.session-a.common": "facts/host.md",
        mem_pack["digest"]: "facts/host.md",
        "memload": "memory/session:a/facts/host.md",
        state: "facts/host.md",
        "memory/session:a": "memory/session:a/facts/host.md",
    }

    async def other(s: ClientSession) -> None:
        names = [p["name"] for p in structured(await s.call_tool("list_packs", {}))]
        assert names == ["repo", "memory/session:b"]
        assert structured(await s.call_tool("recall", {"query": "zanzibar"})) == []
        await nothing(s)

    async def nothing(s: ClientSession) -> None:
        uris = {str(r.uri) for r in (await s.list_resources()).resources}
        assert uris == {"cas://pack/repo"}
        assert structured(await s.call_tool("search", {"query": "zanzibar"})) == []
        loaded = ok(await s.call_tool("load", {"query": "zanzibar checkout"}))
        assert "zanzibar checkout is slow" not in loaded and "session:a" not in loaded
        # each is answered as a pack that does not exist, by name or by digest
        for pack, path in hidden.items():
            absent = "blake3:" + "0" * 64 if pack.startswith("blake3:") else "nope"
            for tool, args in (
                ("render_pack", {"pack": pack}),
                ("read_file", {"pack": pack, "path": path}),
                ("search", {"query": "zanzibar", "pack": pack}),
            ):
                msg = assert_tool_error(await s.call_tool(tool, args), "not found")
                said = text(await s.call_tool(tool, {**args, "pack": absent}))
                assert msg.replace(pack, absent) == said
                assert "zanzibar" not in said and "mem." not in said and "memload" not in said
        refused = await s.call_tool("recall", {"query": "zanzibar", "scope": "session:a"})
        assert "zanzibar" not in assert_tool_error(refused)

    async def none(s: ClientSession) -> None:
        names = [p["name"] for p in structured(await s.call_tool("list_packs", {}))]
        assert names == ["repo"]
        await nothing(s)

    async def granted(s: ClientSession) -> None:
        names = [p["name"] for p in structured(await s.call_tool("list_packs", {}))]
        assert names == [
            "mem.session-a.chatgpt", "mem.session-a.claude", "mem.session-a.common", "memload",
            "repo", "memory/session:a",
        ]  # fmt: skip
        hits = structured(await s.call_tool("search", {"query": "zanzibar"}))
        assert {h["path"] for h in hits} == {
            "memory/session:a/facts/host.md", "memory/session:a/logs/2026-11-20.md",
        }  # fmt: skip
        assert {p for h in hits for p in h["packs"]} == {"memory/session:a", "memload"}
        only = structured(
            await s.call_tool("search", {"query": "zanzibar", "pack": "memory/session:a"})
        )
        assert {h["packs"][0] for h in only} == {"memory/session:a"}
        loaded = ok(await s.call_tool("load", {"query": "zanzibar checkout"}))
        assert loaded.count("zanzibar checkout is slow") == 1
        recalled = structured(await s.call_tool("recall", {"query": "zanzibar"}))
        assert {h["path"] for h in recalled} == {"facts/host.md", "logs/2026-11-20.md"}
        for pack, path in hidden.items():
            body_text = ok(await s.call_tool("read_file", {"pack": pack, "path": path}))
            assert "value: zanzibar" in body_text, pack
            assert "zanzibar" in ok(await s.call_tool("render_pack", {"pack": pack}))
        uris = {str(r.uri) for r in (await s.list_resources()).resources}
        assert "cas://pack/mem.session-a.common" in uris and "cas://pack/memload" in uris

    run_stdio(shop, other, "--memory-scope", "session:b")
    run_stdio(shop, none)
    run_stdio(shop, granted, "--memory-scope", "session:a")


def test_a_running_server_sees_packs_change_appear_and_go(tmp_path: Path) -> None:
    """The server keeps what it read between calls (pack files by their identity, views by
    digest, the index open): a pack made again underneath it, another pack appearing, one
    removed, and the index merged by another process are all seen by the next search."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    (root / "src" / "a.py").write_text("def alphaname():\n    return 1\n")
    assert run_cas("pack", cwd=root).code == 0
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "cas", "mcp"], cwd=str(root), env=cas_env()
    )

    async def paths(s: ClientSession, query: str) -> list[tuple[str, list[str]]]:
        found = structured(await s.call_tool("search", {"query": query}))
        return [(h["path"], h["packs"]) for h in found]

    def repack() -> None:
        r = run_cas("pack", cwd=root)
        assert r.code == 0, r.err

    async def main() -> None:
        with anyio.fail_after(SESSION_TIMEOUT):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                assert await paths(s, "alphaname") == [("src/a.py", ["repo"])]
                assert await paths(s, "betaname") == []
                # the file changes and the pack is made again underneath the server
                (root / "src" / "a.py").write_text("def betaname():\n    return 2\n")
                await anyio.to_thread.run_sync(repack)
                assert await paths(s, "betaname") == [("src/a.py", ["repo"])]
                assert await paths(s, "alphaname") == []
                # another pack appears (a copy under another name), then goes
                manifests = root / "manifests"
                shutil.copyfile(manifests / "repo.pack", manifests / "again.pack")
                assert await paths(s, "betaname") == [("src/a.py", ["again", "repo"])]
                (manifests / "again.pack").unlink()
                assert await paths(s, "betaname") == [("src/a.py", ["repo"])]
                # a new file, indexed by the pack: its segment is loaded by the next call
                (root / "src" / "b.py").write_text("GAMMANAME = 3\n")
                await anyio.to_thread.run_sync(repack)
                assert await paths(s, "gammaname") == [("src/b.py", ["repo"])]
                # every pack removed: the server says so, as the command line does
                (manifests / "repo.pack").unlink()
                res = await s.call_tool("search", {"query": "betaname"})
                assert_tool_error(res, "no packs")

    anyio.run(main)


def test_a_quick_search_runs_in_the_callers_thread_and_never_waits_for_another_tool(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Service.search_inline` (the server's event loop runs a search itself once the last one
    was quick): none before a search has been timed; then the hits `search` gives; none, at
    once, while another tool holds the service (the loop never waits); none once the pack files
    changed since; none after a search that failed or took longer than `INLINE_SEARCH`."""
    from cas.store import find_store
    from casapp import mcpserver

    monkeypatch.setattr(mcpserver, "INLINE_SEARCH", 600.0)  # any search counts as quick
    with Store.at(find_store(project)) as store:
        service = mcpserver.Service(project, store)
        try:
            assert service.search_inline("compute_cart_total") is None
            first = service.search("compute_cart_total")
            assert first and first[0]["path"] == "src/shop/cart.py"
            assert service.search_inline("compute_cart_total") == first
            held, release = threading.Event(), threading.Event()

            def another_tool() -> None:
                with service._lock:
                    held.set()
                    release.wait(30)

            worker = threading.Thread(target=another_tool)
            worker.start()
            try:
                assert held.wait(30)
                # None while the other tool runs: had it waited for the lock, it would have
                # got it once the other let go, and answered
                assert service.search_inline("apply_discount") is None
            finally:
                release.set()
                worker.join()
            assert service.search_inline("apply_discount") is not None
            # a pack file added (or made again) since: the next goes to a worker thread, since
            # it may read and index what the new pack holds
            again = project / "manifests" / "again.pack"
            shutil.copyfile(project / "manifests" / "repo.pack", again)
            try:
                assert service.search_inline("apply_discount") is None
                assert service.search("apply_discount")
                assert service.search_inline("apply_discount") is not None
            finally:
                again.unlink()
            assert service.search_inline("apply_discount") is None
            assert service.search("apply_discount")
            with pytest.raises(mcpserver.ToolFailure, match="no-such-pack"):
                service.search_inline("apply_discount", pack="no-such-pack")
            assert service.search_inline("apply_discount") is None  # after a failure
            monkeypatch.setattr(mcpserver, "INLINE_SEARCH", 0.0)  # no search is quick enough
            assert service.search("apply_discount")
            assert service.search_inline("apply_discount") is None
        finally:
            service.close()


def test_search_recall_and_load_take_a_mode(project: Path) -> None:
    """The tools search by words, by meaning or both, as the command line does; a mode that is
    none of them is one error naming them, and the server goes on."""

    async def agent(s: ClientSession) -> None:
        ok(await s.call_tool("remember", {"text": "the login page test fails now and then on CI"}))
        ok(await s.call_tool("remember", {"text": "we moved the database to postgres 16"}))
        question = "which part of the shop takes money off a price"
        meaning = structured(await s.call_tool("search", {"query": question, "mode": "semantic"}))
        assert meaning and all(h["path"] for h in meaning)
        words = structured(await s.call_tool("search", {"query": question, "mode": "lexical"}))
        both = structured(await s.call_tool("search", {"query": question}))
        assert {h["path"] for h in both} <= {h["path"] for h in meaning + words}
        flaky = structured(await s.call_tool("recall", {"query": "flaky sign-in spec"}))
        assert flaky and "login page" in flaky[0]["snippet"][0]["text"]
        lexical = structured(
            await s.call_tool("recall", {"query": "flaky sign-in spec", "mode": "lexical"})
        )
        assert lexical == []
        loaded = ok(await s.call_tool("load", {"query": question, "mode": "hybrid"}))
        assert "discount.py" in loaded
        assert_tool_error(
            await s.call_tool("search", {"query": question, "mode": "fuzzy"}),
            "unknown search mode 'fuzzy'",
        )
        assert structured(await s.call_tool("search", {"query": "cart"}))  # still serving

    run_stdio(project, agent, "--memory-scope", "session:modes")


def test_an_agent_writes_reads_edits_deletes_curates_and_compacts_entries_by_id(
    project: Path,
) -> None:
    """Every entry tool through the SDK's client: each change a new state (the CLI's log shows
    it, a rollback undoes it), an entry's id kept through an edit, a promotion and a
    compaction; bad input and a scope not granted are one-line tool errors."""
    scope = "session:edits"
    r = run_cas("mem", "add", "--scope", scope, "--date", "2026-10-01", "--json",
                "decided to pin postgres 16", cwd=project)  # fmt: skip
    assert r.code == 0, r.err
    old = json.loads(r.out)["id"]
    r = run_cas("mem", "add", "--scope", scope, "--date", "2026-10-01", "noise", cwd=project)
    assert r.code == 0, r.err
    ids: dict[str, str] = {}

    async def agent(s: ClientSession) -> None:
        first = structured(await s.call_tool("memory_write", {"text": "the login test flakes"}))
        assert first["scope"] == scope and first["id"].startswith("e-")
        ids["first"] = first["id"]
        second = structured(await s.call_tool("remember", {"text": "we chose LMDB"}))
        assert second["id"] != first["id"]
        ids["second"] = second["id"]
        got = structured(await s.call_tool("memory_get", {"id": first["id"]}))
        assert {k: got[k] for k in ("id", "kind", "index", "text")} == {
            "id": first["id"], "kind": "log", "index": 1, "text": "the login test flakes",
        }  # fmt: skip
        assert got["path"] == first["path"] and got["path"] == f"logs/{got['date']}.md"
        found = structured(
            await s.call_tool("memory_search", {"query": "login test", "mode": "lexical"})
        )
        assert found and found[0]["path"] == got["path"]
        assert any(first["id"] in line["text"] for line in found[0]["snippet"]), found[0]
        assert (
            structured(await s.call_tool("memory_get", {"id": f"{got['date']}.2"}))["id"]
            == second["id"]
        )  # by position too
        edited = structured(
            await s.call_tool("memory_edit", {"id": first["id"], "text": "the login test is fixed"})
        )
        assert (edited["id"], edited["action"]) == (first["id"], "edit")
        got = structured(await s.call_tool("memory_get", {"id": first["id"]}))
        assert got["text"] == "the login test is fixed"
        # curate: new text, or a log entry moved with its id
        item = structured(await s.call_tool("curate", {"text": "Packs are judged by answers"}))
        assert item["path"] == "MEMORY.md" and item["id"].startswith("e-")
        moved = structured(await s.call_tool("curate", {"id": second["id"]}))
        assert (moved["id"], moved["action"], moved["path"]) == (
            second["id"], "promote", "MEMORY.md",
        )  # fmt: skip
        got = structured(await s.call_tool("memory_get", {"id": second["id"]}))
        day = first["path"][len("logs/") : -len(".md")]
        assert (got["kind"], got["text"]) == ("curated", f"{day}: we chose LMDB")
        # a fact by its id
        ok(await s.call_tool("facts", {"key": "db", "value": "postgres 16"}))
        got = structured(await s.call_tool("memory_get", {"id": "fact:db"}))
        assert (got["kind"], got["text"], got["path"]) == ("fact", "postgres 16", "facts/db.md")
        ok(await s.call_tool("memory_edit", {"id": "fact:db", "text": "postgres 17"}))
        assert structured(await s.call_tool("facts", {"key": "db"})) == {"db": "postgres 17"}
        # delete
        gone = structured(await s.call_tool("memory_delete", {"id": first["id"]}))
        assert (gone["id"], gone["action"]) == (first["id"], "delete")
        assert_tool_error(await s.call_tool("memory_get", {"id": first["id"]}), "not found")
        # compact: by the rules, at a day the seeded log is old; the promoted entry keeps its id
        dry = structured(await s.call_tool("compact", {"now": "2026-10-20", "dry_run": True}))
        assert dry["dry_run"] and [d["decision"] for d in dry["decisions"]] == [
            "PROMOTE", "COMPRESS",
        ]  # fmt: skip
        done = structured(await s.call_tool("compact", {"now": "2026-10-20"}))
        assert not done["dry_run"] and len(done["decisions"]) == 2
        got = structured(await s.call_tool("memory_get", {"id": old}))
        assert (got["kind"], got["text"]) == ("curated", "2026-10-01: decided to pin postgres 16")
        # bad input: one line each, and the server goes on
        for tool, args, needle in (
            ("memory_get", {"id": "nonsense"}, "is not one"),
            ("memory_get", {"id": "2026-13-01.1"}, "not a calendar date"),
            ("memory_get", {"id": "fact:nope"}, "not found"),
            ("memory_edit", {"id": "e-aaaaaa", "text": "x"}, "not found"),
            ("memory_edit", {"id": second["id"], "text": "  "}, "empty"),
            ("memory_delete", {"id": "MEMORY.99"}, "not found"),
            ("curate", {}, "not both"),
            ("curate", {"text": "x", "id": second["id"]}, "not both"),
            ("curate", {"id": "fact:db"}, "is a fact"),
            ("curate", {"id": item["id"]}, "already an item of MEMORY.md"),
            ("compact", {"now": "2026-13-01"}, "not a calendar date"),
            ("memory_get", {}, "id is required"),
        ):
            assert_tool_error(await s.call_tool(tool, args), needle)
        # a scope not granted: refused by every entry tool, before anything is read
        for tool, args in (
            ("memory_write", {"text": "x"}),
            ("memory_get", {"id": second["id"]}),
            ("memory_edit", {"id": second["id"], "text": "x"}),
            ("memory_delete", {"id": second["id"]}),
            ("curate", {"text": "x"}),
            ("compact", {"dry_run": True}),
        ):
            msg = await s.call_tool(tool, {**args, "scope": "session:other"})
            assert_tool_error(msg, "'session:other' is not one this server may use")
        packs = structured(await s.call_tool("list_packs", {}))  # the server goes on
        assert [p["name"] for p in packs] == ["repo", f"memory/{scope}"]

    async def ungranted(s: ClientSession) -> None:
        assert_tool_error(await s.call_tool("memory_get", {"id": old}), "--memory-scope")

    run_stdio(project, agent, "--memory-scope", scope)
    run_stdio(project, ungranted)
    r = run_cas("mem", "log", "--json", "--scope", scope, cwd=project)
    assert r.code == 0, r.err
    states = json.loads(r.out)["states"]
    changes = [c.split(" ", 1)[1] for s in reversed(states) for c in s["changes"]]
    log = next(c.split()[1] for c in changes[2:] if c.startswith("add logs/"))
    assert changes[2:10] == [
        f"add {log}", f"add {log}", f"edit {log} entry {ids['first']}", "curate MEMORY.md",
        f"promote {log} entry {ids['second']} to MEMORY.md", "set fact db", "set fact db",
        f"delete {log} entry {ids['first']}",
    ]  # fmt: skip
    compacted = [c.split(":")[0] for c in changes[10:]]
    assert compacted == [f"compact logs/2026-10-01.md entry {n}" for n in (1, 2)]
    # the state before the delete, brought back: the entry with its id and edited text
    delete_at = next(s for s in states if any(" delete " in c for c in s["changes"]))
    assert run_cas("mem", "rollback", "--scope", scope, delete_at["parent"], cwd=project).code == 0
    r = run_cas("mem", "get", "--scope", scope, ids["first"], cwd=project)
    assert (r.code, r.out) == (0, "the login test is fixed\n")


# --- what a load points to, headers, resources, concurrency, split ----------------------------

READ_FILE = re.compile(r'read_file\(pack="([^"]+)", path=PATH\)')


def pointers(text: str) -> tuple[str, list[str]]:
    """The pack a load served over MCP names in its header, and every file it points to: those
    summarized (their sections) and those omitted (listed by name); a folder of omitted files
    is read through render_pack in full, which the header names too."""
    found = READ_FILE.search(text)
    assert found, text[:400]
    assert "cas cat" not in text and "cas show" not in text.split("## ", 1)[0]
    pack = found.group(1)
    summarized = re.findall(r"^### `([^`]+)` \(summary\)$", text, re.M)
    omitted = []
    if "## Omitted\n" in text:
        block = text.split("## Omitted\n", 1)[1].split("\n\n", 1)[0]
        omitted = [p for p in re.findall(r"^- `([^`]+)`", block, re.M) if not p.endswith("/")]
    return pack, summarized + omitted


def test_an_mcp_client_follows_every_pointer_of_a_load_made_over_mcp(
    project: Path, tmp_path: Path
) -> None:
    """A load and a turn's context made over MCP are kept in the store, pinned (``load/mcp/N``,
    ``context/SCOPE/SESSION``); their headers name read_file with that pack, and every file
    they summarize or omit reads through read_file, whole, as it is on disk; render_pack shows
    them. A server not granted the session's memory does not see its context."""
    shop = tmp_path / "shop"
    shutil.copytree(project, shop)
    followed: dict[str, list[str]] = {}
    loads: list[str] = []

    async def follow(s: ClientSession, text: str) -> str:
        pack, paths = pointers(text)
        assert paths, text
        for path in paths:
            body = ok(await s.call_tool("read_file", {"pack": pack, "path": path}))
            if not path.startswith("memory/"):
                assert body == (shop / path).read_text(), path
        full = ok(await s.call_tool("render_pack", {"pack": pack, "mode": "full"}))
        assert f'read_file(pack="{pack}", path=PATH)' in full
        followed[pack] = paths
        return pack

    async def body(s: ClientSession) -> None:
        text = ok(await s.call_tool("load", {"query": "apply_discount", "budget": 700}))
        first = await follow(s, text)
        n = int(first.removeprefix("load/mcp/"))  # the store's loads so far, plus one
        loads.append(first)
        text = ok(await s.call_tool("load", {"query": "compute_cart_total", "budget": 700}))
        loads.append(await follow(s, text))
        assert loads[1] == f"load/mcp/{n + 1}"
        ok(await s.call_tool("add_turn", {"user": "the cart?", "assistant": "see cart.py"}))
        text = ok(await s.call_tool("context", {"query": "apply_discount", "budget": 900}))
        assert await follow(s, text) == "context/session:t1/s1"
        # the first load still reads: each has its own pin
        path = followed[first][0]
        assert ok(await s.call_tool("read_file", {"pack": first, "path": path}))

    run_stdio(shop, body, "--memory-scope", "session:t1")
    with Store.at(shop / ".cas") as store:
        pins = store.refs.pins()
    assert {*loads, "context/session:t1/s1"} <= set(pins)
    assert "src/shop/price_table.py" in followed[loads[0]]

    async def ungranted(s: ClientSession) -> None:
        res = await s.call_tool("read_file", {"pack": "context/session:t1/s1", "path": "README.md"})
        assert_tool_error(res, "not found")
        digest = str(pins["context/session:t1/s1"])
        assert_tool_error(await s.call_tool("render_pack", {"pack": digest}), "not found")
        # a load on the packs alone is the project's: any server reads it
        path = followed[loads[0]][0]
        assert ok(await s.call_tool("read_file", {"pack": loads[0], "path": path}))

    run_stdio(shop, ungranted)


def test_a_load_over_mcp_counts_the_header_it_shows(project: Path, tmp_path: Path) -> None:
    """The fit counts the text the tool answers: the load's tokens, as its manifest records
    them, are those of its render naming read_file, and within its budget; the CLI's render
    of the same manifest names `cas cat`."""
    from cas import manifest as mf
    from casapp import mcpserver
    from packer.render import render_lite
    from packer.tokens import TokenCounter

    shop = tmp_path / "shop"
    shutil.copytree(project, shop)
    with Store.at(shop / ".cas") as store:
        service = mcpserver.Service(shop, store)
        try:
            text = service.load("apply_discount compute_cart_total", budget=800)
            pin = READ_FILE.search(text).group(1)  # type: ignore[union-attr]
            digest = store.refs.pins()[pin]
            m = mf.decode(store.get(digest))
            fetch = lambda d: store.get(d).decode()  # noqa: E731
            shown = render_lite(m, fetch, mcp=pin)
            assert text.startswith(shown)
            counted = m.totals["tokens"]
            assert isinstance(counted, dict)
            assert counted["markdown"] == TokenCounter(m.tokenizer).count(shown) <= 800
            assert "cas cat load PATH" in render_lite(m, fetch)
            for fmt in ("xml", "plain"):
                out = service.render_pack(pin, "lite", fmt)
                assert f'read_file(pack="{pin}", path=PATH)' in out, fmt
                assert "cas cat" not in out
        finally:
            service.close()


def test_pack_headers_name_read_file_over_mcp_and_split_mode_gives_parts(project: Path) -> None:
    """render_pack's every mode and format names the server's read_file, never `cas cat`;
    mode split answers the index, naming its parts, then each part by name."""

    async def body(s: ClientSession) -> None:
        for mode in ("lite", "full"):
            for fmt in ("markdown", "xml", "plain"):
                args = {"pack": "repo", "mode": mode, "format": fmt}
                out = ok(await s.call_tool("render_pack", args))
                assert 'read_file(pack="repo", path=PATH)' in out, (mode, fmt)
                assert "cas cat" not in out and "cas show repo" not in out
        index = ok(await s.call_tool("render_pack", {"pack": "repo", "mode": "split"}))
        assert 'read_file(pack="repo", path=PATH)' in index
        parts = re.findall(r"^- `?([^`:]+)`?: \d+ files?$", index, re.M)
        assert sorted(parts) == ["_root.md", "data.md", "src.md"], index
        src = ok(
            await s.call_tool("render_pack", {"pack": "repo", "mode": "split", "part": "src.md"})
        )
        assert CART_TOTAL_DEF in src and "# Shop" not in src
        res = await s.call_tool(
            "render_pack", {"pack": "repo", "mode": "split", "format": "xml", "part": "src.xml"}
        )
        assert "<pack " in ok(res)
        for uri in ["cas://pack/repo"]:
            read = await s.read_resource(uri)
            block = read.contents[0]
            assert isinstance(block, types.TextResourceContents)
            assert 'read_file(pack="repo", path=PATH)' in block.text

    run_stdio(project, body)


def test_resources_follow_the_packs_and_the_client_is_told(tmp_path: Path) -> None:
    """A pack written after the server started is a resource, one removed is not; the next
    call after either change sends notifications/resources/list_changed, and the handshake
    says it will."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    (root / "src" / "a.py").write_text("def alphaname():\n    return 1\n")
    assert run_cas("pack", cwd=root).code == 0
    manifests = root / "manifests"
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "cas", "mcp"], cwd=str(root), env=cas_env()
    )
    told: list[str] = []

    async def handler(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            told.append(message.method)

    async def names(s: ClientSession) -> list[str]:
        return sorted(r.name for r in (await s.list_resources()).resources)

    async def main() -> None:
        with anyio.fail_after(SESSION_TIMEOUT):
            async with (
                stdio_client(params) as (r, w),
                ClientSession(r, w, message_handler=handler) as s,
            ):
                init = await s.initialize()
                assert init.capabilities.resources is not None
                assert init.capabilities.resources.list_changed
                assert await names(s) == ["repo"]
                await still_serving(s)
                assert told == []
                shutil.copyfile(manifests / "repo.pack", manifests / "again.pack")
                packs = structured(await s.call_tool("list_packs", {}))
                assert [p["name"] for p in packs] == ["again", "repo"]
                with anyio.fail_after(10):
                    while not told:
                        await anyio.sleep(0.05)
                assert told == ["notifications/resources/list_changed"]
                assert await names(s) == ["again", "repo"]
                read = await s.read_resource("cas://pack/again")
                block = read.contents[0]
                assert isinstance(block, types.TextResourceContents)
                assert "alphaname" in block.text
                (manifests / "again.pack").unlink()
                await still_serving(s)
                with anyio.fail_after(10):
                    while len(told) < 2:
                        await anyio.sleep(0.05)
                assert await names(s) == ["repo"]
                await still_serving(s)
                assert len(told) == 2  # nothing changed since: nothing told

    anyio.run(main)


def test_a_quick_call_answers_while_a_slow_one_runs(project: Path) -> None:
    """A load of a 5,000-word question takes seconds; list_packs, read_file and render_pack
    sent after it has started answer before it ends (they do not wait for it), and it
    answers in full."""
    rng = random.Random(27)
    words = ("".join(rng.choice(string.ascii_lowercase) for _ in range(9)) for _ in range(5000))
    huge = "apply_discount " + " ".join(words)

    async def body(s: ClientSession) -> None:
        done: dict[str, float] = {}

        async def slow() -> None:
            res = await s.call_tool("load", {"query": huge, "budget": 2000})
            assert DISCOUNT_DEF in ok(res)
            done["load"] = time.monotonic()

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.5)  # the load is under way
            await still_serving(s)
            cart = ok(await s.call_tool("read_file", {"pack": "repo", "path": "src/shop/cart.py"}))
            assert cart == CART_PY
            ok(await s.call_tool("render_pack", {"pack": "repo"}))
            done["quick"] = time.monotonic()
            assert "load" not in done, "the quick calls waited for the load"
        assert done["quick"] < done["load"]

    run_stdio(project, body)


def test_the_server_keeps_its_last_loads_pinned_and_lets_older_ones_go(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each load over MCP is pinned as the next load/mcp/N; past `KEEP_LOADS` the oldest pin
    goes (gc frees what only it kept) and that load is no pack any more."""
    from casapp import mcpserver

    shop = tmp_path / "shop"
    shutil.copytree(project, shop)
    monkeypatch.setattr(mcpserver, "KEEP_LOADS", 2)
    with Store.at(shop / ".cas") as store:
        for name in [n for n in store.refs.pins() if n.startswith(mcpserver.LOAD_PIN)]:
            store.refs.unpin(name)
        service = mcpserver.Service(shop, store)
        try:
            for query in ("apply_discount", "compute_cart_total", "Cart add_item"):
                service.load(query, budget=700)
            pins = sorted(n for n in store.refs.pins() if n.startswith(mcpserver.LOAD_PIN))
            assert pins == ["load/mcp/2", "load/mcp/3"]
            assert "add_item" in service.render_pack("load/mcp/3", "full")
            with pytest.raises(mcpserver.ToolFailure, match="not found"):
                service.read_file("load/mcp/1", "README.md")
        finally:
            service.close()
