"""`cas load QUERY`: packs chosen by the query's words, what it asks shown with its source,
gaps filled from other packs, the fallback, a manifest of its own kind, deterministic."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from realcode import corpus

from cas import manifest as mf
from cas.digest import Digest
from packer.config import Budget, Domain, LoadConfig
from packer.load import plan, query_words
from tests.conftest import run_cas

ENGINE = {
    "engine/store.py": '''"""The blob store."""


class BlobStore:
    """Keeps blobs by digest."""

    def __init__(self, path, chunk_size=65536):
        self.path = path
        self.chunk_size = chunk_size

    def put_blob(self, data):
        """Store DATA once; returns its digest."""
        digest = hash(data)
        self.blobs[digest] = data
        return digest

    def collect_garbage(self, roots):
        """Delete every blob no root references."""
        for digest in list(self.blobs):
            if digest not in roots:
                del self.blobs[digest]
''',
    "engine/verify.py": "from engine.store import BlobStore\n\n\ndef verify_all(store):\n"
    "    return [d for d in store.blobs if not store.blobs[d]]\n",
}
WEB = {
    "web/router.py": """class Router:
    def add_route(self, path, handler):
        self.routes[path] = handler

    def dispatch(self, request):
        return self.routes[request.path](request)


def make_app(routes):
    app = Router()
    for path, handler in routes.items():
        app.add_route(path, handler)
    return app
""",
    "web/views.py": "def index(request):\n    return 'hello'\n\n\ndef about(request):\n"
    "    return 'about'\n",
}
CONFIG = """[pack]
budget = { target = 1500, max = 1500 }

[scopes.engine]
roots = ["engine"]

[scopes.web]
roots = ["web"]

[load]
core = ["web"]
budget = { target = 1500, max = 1500 }
fallback = { max = 4000 }

[load.domains.storage]
triggers = ["blob", "gc"]
packs = ["engine"]
"""


def project(tmp_path: Path, config: str = CONFIG) -> Path:
    root = tmp_path / "proj"
    for rel, text in {**ENGINE, **WEB}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cas.toml").write_text(config)
    r = run_cas("pack", cwd=root)
    assert r.code == 0, r.err
    return root


def load(root: Path, query: str, *args: str) -> dict[str, object]:
    r = run_cas("load", query, "--json", *args, cwd=root)
    assert r.code == 0, r.err
    out: dict[str, object] = json.loads(r.out)
    return out


def render(root: Path, query: str, *args: str) -> str:
    r = run_cas("--quiet", "load", query, "--render", *args, cwd=root)
    assert r.code == 0, r.err
    return r.out


def test_core_only_when_nothing_triggers(tmp_path: Path) -> None:
    root = project(tmp_path)
    report = load(root, "how does make_app register routes")
    assert report["core"] == ["web"] and report["triggered"] == []
    assert report["packs"] == ["web"] and not report["fallback"]
    text = (root / "manifests" / "load.pack").read_bytes()
    m = mf.decode(text)
    assert m.kind == "load" and m.query == "how does make_app register routes"
    assert [name for name, _ in m.sources] == ["web"]
    assert m.sources[0][1] == Digest.of((root / "manifests" / "web.pack").read_bytes())
    assert {e.path for e in m.entries} == set(WEB)


def test_domain_triggers_whole_words_and_identifiers(tmp_path: Path) -> None:
    root = project(tmp_path)
    report = load(root, "When is a Blob deleted by gc?")
    assert report["triggered"] == [
        {"domain": "storage", "triggers": ["blob", "gc"], "packs": ["engine"]}
    ]
    assert report["packs"] == ["web", "engine"]
    # a trigger is a whole word, or a word of an identifier; not a piece of a word
    assert load(root, "what does put_blob return")["triggered"] != []
    assert load(root, "blobby gcc")["triggered"] == []


def test_what_the_query_names_is_shown_with_its_source(tmp_path: Path) -> None:
    root = project(tmp_path)
    text = render(root, "What does BlobStore.put_blob do with the data? (blob)")
    assert "Loaded for the question: What does BlobStore.put_blob do" in text
    assert "self.blobs[digest] = data" in text  # the body, not only the signature
    assert text.index("engine/store.py") < text.index("web/router.py")


def test_gap_brings_files_of_other_packs(tmp_path: Path) -> None:
    root = project(tmp_path)
    report = load(root, "What does collect_garbage delete?")  # no trigger word
    assert report["triggered"] == []
    assert report["gaps"] == {"collect_garbage": ["engine/store.py"]}
    assert report["unmatched"] == [] and not report["fallback"]
    text = render(root, "What does collect_garbage delete?")
    assert "def collect_garbage(self, roots):" in text
    assert "del self.blobs[digest]" in text


def test_unknown_names_are_reported_not_fallen_back_on(tmp_path: Path) -> None:
    root = project(tmp_path)
    report = load(root, "Where is FrobnicatorWidget defined?")
    assert report["unmatched"] == ["FrobnicatorWidget"]
    assert not report["fallback"]  # no pack has it: a fallback would not show it either
    r = run_cas("load", "Where is FrobnicatorWidget defined?", cwd=root)
    assert "not found in any pack: FrobnicatorWidget" in r.out


def test_fallback_when_the_budget_hides_a_name(tmp_path: Path) -> None:
    config = CONFIG.replace("[load]\ncore", "[load]\ncore").replace(
        "budget = { target = 1500, max = 1500 }\nfallback",
        "budget = { target = 260, max = 300 }\nfallback",
    )
    root = project(tmp_path, config)
    report = load(root, "How do make_app, dispatch, verify_all and collect_garbage fit together?")
    assert report["fallback"] is True
    assert report["budget"] == {"target": 4000, "max": 4000}
    text = render(root, "How do make_app, dispatch, verify_all and collect_garbage fit together?")
    for name in ("make_app", "dispatch", "verify_all", "collect_garbage"):
        assert name in text


def test_budget_holds_in_every_format(tmp_path: Path) -> None:
    root = project(tmp_path)
    for budget in ("300", "800", "1500"):
        report = load(root, "BlobStore put_blob make_app dispatch", "--budget", budget)
        assert max(report["tokens"].values()) <= int(budget)  # type: ignore[attr-defined]
        assert report["budget"] == {"target": int(budget), "max": int(budget)}


def test_render_verify_diff_and_gc_treat_a_load_as_a_pack(tmp_path: Path) -> None:
    root = project(tmp_path)
    load(root, "What does BlobStore.put_blob do with the blob?")
    shown = run_cas("render", "load", cwd=root)
    assert shown.code == 0 and "Loaded for the question" in shown.out
    assert run_cas("render", "load", "--format", "xml", cwd=root).out.count("<query>") == 1
    assert run_cas("verify", "load", cwd=root).code == 0
    diff = run_cas("diff", "manifests/engine.pack", "load", cwd=root)
    assert diff.code == 0, diff.err
    gc = run_cas("gc", "--grace", "0", cwd=root)
    assert gc.code == 0, gc.err
    assert run_cas("verify", cwd=root).code == 0  # the load's focused summaries were kept
    again = run_cas("render", "load", cwd=root)
    assert again.out == shown.out


def test_same_query_same_bytes_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    q = "How does make_app use Router.add_route with a blob?"
    first = load(root, q)
    data = (root / "manifests" / "load.pack").read_bytes()
    again = load(root, q)
    assert first["digest"] == again["digest"]
    assert (root / "manifests" / "load.pack").read_bytes() == data
    (root / "manifests" / "load.pack").unlink()
    assert load(root, q, "--dry-run")["digest"] == first["digest"]
    dry = load(root, q, "--dry-run", "--name", "other")
    assert dry["digest"] != first["digest"]  # the name is the manifest's scope
    assert not (root / "manifests" / "other.pack").exists()
    assert not (root / "manifests" / "load.pack").exists()
    named = load(root, q, "--name", "mine")
    assert (root / "manifests" / "mine.pack").is_file()
    assert named["manifest"].endswith("manifests/mine.pack")  # type: ignore[union-attr]


def test_a_long_question_shows_its_start_in_the_header_and_fits_the_budget(tmp_path: Path) -> None:
    """A question of 30 KB (some 6,000 tokens, four times the budget): before, its header alone
    broke the budget ("required files alone need ..."). The header now shows its first 500
    characters and counts the rest; the manifest records it whole, the same bytes each time."""
    root = project(tmp_path)
    q = "How does BlobStore.put_blob keep data? " + "The store keeps on growing daily. " * 900
    assert len(q) > 30_000
    report = load(root, q)
    assert max(report["tokens"].values()) <= 1500  # type: ignore[attr-defined]
    data = (root / "manifests" / "load.pack").read_bytes()
    assert mf.decode(data).query == q
    assert load(root, q)["digest"] == report["digest"] == str(Digest.of(data))
    text = render(root, q, "--dry-run")
    header = next(line for line in text.splitlines() if line.startswith("Loaded for"))
    assert header.startswith("Loaded for the question: How does BlobStore.put_blob keep data?")
    assert f"... ({len(q) - 500:,} more characters) (from web, engine)." in header
    assert len(header) < 600
    assert "self.blobs[digest] = data" in text  # what it asks about is still what it shows
    # a budget too small even for the header: one line saying so, not "drop 'required'"
    r = run_cas("load", q, "--budget", "40", cwd=root)
    assert r.code == 1 and "Traceback" not in r.err
    (line,) = r.err.splitlines()
    assert "its header and list of files alone need" in line and "larger budget" in line
    assert "required" not in line and len(line) < 300


def test_without_load_config_every_pack(tmp_path: Path) -> None:
    config = CONFIG.split("[load]", maxsplit=1)[0]
    root = project(tmp_path, config)
    report = load(root, "What does collect_garbage delete?")
    assert report["core"] == ["engine", "web"] and report["gaps"] == {}
    assert report["budget"] == {"target": 11000, "max": 12000}


def test_bad_input(tmp_path: Path) -> None:
    root = project(tmp_path)
    for args, code, words in [
        (["the of and"], 2, "no word to load for"),
        (["make_app", "--budget", "0"], 2, "--budget must be a positive"),
        (["make_app", "--name", "../x"], 2, "--name"),
    ]:
        r = run_cas("load", *args, cwd=root)
        assert r.code == code, (args, r.err)
        assert words in r.err and len(r.err.strip().splitlines()) == 1
    bad = CONFIG.replace('packs = ["engine"]', 'packs = ["nope"]')
    (root / "cas.toml").write_text(bad)
    r = run_cas("load", "a blob question", cwd=root)
    assert r.code == 1 and "nope" in r.err and len(r.err.strip().splitlines()) == 1
    (root / "cas.toml").write_text(CONFIG.replace('triggers = ["blob", "gc"]', "triggers = []"))
    r = run_cas("load", "a blob question", cwd=root)
    assert r.code == 2 and "load.domains.storage.triggers" in r.err


def test_real_project_question(tmp_path: Path) -> None:
    """click as published: a question about one function is answered from its own source."""
    root = tmp_path / "click"
    shutil.copytree(corpus("click"), root)
    (root / "cas.toml").write_text("[pack]\nbudget = { target = 12000, max = 12000 }\n")
    assert run_cas("pack", cwd=root).code == 0
    ask = "What are the parameters of CliRunner.invoke, used to run a command in tests?"
    text = render(root, ask, "--budget", "12000")
    squashed = "".join(text.split())
    for snippet in ("def invoke(", 'cli: "BaseCommand"', "catch_exceptions: bool = True"):
        assert "".join(snippet.split()) in squashed
    static = "".join(run_cas("render", "repo", cwd=root).out.split())
    assert "catch_exceptions:bool=True" not in static  # the static pack at this budget lacks it


def test_plan_and_words() -> None:
    config = LoadConfig(
        core=("a",),
        budget=Budget(10, 10),
        domains=(Domain("d", ("put_blob",), ("b",)), Domain("e", ("os.path",), ("c",))),
        configured=True,
    )
    core, triggered = plan(config, "Why does PutBlob fail? put_blob then os.path", ["a", "b", "c"])
    assert core == ["a"] and [t.domain for t in triggered] == ["d", "e"]
    assert {"put_blob", "put", "blob", "os.path", "os", "path"} <= query_words("put_blob os.path")


@settings(max_examples=30)
@given(
    st.lists(st.sampled_from(["blob", "gc", "router", "x", "Blob", "GC", "put_blob"]), max_size=6)
)
def test_triggers_are_case_insensitive_whole_words(words: list[str]) -> None:
    config = LoadConfig(domains=(Domain("s", ("blob", "gc"), ("e",)),), configured=True)
    _core, triggered = plan(config, " ".join(words), ["w", "e"])
    lowered = {w.lower() for w in words} | {p for w in words for p in w.lower().split("_")}
    expect = bool(lowered & {"blob", "gc"})
    assert bool(triggered) == expect


def _pack_at(root: Path, budget: int) -> None:
    """Pack ``root`` with its pack, its load and the load's fallback all at ``budget``."""
    b = f"{{ target = {budget}, max = {budget} }}"
    (root / "cas.toml").write_text(
        f"[pack]\nbudget = {b}\n\n[load]\nbudget = {b}\nfallback = {{ max = {budget} }}\n"
    )
    assert run_cas("pack", cwd=root).code == 0


def _long_function(name: str, doc_lines: int, code_lines: int) -> str:
    doc = "".join(
        f"    Example line {k} of a long docstring with words.\n" for k in range(doc_lines)
    )
    code = "".join(f"    step_{k} = compute_{k}(args, expr)\n" for k in range(code_lines))
    return (
        f"def {name}(args, expr, modules=None, printer=None,\n"
        f"        dummify=False, cse=False):\n"
        f'    """Turn an expression into a function.\n\n{doc}    """\n{code}'
        "    return step_0\n"
    )


def test_a_long_function_shows_its_signature_when_its_body_does_not_fit(tmp_path: Path) -> None:
    """A question about a function whose docstring and code are long: its signature and its
    docstring's first lines are offered apart from the rest of its body, so a budget that
    cannot take the body still shows how it is called; the docstring is cut to its start."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "convert.py").write_text(
        '"""Conversions."""\n\n\n' + _long_function("lambdify", 300, 150)
    )
    for k in range(6):  # other files, one call each, to compete for the budget
        body = "".join(
            f"def use_{k}_{j}(x):\n    '''Step {j} of the work.'''\n    return x + {j}\n\n\n"
            for j in range(30)
        )
        body += "def convert(x):\n    return lambdify(x, x)\n"
        (root / "pkg" / f"user_{k}.py").write_text(body)
    _pack_at(root, 1200)
    text = render(root, "What are the parameters of lambdify, with their defaults?")
    assert "def lambdify(args, expr, modules=None, printer=None," in text
    assert "dummify=False, cse=False):" in text
    assert "Example line 5 of a long docstring" in text
    assert "Example line 6 of a long docstring" not in text  # cut after its first lines
    assert "Example line 299" not in text


def test_a_type_the_question_names_brings_its_fields(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "stack").mkdir(parents=True)
    fields = "".join(
        f"\t// Field{k} is option number {k}.\n\tField{k} []Factory{k}\n" for k in range(12)
    )
    funcs = "".join(
        f"// Helper{k} does step {k} of the work.\nfunc Helper{k}(o Options) int {{\n"
        + "".join(f"\tx{j} := o.Field{j % 12}\n" for j in range(20))
        + "\treturn 0\n}\n\n"
        for k in range(20)
    )
    (root / "stack" / "stack.go").write_text(
        "// Package stack is a network stack.\npackage stack\n\n"
        f"// Options holds a stack's options.\ntype Options struct {{\n{fields}}}\n\n{funcs}"
    )
    _pack_at(root, 600)
    text = render(root, "Which fields of stack.Options hold the factories?")
    for k in range(12):
        assert f"Field{k} []Factory{k}" in text, k
    # the first field's doc comment ends the type's own lines: shown once, with the field
    assert text.count("Field0 is option number 0.") == 1


def test_short_docstring_and_split_bodies() -> None:
    from dataclasses import replace

    from packer.fitting import SymbolOffer
    from packer.load import DOC_LINES, _short_docstring, _signature_end, _with_rests
    from packer.outline import Symbol

    sig = ["def f(a,", "      b):"]
    doc = ['    """First.', *[f"    line {k}" for k in range(20)], '    """']
    code = ["    return a"]
    cut, signature, end = _short_docstring([*sig, *doc, *code])
    assert signature == 2
    assert cut[: 2 + DOC_LINES] == [*sig, *doc[:DOC_LINES]]
    assert cut[2 + DOC_LINES :] == ["    ...", '    """', "    return a"]
    assert end == 2 + DOC_LINES + 2  # the lines up to the docstring's closing one
    short = [*sig, '    """One.', "    Two.", '    """', *code]
    assert _short_docstring(short) == (short, 2, 5)
    assert _short_docstring([*sig, '    """One line."""', *code]) == (
        [*sig, '    """One line."""', *code],
        2,
        3,
    )
    assert _short_docstring([*sig, *code]) == ([*sig, *code], 2, 0)  # no docstring
    # a signature of many lines is never cut: the docstring is looked for after it
    params = [f"        p{k}: Optional[int] = None," for k in range(20)]
    long_sig = ["    def print(", "        self,", *params, "    ) -> None:"]
    cut, signature, end = _short_docstring([*long_sig, *doc, *code])
    assert signature == len(long_sig) and cut[: len(long_sig)] == long_sig
    assert end == len(long_sig) + DOC_LINES + 2
    assert _signature_end([*long_sig, *code]) == len(long_sig)
    assert _signature_end(["func (s *Stack) New(a int,", "\tb int) *Stack {", "\treturn nil"]) == 2
    assert _signature_end(["def run(self)", "    pass"]) == 1  # no header end found: one line

    syms = [
        Symbol("C", "class", ("class C:",), -1, True, 1),
        Symbol("m", "method", ("    def m(self):",), 0, True, 2),
        Symbol("n", "method", ("    def n(self):",), 0, True, 9),
    ]
    offered = [SymbolOffer(3, 30, -1), SymbolOffer(4, 40, 0), SymbolOffer(5, 50, 0)]
    out_syms, out_off = _with_rests(syms, offered, {1: (("        rest",), 6, 20)})
    assert [s.name for s in out_syms] == ["C", "m", "m", "n"]
    assert [s.parent for s in out_syms] == [-1, 0, 1, 0]
    assert [o.parent for o in out_off] == [-1, 0, 1, 0]
    assert out_off[2] == SymbolOffer(6, 20, 1) and out_syms[2] == replace(
        syms[1], lines=("        rest",), parent=1, line=0
    )


def test_a_member_the_question_names_of_a_type_it_names_comes_first(tmp_path: Path) -> None:
    """`Read` of `tcpip.Endpoint`: the interface's own `Read` goes before the `Read` methods of
    every other type (each named by the question too, and each with a long body)."""
    root = tmp_path / "proj"
    (root / "tcpip").mkdir(parents=True)
    (root / "tcpip" / "tcpip.go").write_text(
        "// Package tcpip is a network stack.\npackage tcpip\n\n"
        "// Endpoint is the interface of a transport endpoint.\ntype Endpoint interface {\n"
        "\t// Read reads data from the endpoint.\n"
        "\tRead(io.Writer, ReadOptions) (ReadResult, Error)\n"
        "\t// Write writes data to the endpoint's peer.\n"
        "\tWrite(Payloader, WriteOptions) (int64, Error)\n"
        "}\n"
    )
    for k in range(10):
        (root / f"proto{k}").mkdir()
        steps = "".join(f"\tn{j} := e.step{j}(w, opts)\n" for j in range(40))
        (root / f"proto{k}" / "endpoint.go").write_text(
            f"package proto{k}\n\ntype endpoint struct{{}}\n\n"
            "// Read reads from the endpoint.\n"
            "func (e *endpoint) Read(w io.Writer, opts tcpip.ReadOptions)"
            " (tcpip.ReadResult, tcpip.Error) {\n"
            f"{steps}\treturn tcpip.ReadResult{{}}, nil\n}}\n\n"
            "// Write writes to the endpoint.\n"
            "func (e *endpoint) Write(p tcpip.Payloader, opts tcpip.WriteOptions)"
            " (int64, tcpip.Error) {\n"
            f"{steps}\treturn 0, nil\n}}\n"
        )
    _pack_at(root, 450)
    text = render(root, "What do the Read and Write methods of the tcpip.Endpoint interface take?")
    assert "Read(io.Writer, ReadOptions) (ReadResult, Error)" in text
    assert "Write(Payloader, WriteOptions) (int64, Error)" in text


def test_a_qualified_name_names_the_top_level_symbol_of_its_own_package_only() -> None:
    from packer.load import _names, _path_words

    code = [("stack", "options")]
    assert _names("Options", code, "")  # anywhere, when nothing places it
    assert not _names("Options", code, "", {("stack", "options")})  # placed in other files
    assert _names("options", code, "Stack", {("stack", "options")})  # a member of `Stack`
    assert _names("Options", [("options",)], "", {("stack", "options")})
    assert _path_words("pkg/tcpip/stack/stack.go") == {"pkg", "tcpip", "stack"}
    assert _path_words("src/click/utils.py") == {"src", "click", "utils"}
    assert _path_words("README.md") == {"readme"}
