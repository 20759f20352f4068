"""Python outlines: signatures, first sentences, class attributes, constants, `__all__` and
re-exports, on a planted module and on real projects (click, httpx, Django)."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st
from realcode import read

from packer.outline import Outline, render
from packer.summaries import outline
from packer.summaries.text import fit_entries

SOURCE = textwrap.dedent(
    '''
    """Stores things in boxes, e.g. for packs: a box
    holds one thing. This second sentence is not shown.

    A second paragraph that the summary leaves out.
    """

    from __future__ import annotations

    import os
    import sys as system
    from . import store
    from .cache import Cache
    from cas.errors import InputError

    MAX_SIZE = 1 << 20
    DEFAULT_NAME: str = "box"
    _PRIVATE_TABLE = {"a": 1}
    lowercase_value = 3
    TABLE = {"alpha": "a value", "beta": "another value", "gamma": "one more value", "d": 4}
    BIG = [
        1,
        2,
    ]


    @dataclass(frozen=True)
    class Box(Base, metaclass=Meta):
        """A box that holds one thing.

        More detail here that is not shown.
        """

        label: str
        size: int = 0
        LIMIT = 10

        def open(self, force: bool = False, *, timeout: float | None = None) -> bytes:
            """Open the box and return what it holds."""
            BODY_MARKER_METHOD = 1
            def nested_helper():
                return 2
            return BODY_MARKER_METHOD

        @property
        def empty(self) -> bool:
            return False

        def _seal(self) -> None:
            """Seal it."""

        class Inner:
            def deep(self, x, /, y, *args, **kwargs): ...


    async def fetch(url: str, retries: int = 3, *rest: str, **options: object) -> dict[str, int]:
        """Fetch a url.

        Not this line.
        """
        BODY_MARKER_FUNCTION = await get(url)
        return BODY_MARKER_FUNCTION


    def long_default(x=["a very long default value that goes on and on and on"]):
        pass


    try:
        from fast import speedup
    except ImportError:
        def speedup(data: bytes) -> bytes:
            """Do it slowly."""
            return data


    class Color(Enum):
        RED = 1
        GREEN = 2

    if __name__ == "__main__":
        def script_only(): ...
    '''
)


def symbol_table(o: Outline) -> list[tuple[str, str, str, bool]]:
    """(parent name, name, kind, exported) of every symbol."""
    return [
        (o.symbols[s.parent].name if s.parent >= 0 else "", s.name, s.kind, s.exported)
        for s in o.symbols
    ]


def test_symbols_kinds_and_exported() -> None:
    o = outline("pkg/boxes.py", SOURCE)
    assert o.lang == "python"
    assert symbol_table(o) == [
        ("", "imports", "import", False),
        ("", "MAX_SIZE", "constant", True),
        ("", "DEFAULT_NAME", "constant", True),
        ("", "_PRIVATE_TABLE", "constant", False),
        ("", "lowercase_value", "variable", True),
        ("", "TABLE", "constant", True),
        ("", "BIG", "constant", True),
        ("", "Box", "class", True),
        ("Box", "label", "field", True),
        ("Box", "size", "field", True),
        ("Box", "LIMIT", "constant", True),
        ("Box", "open", "method", True),
        ("Box", "empty", "method", True),
        ("Box", "_seal", "method", False),
        ("Box", "Inner", "class", True),
        ("Inner", "deep", "method", True),
        ("", "fetch", "function", True),
        ("", "long_default", "function", True),
        ("", "speedup", "function", True),  # the fallback defined under `except ImportError`
        ("", "Color", "class", True),
        ("Color", "RED", "constant", True),
        ("Color", "GREEN", "constant", True),
    ]


def test_lines_signatures_first_sentences_and_values() -> None:
    text = render(outline("pkg/boxes.py", SOURCE))
    lines = text.splitlines()
    # The purpose is the docstring's whole first sentence, across its physical lines.
    assert lines[1] == '"""Stores things in boxes, e.g. for packs: a box holds one thing."""'
    assert lines[2] == "imports: os, sys, .store, .cache, cas.errors, fast"
    for line in [
        "MAX_SIZE = 1 << 20",
        'DEFAULT_NAME: str = "box"',  # as written: the source's own quotes
        '_PRIVATE_TABLE = {"a": 1}',
        # a mapping too long for one value: its entries, never cut mid-way
        'TABLE = {"alpha": "a value", "beta": "another value", "gamma": "one more value", "d": 4}',
        "BIG = [1, 2]",  # short, if written over lines
        "@dataclass(frozen=True)",
        "class Box(Base, metaclass=Meta):",
        '    """A box that holds one thing."""',
        "    label: str",
        "    size: int = 0",
        "    LIMIT = 10",
        "    def open(self, force: bool = False, *, timeout: float | None = None) -> bytes:",
        '        """Open the box and return what it holds."""',
        "    @property",
        "    def empty(self) -> bool: ...",
        "    class Inner:",
        "        def deep(self, x, /, y, *args, **kwargs): ...",
        "async def fetch(url: str, retries: int = 3, *rest: str, **options: object)"
        " -> dict[str, int]:",
        '    """Fetch a url."""',
        "def long_default(x=...): ...",
        "class Color(Enum):",
        "    RED = 1",
    ]:
        assert line in lines
    for absent in (
        "BODY_MARKER",
        "nested_helper",
        "second sentence",
        "second paragraph",
        "Not this line",
        "More detail",
        "__future__",
        "script_only",
    ):
        assert absent not in text


def test_all_and_reexports_head_the_outline() -> None:
    source = textwrap.dedent(
        '''
        """A package."""
        from typing import TYPE_CHECKING
        from .core import Option as Option, Argument as Argument
        from .core import _internal
        from ._api import *
        from .helpers import helper, other
        from .models import __all__ as models_all
        if TYPE_CHECKING:
            from .typing_only import Hidden
        __all__ = ["Option", "helper", "Thing", "main"] + models_all
        __all__ += ["late"]

        class Thing:
            pass

        class Private:
            pass

        def main() -> None: ...
        '''
    )
    o = outline("pkg/__init__.py", source)
    assert o.head == (
        '"""A package."""',
        "from .core import Option, Argument",
        "from ._api import *",
        "from .helpers import helper, other",  # `other` may be in the computed part of __all__
        "__all__: Option, helper, Thing, main, late",
    )
    exported = {s.name: s.exported for s in o.symbols}
    assert exported == {"imports": False, "Thing": True, "Private": True, "main": True}
    # With a literal __all__, names left out of it are not exported.
    literal = outline("m.py", '__all__ = ["a"]\ndef a(): ...\ndef b(): ...\n')
    assert [(s.name, s.exported) for s in literal.symbols] == [("a", True), ("b", False)]
    assert literal.head == ("__all__: a",)


def test_an_aggregating_module_reexports_its_public_imports() -> None:
    source = "from typing import Any\nfrom .a import x, _y\nfrom .b import z as w\n"
    o = outline("pkg/__init__.py", source)
    assert o.head == ("from .a import x", "from .b import z as w")
    assert [s.lines for s in o.symbols] == [("imports: typing",)]


def test_a_docstring_that_opens_with_code_shows_its_first_prose() -> None:
    source = (
        'class URL:\n    """\n    url = URL("https://a.b/c")\n\n    >>> url.host\n\n'
        '    The parts of a URL. More.\n    """\n'
    )
    assert outline("u.py", source).symbols[0].lines[1] == '    """The parts of a URL."""'
    only_code = 'def f():\n    """\n    >>> f()\n    1\n    """\n'
    assert outline("f.py", only_code).symbols[0].lines == ("def f(): ...",)


def test_sphinx_roles_read_as_their_target() -> None:
    source = 'def f():\n    """Return a :class:`~click.Option` for :func:`g`."""\n'
    assert outline("f.py", source).symbols[0].lines[1] == '    """Return a click.Option for g."""'


# --- real code ----------------------------------------------------------------------------------


def test_click_core_keeps_option_and_argument_with_their_signatures() -> None:
    o = outline("src/click/core.py", read("click", "src/click/core.py"))
    by_name = {(o.symbols[s.parent].name if s.parent >= 0 else "", s.name): s for s in o.symbols}
    option = by_name["", "Option"]
    assert option.lines[0] == "class Option(Parameter):"
    assert option.lines[1].startswith('    """Options are usually optional values on the command')
    assert option.lines[1].endswith("""extra features that arguments don't have.\"\"\"""")
    init = by_name["Option", "__init__"].lines[0]
    assert init.startswith(
        "    def __init__(self, param_decls: t.Optional[t.Sequence[str]] = None,"
    )
    assert "show_default: t.Union[bool, str, None] = None" in init
    assert "**attrs: t.Any) -> None" in init
    assert by_name["", "Argument"].lines[0] == "class Argument(Parameter):"
    assert by_name["Argument", "__init__"].lines[0] == (
        "    def __init__(self, param_decls: t.Sequence[str], required: t.Optional[bool] = None,"
        " **attrs: t.Any) -> None: ..."
    )
    # The whole outline has every public class of the module, none cut off at the tail.
    classes = [s.name for s in o.symbols if s.kind == "class" and s.parent < 0]
    assert classes[-2:] == ["Option", "Argument"]
    assert len(classes) == 10


def test_click_exception_class_attributes_keep_their_values() -> None:
    o = outline("src/click/exceptions.py", read("click", "src/click/exceptions.py"))
    attributes = {
        (o.symbols[s.parent].name, s.lines[0]) for s in o.symbols if s.name == "exit_code"
    }
    assert ("UsageError", "    exit_code = 2") in attributes
    assert ("ClickException", "    exit_code = 1") in attributes


def test_click_init_shows_its_exports() -> None:
    o = outline("src/click/__init__.py", read("click", "src/click/__init__.py"))
    assert o.head[0].startswith('"""Click is a simple Python module inspired by the stdlib')
    assert o.head[0].endswith('to make writing command line scripts fun."""')
    assert (
        "from .core import Argument, BaseCommand, Command, CommandCollection, Context, Group,"
        " MultiCommand, Option, Parameter"
    ) in o.head
    assert any(line.startswith("from .types import BOOL, Choice,") for line in o.head)
    assert [s.name for s in o.symbols] == ["__version__"]


def test_httpx_urls_and_init() -> None:
    o = outline("httpx/_urls.py", read("httpx", "httpx/_urls.py"))
    assert o.head == ("__all__: URL, QueryParams",)
    top = {s.name: s for s in o.symbols if s.parent < 0}
    assert top["URL"].lines[0] == "class URL:"
    assert top["QueryParams"].lines[0] == "class QueryParams(typing.Mapping[str, str]):"
    members = {o.symbols[s.parent].name + "." + s.name for s in o.symbols if s.parent >= 0}
    assert {
        "URL.host",
        "URL.join",
        "URL.copy_with",
        "QueryParams.get",
        "QueryParams.add",
    } <= members
    init = outline("httpx/__init__.py", read("httpx", "httpx/__init__.py"))
    assert "from ._client import *" in init.head
    assert any(line.startswith("__all__: __description__, __title__,") for line in init.head)
    assert "Client" in init.head[-1].split(": ", 1)[1].split(", ")


def test_django_models_init_reexports_and_computed_all() -> None:
    o = outline("django/db/models/__init__.py", read("django", "django/db/models/__init__.py"))
    assert any(
        line.startswith("from django.db.models.deletion import CASCADE, DO_NOTHING, PROTECT")
        for line in o.head
    )
    assert "from django.db.models.aggregates import *" in o.head
    assert not any("aggregates_all" in line for line in o.head)


def _lines_of(source: str) -> list[str]:
    return render(outline("m.py", textwrap.dedent(source))).splitlines()


def test_literals_and_annotations_are_shown_as_written() -> None:
    lines = _lines_of(
        '''
        SEP = '\\t'
        MASK = 0xFF_FF
        NAME = "x"  # a comment after it is not part of the value
        def open(path: "os.PathLike[str]", mode: str = 'rb', *, enc: str = "utf-8") -> 'IO':
            """Open it."""
        @register("name", kind='plain')
        class Thing(Base, flag=True): ...
        '''
    )
    assert "SEP = '\\t'" in lines
    assert "MASK = 0xFF_FF" in lines
    assert 'NAME = "x"' in lines
    assert (
        'def open(path: "os.PathLike[str]", mode: str = \'rb\', *, enc: str = "utf-8")'
        " -> 'IO':" in lines
    )
    assert "@register(\"name\", kind='plain')" in lines
    assert "class Thing(Base, flag=True):" in lines


def test_a_value_over_lines_with_a_comment_is_printed_from_the_tree() -> None:
    # The comment cannot be joined into one line: the value is rendered from its tree.
    lines = _lines_of(
        """
        PAIR = (  # first, second
            1,
            2,
        )
        """
    )
    assert "PAIR = (1, 2)" in lines


def test_a_configuration_dict_shows_its_keys_and_values_shortest_first() -> None:
    entries = {f"key_{i}": f'"{"v" * (i * 7)}"' for i in range(1, 12)}
    body = ",\n    ".join(f'"{k}": {v}' for k, v in entries.items())
    lines = _lines_of(f"DEFAULTS = {{\n    {body},\n    **OTHER,\n}}\n")
    (line,) = [line for line in lines if line.startswith("DEFAULTS = ")]
    assert line.endswith(", ...}")  # not all fit: the rest is marked, never cut mid-way
    shown = [k for k in entries if f'"{k}": ' in line]
    assert shown == list(entries)[: len(shown)]  # the shortest first, in the source's order
    assert 3 <= len(shown) < len(entries)
    assert "**OTHER" in line  # short, so kept
    assert all(f'"{k}": {entries[k]}' in line for k in shown)  # each whole


@given(
    st.lists(
        st.one_of(
            st.integers(-(10**6), 10**6).map(str),
            st.integers(0, 2**20).map(hex),
            st.text(st.characters(codec="utf-8", categories=["L", "N", "Zs"]), max_size=8).map(
                lambda t: f"'{t}'"
            ),
            st.text(st.characters(codec="utf-8", categories=["L", "N"]), max_size=8).map(
                lambda t: f'"{t}"'
            ),
            st.sampled_from(["None", "True", "...", "1.5e3", "b'x'", "(1,)", "[]"]),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_any_short_literal_is_shown_as_written(values: list[str]) -> None:
    source = "".join(f"C{i} = {v}\n" for i, v in enumerate(values))
    lines = render(outline("m.py", source)).splitlines()
    for i, value in enumerate(values):
        assert f"C{i} = {value}" in lines


@given(st.lists(st.text(max_size=70), max_size=40), st.integers(0, 400))
def test_fit_entries_shows_the_shortest_within_the_width(entries: list[str], width: int) -> None:
    shown, cut = fit_entries(entries, width)
    assert shown == sorted(shown) and all(entries[i] for i in shown)
    assert cut == (len(shown) < len(entries))
    left = [e for i, e in enumerate(entries) if e and i not in shown]
    if left:  # only when they do not all fit: then within the width, none left shorter
        assert sum(len(entries[i]) + 2 for i in shown) <= width
        assert max((len(entries[i]) for i in shown), default=0) <= min(map(len, left))
