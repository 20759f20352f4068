"""The languages cas knows: one `Language` record each (`packer.lang.record`), and the lookups
every stage makes through them.

A file's language comes from its name: a well-known whole name (``Makefile``, ``README``) first,
else its last extension, both compared in lowercase. Each record then says what every stage
decides by the language: its code fence in a render, its kind (code is rated by the reference
graph, documents and configuration are not), the family its names link within, how the lexicon
reads it, how its imports resolve, how its outline is made. Lookups are dictionary reads built
once, when the table loads.

Adding a language is adding its record to `LANGUAGES` (ARCHITECTURE.md, "Adding a language").
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from packer.lang.record import (
    NAMES,
    Declarations,
    Kind,
    Language,
    Lexing,
    Modules,
    Outlining,
    decl,
    decls,
    fenced,
    word_set,
)

# A JavaScript name may hold a dollar sign.
JS_IDENT: Final = NAMES["js"]


# --- what each language exports, by the modifier words before a declaration -----------------


def _not_private(words: list[bytes], name: bytes) -> bool:
    return not any(w in (b"private", b"protected", b"internal", b"fileprivate") for w in words)


def _public(words: list[bytes], name: bytes) -> bool:
    return b"public" in words or b"open" in words


def _js_exported(words: list[bytes], name: bytes) -> bool:
    return b"export" in words


def _rust_exported(words: list[bytes], name: bytes) -> bool:
    return b"pub" in words


def _go_exported(words: list[bytes], name: bytes) -> bool:
    return b"A"[0] <= name[0] <= b"Z"[0]


def _lua_exported(words: list[bytes], name: bytes) -> bool:
    return b"local" not in words


# --- words: per language its reserved words (never a declared name nor a reference), then names
# so common in its code (builtins, standard types) that a reference to them says nothing ---------

_PY_KW = word_set(
    "False None True and as assert async await break class continue def del elif else except "
    "finally for from global if import in is lambda nonlocal not or pass raise return try while "
    "with yield self cls"
)
_PY_COMMON = word_set(
    "match case print len str int float bool dict list set tuple object type super isinstance "
    "issubclass range enumerate zip map filter repr hasattr getattr setattr bytes Any Optional "
    "Union kwargs args"
)
_JS_KW = word_set(
    "break case catch class const continue debugger default delete else enum export extends "
    "false finally for function import instanceof new null return super switch this throw true "
    "try typeof var void while with yield let static implements interface package private "
    "protected public await async any boolean number string symbol never unknown object type "
    "declare readonly keyof infer namespace module undefined from get set constructor abstract "
    "override satisfies"
)
_JS_COMMON = word_set(
    "require console window document Promise Array Object String Number Boolean Error Map Set "
    "JSON Math"
)
_GO_KW = word_set(
    "break case chan const continue default defer else fallthrough for func goto import "
    "interface map package range return select struct switch type var nil true false iota"
)
_GO_COMMON = word_set(
    "bool byte error string int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr "
    "float32 float64 rune append cap close copy delete len make new panic print println recover "
    "complex complex64 complex128 real imag any comparable err"
)
_RUST_KW = word_set(
    "break const continue crate else enum extern false for impl let loop match mod move mut "
    "pub ref return self Self static struct super trait true type unsafe use where while async "
    "await dyn macro_rules"
)
_RUST_COMMON = word_set(
    "i16 i32 i64 i128 isize u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Some "
    "None Box Result"
)
_JAVA_KW = word_set(
    "abstract assert boolean break byte case catch char class const continue default double else "
    "enum extends final finally float for goto implements import instanceof int interface long "
    "native new package private protected public return short static strictfp super switch "
    "synchronized this throw throws transient try void volatile while var record sealed permits "
    "yield true false null"
)
_JAVA_COMMON = word_set("String Object Override")
_C_KW = word_set(
    "auto break case char const continue default double else enum extern float for goto inline "
    "int long register restrict return short signed sizeof static struct switch typedef union "
    "unsigned void volatile while bool true false nullptr class namespace template typename "
    "public private protected virtual override final new delete this operator using friend "
    "const_cast static_cast dynamic_cast reinterpret_cast explicit mutable constexpr noexcept "
    "decltype include define ifdef ifndef endif undef pragma elif"
)
_C_COMMON = word_set(
    "NULL std size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t"
)
_CS_KW = word_set(
    "abstract base bool break byte case catch char checked class const continue decimal default "
    "delegate double else enum event explicit extern false finally fixed float for foreach goto "
    "implicit int interface internal lock long namespace new null object operator out override "
    "params private protected public readonly ref return sbyte sealed short sizeof stackalloc "
    "static string struct switch this throw true try typeof uint ulong unchecked unsafe ushort "
    "using virtual void volatile while var async await get set value record init partial where "
    "yield dynamic nameof"
)
_RUBY_KW = word_set(
    "alias and begin break case class def defined do else elsif end ensure false for module next "
    "nil not redo rescue retry return self super then true undef unless until when while yield"
)
_RUBY_COMMON = word_set(
    "require require_relative attr_accessor attr_reader attr_writer private protected public "
    "include extend puts raise lambda proc new initialize"
)
_KOTLIN_KW = word_set(
    "abstract annotation break class companion const continue data else enum false final for fun "
    "if import in inline inner interface internal null object open operator out override "
    "package private protected public return sealed super suspend this throw true try typealias "
    "val var when while"
)
_SWIFT_KW = word_set(
    "associatedtype break case catch class continue default defer deinit else enum extension "
    "fallthrough false fileprivate for func guard import init inout internal let nil open "
    "operator private protocol public repeat return self Self static struct subscript super "
    "switch throw throws true try typealias var where while"
)
_SCALA_KW = word_set(
    "abstract case catch class def else extends false final finally for forSome implicit import "
    "lazy match new null object override package private protected return sealed super this "
    "throw trait true try type val var while with yield"
)
_JVM_COMMON = word_set("String Int Long Boolean Unit Any Bool")
_PHP_KW = word_set(
    "abstract and array break callable case catch class clone const continue declare default "
    "echo else elseif empty enddeclare endfor endforeach endif endswitch endwhile enum extends "
    "final finally for foreach function global goto implements include include_once instanceof "
    "insteadof interface isset list match namespace new null print private protected public "
    "readonly require require_once return static switch this throw trait try unset use var "
    "while yield true false php"
)
_LUA_KW = word_set(
    "and break else elseif end false for function goto local nil not repeat return then true "
    "until while self require"
)
_BASH_KW = word_set(
    "case done elif else esac export fi for function local return then until while echo exit "
    "set unset shift source read true false"
)
# A document's code names: words of prose that say nothing even in a code span.
_DOC_COMMON = word_set(
    "the and for are was were you your this that with from into not but can will all any has "
    "have its use used using also may must should see via etc http https www com org"
)

# --- declarations the lexicon scans for ---------------------------------------------------------

_JS_DECLARATIONS = Declarations(
    _JS_KW,
    (
        decl(b"function", name="js", gap="star"),
        decl(b"class", name="js"),
        decl(b"interface", name="js"),
        decl(b"type", name="js"),
        decl(b"enum", name="js"),
        decl(b"namespace", name="js"),
        decl(b"const", name="js"),
        decl(b"let", name="js"),
        decl(b"var", name="js"),
    ),
    word_set("export default declare async abstract const"),
    (
        re.compile(rb"""from[ \t]*['"]([^'"\n]+)['"]"""),
        re.compile(rb"""import[ \t]*\(?[ \t]*['"]([^'"\n]+)['"]"""),
        re.compile(rb"""require[ \t]*\([ \t]*['"]([^'"\n]+)['"]"""),
    ),
    bare_indented=False,
    exported=_js_exported,
)
_JAVA_LIKE_MODIFIERS = word_set(
    "public protected private static final abstract sealed non-sealed strictfp synchronized "
    "native default transient volatile internal virtual override readonly partial async unsafe "
    "extern new"
)
_JVM_PACKAGE = re.compile(rb"\npackage[ \t]+([\w.]+)")

# --- the shared parts of several records ---------------------------------------------------------

_JS_LEXING = Lexing("javascript", _JS_KW | _JS_COMMON, _JS_DECLARATIONS)
_JS_MODULES = Modules("javascript")
_JVM_MODULES = Modules("dotted", (".java", ".kt", ".scala"))
_C_MODULES = Modules("include")
_DOCUMENT_LEXING = Lexing("document", _DOC_COMMON)
_DOCUMENT_MODULES = Modules("document")

# --- the table ------------------------------------------------------------------------------------

# Fences: an extension not listed in a record's `fences` renders in a bare fence (`.mts`, `.cjs`,
# `.hh`, `.kts`, `.markdown`, Scala, Lua, ...), as packs always have; naming one changes the
# render of every project holding such files.
LANGUAGES: Final[tuple[Language, ...]] = (
    Language(
        "python",
        "code",
        (".py", ".pyi"),
        fences=fenced("python", ".py", ".pyi"),
        family="python",
        comment="#",
        lexicon=Lexing("python", _PY_KW | _PY_COMMON, Declarations(_PY_KW), docstrings=True),
        modules=Modules("python"),
        outline=Outlining("python"),
    ),
    Language(
        "typescript",
        "code",
        (".ts", ".mts", ".cts"),
        fences=fenced("typescript", ".ts"),
        family="javascript",
        lexicon=_JS_LEXING,
        modules=_JS_MODULES,
        outline=Outlining("typescript", "typescript", "typescript"),
    ),
    Language(
        "tsx",
        "code",
        (".tsx",),
        fences=fenced("tsx", ".tsx"),
        family="javascript",
        lexicon=_JS_LEXING,
        modules=_JS_MODULES,
        outline=Outlining("typescript", "tsx", "typescript"),
    ),
    Language(
        "javascript",
        "code",
        (".js", ".mjs", ".cjs", ".jsx"),
        fences=fenced("javascript", ".js", ".mjs") + fenced("jsx", ".jsx"),
        family="javascript",
        lexicon=_JS_LEXING,
        modules=_JS_MODULES,
        outline=Outlining("typescript", "javascript", "javascript"),
    ),
    Language(
        "go",
        "code",
        (".go",),
        fences=fenced("go", ".go"),
        family="go",
        lexicon=Lexing(
            "go",
            _GO_KW | _GO_COMMON,
            Declarations(
                _GO_KW,
                (
                    decl(b"func", top=True),
                    decl(b"func", top=True, gap="receiver", minor=True),
                    decl(b"type", top=True),
                    *decls("const var", top=True, minor=True),
                ),
                package=re.compile(rb"\npackage[ \t]+(\w+)"),
                exported=_go_exported,
            ),
        ),
        modules=Modules("go"),
        outline=Outlining("go", "go", "go"),
    ),
    Language(
        "rust",
        "code",
        (".rs",),
        fences=fenced("rust", ".rs"),
        family="rust",
        lexicon=Lexing(
            "rust",
            _RUST_KW | _RUST_COMMON,
            Declarations(
                _RUST_KW,
                (
                    *decls("fn struct enum trait type const static mod union"),
                    decl(b"macro_rules!", gap="any_blanks"),
                ),
                word_set("pub restricted async const unsafe extern default"),
                exported=_rust_exported,
            ),
        ),
        modules=Modules("rust"),
        outline=Outlining("rust", "rust", "rust"),
    ),
    Language(
        "java",
        "code",
        (".java",),
        fences=fenced("java", ".java"),
        family="jvm",
        lexicon=Lexing(
            "java",
            _JAVA_KW | _JAVA_COMMON,
            Declarations(
                _JAVA_KW,
                decls("class interface enum record @interface"),
                _JAVA_LIKE_MODIFIERS,
                (re.compile(rb"import[ \t]+(?:static[ \t]+)?([\w.*]+)[ \t]*;"),),
                _JVM_PACKAGE,
                _public,
            ),
        ),
        modules=_JVM_MODULES,
        outline=Outlining("java", "java", "java"),
    ),
    Language(
        "kotlin",
        "code",
        (".kt", ".kts"),
        fences=fenced("kotlin", ".kt"),
        family="jvm",
        lexicon=Lexing(
            "generic",
            _KOTLIN_KW | _JVM_COMMON,
            Declarations(
                _KOTLIN_KW,
                (
                    *decls("fun class interface object typealias"),
                    *decls("val var", top=True, minor=True),
                ),
                word_set(
                    "public private internal protected open abstract sealed data inline override "
                    "suspend enum annotation inner companion const lateinit operator infix "
                    "tailrec external expect actual value fun"
                ),
                (re.compile(rb"import[ \t]+([\w.*]+)"),),
                _JVM_PACKAGE,
                _not_private,
            ),
        ),
        modules=_JVM_MODULES,
        outline=Outlining("kotlin", "kotlin", "kotlin"),
    ),
    Language(
        "scala",
        "code",
        (".scala",),
        family="jvm",
        lexicon=Lexing(
            "generic",
            _SCALA_KW | _JVM_COMMON,
            Declarations(
                _SCALA_KW,
                (*decls("def class object trait type"), *decls("val var", top=True, minor=True)),
                word_set("private protected final sealed abstract implicit lazy override case"),
                (re.compile(rb"import[ \t]+([\w.]+)"),),
                _JVM_PACKAGE,
                _not_private,
            ),
        ),
        modules=_JVM_MODULES,
    ),
    Language(
        "c",
        "code",
        (".c", ".h"),
        fences=fenced("c", ".c", ".h"),
        family="c",
        lexicon=Lexing("c", _C_KW | _C_COMMON, Declarations(_C_KW)),
        modules=_C_MODULES,
        outline=Outlining("cfamily", "c", "c", sniff="cpp"),
    ),
    Language(
        "cpp",
        "code",
        (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".tpp", ".inl"),
        fences=fenced("cpp", ".cc", ".cpp", ".hpp"),
        family="c",
        lexicon=Lexing("cpp", _C_KW | _C_COMMON, Declarations(_C_KW)),
        modules=_C_MODULES,
        outline=Outlining("cfamily", "cpp", "cpp"),
    ),
    Language(
        "csharp",
        "code",
        (".cs",),
        fences=fenced("csharp", ".cs"),
        family="csharp",
        lexicon=Lexing(
            "java",
            _CS_KW,
            Declarations(
                _CS_KW,
                decls("class interface enum struct record delegate"),
                _JAVA_LIKE_MODIFIERS,
                (re.compile(rb"using[ \t]+(?:static[ \t]+)?([\w.]+)[ \t]*;"),),
                re.compile(rb"namespace[ \t]+([\w.]+)"),
                _public,
            ),
        ),
        modules=Modules("namespace"),
        outline=Outlining("csharp", "csharp", "csharp"),
    ),
    Language(
        "ruby",
        "code",
        (".rb", ".rake", ".gemspec", ".ru"),
        ("rakefile", "gemfile", "podfile", "vagrantfile"),
        fences=fenced("ruby", ".rb"),
        family="ruby",
        comment="#",
        lexicon=Lexing("ruby", _RUBY_KW | _RUBY_COMMON, Declarations(_RUBY_KW)),
        modules=Modules("relative", (".rb",)),
        outline=Outlining("ruby", "ruby", "ruby"),
    ),
    Language(
        "php",
        "code",
        (".php",),
        fences=fenced("php", ".php"),
        family="php",
        lexicon=Lexing(
            "generic",
            _PHP_KW,
            Declarations(
                _PHP_KW,
                decls("function class interface trait enum"),
                word_set("public private protected static abstract final readonly"),
                (
                    re.compile(rb"use[ \t]+([\w\\]+)"),
                    re.compile(rb"""(?:require|include)(?:_once)?[ \t(]*['"]([^'"\n]+)['"]"""),
                ),
                re.compile(rb"namespace[ \t]+([\w\\]+)"),
                _not_private,
            ),
        ),
        modules=Modules("relative", (".php",), "\\"),
        outline=Outlining("php", "php", "php"),
    ),
    Language(
        "swift",
        "code",
        (".swift",),
        fences=fenced("swift", ".swift"),
        family="swift",
        lexicon=Lexing(
            "generic",
            _SWIFT_KW | _JVM_COMMON,
            Declarations(
                _SWIFT_KW,
                (
                    *decls("func class struct enum protocol typealias actor"),
                    *decls("let var", top=True, minor=True),
                ),
                word_set(
                    "public open private fileprivate internal static final override mutating "
                    "class convenience required indirect lazy weak nonisolated"
                ),
                (re.compile(rb"import[ \t]+(\w+)"),),
                exported=_public,
            ),
        ),
        outline=Outlining("swift", "swift", "swift"),
    ),
    Language(
        "lua",
        "code",
        (".lua",),
        family="lua",
        lexicon=Lexing(
            "generic",
            _LUA_KW,
            Declarations(
                _LUA_KW,
                (decl(b"function", name="dotted"),),
                word_set("local"),
                (re.compile(rb"""require[ \t(]*['"]([^'"\n]+)['"]"""),),
                exported=_lua_exported,
            ),
        ),
        modules=Modules("relative", (".lua",), "."),
    ),
    Language(
        "bash",
        "code",
        (".sh", ".bash"),
        fences=fenced("bash", ".sh", ".bash"),
        family="shell",
        comment="#",
        lexicon=Lexing(
            "shell",
            _BASH_KW,
            Declarations(
                _BASH_KW,
                (decl(b"function"),),
                imports=(re.compile(rb"""(?:source|\.)[ \t]+['"]?([\w./-]+)"""),),
            ),
        ),
        modules=Modules("relative", (".sh",)),
    ),
    Language(
        "markdown",
        "document",
        (".md", ".markdown", ".mdx"),
        ("readme",),
        fences=fenced("markdown", ".md"),
        lexicon=_DOCUMENT_LEXING,
        modules=_DOCUMENT_MODULES,
        outline=Outlining("markdown"),
    ),
    Language(
        "rst",
        "document",
        (".rst",),
        fences=fenced("rst", ".rst"),
        lexicon=_DOCUMENT_LEXING,
        modules=_DOCUMENT_MODULES,
        outline=Outlining("rst", plain="text"),
    ),
    Language(
        "text",
        "text",
        (".txt",),
        fences=fenced("text", ".txt"),
        readme="markdown",
        outline=Outlining(sniff="rst"),  # Sphinx projects often write their docs as .txt
    ),
    Language(
        "toml", "config", (".toml",), fences=fenced("toml", ".toml"), outline=Outlining("toml")
    ),
    Language(
        "yaml",
        "config",
        (".yaml", ".yml"),
        fences=fenced("yaml", ".yaml", ".yml"),
        outline=Outlining("yaml"),
    ),
    Language(
        "json",
        "config",
        (".json", ".jsonc"),
        fences=fenced("json", ".json"),
        outline=Outlining("json"),
    ),
    Language("html", "text", (".html",), fences=fenced("html", ".html")),
    Language("css", "text", (".css",), fences=fenced("css", ".css")),
    Language("sql", "text", (".sql",), fences=fenced("sql", ".sql")),
    Language("dockerfile", "text", filenames=("dockerfile",)),
    Language("make", "text", filenames=("makefile",)),
    # XML is not read: no file is given this language (its outline is its first lines, as of
    # any unknown file), but renders fence it by its name.
    Language("xml", "text", fences=fenced("xml", ".xml")),
)

# Plain dictionaries, read once or twice for every file of every pack; nothing writes them.
_BY_NAME: Final[dict[str, Language]] = {lang.name: lang for lang in LANGUAGES}
_BY_EXTENSION: Final[dict[str, str]] = {
    ext: lang.name for lang in LANGUAGES for ext in lang.extensions
}
_BY_FILENAME: Final[dict[str, str]] = {
    name: lang.name for lang in LANGUAGES for name in lang.filenames
}
_FENCES: Final[Mapping[str, str]] = MappingProxyType(
    {ext: fence for lang in LANGUAGES for ext, fence in lang.fences}
)


def language_for(path: str) -> str | None:
    """The name of ``path``'s language by its well-known name or extension, or None."""
    name = path[path.rfind("/") + 1 :].lower()
    found = _BY_FILENAME.get(name)
    if found is not None:
        return found
    # The extension as `posixpath.splitext` takes it: from the last dot, when a character
    # other than a dot comes before it (``.bashrc`` and ``..`` have none).
    dot = name.rfind(".")
    if dot <= 0 or not name[:dot].lstrip("."):
        return None
    return _BY_EXTENSION.get(name[dot:])


_KIND_BY_NAME: Final[dict[str | None, Kind]] = {lang.name: lang.kind for lang in LANGUAGES}


def kind_for(path: str) -> Kind | None:
    """The kind of ``path``'s language (`language_for`), or None: the same answer as
    ``record_for(path).kind``, in one lookup more (a map of a large project asks it of every
    file)."""
    return _KIND_BY_NAME.get(language_for(path))


def named(name: str | None) -> Language | None:
    """The record of the language called ``name``, or None when there is none."""
    return None if name is None else _BY_NAME.get(name)


def record_for(path: str) -> Language | None:
    """The record of ``path``'s language (`language_for`), or None."""
    return named(language_for(path))


def fence_for(extension: str) -> str:
    """The info string of the code fence of a file with ``extension`` (lowercase, with its
    dot), or "" for a bare fence."""
    return _FENCES.get(extension, "")


def is_readme(path: str) -> bool:
    """Whether ``path`` is a README (of any extension, or none)."""
    return posixpath.basename(path).lower().startswith("readme")
