"""Which language a file is written in, by its name: one table for summaries, rating and renders."""

from __future__ import annotations

import posixpath

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".tpp": "cpp",
    ".inl": "cpp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".ru": "ruby",
    ".cs": "csharp",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".jsonc": "json",
    ".rst": "rst",
    ".txt": "text",
    ".html": "html",
    ".css": "css",
    ".sql": "sql",
}
_NAMES = {
    "rakefile": "ruby",
    "gemfile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "dockerfile": "dockerfile",
    "makefile": "make",
    "readme": "markdown",
}


def language_for(path: str) -> str | None:
    """The language of ``path`` by its extension or well-known name, or None if unknown."""
    name = posixpath.basename(path).lower()
    if name in _NAMES:
        return _NAMES[name]
    return _EXTENSIONS.get(posixpath.splitext(name)[1])
