"""The ``cas`` command: parse, call one library function, print.

`casapp.cli.app` is the command as click reads it (`main`, `cli`, `COMMAND_MODULES`: the names
below load it on first use); `casapp.cli.quick` reads the plain forms of ``cas search`` without
importing click at all, which is a fifth of a fresh search's time. `casapp.cli.guard` ends every
command: errors mapped to one line and an exit code there and only there.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: importing typing would cost the command its start-up time
if TYPE_CHECKING:
    from casapp.cli.app import COMMAND_MODULES, CONTEXT, cli, main

__all__ = ["COMMAND_MODULES", "CONTEXT", "cli", "main"]

_FROM_APP = frozenset({"COMMAND_MODULES", "CONTEXT", "cli", "main"})


def __getattr__(name: str) -> object:
    if name not in _FROM_APP:
        raise AttributeError(f"module 'casapp.cli' has no attribute {name!r}")
    value = getattr(importlib.import_module("casapp.cli.app"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM_APP])
