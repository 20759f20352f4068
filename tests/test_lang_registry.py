"""The table of languages: one record per language, and every stage finds in it what it needs.

A record names the code a stage runs for it (a lexicon reader, a module system, an outliner or
tree-sitter hooks, a tree-sitter query file); these tests check that every name a record gives
is one the stage knows, that the table is a function from names to languages, and that each
stage, asked about a file of every language, answers from the record.
"""

from __future__ import annotations

import posixpath
import re
from importlib import resources
from typing import get_args

from hypothesis import example, given
from hypothesis import strategies as st

from packer import lexicon, summaries, surface
from packer.lang import LANGUAGES, fence_for, kind_for, language_for, named, record_for
from packer.lang.record import (
    KINDS,
    MODULE_SYSTEMS,
    READERS,
    Kind,
    ModuleSystem,
    Reader,
)
from packer.render import fence_language
from packer.summaries import outline

EXTENSIONS = sorted({e for lang in LANGUAGES for e in lang.extensions})
FILENAMES = sorted({n for lang in LANGUAGES for n in lang.filenames})


def test_names_extensions_and_file_names_each_map_to_one_language() -> None:
    names = [lang.name for lang in LANGUAGES]
    assert len(names) == len(set(names))
    extensions = [e for lang in LANGUAGES for e in lang.extensions]
    assert len(extensions) == len(set(extensions)), sorted(
        e for e in extensions if extensions.count(e) > 1
    )
    filenames = [n for lang in LANGUAGES for n in lang.filenames]
    assert len(filenames) == len(set(filenames))
    for lang in LANGUAGES:
        assert named(lang.name) is lang
        for ext in lang.extensions:
            # Compared in lowercase, with its dot, and a single one: the last extension decides.
            assert re.fullmatch(r"\.[a-z0-9+]+", ext), (lang.name, ext)
            assert language_for(f"src/x{ext}") == lang.name
        for name in lang.filenames:
            assert name == name.lower() and "/" not in name
            assert language_for(f"a/{name.upper()}") == lang.name
    assert named("no-such-language") is None and named(None) is None


def test_fences_are_valid_info_strings_of_their_own_extensions() -> None:
    fenced: list[str] = []
    for lang in LANGUAGES:
        for ext, fence in lang.fences:
            # A markdown info string: one word, nothing that could end the fence or the line.
            assert re.fullmatch(r"[a-z][a-z0-9+#-]*", fence), (lang.name, fence)
            # Fenced by its own language; a record with no extension is one renders only fence.
            assert ext in lang.extensions or not lang.extensions, (lang.name, ext)
            assert fence_language(f"dir/file{ext.upper()}") == fence
            assert fence_for(ext) == fence
            fenced.append(ext)
    assert len(fenced) == len(set(fenced))
    for ext in EXTENSIONS:
        if ext not in fenced:
            assert fence_language(f"x{ext}") == ""
    # Known by its whole name only: fenced bare.
    assert fence_language("Makefile") == "" and fence_language("docs/README") == ""


def test_every_name_a_record_gives_is_one_its_stage_knows() -> None:
    assert set(get_args(Kind)) == set(KINDS)
    assert set(get_args(Reader)) == set(READERS)
    assert set(get_args(ModuleSystem)) == set(MODULE_SYSTEMS)
    # Each stage implements every name its part of a record may hold.
    assert set(READERS) == {*lexicon._READERS, "document"}
    assert set(MODULE_SYSTEMS) == set(surface._RESOLVERS)
    queries = resources.files("packer.summaries").joinpath("queries")
    for lang in LANGUAGES:
        if lang.readme:
            target = named(lang.readme)
            assert target is not None and target.lexicon is not None
        how = lang.outline
        if how is None:
            continue
        if how.grammar:
            assert how.summarizer in summaries.HOOKS, lang.name
            assert how.query and queries.joinpath(f"{how.query}.scm").is_file(), lang.name
        elif how.summarizer:
            assert how.summarizer in summaries.OUTLINERS, lang.name
        if how.sniff:
            assert how.sniff in summaries.SNIFFERS and named(how.sniff) is not None
        if how.plain:
            assert named(how.plain) is not None
    # Every query file is some language's.
    used = {lang.outline.query for lang in LANGUAGES if lang.outline and lang.outline.query}
    present = {p.name.removesuffix(".scm") for p in queries.iterdir() if p.name.endswith(".scm")}
    assert used == present


def test_kinds_and_families_agree() -> None:
    # The rating links names within a family; a file of no family is a document, whose names
    # are tried against every family, or a file the lexicon does not read at all.
    for lang in LANGUAGES:
        assert lang.kind in KINDS
        assert lang.comment in ("#", "//")
        if lang.kind == "code":
            assert lang.family and lang.lexicon is not None, lang.name
        else:
            assert not lang.family, lang.name
        if lang.lexicon is not None and lang.kind != "code":
            assert lang.kind == "document" and lang.lexicon.reader == "document", lang.name
        if lang.kind == "document":
            assert lang.lexicon is not None and lang.lexicon.reader == "document"


def test_every_stage_answers_for_every_language() -> None:
    layout = surface.Layout(["a.txt"], [None])
    for lang in LANGUAGES:
        if not lang.extensions:
            continue
        path = f"pkg/sample{lang.extensions[0]}"
        found = lexicon.lex(path, b"alpha_beta = 1\n")
        if lang.lexicon is None:
            assert found is None and lexicon.cache_namespace(path) is None
        else:
            assert found is not None and found.lang == lang.name
            assert lexicon.cache_namespace(path) == f"lex:{lexicon.LEXICON_VERSION}:{lang.name}"
        assert surface.module_system(lang.name) == (lang.modules and lang.modules.system)
        assert layout.resolve(0, "nothing/here", lang.name) == []
        shown = outline(path, "some text\n")
        how = lang.outline
        assert shown.lang in (lang.name, how and how.plain, how and how.sniff), lang.name
    # A README in plain text gets a document's lexicon.
    readme = lexicon.lex("README.txt", b"Call `alpha_beta` from `src/x.py`\n")
    assert readme is not None and readme.lang == "markdown" and "src/x.py" in readme.imports
    assert lexicon.lex("notes.txt", b"Use `alpha_beta`\n") is None


_SEGMENT = st.text(alphabet="abcXYZ019._-+ ", min_size=0, max_size=8)


@st.composite
def paths(draw: st.DrawFn) -> str:
    folders = draw(st.lists(_SEGMENT.filter(lambda s: s not in ("", ".", "..")), max_size=3))
    kind = draw(st.sampled_from(["known", "name", "random"]))
    if kind == "known":
        ext = draw(st.sampled_from(EXTENSIONS))
        stem = draw(_SEGMENT)
        base = stem + "".join(c.upper() if draw(st.booleans()) else c for c in ext)
    elif kind == "name":
        name = draw(st.sampled_from(FILENAMES))
        base = "".join(c.upper() if draw(st.booleans()) else c for c in name)
    else:
        base = draw(_SEGMENT)
    return "/".join([*folders, base])


def _expected(path: str) -> str | None:
    """The language the table gives ``path``, worked out from the records alone."""
    name = path.rsplit("/", 1)[-1].lower()
    by_name = [lang.name for lang in LANGUAGES if name in lang.filenames]
    if by_name:
        return by_name[0]
    stripped = name.lstrip(".")  # a name's leading dots start no extension (".bashrc")
    ext = "." + stripped.rsplit(".", 1)[1] if "." in stripped else ""
    by_ext = [lang.name for lang in LANGUAGES if ext in lang.extensions]
    return by_ext[0] if by_ext else None


@given(paths())
@example("dir/.py")
@example("Makefile.py")
@example("a.tar.gz")
@example("x.C++")
@example("src/README")
def test_language_for_is_the_table(path: str) -> None:
    lang = language_for(path)
    assert lang == _expected(path)
    record = record_for(path)
    assert (record.name if record is not None else None) == lang
    # The language depends on the file's name only, never on its folders.
    assert language_for(posixpath.basename(path)) == lang


_KNOWN_NAMES = sorted(
    {f"a{ext}" for lang in LANGUAGES for ext in lang.extensions}
    | {name for lang in LANGUAGES for name in lang.filenames}
)


@given(
    st.sampled_from(_KNOWN_NAMES) | st.text(alphabet="abcXYZ./_-", max_size=12),
    st.sampled_from(["", "src/", "a.b/", "Dir/"]),
    st.booleans(),
)
def test_kind_for_is_the_kind_of_the_record_for(name: str, folder: str, upper: bool) -> None:
    path = folder + (name.upper() if upper else name)
    record = record_for(path)
    assert kind_for(path) == (record.kind if record is not None else None)
