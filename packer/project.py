"""Where a project is and the files that configure it: cas.toml, or the ``[tool.cas]`` section
of a pyproject.toml, at the project's root.

Every command asks where its project is before anything else, and most never read the
configuration itself: this module is light (TOML is parsed only where a pyproject.toml has to
be read to know whether it marks the project); what the configuration says is
`packer.config`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from cas.ancestors import at_and_above
from cas.errors import ConfigError, UsageError

CONFIG_FILE: Final = "cas.toml"
PYPROJECT_FILE: Final = "pyproject.toml"


def parse_toml(path: Path) -> dict[str, object]:
    """The document a TOML file holds; a ConfigError naming the file when it cannot be read."""
    import tomllib  # here: a command that reads no configuration never pays for the parser

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror or exc}") from exc
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), "", f"not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends with "(at line N, column M)"
        raise ConfigError(str(path), "", f"invalid TOML: {exc}") from exc
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(
            str(path), "", "arrays or inline tables nested too deeply to read"
        ) from None


def tool_cas(doc: Mapping[str, object]) -> object | None:
    """The ``[tool.cas]`` section of a pyproject.toml document, if it has one."""
    tool = doc.get("tool")
    return tool.get("cas") if isinstance(tool, dict) else None


def existing_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` when it names a folder (or a file in one, for a project found from a file); a
    `UsageError` naming it otherwise: a project is never made up where nothing is."""
    where = Path(path)
    if not where.exists():
        raise UsageError(f"{os.fspath(path)}: no such folder: give a project's folder")
    return where


def find_project_root(start: str | os.PathLike[str]) -> Path:
    """The nearest directory at or above `start` holding cas.toml, a pyproject.toml with
    [tool.cas], or .git; `start` itself when there is none."""
    first = Path(start).absolute()
    if first.is_file():
        first = first.parent
    for directory in at_and_above(first):
        if (directory / CONFIG_FILE).is_file() or (directory / ".git").exists():
            return directory
        pyproject = directory / PYPROJECT_FILE
        if pyproject.is_file():
            try:
                if tool_cas(parse_toml(pyproject)) is not None:
                    return directory
            except ConfigError:
                # an unreadable pyproject.toml is not a marker; load_config reports it if it
                # turns out to be the project's own
                pass
    return first
