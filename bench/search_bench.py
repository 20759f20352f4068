"""Search and index costs on the generated bench tree, with grep as the peer in the same run.

    .venv/bin/python -m bench.search_bench [--files 20000] [--mb 300] [--queries 20]

On a fresh tree (`bench/tree.py`, the same one `pack_bench.py` uses):

* a cold ``cas pack --json``: its stages, and the index step it now ends with (share of the
  pack's wall time; target under 25%); the index's size next to the store's;
* ``cas search WORD`` as a fresh process, median and worst over queries drawn from the tree's
  own identifiers (target under 300 ms at the median);
* the same queries through a running ``cas mcp`` server's ``search`` tool, over stdio with the
  MCP SDK's client (target under 50 ms at the median);
* the peer: ``grep -rlw WORD`` over the tree, which finds files but neither ranks them nor
  knows identifiers, and ``git grep``-style tools would do the same work per query.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import harness
from bench import tree as treegen

CAS = harness.CAS


def _timed(argv: list[str], cwd: Path) -> tuple[float, str]:
    # grep exits 1 when nothing matches, cas search when it finds nothing: both are answers.
    return harness.timed(argv, cwd, harness.clean_env(), ok=(0, 1))


def _queries(root: Path, n: int) -> list[str]:
    rng = random.Random(7)
    names: set[str] = set()
    py = sorted(root.rglob("*.py"))[:400]
    for path in py:
        names.update(re.findall(r"def ([a-z_][a-z0-9_]{5,})", path.read_text(errors="replace")))
    return rng.sample(sorted(names), min(n, len(names)))


async def _server_times(root: Path, queries: list[str]) -> list[float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cas", "mcp"], cwd=str(root), env=harness.clean_env()
    )
    times = []
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        await s.call_tool("search", {"query": queries[0], "k": 10})  # warm
        for q in queries:
            started = time.perf_counter()
            res = await s.call_tool("search", {"query": q, "k": 10})
            times.append(time.perf_counter() - started)
            if res.is_error:
                raise harness.BenchError(f"search {q!r} failed: {res.content}")
    return times


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()

    import anyio

    work = Path(tempfile.mkdtemp(prefix="cas-search-bench-"))
    try:
        root = work / "tree"
        treegen.generate(root, args.files, args.mb * treegen.MIB)
        started = time.perf_counter()
        _, out = _timed([*CAS, "pack", "--json"], root)
        wall = time.perf_counter() - started
        timings = json.loads(out)["timings"]
        index_s = timings.get("index", 0.0)
        index_bytes = (root / ".cas" / "search.sqlite").stat().st_size
        store_bytes = _size(root / ".cas") - index_bytes
        queries = _queries(root, args.queries)
        fresh = [_timed([*CAS, "search", q, "-k", "10"], root)[0] for q in queries]
        grep = [_timed(["grep", "-rlw", "--exclude-dir=.cas", q, "."], root)[0] for q in queries]
        served = anyio.run(_server_times, root, queries)
    except harness.BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.0f} ms (worst {max(values) * 1000:.0f})"

    med_grep = statistics.median(grep)
    size = f"{args.files:,} files, {args.mb} MiB"
    print(f"\nSearch on the bench tree ({size}), {len(queries)} queries:\n")
    rows = [
        ("cold cas pack (wall)", f"{wall:.2f} s", ""),
        ("  of which: index", f"{index_s:.2f} s", f"{100 * index_s / wall:.0f}% of the pack"),
        ("index size / store size", f"{index_bytes / 2**20:.1f} / {store_bytes / 2**20:.1f} MiB",
         f"{100 * index_bytes / max(store_bytes, 1):.0f}%"),
        ("cas search, fresh process", ms(fresh),
         f"{med_grep / statistics.median(fresh):.2f}x grep"),
        ("cas mcp search, running server", ms(served),
         f"{med_grep / statistics.median(served):.2f}x grep"),
        ("peer: grep -rlw (unranked)", ms(grep), "1.00x"),
    ]  # fmt: skip
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
