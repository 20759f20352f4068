"""A conversation over a real project: thirty scripted turns through the Python API, the command
line and a real MCP client, each turn's context within its exact budget, the same bytes in
another copy, facts in every turn, domains added the turn their word appears, nothing given
twice unchanged, every turn readable from the logs, and a new session that starts from the
summary of the last ones."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.memory_bench import CONFIG, DAY, FIRST_WORD
from bench.memory_bench import SCRIPT as bench_script
from cas import Store
from memory import MemoryManager
from memory.session import turns_path
from memory.shortterm import turns_in_logs
from memory.state import head, read_file
from packer.tokens import TokenCounter
from tests.conftest import cas_env, run_cas
from tests.realcode import corpus

BUDGET = 3000
# The scripted conversation and the project's configuration are the memory benchmark's.
SCRIPT = [(question, answer) for question, answer, _file in bench_script]


@pytest.fixture(scope="module")
def clicked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conversation") / "click"
    shutil.copytree(corpus("click"), root)
    (root / "cas.toml").write_text(CONFIG)
    r = run_cas("pack", cwd=root, timeout=600)
    assert r.code == 0, r.err
    assert sorted(p.name for p in (root / "manifests").iterdir()) == [
        "completion.pack", "core.small.pack", "docs.pack", "testing.pack",
    ]  # fmt: skip
    return root


def converse(root: Path) -> list[Any]:
    """The script in ``root``'s store, session s1 of user:dev: a context for each question,
    then the turn; the fact changes at turn 12. Returns each turn's context."""
    out = []
    with MemoryManager(root, "user:dev", session="s1", max_tokens=400) as mem:
        mem.set_fact("python", "3.12", date=DAY)
        for n, (question, answer) in enumerate(SCRIPT, 1):
            if n == 12:
                mem.set_fact("python", "3.13", date=DAY)
            out.append(mem.context(question, BUDGET, date=DAY))
            mem.add_turn(question, answer, date=DAY)
    return out


def test_thirty_turns_each_within_budget_the_same_anywhere_and_nothing_given_twice(
    clicked: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "elsewhere" / "click"
    shutil.copytree(clicked, copy)
    turns = converse(clicked)
    again = converse(copy)
    assert [c.digest for c in turns] == [c.digest for c in again]
    assert [c.text for c in turns] == [c.text for c in again]
    counter = TokenCounter("o200k_base")
    held: dict[str, tuple[str, bool]] = {}  # path -> (digest, in full) as given so far
    facts = "memory/user:dev/facts.md"
    for n, c in enumerate(turns, 1):
        assert c.turn == n
        # within its budget, exactly as counted
        assert c.budget == BUDGET and c.tokens["markdown"] <= BUDGET
        assert counter.count(c.text) == c.tokens["markdown"]
        # facts in every turn, as they stand then
        assert facts in c.pinned
        assert f"- python: {'3.12' if n < 12 else '3.13'}" in c.text
        # the recent turns in every turn after the first
        if n > 1:
            assert "memory/user:dev/sessions/s1/turns.md" in c.pinned
            assert f"- user: {SCRIPT[n - 2][0]}" in c.text
        # a domain the turn its word first appears, then kept
        new = tuple(d for t, d in FIRST_WORD.items() if t == n)
        assert c.new_domains == new, n
        assert set(c.domains) == {d for t, d in FIRST_WORD.items() if t <= n}, n
        # nothing the session holds unchanged is given again (what is always given aside)
        for e in c.load.manifest.entries:
            if e.tier == "low" or e.path in c.pinned:
                continue
            before = held.get(e.path)
            assert (
                before is None or before[0] != str(e.digest) or (not before[1] and e.tier == "high")
            ), (n, e.path, e.tier)
        for e in c.load.manifest.entries:
            if e.tier != "low":
                was = held.get(e.path)
                full = e.tier == "high" or (was is not None and was[1] and was[0] == str(e.digest))
                held[e.path] = (str(e.digest), full)
    assert sum(c.given for c in turns) > 0
    assert any("given earlier in this session, unchanged, not repeated" in c.text for c in turns)

    # Turns past the limit went to the day's log; every one of them reads back.
    with Store.at(clicked / ".cas") as store:
        state = head(store, "user:dev")
        logs = {p: read_file(store, state, p) or b"" for p in state.files if p.startswith("logs/")}
        flushed = turns_in_logs(logs, "s1")
        with MemoryManager(store, "user:dev", session="s1") as mem:
            recent = {n: f"user: {u}\nassistant: {a}" for n, u, a in mem.short_term()}
        assert flushed and recent and not set(flushed) & set(recent)
        everything = flushed | recent
        assert sorted(everything) == list(range(1, 31))
        for n, (question, answer) in enumerate(SCRIPT, 1):
            assert everything[n] == f"user: {question}\nassistant: {answer}"
        # the turn that states a decision went to the curated memory
        assert (
            "we decided to show them always"
            in (read_file(store, state, "MEMORY.md") or b"").decode()
        )

        # A new session starts with the summary of the last ones.
        with MemoryManager(store, "user:dev", project=clicked) as mem:
            assert mem.session == "s2"
            first = mem.context("Where were we?", BUDGET, date=DAY)
        assert "memory/user:dev/conversation-context.md" in first.pinned
        assert "## Session s1 (2026-11-29, 30 turns)" in first.text
        assert f"- last asked: {SCRIPT[-1][0]}" in first.text
        assert "- domains loaded: testing, completion" in first.text
        assert first.given == 0


def test_the_command_line_keeps_a_conversation(clicked: Path) -> None:
    r = run_cas("context", "How do I test a command with CliRunner?", "--scope", "user:cli",
                "--budget", "2500", "--date", DAY, "--json", cwd=clicked)  # fmt: skip
    assert r.code == 0, r.err
    first = json.loads(r.out)
    assert first["session"] == "s1" and first["turn"] == 1 and first["new_domains"] == ["testing"]
    assert first["tokens"]["markdown"] <= 2500 and first["pin"] == "context/user:cli/s1"
    r = run_cas("mem", "turn", "How do I test a command with CliRunner?", "Use invoke.",
                "--scope", "user:cli", "--session", "s1", "--date", DAY, cwd=clicked)  # fmt: skip
    assert r.code == 0 and "turn 1 of session s1 in user:cli" in r.out, r.err
    r = run_cas(
        "context", "Does the result keep the exit code?", "--scope", "user:cli",
        "--session", "s1", "--budget", "2500", "--date", DAY, "--render", cwd=clicked,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "- user: How do I test a command with CliRunner?" in r.out
    assert "domain testing (earlier in this session): testing" in r.err
    r = run_cas("mem", "short-term", "--scope", "user:cli", "--session", "s1", cwd=clicked)
    assert r.code == 0 and r.out.startswith("# Session s1\n"), r.err
    r = run_cas("verify", f"{first['digest']}", cwd=clicked)
    assert r.code == 0, r.err
    # The header's pointers resolve: the context is a pack by its pin's name.
    r = run_cas(
        "context", "How does CliRunner invoke a command?", "--scope", "user:cli",
        "--session", "s1", "--budget", "2500", "--date", DAY, "--render", cwd=clicked,
    )  # fmt: skip
    assert "`cas cat context/user:cli/s1 PATH`" in r.out, r.out[:400]
    r = run_cas("cat", "context/user:cli/s1", "src/click/testing.py", cwd=clicked)
    assert r.code == 0 and r.out == (clicked / "src/click/testing.py").read_text(), r.err
    r = run_cas("show", "context/user:cli/s1", "--json", cwd=clicked)
    assert r.code == 0 and json.loads(r.out)["scope"] == "context/user:cli/s1", r.err
    assert run_cas("cat", "context/user:cli/nobody", "x", cwd=clicked).code == 1
    for args, needle in (
        (("context", "x", "--session", "a b"), "session 'a b'"),
        (("context", "x", "--budget", "0"), "--budget"),
        (("context", "x", "--scope", "team:x"), "is not one"),
        (("context", "x", "--date", "2026-13-01"), "calendar date"),
        (("mem", "turn", "", "ok", "--session", "s1"), "nothing to remember"),
        (("mem", "short-term", "--session", "nobody"), "no turns"),
    ):
        r = run_cas(*args, cwd=clicked)
        assert r.code == 2 if needle != "no turns" else r.code in (1, 2), (args, r.code, r.err)
        assert needle in r.err and len(r.err.strip().split("\n")) == 1, (args, r.err)
        assert "Traceback" not in r.err


def test_a_real_mcp_client_converses_and_bad_input_is_a_tool_error(clicked: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "cas", "mcp", "--memory-scope", "user:mcp"],
        cwd=str(clicked),
        env=cas_env(),
    )

    def text(res: types.CallToolResult) -> str:
        block = res.content[0]
        assert isinstance(block, types.TextContent)
        return block.text

    async def main() -> None:
        with anyio.fail_after(180):
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                assert {"context", "add_turn"} <= names
                first = await s.call_tool(
                    "context", {"query": "How does CliRunner invoke a command?", "budget": 6000}
                )
                assert not first.is_error, text(first)
                assert text(first).startswith("# Context pack `context/user:mcp/s1`")
                added = await s.call_tool(
                    "add_turn", {"user": "How does CliRunner invoke?", "assistant": "In a sandbox."}
                )
                assert not added.is_error, text(added)
                done = added.structured_content or {}
                assert done.get("session") == "s1" and done.get("turn") == 1, done
                second = await s.call_tool(
                    "context", {"query": "How does CliRunner invoke a command?", "budget": 6000}
                )
                assert not second.is_error
                assert "given earlier in this session" in text(second)
                assert "- user: How does CliRunner invoke?" in text(second)
                for args, needle in (
                    ({"query": "x", "budget": 0}, "budget 0"),
                    ({"query": "x", "session": "a b"}, "session 'a b'"),
                    ({"query": "x", "scope": "user:other"}, "not one this server may use"),
                    ({"query": "x", "mode": "psychic"}, "mode"),
                    ({"query": "x", "colour": "red"}, "unknown argument"),
                ):
                    res = await s.call_tool("context", args)
                    assert res.is_error and needle in text(res), (args, text(res))
                    assert "\n" not in text(res).strip()
                res = await s.call_tool("add_turn", {"user": " ", "assistant": "x"})
                assert res.is_error and "nothing to remember" in text(res)
                assert not (await s.call_tool("list_packs", {})).is_error

    anyio.run(main)
    with Store.at(clicked / ".cas") as store:
        data = read_file(store, head(store, "user:mcp"), turns_path("s1"))
    assert data is not None and b"In a sandbox." in data


def test_a_decider_command_decides_what_flushed_turns_become(tmp_path: Path) -> None:
    """`cas mem turn --llm CMD`: the command gets each flush as JSON and its answer decides;
    a bad answer changes nothing and is one line, exit 1."""
    root = tmp_path / "p"
    root.mkdir()
    decider = tmp_path / "decide.py"
    decider.write_text(
        "import json, sys\n"
        "req = json.load(sys.stdin)\n"
        "assert req['choices'] == ['COMPRESS', 'PROMOTE', 'DELETE'], req\n"
        "print(json.dumps({'decisions': [{'index': e['index'], 'decision': 'COMPRESS',\n"
        "    'text': 'gist of ' + e['text'].split(chr(10))[0]} for e in req['entries']]}))\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text("print('not json')\n")
    assert run_cas("init", "--store-only", cwd=root).code == 0
    llm = f"{sys.executable} {decider}"
    for i in range(4):
        r = run_cas("mem", "turn", f"question {i} " * 10, f"answer {i} " * 10, "--session", "c1",
                    "--max-tokens", "60", "--llm", llm, "--date", DAY, cwd=root)  # fmt: skip
        assert r.code == 0, r.err
    assert "flushed to logs/2026-11-29.md: COMPRESS (by llm)" in r.out
    r = run_cas("mem", "short-term", "--session", "c1", "--max-tokens", "60", cwd=root)
    assert "- turn 1 (2026-11-29): gist of user: question 0" in r.out, r.out
    before = run_cas("mem", "log", "--json", cwd=root).out
    r = run_cas("mem", "turn", "q " * 40, "a " * 40, "--session", "c1", "--max-tokens", "60",
                "--llm", f"{sys.executable} {bad}", "--date", DAY, cwd=root)  # fmt: skip
    assert r.code == 1 and "not JSON" in r.err and len(r.err.strip().split("\n")) == 1, r.err
    assert run_cas("mem", "log", "--json", cwd=root).out == before
