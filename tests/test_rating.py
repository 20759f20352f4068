"""Ratings of files and symbols: what a reader of a real project needs first, as integers that
are the same on every machine, in every input order, under any hash seed.

The real projects come from tests/realcode.py (fetched from the registries, never skipped).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from realcode import corpus

from packer import rating as rating_mod
from packer.history import History
from packer.lang import language_for
from packer.lexicon import Lexicon, lex
from packer.rating import AVERAGE, Ratings, _by_key_then_file, rate

Files = list[tuple[str, str | None, int, Lexicon | None]]


def tree(root: Path) -> Files:
    """Every file below ``root`` with its lexicon, as the ingest gives them to the rating."""
    files: Files = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink() or ".git" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        lang = language_for(rel)
        text = b"\0" not in data[:8000]
        files.append((rel, lang, len(data), lex(rel, data, lang) if text else None))
    return files


def reader(root: Path) -> object:
    def read(path: str) -> str | None:
        try:
            return (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    return read


_RATED: dict[str, tuple[Files, Ratings]] = {}


def rated(name: str, priorities: Mapping[str, int] | None = None) -> tuple[Files, Ratings]:
    if priorities is None and name in _RATED:
        return _RATED[name]
    root = corpus(name)
    files = tree(root)
    ratings = rate(files, read=reader(root), priorities=priorities)  # type: ignore[arg-type]
    if priorities is None:
        _RATED[name] = (files, ratings)
    return files, ratings


def position(ratings: Ratings) -> dict[str, int]:
    return {p: i for i, p in enumerate(ratings.ranked())}


def top_symbols(ratings: Ratings, k: int) -> list[tuple[str, str]]:
    return [(p, n) for p, n, _ in ratings.ranked_symbols()[:k]]


# --- real projects ------------------------------------------------------------------------------


def test_click_core_and_package_index_lead() -> None:
    _, r = rated("click")
    pos = position(r)
    assert pos["src/click/core.py"] < 3
    assert pos["src/click/__init__.py"] < 3
    for helper in ("src/click/_compat.py", "src/click/_termui_impl.py", "src/click/_textwrap.py"):
        assert pos[helper] > pos["src/click/core.py"] and pos[helper] > pos["src/click/__init__.py"]
    # The library's modules outrank its tests, docs and build files.
    library = [p for p in r.files if p.startswith("src/click/") and p.endswith(".py")]
    rest = [p for p in r.files if p.startswith(("tests/", "docs/")) or "/" not in p]
    assert min(pos[p] for p in rest) > sorted(pos[p] for p in library)[len(library) // 2]
    names = {n for _, n in top_symbols(r, 12)}
    assert {"Context", "Command"} <= names
    assert r.symbol("src/click/core.py", "Command") > r.symbol("src/click/core.py", "_check_iter")
    why = r.reasons["src/click/core.py"]
    assert any(w.startswith("referenced by ") for w in why)
    assert any("re-exported by src/click/__init__.py" in w for w in why)


def test_cobra_command_go_leads() -> None:
    _, r = rated("cobra")
    assert r.ranked()[0] == "command.go"
    # The top file's summary shows its best symbols first: the type and the methods clients
    # call are among them; `Command` leads the whole project.
    best = sorted(r.symbols_of("command.go").items(), key=lambda kv: (-kv[1], kv[0]))
    assert {"Command", "Execute", "AddCommand"} <= {n for n, _ in best[:10]}
    assert ("command.go", "Command") in top_symbols(r, 3)
    assert "root package" in r.reasons["command.go"]
    # Tests are read for what they use, not shown first.
    pos = position(r)
    assert all(pos[p] > pos["command.go"] for p in r.files if p.endswith("_test.go"))


def test_httpx_api_modules_outrank_tests_and_docs() -> None:
    _, r = rated("httpx")
    pos = position(r)
    core = [pos[p] for p in ("httpx/_client.py", "httpx/_models.py", "httpx/_urls.py")]
    others = [
        pos[p]
        for p in r.files
        if p.startswith("tests/") or p.endswith((".md", ".rst", ".txt")) or p == "PKG-INFO"
    ]
    assert max(core) < min(others)
    assert {"Response", "URL", "Request"} <= {n for _, n in top_symbols(r, 10)}


def test_django_models_and_http_outrank_locale_and_migrations() -> None:
    _, r = rated("django")
    pos = position(r)
    models = sorted(pos[p] for p in r.files if p.startswith("django/db/models/"))
    http = sorted(pos[p] for p in r.files if p.startswith("django/http/"))
    assert models[0] < 10 and http[0] < 30
    median_models = models[len(models) // 2]
    median_http = http[len(http) // 2]
    locale = [pos[p] for p in r.files if "/locale/" in p and p.endswith((".po", ".mo"))]
    migrations = [pos[p] for p in r.files if "/migrations/0" in p]
    assert len(locale) > 1000 and len(migrations) > 30
    assert max(median_models, median_http) < min(locale)
    assert max(median_models, median_http) < sorted(migrations)[len(migrations) // 10]
    gis_locale = [pos[p] for p in r.files if p.startswith("django/contrib/gis/locale/")]
    assert models[0] < min(gis_locale) and http[0] < min(gis_locale)


def test_typescript_and_rust_entry_points_lead() -> None:
    _, ky = rated("ky")
    assert ky.ranked()[0] == "distribution/index.d.ts"
    assert "distribution/index.js" in ky.ranked()[:3]
    assert "entry point (package.json)" in ky.reasons["distribution/index.js"]
    _, anyhow = rated("anyhow")
    assert anyhow.ranked()[0] == "src/lib.rs"
    assert "crate root" in anyhow.reasons["src/lib.rs"]


def test_symbols_share_their_file_rating() -> None:
    _, r = rated("click")
    for path in ("src/click/core.py", "src/click/types.py", "src/click/testing.py"):
        symbols = r.symbols_of(path)
        assert symbols and all(isinstance(v, int) and v >= 0 for v in symbols.values())
        # Split from the file's mass with floors: at most the file's rating, and most of it.
        assert r.files[path] * 9 // 10 <= sum(symbols.values()) <= r.files[path]


def test_average_file_rates_average() -> None:
    _, r = rated("httpx")
    total = sum(r.files.values())
    n = len(r.files)
    assert n * AVERAGE * 99 // 100 <= total <= n * AVERAGE


# --- the inputs that are not code ----------------------------------------------------------------


def test_priorities_raise_and_lower() -> None:
    _, base = rated("click")
    path = "src/click/termui.py"
    _, up = rated("click", {path: 2})
    _, down = rated("click", {path: -2})
    assert down.files[path] < base.files[path] < up.files[path]
    assert "rule weight +2" in up.reasons[path]
    _, clamped = rated("click", {path: 40})
    _, four = rated("click", {path: 4})
    assert clamped.files == four.files


def test_history_raises_what_changed() -> None:
    root = corpus("click")
    files = tree(root)
    plain = rate(files, read=reader(root))  # type: ignore[arg-type]
    changed = History(
        window=10, limit=10, changes={"src/click/termui.py": 6}, newest={"src/click/termui.py": 0}
    )
    lively = rate(files, read=reader(root), history=changed)  # type: ignore[arg-type]
    assert lively.files["src/click/termui.py"] > plain.files["src/click/termui.py"]
    assert "changed in 6 of the last 10 commits" in lively.reasons["src/click/termui.py"]


def test_entry_points_from_this_projects_metadata() -> None:
    here = Path(__file__).resolve().parent.parent
    files = [
        (f"{top}/{rel}", lang, size, lexicon)
        for top in ("cas", "packer")
        for rel, lang, size, lexicon in tree(here / top)
    ]
    files += [(p.name, language_for(p.name), 0, None) for p in here.iterdir() if p.is_file()]
    r = rate(files, read=reader(here))  # type: ignore[arg-type]
    entry = "cas/__main__.py"
    assert "entry point (cas.__main__:run)" in r.reasons[entry]
    assert r.symbol(entry, "run") == max(r.symbols_of(entry).values())
    assert r.ranked().index(entry) < len(r.files) // 2


# --- determinism --------------------------------------------------------------------------------


def _digest(r: Ratings) -> str:
    h = hashlib.blake2b()
    for path in sorted(r.files, key=str.encode):
        h.update(f"{path}\0{r.files[path]}\0{r.reasons[path]}\n".encode())
        for name, value in sorted(r.symbols_of(path).items()):
            h.update(f"  {name}\0{value}\n".encode())
    return h.hexdigest()


def test_same_ratings_twice_and_in_any_order() -> None:
    root = corpus("cobra")
    files = tree(root)
    first = rate(files, read=reader(root))  # type: ignore[arg-type]
    again = rate(files, read=reader(root))  # type: ignore[arg-type]
    shuffled = list(files)
    random.Random(7).shuffle(shuffled)
    other = rate(shuffled, read=reader(root))  # type: ignore[arg-type]
    assert _digest(first) == _digest(again) == _digest(other)


@pytest.mark.parametrize("name", ["click", "pythonnet"])
@pytest.mark.parametrize("size", [1, 97, 4096])
def test_references_joined_in_slices_rate_the_same(
    name: str, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference join runs over slices of references (its memory bounded on a huge tree):
    any slice size, even one reference, gives the same ratings, symbols and graph."""
    import packer.rating

    files, whole = rated(name)
    monkeypatch.setattr(packer.rating, "_JOIN_SLICE", size)
    sliced = rate(files, read=reader(corpus(name)))  # type: ignore[arg-type]
    assert sliced.stats == whole.stats and sliced.stats["pairs"] > 0
    assert _digest(sliced) == _digest(whole)


_SEED_SCRIPT = """
import sys, hashlib
sys.path.insert(0, sys.argv[2])
from test_rating import _digest, rated
print(_digest(rated(sys.argv[1])[1]))
"""


def test_same_ratings_under_another_hash_seed() -> None:
    tests = str(Path(__file__).resolve().parent)
    corpus("httpx")  # fetched once, before the child processes read it
    found = set()
    for seed in ("0", "1", "4242"):
        done = subprocess.run(
            [sys.executable, "-c", _SEED_SCRIPT, "httpx", tests],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        found.add(done.stdout)
    assert len(found) == 1
    assert found == {_digest(rated("httpx")[1]) + "\n"}


# Random small projects: files that define names and use names of a shared pool.
_POOL = [f"{w}_{k}" for w in ("fetch", "Parse", "render", "Store") for k in range(4)]


@st.composite
def projects(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    count = draw(st.integers(min_value=1, max_value=9))
    names = draw(
        st.lists(
            st.text(alphabet="abcdefgh", min_size=1, max_size=5),
            min_size=2 * count,
            max_size=2 * count,
            unique=True,
        )
    )
    bodies = []
    for _ in range(count):
        defined = draw(st.lists(st.sampled_from(_POOL), max_size=3, unique=True))
        used = draw(st.lists(st.sampled_from(_POOL), max_size=6))
        lines = [f"def {d}():\n    pass\n" for d in defined]
        lines.append("x = " + " + ".join(used or ["0"]) + "\n")
        bodies.append("".join(lines))
    return sorted(names), bodies


def _rate_bodies(paths: list[str], bodies: list[str]) -> Ratings:
    files: Files = [
        (p, "python", len(b), lex(p, b.encode(), "python"))
        for p, b in zip(paths, bodies, strict=False)
    ]
    return rate(files, read=lambda _: None)


@settings(max_examples=60, deadline=None)
@given(project=projects(), seed=st.integers(min_value=0, max_value=1000))
def test_random_graphs_rate_as_integers_in_one_order(
    project: tuple[list[str], list[str]], seed: int
) -> None:
    names, bodies = project
    n = len(bodies)
    # Two namings of the same files whose paths sort the same way: the first n names, and the
    # next n (all drawn sorted, so file i is the i-th in both).
    first = [f"{name}.py" for name in names[:n]]
    second = [f"{name}.py" for name in names[n:]]
    r1 = _rate_bodies(first, bodies)
    shuffled = list(zip(first, bodies, strict=True))
    random.Random(seed).shuffle(shuffled)
    r2 = _rate_bodies([p for p, _ in shuffled], [b for _, b in shuffled])
    r3 = _rate_bodies(second, bodies)
    assert all(type(v) is int and v >= 0 for v in r1.files.values())
    assert r1.files == r2.files and _digest(r1) == _digest(r2)
    # A total order, ties broken by path: the same order whatever the input order.
    assert r1.ranked() == r2.ranked()
    assert [r1.files[p] for p in first] == [r3.files[p] for p in second]
    assert [r1.symbols_of(p) for p in first] == [r3.symbols_of(p) for p in second]


def test_empty_and_lexicon_free_projects() -> None:
    assert rate([], read=lambda _: None).files == {}
    files: Files = [("a.bin", None, 10, None), ("b.png", None, 5, None)]
    r = rate(files, read=lambda _: None)
    assert r.files == {"a.bin": AVERAGE, "b.png": AVERAGE}
    assert r.symbols_of("a.bin") == {}


@pytest.mark.parametrize("name", ["click", "cobra"])
def test_ranked_is_a_total_order(name: str) -> None:
    _, r = rated(name)
    ranked = r.ranked()
    assert len(ranked) == len(set(ranked)) == len(r.files)
    for a, b in itertools.pairwise(ranked):
        assert (r.files[a], b.encode()) > (r.files[b], a.encode()) or (
            r.files[a] == r.files[b] and a.encode() < b.encode()
        )


@pytest.mark.slow
def test_rating_bench_runs(tmp_path: Path) -> None:
    """bench/rating_bench.py end to end on a tiny tree and one real project."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "bench.rating_bench", "--files", "120", "--mb", "1"),
            *("--runs", "1", "--corpus", "click", "--history", "--cache", str(tmp_path)),
        ],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    steps = {(r[0], r[2]) for r in rows if len(r) > 2 and r[1] == "120"} | {
        (r[0], r[1]) for r in rows if r and r[0] == "click"
    }
    assert ("synthetic", "lexicon,") in steps and ("synthetic", "history") in steps
    assert ("click", "rating") in steps
    assert "MB/s" in done.stdout


# --- symbol values as pricing weighs them ---------------------------------------------------------


def _check_shifted(r: Ratings, shifts: Mapping[str, int], boost: int, cap: int) -> None:
    """`Ratings.shifted` gives, for every file, what shifting and boosting each of its symbols
    one by one gives (`symbols_of`, `public_of`), best first and summed."""
    seen = set()
    for path, lexicon, values, best, total in r.shifted(shifts, boost, cap):
        seen.add(path)
        shift, public = shifts.get(path, 0), r.public_of(path)
        expected = {}
        for name, rating in r.symbols_of(path).items():
            value = max(1, min(rating << shift if shift >= 0 else rating >> -shift, cap))
            expected[name] = value * boost if name in public else value
        assert dict(zip(lexicon.defines, values, strict=True)) == expected, path
        assert best == sorted(values, reverse=True) and total == sum(values)
    assert {p for p in r.files if r.symbols_of(p)} <= seen


@settings(max_examples=40, deadline=None)
@given(
    project=projects(),
    shifts=st.lists(st.integers(min_value=-50, max_value=8), min_size=12, max_size=12),
    cap=st.sampled_from([(1 << 62) - 1, 5000, 1]),
)
def test_shifted_symbols_are_each_symbol_shifted(
    project: tuple[list[str], list[str]], shifts: list[int], cap: int
) -> None:
    names, bodies = project
    paths = [f"{name}.py" for name in names[: len(bodies)]]
    r = _rate_bodies(paths, bodies)
    _check_shifted(r, dict(zip(paths, shifts, strict=False)), 4, cap)


def test_shifted_symbols_boost_the_public_surface() -> None:
    _files, r = rated("click")
    assert any(r.public_of(p) for p in r.files)
    shifts = {p: (i % 7) - 3 for i, p in enumerate(sorted(r.files))}
    _check_shifted(r, shifts, 4, (1 << 62) - 1)


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=12), st.integers(min_value=0, max_value=5)),
        max_size=200,
    )
)
def test_the_order_by_key_then_file_is_the_stable_lexicographic_one(
    rows: list[tuple[int, int]],
) -> None:
    """Keys drawn from a few values, so most rows tie: the runs of equal keys go by file, then
    by position, exactly as ``np.lexsort`` orders them."""
    keys = np.array([k * 0x9E3779B97F4A7C15 % (1 << 64) for k, _ in rows], dtype=np.uint64)
    files = np.array([f for _, f in rows], dtype=np.int64)
    assert _by_key_then_file(keys, files).tolist() == np.lexsort((files, keys)).tolist()


@settings(max_examples=150)
@given(
    st.lists(st.integers(min_value=0, max_value=(1 << 64) - 1), min_size=1, max_size=60),
    st.lists(st.integers(min_value=1, max_value=40), min_size=60, max_size=60),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=80), st.integers(min_value=0, max_value=3)),
        max_size=300,
    ),
    st.integers(min_value=4, max_value=12),
)
def test_the_native_join_filter_finds_what_numpy_finds(
    names: list[int], sizes: list[int], refs: list[tuple[int, int]], bits: int
) -> None:
    """References joined to groups of definers: each reference names one of the groups' names
    (keyed by some family) or another fingerprint, the bitmap is whatever the bits make of
    the eligible keys (many collisions when it is small), the keys' buckets whatever their
    top bits make (names drawn from few values share them); the C pass and numpy's agree."""
    keys = np.unique(np.array(names, dtype=np.uint64))
    size = np.array(sizes[: len(keys)], dtype=np.int64)
    families = np.array([f for _, f in refs], dtype=np.int64)
    raw = [names[r % len(names)] if r < 60 else r * 0x51ED27 for r, _ in refs]
    # a reference whose family keys it to a group's key: fp = key ^ family * salt
    salt = int(rating_mod._FAMILY_SALT)
    fps = np.array(
        [(k ^ (f * salt % (1 << 64))) for k, f in zip(raw, families.tolist(), strict=True)],
        dtype=np.uint64,
    )
    filter_ = rating_mod._Filter.over(keys, keys[size <= rating_mod.MAX_DEFINERS], bits)
    n = len(keys)
    groups = rating_mod._Groups(keys, size, *(np.zeros(n, dtype=np.int64) for _ in range(6)))
    native = rating_mod._hits(fps, families, filter_, groups)
    plain = rating_mod._numpy_hits(fps, families, filter_, groups)
    assert native[0].tolist() == plain[0].tolist()
    assert native[1].tolist() == plain[1].tolist()


def test_reasons_count_the_files_that_reference_and_import(tmp_path: Path) -> None:
    """A file's reasons count each file that references it once, however often it does, and
    the files that import it; they are made when asked, for any file, and only for files of
    the project."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "core.py").write_text("class WidgetFactory:\n    pass\n")
    (tmp_path / "pkg" / "one.py").write_text(
        "from pkg.core import WidgetFactory\n\nA = WidgetFactory()\nB = WidgetFactory()\n"
    )
    (tmp_path / "pkg" / "two.py").write_text("import pkg.core\n\nC = pkg.core.WidgetFactory\n")
    (tmp_path / "pkg" / "three.py").write_text("def widget_factory_user():\n    return 1\n")
    r = rate(tree(tmp_path), read=reader(tmp_path))  # type: ignore[arg-type]
    why = r.reasons["pkg/core.py"]
    assert "referenced by 2 files" in why
    assert any(w.startswith("imported by 2 files") for w in why)
    assert not any(w.startswith(("referenced", "imported")) for w in r.reasons["pkg/three.py"])
    assert set(r.reasons) == set(r.files) and len(r.reasons) == 5
    with pytest.raises(KeyError):
        r.reasons["pkg/absent.py"]
    assert r.reasons.get("pkg/absent.py", ()) == ()


def test_go_names_used_through_their_package_go_to_that_package(tmp_path: Path) -> None:
    """`stack.New` is the stack package's `New`, not the other package's; `unsafe.Pointer` is
    no use of the project's `Pointer` method, however often it is written."""
    (tmp_path / "go.mod").write_text("module example.com/net\n")
    (tmp_path / "stack").mkdir()
    (tmp_path / "stack" / "stack.go").write_text(
        "package stack\n\ntype Stack struct{}\n\nfunc New() *Stack { return nil }\n"
    )
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "other.go").write_text(
        "package other\n\ntype Option struct{}\n\nfunc New() *Option { return nil }\n\n"
        "func (o *Option) Pointer() int { return 0 }\n"
    )
    for i in range(4):
        (tmp_path / f"use{i}.go").write_text(
            f'package use{i}\n\nimport (\n\t"unsafe"\n\t"example.com/net/stack"\n)\n\n'
            "func run(p unsafe.Pointer, q unsafe.Pointer) { stack.New(); stack.New() }\n"
        )
    r = rate(tree(tmp_path), read=reader(tmp_path))  # type: ignore[arg-type]
    assert r.symbol("stack/stack.go", "New") > 4 * r.symbol("other/other.go", "New")
    assert r.symbol("other/other.go", "Pointer") <= r.symbol("other/other.go", "Option")
    assert r.file("stack/stack.go") > r.file("other/other.go")
