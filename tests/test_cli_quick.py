"""`cas search` read without click (`casapp.cli.quick`): the same outcome as the click command for
every command line, click never imported for a plain one, and anything else left to click."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casapp.cli import quick
from tests.conftest import Result, cas_env, run_cas

# The click command, run as the `cas` command runs (`cas.__main__.leave` ends it), for the same
# command line the quick path reads.
_BY_CLICK = """
import sys
from cas.__main__ import leave
from casapp.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    leave(exc.code)
leave(0)
"""


def by_click(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, preexec_fn: object = None
) -> Result:
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _BY_CLICK, *args],
        capture_output=True, cwd=cwd, env=cas_env(env), check=False, timeout=120,
        preexec_fn=preexec_fn,  # type: ignore[arg-type]
    )  # fmt: skip
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
        proc.stdout,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("quick") / "project"
    root.mkdir()
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 4000, max = 4000 }\n")
    (root / "router.py").write_text(
        "def new_router(path):\n    return Router(path)\n\n\nclass Router:\n"
        "    def __init__(self, path):\n        self.path = path\n"
    )
    (root / "notes.md").write_text(
        "# Routing\n\nThe router\tmatches a path.\n\x1b[31mnew_router\x1b[0m paints red.\n"
    )
    (root / "sub").mkdir()
    (root / "sub" / "util.py").write_text("def join_path(a, b):\n    return a + '/' + b\n")
    assert run_cas("pack", cwd=root).code == 0
    return root


# Command lines the quick path reads, and ones it leaves to click: each gives the same exit
# code, stdout and stderr both ways.
READ = [
    ["search", "new_router"],
    ["search", "router", "-k", "1"],
    ["search", "-k", "2", "path"],
    ["search", "path", "--json"],
    ["search", "path", "--pack", "repo.claude"],
    ["search", "path", "--pack=repo.claude", "--path", "sub/*"],
    ["search", "path", "--path=*.md"],
    ["-q", "search", "path"],
    ["search", "path", "-q", "--quiet"],
    ["search", "nothing_like_this_anywhere"],
    ["search", "path", "--pack", "no-such-pack"],
    ["search", "path", "--memory-scope", "global"],
    ["search", "path", "--memory-scope", "nonsense:scope:x"],
    ["search", "search"],
    ["search", "paints red"],
    ["--store", "elsewhere", "search", "path"],
    ["search", "path", "--store=.cas"],
    ["search", ""],
    ["search", "path", "-k", "0"],
    ["search", "path", "-k", "007"],
    ["search", "\udcff\udcfe"],  # bytes that are not UTF-8, as the shell passes them
    ["search", "a\nb"],
    ["search", "\x1b[31m"],
]
LEFT = [
    ["search"],
    ["search", "--help"],
    ["search", "-h"],
    ["search", "a", "b"],
    ["search", "path", "-k", "-1"],
    ["search", "path", "-k", "ten"],
    ["search", "path", "-k"],
    ["search", "path", "-k=3"],
    ["search", "path", "--pack"],
    ["search", "path", "--bogus"],
    ["search", "--", "-path"],
    ["search", "-path"],
    ["search", "path", "--json=yes"],
    ["--json", "search", "path"],
    ["--version"],
    ["ls"],
    [],
]


def test_the_quick_path_reads_exactly_the_plain_forms() -> None:
    for args in READ:
        assert quick.parsed(args) is not None, args
    for args in LEFT:
        assert quick.parsed(args) is None, args


def test_every_command_line_ends_the_same_read_either_way(project: Path) -> None:
    seen_codes = set()
    for args in READ + LEFT:
        fast, slow = run_cas(*args, cwd=project), by_click(args, project)
        assert (fast.code, fast.out, fast.err) == (slow.code, slow.out, slow.err), args
        seen_codes.add(fast.code)
    assert {0, 1, 2} <= seen_codes  # found, found nothing or a pack unknown, usage errors


def _close_stdout() -> None:
    os.close(1)


def test_a_closed_stdout_ends_the_same_either_way(project: Path) -> None:
    """Started with stdout closed (``cas search x >&-``): no internal error, the same exit."""
    for args in (["search", "router"], ["search", "router", "--json"], ["search", "--help"]):
        fast = run_cas(*args, cwd=project, preexec_fn=_close_stdout)
        slow = by_click(args, project, preexec_fn=_close_stdout)
        assert (fast.code, fast.err) == (slow.code, slow.err), args
        assert "internal error" not in fast.err, args


def test_a_store_from_the_environment_is_used_either_way(project: Path, tmp_path: Path) -> None:
    for env in ({"CAS_STORE": str(project / ".cas")}, {"CAS_STORE": str(tmp_path / "none")}):
        fast = run_cas("search", "router", cwd=tmp_path, env=env)
        slow = by_click(["search", "router"], tmp_path, env)
        assert (fast.code, fast.out, fast.err) == (slow.code, slow.out, slow.err), env
    assert run_cas("search", "router", cwd=tmp_path, env={"CAS_STORE": str(tmp_path)}).code == 2


def test_the_snippet_of_a_line_with_terminal_controls_shows_them_escaped(project: Path) -> None:
    r = run_cas("search", "paints", cwd=project)
    assert r.code == 0
    assert "\x1b" not in r.out
    assert "\\x1b[31mnew_router\\x1b[0m paints red." in r.out
    tabbed = run_cas("search", "matches", cwd=project)
    assert "The router\tmatches a path." in tabbed.out  # a tab is shown as it is


def test_a_plain_search_never_imports_click(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-m", "cas", "search", "router"],
        capture_output=True, text=True, cwd=project, env=cas_env(), check=True, timeout=120,
    )  # fmt: skip
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "cas.store" in imported and "packer.search" in imported  # the list is the real one
    assert not {name for name in imported if name == "click" or name.startswith("click.")}
    assert "casapp.cli.app" not in imported
    assert proc.stdout.startswith("router.py:")
    helped = subprocess.run(
        [sys.executable, "-P", "-X", "importtime", "-m", "cas", "search", "--help"],
        capture_output=True, text=True, cwd=project, env=cas_env(), check=True, timeout=120,
    )  # fmt: skip
    assert "click.core" in {line.rsplit("|", 1)[-1].strip() for line in helped.stderr.splitlines()}


def test_the_quick_path_knows_every_option_of_the_click_command() -> None:
    """A new option of `cas search` must be read here too (or the quick path would leave every
    command line with it to click, silently, or worse, read it wrong)."""
    from casapp.cli import app

    group = app.cli
    command = group.get_command(click.Context(group), "search")
    assert command is not None
    options = {
        opt
        for param in command.params
        if isinstance(param, click.Option)
        for opt in param.opts
        if opt not in ("-h", "--help")
    }
    read_here = set(quick._GLOBAL_FLAGS) | quick._GLOBAL_VALUES | quick._FLAGS | quick._VALUES
    assert options == read_here
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    assert [a.name for a in arguments] == ["query"]


_WORDS = st.sampled_from(
    ["search", "path", "-k", "3", "x", "--pack", "p", "--pack=p", "--path", "*.py", "--json",
     "-q", "--quiet", "--debug", "--store", "s", "--memory-scope", "global", "--", "-x", "",
     "-k=2", "--help", "ls", "--store=t"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS, max_size=8))
def test_a_command_line_read_here_is_read_the_same_by_click(args: list[str]) -> None:
    """Any command line the quick path reads, click reads to the same search: the same query,
    options and global options (compared without running either)."""
    read = quick._read(args)
    if read is None:
        return
    from casapp.cli import app
    from casapp.cli.context import Ctx

    group = app.cli
    state = Ctx(store_opt=None, debug=False, quiet=False)
    with group.make_context("cas", list(args), obj=state) as ctx:
        with warnings.catch_warnings():  # click 8.2 renames protected_args; 8.1 has no other
            warnings.simplefilter("ignore", DeprecationWarning)
            name, command, rest = group.resolve_command(ctx, [*ctx.protected_args, *ctx.args])
        assert name == "search" and command is not None
        ctx.invoked_subcommand = name
        state.store_opt = ctx.params["store_opt"]
        state.debug = ctx.params["debug"]
        state.quiet = ctx.params["quiet"]
        with command.make_context(name, rest, parent=ctx) as sub:
            params = sub.params
    assert params["query"] == read.query
    assert list(params["packs"]) == read.packs
    assert list(params["paths"]) == read.paths
    assert list(params["scopes"]) == read.scopes
    assert params["k"] == read.k
    assert params["as_json"] == read.as_json
    assert state.quiet == read.quiet
    assert state.debug == read.debug
    assert (state.store_opt or None) == (read.store or None)
