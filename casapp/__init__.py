"""The services every surface calls: a project and its store, and what can be done with them
(`casapp.project.Project`). The command line (`casapp.cli`), the MCP server (`casapp.mcpserver`) and
Python programs call these; each surface parses its input, calls one service and presents the
result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from casapp.project import PackInfo, Project

__all__ = ["PackInfo", "Project"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from casapp import project

        return getattr(project, name)
    raise AttributeError(f"module 'casapp' has no attribute {name!r}")
