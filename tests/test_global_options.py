"""The global options go before a command's name or after it: ``cas init -q`` is ``cas -q
init``, for every command and subcommand (`casapp.cli._common.CasGroup`), as git and restic users
expect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click

from casapp.cli import cli
from tests.conftest import cas_env, run_cas


def command_paths(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the `cas` tree, groups and their subcommands included (as --help
    finds them: the top level loads its commands' modules when asked)."""
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        out.append((*path, name))
        if isinstance(command, click.Group):
            out += command_paths(command, (*path, name))
    return out


# Each command's --help, from one `cas` process (casapp.cli.main, as the console script calls it).
_HELPS = """
import contextlib, io, json, sys
from casapp.cli import main
out = {}
for path in json.loads(sys.argv[1]):
    buf, code = io.StringIO(), 0
    with contextlib.redirect_stdout(buf):
        try:
            main([*path, "--help"])
        except SystemExit as exc:
            code = exc.code
    out[" ".join(path)] = [code, buf.getvalue()]
print(json.dumps(out))
"""


def test_every_command_lists_the_global_options_in_its_help() -> None:
    paths = command_paths(cli)
    assert {("mem", "fact", "set"), ("remote", "add"), ("init",), ("mem",)} <= set(paths)
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _HELPS, json.dumps(paths)],
        capture_output=True, text=True, env=cas_env(), check=True, timeout=120,
    )  # fmt: skip
    helps = json.loads(proc.stdout)
    assert len(helps) == len(paths) >= 40
    for name, (code, text) in helps.items():
        assert code == 0, (name, text)
        assert text.startswith(f"Usage: cas {name} "), (name, text[:80])
        for option in ("-q, --quiet", "--debug", "--store PATH"):
            assert option in text, (name, option)


def _same_run(before: list[str], after: list[str], cwd: Path) -> tuple[str, str]:
    """Run ``cas BEFORE`` and ``cas AFTER``: the same exit code and output."""
    a, b = run_cas(*before, cwd=cwd), run_cas(*after, cwd=cwd)
    assert (a.code, a.out, a.err) == (b.code, b.out, b.err), (before, after)
    return a.out, a.err


def test_the_global_options_after_the_command_do_what_they_do_before(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for where, args in ((first, ["-q", "init"]), (second, ["init", "-q"])):
        where.mkdir()
        r = run_cas(*args, cwd=where)
        assert r.code == 0 and r.err == "", (args, r.err)
        assert r.out == f"initialized empty cas store in {where / '.cas'}\n"

    # -q/--quiet after `pack`: the note of the store it creates is left out
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("def main():\n    return 1\n")
    (project / "cas.toml").write_text("[pack]\nbudget = { target = 3000, max = 3000 }\n")
    noisy = run_cas("pack", cwd=project)
    assert noisy.code == 0 and "created a new store" in noisy.err
    (project / "manifests" / "repo.pack").unlink()
    for flag in ("-q", "--quiet"):
        quiet = run_cas("pack", flag, cwd=project)
        assert quiet.code == 0 and quiet.err == "" and "repo.pack" in quiet.out, quiet.err

    # --store after the command names the store, and the last one given wins
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lost = run_cas("verify", cwd=elsewhere)
    assert lost.code == 2 and "no cas store found" in lost.err
    out, _ = _same_run(
        ["--store", str(first / ".cas"), "info", "--json"],
        ["info", "--json", "--store", str(first / ".cas")],
        elsewhere,
    )
    assert str(first / ".cas") in out
    out, _ = _same_run(
        ["--store", str(second / ".cas"), "info", "--json"],
        ["--store", str(first / ".cas"), "info", "--json", "--store", str(second / ".cas")],
        elsewhere,
    )
    assert str(second / ".cas") in out and str(first / ".cas") not in out
    # ... in a subgroup's subcommand too
    _same_run(
        ["--store", str(first / ".cas"), "mem", "fact", "list", "--scope", "user:1"],
        ["mem", "fact", "list", "--scope", "user:1", "--store", str(first / ".cas")],
        elsewhere,
    )
    _same_run(
        ["-q", "--store", str(first / ".cas"), "remote", "list"],
        ["remote", "list", "-q", "--store", str(first / ".cas")],
        elsewhere,
    )

    # --debug after the command: the traceback behind the one-line error
    plain = run_cas("gc", cwd=first)
    debug = run_cas("gc", "--debug", cwd=first)
    assert plain.code == debug.code == 2
    assert "Traceback" not in plain.err and "Traceback" in debug.err
    assert plain.err.splitlines()[-1] == debug.err.splitlines()[-1]
    assert "no roots" in plain.err
