"""A composite action's steps run outside GitHub, as a runner runs them: each ``run:`` step with
bash (``bash --noprofile --norc -eo pipefail FILE``) in its working directory, with the
runner's variables (``GITHUB_ACTION_PATH``, ``GITHUB_WORKSPACE``, ``RUNNER_TEMP``,
``GITHUB_PATH``: what a step appends to it is on ``PATH`` for the steps after), its ``env:``,
and ``${{ inputs.NAME }}`` replaced by the input's value or default. A step runs while no step
before it failed, and only where its ``if:`` holds.

The expressions are the few an action of this project writes: ``inputs.NAME``, ``==`` and
``!=`` against a quoted string, ``success()``, ``failure()`` and ``always()``. Anything else (a
``uses:`` step, another shell, another context) raises `Unsupported` rather than run as it
would not on GitHub.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_INPUT = re.compile(r"inputs\.([A-Za-z_][A-Za-z0-9_-]*)")
_COMPARISON = re.compile(r"inputs\.([A-Za-z_][A-Za-z0-9_-]*)\s*(==|!=)\s*'([^']*)'")


class Unsupported(Exception):
    """What the action asks for is beyond this runner."""


@dataclass
class Step:
    id: str
    name: str
    code: int | None  # None: skipped
    out: str
    err: str


@dataclass
class Run:
    steps: list[Step]

    @property
    def ok(self) -> bool:
        return all(s.code in (0, None) for s in self.steps)

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)


def load(action_dir: Path) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((action_dir / "action.yml").read_text("utf-8"))
    if spec.get("runs", {}).get("using") != "composite":
        raise Unsupported("not a composite action")
    return spec


def _value(expression: str, inputs: dict[str, str]) -> str:
    match = _INPUT.fullmatch(expression.strip())
    if match is None:
        raise Unsupported(f"expression {expression!r}")
    return inputs[match.group(1)]


def substitute(text: str, inputs: dict[str, str]) -> str:
    """``text`` with each ``${{ inputs.NAME }}`` replaced by the input's value."""
    return _EXPRESSION.sub(lambda m: _value(m.group(1), inputs), text)


def holds(condition: str, inputs: dict[str, str], failed: bool) -> bool:
    """Whether a step with this ``if:`` runs (GitHub's default is ``success()``)."""
    inner = _EXPRESSION.fullmatch(condition.strip())
    text = (inner.group(1) if inner else condition).strip()
    status = {"success()": not failed, "failure()": failed, "always()": True}
    if text in status:
        return status[text]
    match = _COMPARISON.fullmatch(text)
    if match is None:
        raise Unsupported(f"condition {condition!r}")
    name, op, literal = match.groups()
    # GitHub compares strings without regard to case.
    equal = inputs[name].casefold() == literal.casefold()
    return not failed and equal == (op == "==")


def run_action(
    action_dir: Path,
    workspace: Path,
    temp: Path,
    inputs: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> Run:
    """Run every step of ``action_dir/action.yml`` with ``inputs``, in ``workspace``, in an
    environment of ``env`` alone (plus the runner's variables): nothing of this process's."""
    spec = load(action_dir)
    declared: dict[str, dict[str, Any]] = spec.get("inputs") or {}
    given = dict(inputs or {})
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise Unsupported(f"inputs the action does not declare: {unknown}")
    values = {n: str(given.get(n, d.get("default", ""))) for n, d in declared.items()}
    base = dict(env or {})
    added: list[str] = []  # what the steps appended to GITHUB_PATH, in order
    failed = False
    steps: list[Step] = []
    for i, raw in enumerate(spec["runs"]["steps"]):
        step_id = str(raw.get("id", f"step{i}"))
        name = str(raw.get("name", step_id))
        if "run" not in raw:
            raise Unsupported(f"step {step_id!r} is not a run step")
        if raw.get("shell") != "bash":
            raise Unsupported(f"step {step_id!r}: shell {raw.get('shell')!r}")
        if not holds(str(raw.get("if", "success()")), values, failed):
            steps.append(Step(step_id, name, None, "", ""))
            continue
        script = temp / f"{step_id}.sh"
        script.write_text(substitute(str(raw["run"]), values), "utf-8")
        path_file = temp / f"{step_id}.path"
        path_file.write_text("")
        step_env = {
            **base,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(action_dir),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_PATH": str(path_file),
            "RUNNER_TEMP": str(temp),
        }
        step_env.update({k: substitute(str(v), values) for k, v in (raw.get("env") or {}).items()})
        # The runner puts what was added last first.
        step_env["PATH"] = os.pathsep.join([*reversed(added), base.get("PATH", os.defpath)])
        cwd = workspace / substitute(str(raw.get("working-directory", ".")), values)
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=cwd,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        added.extend(line for line in path_file.read_text("utf-8").splitlines() if line)
        steps.append(Step(step_id, name, done.returncode, done.stdout, done.stderr))
        failed = failed or done.returncode != 0
    return Run(steps)
