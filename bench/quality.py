"""What an agent can answer from a pack: cas next to aider's repo map and repomix, same budgets.

    .venv/bin/python bench/quality.py [--budgets 3000,12000,32000] [--corpus NAME ...]
                                      [--set dev|heldout|all] [--no-peers] [--detail] [--out DIR]

Each corpus is a real project nobody here wrote, fetched the way a fresh machine can: a PyPI
sdist (``pip download --no-binary``), an npm tarball (``npm pack``) or a Debian package that
ships sources (``apt-get download``), cached under ``bench/.cache/quality/``. For each corpus,
questions an agent needs answered (the parameters of a public function, which class implements
a feature, the value of a constant) were written from the source, before any pack was looked
at, with the text that answers each: ``bench/questions/<corpus>.toml``. A question counts as
answered when every snippet of one of its answers appears in the tool's output (whitespace
ignored, so a signature split over lines still counts).

At each budget N (tokens, o200k_base), in one run:

* cas: ``cas pack`` with the default rules and ``budget = {target = N, max = N}``, then the
  LITE markdown render (``cas render repo``), which is what an agent reads;
* aider: ``aider --show-repo-map --map-tokens N --map-multiplier-no-files 1 --no-gitignore`` in
  a git copy of the corpus (installed once into ``bench/.cache/aider`` with pip);
* repomix: ``repomix --compress`` (installed once into ``bench/.cache`` with npm), its output
  cut to the first N tokens.

Printed per budget and tool: questions answered, public API defined in the output (the names a
package exports, found by parsing the corpus: a definition of the name must appear, not a
mention), answers located (questions whose answer's folder the output names: the folder of a
file holding the answer, as the start of a path, so that an agent knows where to look even when
the answer itself is not there), and budget use (tokens of the output over N). ``--detail``
adds the per-corpus rows and which questions each tool missed.

The question sets: ``dev`` corpora are the ones the packer may be tuned against; ``heldout``
corpora and questions are kept for a final check and never used to tune.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness
from bench.harness import (
    AIDER,
    CACHE,
    CORPORA,
    QUESTIONS,
    REPOMIX,
    BenchError,
    Corpus,
    aider_env,
    aider_map_argv,
    drop_aider_files,
    ensure_aider,
    ensure_repomix,
    fetch,
    git_snapshot,
    markdown_table,
    run,
)

PEER_CACHE = CACHE / "quality-peers" / f"{AIDER}-{REPOMIX}"
DEFAULT_BUDGETS = (3000, 12000, 32000)
ENCODING = "o200k_base"


def note(message: str) -> None:
    harness.note(message, "quality")


# --- corpora ------------------------------------------------------------------------------------


def prepare(corpus: Corpus, work: Path) -> Path:
    """A git copy of the corpus under ``work`` (aider reads only what git tracks)."""
    source = fetch(corpus)
    copy = work / corpus.name
    shutil.copytree(source, copy, symlinks=True)
    git_snapshot(copy)
    return copy


# --- questions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str
    ask: str
    answers: tuple[tuple[str, ...], ...]  # any one answer, all of its snippets


def load_questions(corpus: Corpus) -> list[Question]:
    path = QUESTIONS / f"{corpus.name}.toml"
    if not path.is_file():
        return []
    data = tomllib.loads(path.read_text())
    out = []
    for q in data.get("question", []):
        answers = q["answer"]
        if answers and isinstance(answers[0], str):
            answers = [answers]
        out.append(Question(q["id"], q["ask"], tuple(tuple(a) for a in answers)))
    return out


_SPACE = re.compile(r"\s+")


def squash(text: str) -> str:
    return _SPACE.sub("", text)


def answered(q: Question, squashed: str) -> bool:
    return any(all(squash(s) in squashed for s in alt) for alt in q.answers)


# --- where each answer is ---------------------------------------------------------------------


def answer_places(questions: list[Question], root: Path) -> dict[str, set[str]]:
    """For each question, the folders (``a/b/``; ``""`` for the top level) of the files that
    hold one of its answers whole: where an agent would have to look."""
    squashed: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and ".cas" not in path.parts:
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            squashed[path.relative_to(root).as_posix()] = squash(text)
    out: dict[str, set[str]] = {}
    for q in questions:
        out[q.id] = {
            rel.rpartition("/")[0] + "/" if "/" in rel else rel
            for alt in q.answers
            for rel, text in squashed.items()
            if all(squash(s) in text for s in alt)
        }
    return out


def located(places: set[str], text: str) -> bool:
    """Whether ``text`` names one of ``places``: a folder as the start of a path (``a/b/`` in
    ``a/b/c.go`` or a map's line, not inside ``x/a/b/``), a top-level file by its name."""
    return any(
        re.search(
            r"(?<![\w./-])" + re.escape(place) + (r"" if place.endswith("/") else r"\b"), text
        )
        for place in places
    )


# --- the public API -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiName:
    name: str
    owner: str = ""  # a Go method's receiver type


def public_api(corpus: Corpus, root: Path) -> list[ApiName]:
    names: set[ApiName] = set()
    for where in corpus.api:
        path = root / where
        if corpus.lang == "python":
            names |= _python_api(path)
        elif corpus.lang == "go":
            names |= _go_api(path)
        elif corpus.lang == "typescript":
            names |= _ts_api(path, set())
        elif corpus.lang == "rust":
            names |= _rust_api(path)
        elif corpus.lang == "ruby":
            names |= _ruby_api(path)
    return sorted(names, key=lambda a: (a.owner, a.name))


def _python_api(path: Path) -> set[ApiName]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                listed = ast.literal_eval(node.value)
            except ValueError:
                break
            return {ApiName(n) for n in listed if isinstance(n, str)}
    out: set[ApiName] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            out |= {ApiName(a.asname or a.name) for a in node.names if a.name != "*"}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.add(ApiName(node.name))
    return {a for a in out if not a.name.startswith("_")}


_GO_FUNC = re.compile(r"^func\s+(?:\(\s*\w*\s*\*?\s*(\w+)(?:\[[^\]]*\])?\s*\)\s*)?([A-Z]\w*)", re.M)
_GO_TYPE = re.compile(r"^(?:type\s+|\t)([A-Z]\w*)\s+(?:struct|interface|func|\w)", re.M)


def _go_api(folder: Path) -> set[ApiName]:
    out: set[ApiName] = set()
    for path in sorted(folder.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in _GO_FUNC.finditer(text):
            owner, name = m.group(1) or "", m.group(2)
            if not owner or owner[:1].isupper():
                out.add(ApiName(name, owner))
        for m in re.finditer(r"^type\s+([A-Z]\w*)", text, re.M):
            out.add(ApiName(m.group(1)))
    return out


_TS_EXPORT = re.compile(
    r"^export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?"
    r"(?:function\*?|class|interface|type|enum|const|let|var|namespace)\s+([A-Za-z_$][\w$]*)",
    re.M,
)
_TS_BRACES = re.compile(
    r"^export\s+(?:type\s+)?\{([^}]*)\}(?:\s+from\s+['\"]([^'\"]+)['\"])?", re.M
)
_TS_STAR = re.compile(r"^export\s+\*\s+from\s+['\"]([^'\"]+)['\"]", re.M)


def _ts_api(path: Path, seen: set[Path]) -> set[ApiName]:
    if path in seen or not path.is_file():
        return set()
    seen.add(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    out = {ApiName(m.group(1)) for m in _TS_EXPORT.finditer(text)}
    for m in _TS_BRACES.finditer(text):
        for raw in m.group(1).split(","):
            item = raw.strip().removeprefix("type ").strip()
            if item:
                out.add(ApiName(item.split(" as ")[0].strip()))
    for m in _TS_STAR.finditer(text):
        out |= _ts_api(_ts_resolve(path.parent, m.group(1)), seen)
    return {a for a in out if a.name != "default"}


def _ts_resolve(folder: Path, spec: str) -> Path:
    base = (folder / spec).resolve()
    for candidate in (
        base,
        base.with_suffix(".d.ts"),
        Path(str(base).removesuffix(".js") + ".d.ts"),
        base / "index.d.ts",
        base.with_suffix(".ts"),
        Path(str(base).removesuffix(".js") + ".ts"),
    ):
        if candidate.is_file():
            return candidate
    return base


_RUST_PUB = re.compile(
    r"^\s*pub\s+(?:unsafe\s+)?(?:fn|struct|enum|trait|type|const|static|union)\s+([A-Za-z_]\w*)",
    re.M,
)
_RUST_MACRO = re.compile(r"#\[macro_export\][^\n]*\n(?:\s*#\[[^\n]*\n)*\s*macro_rules!\s*(\w+)")
_RUST_USE = re.compile(r"^\s*pub\s+use\s+([^;]+);", re.M)


def _rust_api(path: Path) -> set[ApiName]:
    folder = path.parent
    out: set[ApiName] = set()
    texts = [path.read_text(encoding="utf-8", errors="replace")]
    for extra in sorted(folder.glob("*.rs")):
        if extra != path:
            texts.append(extra.read_text(encoding="utf-8", errors="replace"))
    lib = texts[0]
    out |= {ApiName(m.group(1)) for m in _RUST_PUB.finditer(lib)}
    for text in texts:
        out |= {ApiName(m.group(1)) for m in _RUST_MACRO.finditer(text)}
    for m in _RUST_USE.finditer(lib):
        used = m.group(1)
        if "{" in used:
            inner = used[used.index("{") + 1 : used.rindex("}")]
            items = [i.strip() for i in inner.split(",")]
        else:
            items = [used.rsplit("::", 1)[-1].strip()]
        for item in items:
            name = item.split(" as ")[-1].strip()
            if name and name not in ("self", "*") and name[0].isalpha():
                out.add(ApiName(name))
    return out


_RUBY_DEF = re.compile(
    r"^\s*(?:class|module)\s+(?:\w+::)*([A-Z]\w*)|^\s*([A-Z][A-Z0-9_]*)\s*=|"
    r"^\s*def\s+(?:self\.)?([a-z_]\w*[?!=]?)",
    re.M,
)


def _ruby_api(path: Path) -> set[ApiName]:
    """Classes, modules, constants and methods not after a bare `private`/`protected`."""
    out: set[ApiName] = set()
    hidden = False
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        word = line.strip()
        if word in ("private", "protected"):
            hidden = True
        elif word == "public" or re.match(r"\s*(?:class|module)\s", line):
            hidden = False
        m = _RUBY_DEF.match(line)
        if m is None:
            continue
        name = m.group(1) or m.group(2) or m.group(3)
        if m.group(3) and (hidden or name.startswith("_")):
            continue
        out.add(ApiName(name))
    return out


def defined(api: ApiName, lang: str, text: str) -> bool:
    """Whether ``text`` shows a definition of ``api`` (its declaration line), not a mention."""
    n = re.escape(api.name)
    if lang == "python":
        pattern = rf"\b(?:class|def)\s+{n}\b|^[ \t│|]*{n}\s*(?::[^=\n]*)?=(?!=)"
    elif lang == "go":
        if api.owner:
            pattern = rf"\bfunc\s*\(\s*\w*\s*\*?\s*{re.escape(api.owner)}\b[^)]*\)\s*{n}\s*\("
        else:
            pattern = (
                rf"\bfunc\s+{n}\s*[\[(]|\btype\s+{n}\b|^[ \t│|]*{n}\s+(?:[\w.*\[\]]+\s*)?=|"
                rf"^[ \t│|]*(?:const|var)\s+{n}\b"
            )
    elif lang == "typescript":
        pattern = rf"\b(?:function\*?|class|interface|type|enum|const|let|var|namespace)\s+{n}\b"
    elif lang == "ruby":
        pattern = (
            rf"\b(?:class|module)\s+(?:\w+::)*{n}\b|\bdef\s+(?:self\.)?{n}(?![\w?!=])|^\s*{n}\s*="
        )
    else:
        pattern = (
            rf"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+{n}\b|macro_rules!\s*{n}\b"
        )
    return re.search(pattern, text, re.M) is not None


# --- the tools ----------------------------------------------------------------------------------


@dataclass
class Output:
    text: str = ""
    error: str | None = None
    seconds: float = 0.0


def cas_output(copy: Path, budget: int) -> Output:
    work = Path(tempfile.mkdtemp(prefix="cas-", dir=copy.parent))
    tree = work / copy.name
    shutil.copytree(copy, tree, symlinks=True, ignore=shutil.ignore_patterns(".git", ".aider*"))
    (tree / "cas.toml").write_text(f"[pack]\nbudget = {{ target = {budget}, max = {budget} }}\n")
    cas, env = harness.CAS, harness.clean_env()
    started = time.perf_counter()
    try:
        run([*cas, "--quiet", "pack"], cwd=tree, env=env)
        text = run([*cas, "render", "repo"], cwd=tree, env=env)
    except BenchError as exc:
        return Output(error=str(exc))
    finally:
        seconds = time.perf_counter() - started
        shutil.rmtree(work, ignore_errors=True)
    return Output(text, None, seconds)


def cas_load_outputs(copy: Path, budget: int, questions: list[Question]) -> dict[str, Output]:
    """One `cas load QUESTION --render` per question, after one `cas pack` at the same budget:
    each question is scored against the load made for its own text."""
    work = Path(tempfile.mkdtemp(prefix="cas-load-", dir=copy.parent))
    tree = work / copy.name
    shutil.copytree(copy, tree, symlinks=True, ignore=shutil.ignore_patterns(".git", ".aider*"))
    (tree / "cas.toml").write_text(
        f"[pack]\nbudget = {{ target = {budget}, max = {budget} }}\n\n"
        f"[load]\nbudget = {{ target = {budget}, max = {budget} }}\n"
        f"fallback = {{ max = {budget} }}\n"
    )
    cas, env = harness.CAS, harness.clean_env()
    out: dict[str, Output] = {}
    try:
        try:
            run([*cas, "--quiet", "pack"], cwd=tree, env=env)
        except BenchError as exc:
            return {q.id: Output(error=str(exc)) for q in questions}
        for q in questions:
            started = time.perf_counter()
            try:
                text = run(
                    [*cas, "--quiet", "load", q.ask, "--render", "--dry-run"], cwd=tree, env=env
                )
                out[q.id] = Output(text, None, time.perf_counter() - started)
            except BenchError as exc:
                out[q.id] = Output(error=str(exc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def aider_output(exe: Path, copy: Path, budget: int) -> Output:
    home = Path(tempfile.mkdtemp(prefix="aider-home-"))
    started = time.perf_counter()
    try:
        out = run(
            aider_map_argv(exe, budget),
            cwd=copy,
            env=aider_env(home),
            stdin=subprocess.DEVNULL,
            timeout=900,
        )
    except (BenchError, subprocess.TimeoutExpired) as exc:
        return Output(error=str(exc))
    finally:
        shutil.rmtree(home, ignore_errors=True)
        drop_aider_files(copy)
    seconds = time.perf_counter() - started
    start = out.find("Here are summaries")
    if start < 0:
        return Output(error="aider printed no repo map", seconds=seconds)
    return Output(out[start:], None, seconds)


def repomix_output(command: list[str], copy: Path, budget: int, counter: object) -> Output:
    out = copy.parent / f"{copy.name}-repomix.md"
    argv = [*command, "--compress", "--style", "markdown", "--no-security-check", "-o", out,
            "--ignore", ".aider*/**"]  # fmt: skip
    started = time.perf_counter()
    try:
        run(argv, cwd=copy)
        text = out.read_text(encoding="utf-8", errors="replace")
    except BenchError as exc:
        return Output(error=str(exc))
    finally:
        out.unlink(missing_ok=True)
    return Output(cut_to(text, budget, counter), None, time.perf_counter() - started)


def cut_to(text: str, budget: int, counter: object) -> str:
    """The longest prefix of whole lines of ``text`` within ``budget`` tokens."""
    count = counter.count  # type: ignore[attr-defined]
    if count(text) <= budget:
        return text
    lines = text.splitlines(keepends=True)
    lo, hi = 0, len(lines)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count("".join(lines[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "".join(lines[:lo])


# --- scoring ------------------------------------------------------------------------------------


@dataclass
class Score:
    answered: int = 0
    questions: int = 0
    api_defined: int = 0
    api_total: int = 0
    located: int = 0  # questions whose answer's folder the output names
    tokens: int = 0
    budget: int = 0
    missed: list[str] = field(default_factory=list)
    error: str | None = None

    def add(self, other: Score) -> None:
        self.answered += other.answered
        self.questions += other.questions
        self.api_defined += other.api_defined
        self.api_total += other.api_total
        self.located += other.located
        self.tokens += other.tokens
        self.budget += other.budget
        if other.error:
            self.error = (self.error + "; " if self.error else "") + other.error


def score(
    out: Output,
    questions: list[Question],
    api: list[ApiName],
    lang: str,
    budget: int,
    count: object,
    places: dict[str, set[str]] | None = None,
) -> Score:
    s = Score(questions=len(questions), api_total=len(api), budget=budget)
    if out.error is not None:
        s.error = out.error
        s.missed = [q.id for q in questions]
        return s
    squashed = squash(out.text)
    for q in questions:
        if answered(q, squashed):
            s.answered += 1
        else:
            s.missed.append(q.id)
    s.api_defined = sum(1 for a in api if defined(a, lang, out.text))
    if places is not None:
        s.located = sum(1 for q in questions if located(places.get(q.id, set()), out.text))
    s.tokens = count.count(out.text)  # type: ignore[attr-defined]
    return s


def load_score(
    outs: dict[str, Output],
    questions: list[Question],
    budget: int,
    count: object,
    places: dict[str, set[str]] | None = None,
) -> Score:
    """Each question against its own load; tokens and budget are summed over the loads, so
    the budget used is their average."""
    s = Score(questions=len(questions))
    for q in questions:
        out = outs[q.id]
        s.budget += budget
        if out.error is not None:
            s.missed.append(q.id)
            s.error = out.error
            continue
        s.tokens += count.count(out.text)  # type: ignore[attr-defined]
        if places is not None and located(places.get(q.id, set()), out.text):
            s.located += 1
        if answered(q, squash(out.text)):
            s.answered += 1
        else:
            s.missed.append(q.id)
    return s


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


# --- main ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)))
    parser.add_argument("--corpus", action="append", default=[], help="only these corpora")
    parser.add_argument("--set", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument(
        "--load", action="store_true", help="also `cas load QUESTION` per question (issue 11)"
    )
    parser.add_argument("--detail", action="store_true")
    parser.add_argument("--fetch-only", action="store_true", help="fetch the corpora and stop")
    parser.add_argument("--out", type=Path, help="keep every output and results.json here")
    parser.add_argument(
        "--reuse-peers",
        action="store_true",
        help="reuse the peers' outputs of an earlier run (cached by corpus, budget and version)",
    )
    args = parser.parse_args(argv)

    from packer.tokens import TokenCounter

    counter = TokenCounter(ENCODING)
    budgets = [int(b) for b in args.budgets.split(",") if b]
    corpora = [
        c
        for c in CORPORA
        if (not args.corpus or c.name in args.corpus)
        and c.set != "test"  # real code for tests only: no questions
        and args.set in ("all", c.set)
    ]
    if not corpora:
        raise SystemExit("quality: no corpus selected")
    for c in corpora:
        fetch(c)
    if args.fetch_only:
        for c in corpora:
            print(f"{c.name}: {fetch(c)}")
        return 0

    tools: dict[str, object] = {"cas": None}
    if args.load:
        tools["cas load QUESTION"] = None
    missing: list[str] = []
    if not args.no_peers:
        exe, why = ensure_aider()
        if exe is not None:
            tools["aider repo map"] = exe
        else:
            missing.append(why)
        cmd, why = ensure_repomix()
        if cmd is not None:
            tools["repomix --compress"] = cmd
        else:
            missing.append(why)
    for why in missing:
        print(f"peer skipped: {why}")

    work = Path(tempfile.mkdtemp(prefix="cas-quality-"))
    totals: dict[tuple[int, str], Score] = {}
    detail: list[tuple[str, ...]] = []
    results: list[dict[str, object]] = []
    try:
        for corpus in corpora:
            copy = prepare(corpus, work)
            questions = load_questions(corpus)
            api = public_api(corpus, copy)
            places = answer_places(questions, copy)
            note(f"{corpus.name}: {len(questions)} questions, {len(api)} public names")
            for budget in budgets:
                for tool, how in tools.items():
                    kept = PEER_CACHE / f"{corpus.name}-{corpus.spec}-{budget}-{tool.split()[0]}"
                    if tool.startswith("cas load"):
                        s = load_score(cas_load_outputs(copy, budget, questions), questions,
                                       budget, counter, places)  # fmt: skip
                        totals.setdefault((budget, tool), Score()).add(s)
                        detail.append(
                            (corpus.name, str(budget), tool, f"{s.answered}/{s.questions}", "-",
                             f"{s.located}/{s.questions}", _pct(s.tokens, s.budget),
                             " ".join(s.missed))
                        )  # fmt: skip
                        results.append(
                            {"corpus": corpus.name, "budget": budget, "tool": tool,
                             "answered": s.answered, "questions": s.questions,
                             "located": s.located,
                             "tokens": s.tokens, "missed": s.missed, "error": s.error}
                        )  # fmt: skip
                        continue
                    if tool == "cas":
                        out = cas_output(copy, budget)
                    elif args.reuse_peers and kept.is_file():
                        out = Output(kept.read_text(encoding="utf-8"))
                    elif tool.startswith("aider"):
                        out = aider_output(how, copy, budget)  # type: ignore[arg-type]
                    else:
                        out = repomix_output(how, copy, budget, counter)  # type: ignore[arg-type]
                    if tool != "cas" and out.error is None:
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        kept.write_text(out.text, encoding="utf-8")
                    s = score(out, questions, api, corpus.lang, budget, counter, places)
                    totals.setdefault((budget, tool), Score()).add(s)
                    detail.append(
                        (corpus.name, str(budget), tool, f"{s.answered}/{s.questions}",
                         _pct(s.api_defined, s.api_total), f"{s.located}/{s.questions}",
                         _pct(s.tokens, budget),
                         " ".join(s.missed) if not s.error else f"error: {s.error[:80]}")
                    )  # fmt: skip
                    results.append(
                        {"corpus": corpus.name, "budget": budget, "tool": tool,
                         "answered": s.answered, "questions": s.questions,
                         "api_defined": s.api_defined, "api_total": s.api_total,
                         "located": s.located,
                         "tokens": s.tokens, "missed": s.missed, "error": s.error,
                         "seconds": round(out.seconds, 2)}
                    )  # fmt: skip
                    if args.out is not None:
                        keep = args.out / corpus.name / f"{budget}-{tool.split()[0]}.txt"
                        keep.parent.mkdir(parents=True, exist_ok=True)
                        keep.write_text(out.text if out.error is None else f"ERROR {out.error}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    names = ", ".join(c.name for c in corpora)
    print(
        f"\nQuestions answered, public API defined, answers located, budget used ({names}; "
        f"{ENCODING}):\n"
    )
    rows = []
    for budget in budgets:
        ours = totals[(budget, "cas")]
        for tool in tools:
            s = totals[(budget, tool)]
            ratio = (
                f"{ours.answered / s.answered:.2f}x"
                if not tool.startswith("cas") and s.answered
                else ""
            )
            rows.append(
                (f"{budget:,}", tool, f"{s.answered}/{s.questions}", ratio,
                 _pct(s.api_defined, s.api_total),
                 f"{s.located}/{s.questions}",
                 _pct(s.tokens, s.budget))
            )  # fmt: skip
    head = (
        "budget", "tool", "questions", "cas vs peer", "public API defined", "answer located",
        "budget used",
    )  # fmt: skip
    print(markdown_table(rows, head))
    if args.detail:
        print()
        print(
            markdown_table(
                detail,
                ("corpus", "budget", "tool", "questions", "API", "located", "used", "missed"),
            )
        )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
