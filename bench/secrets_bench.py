"""The secret scan: recall on planted secrets, false positives on ordinary code, and cost.

    .venv/bin/python bench/secrets_bench.py [--out DIR] [--no-download] [--mb 300]

Three measurements, one table each:

1. **Recall**, per form: a corpus of planted secrets (`tests/secret_corpus.py`, the tuned forms
   and, separately, the held-out forms with another seed) is packed with `cas pack`; a form
   leaks if any 8-character piece of its secret appears in the pack report, a manifest, `cas
   show`, any render (every format and mode) or anything in the store. The scanner before this
   work (read from git at BASELINE) is shown beside it: did it flag the form's file at all.
2. **False positives**: ordinary code that holds no secret, fetched the way a fresh machine can
   (`pip download --no-binary :all:` sdists of large projects and `npm pack` tarballs), cached in
   `bench/.cache/secrets-corpus/`. Every file the scanner flags is a false positive (the
   projects' own fake test keys included: they are counted, and listed for a reader to judge).
3. **Cost**: worker-seconds of the scan (one thread, every file in memory first) over the
   synthetic bench tree (`bench/tree.py`, 304 MiB) and over the ordinary code, for the scanner
   before and after, in the same run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from packer.secrets import scan_secrets, secrets_in_paths  # noqa: E402
from tests.secret_corpus import exposed, leaks, plant  # noqa: E402

BASELINE = "caef5e5"  # the last commit with the scanner this work replaced
SDISTS = ("Django==5.1.4", "botocore==1.35.90", "httpx==0.28.1", "requests==2.32.3",
          "SQLAlchemy==2.0.36")  # fmt: skip
NPM = ("typescript@5.7.2", "lodash@4.17.21", "express@4.21.2", "axios@1.7.9", "react-dom@19.0.0")
CACHE = ROOT / "bench" / ".cache" / "secrets-corpus"
LARGE = 8 << 20


def old_scanner() -> Callable[[bytes], list[object]] | None:
    """`scan_secrets` as it was at BASELINE, loaded from git; None if git lacks the commit."""
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE}:packer/secrets.py"],
            cwd=ROOT, capture_output=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("old_secrets")
    sys.modules["old_secrets"] = module  # dataclasses look their module up
    exec(compile(source, "old_secrets.py", "exec"), module.__dict__)
    return module.scan_secrets  # type: ignore[no-any-return]


def cas_runner(root: Path) -> Callable[..., tuple[int, bytes, bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAS_")}
    env.update({"PYTHONPATH": str(ROOT), "CAS_NO_PROGRESS": "1"})

    def cas(*args: str) -> tuple[int, bytes, bytes]:
        r = subprocess.run(
            [sys.executable, "-m", "cas", *args],
            cwd=root,
            capture_output=True,
            env=env,
            check=False,
        )
        return r.returncode, r.stdout, r.stderr

    return cas


def recall(
    work: Path, seed: int, heldout: bool, old: Callable[[bytes], list[object]] | None
) -> list[tuple[str, str, str]]:
    root = work / ("heldout" if heldout else "planted")
    root.mkdir(parents=True)
    plants = plant(root, seed, heldout=heldout)
    bad = leaks(plants, exposed(root, cas_runner(root)))
    rows = []
    for p in plants:
        before = "-"
        if old is not None:
            flagged = bool(old((root / p.path).read_bytes()))
            before = "flagged" if flagged else "missed"
        rows.append((p.form, "LEAKED" if p.form in bad else "sealed", before))
    return rows


def fetch_ordinary(download: bool) -> dict[str, Path]:
    """Each ordinary project unpacked under CACHE (downloaded once)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    archives = CACHE / "archives"
    archives.mkdir(exist_ok=True)
    if download:
        have = {p.name.lower() for p in archives.iterdir()}
        missing = [
            s for s in SDISTS if not any(n.startswith(s.split("==")[0].lower()) for n in have)
        ]
        if missing:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary",
                 ":all:", "-d", str(archives), *missing], check=False,
            )  # fmt: skip
        if shutil.which("npm"):
            for spec in NPM:
                name = spec.rsplit("@", 1)[0].replace("/", "-")
                if not any(archives.glob(f"{name}-*.tgz")):
                    subprocess.run(["npm", "pack", "-q", spec], cwd=archives, check=False,
                                   capture_output=True)  # fmt: skip
    for archive in sorted(archives.iterdir()):
        name = archive.name.split(".tar")[0].removesuffix(".tgz")
        target = CACHE / "unpacked" / name
        if not target.exists():
            with tarfile.open(archive) as tar:
                tar.extractall(target, filter="data")
        out[name] = target
    return out


def files_of(root: Path) -> list[tuple[str, bytes]]:
    out = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= LARGE:
                out.append((str(path.relative_to(root)), path.read_bytes()))
    return sorted(out)


def timed(scan: Callable[[bytes], object], datas: list[bytes]) -> tuple[float, int]:
    start = time.process_time()
    flagged = sum(1 for d in datas if scan(d))
    return time.process_time() - start, flagged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="work here (default: a temporary folder)")
    parser.add_argument("--no-download", action="store_true", help="use only the cached corpora")
    parser.add_argument("--mb", type=float, default=300.0, help="size of the synthetic tree")
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="cas-secrets-"))
    work.mkdir(parents=True, exist_ok=True)
    old = old_scanner()
    if old is None:
        print(f"(git has no {BASELINE}: the 'before' columns are left empty)")

    print("\n## Recall: planted secrets, per form (sealed = no 8-character piece anywhere)\n")
    print(f"{'corpus':9} {'form':34} {'after':8} {'before (flagged?)'}")
    totals = {}
    for label, seed, heldout in (("planted", 1, False), ("held-out", 7, True)):
        rows = recall(work, seed, heldout, old)
        for form, after, before in rows:
            print(f"{label:9} {form:34} {after:8} {before}")
        sealed = sum(1 for _f, a, _b in rows if a == "sealed")
        flagged_before = sum(1 for _f, _a, b in rows if b == "flagged")
        totals[label] = (sealed, flagged_before, len(rows))
    for label, (sealed, before, n) in totals.items():
        print(f"{label}: {sealed}/{n} forms sealed; the old scanner flagged {before}/{n} files")

    print("\n## False positives on ordinary code (files flagged / files)\n")
    corpora = fetch_ordinary(not args.no_download)
    all_datas: list[bytes] = []
    print(f"{'project':28} {'files':>7} {'flagged':>8} {'share':>8} {'before':>8}")
    flagged_total = files_total = 0
    listed: list[str] = []
    for name, root in corpora.items():
        files = files_of(root)
        datas = [d for _p, d in files]
        all_datas += datas
        hits = [p for p, d in files if scan_secrets(d)]
        hits += [f"(path) {p}" for p in secrets_in_paths([p for p, _d in files])]
        before = sum(1 for d in datas if old(d)) if old is not None else 0
        flagged_total += len(hits)
        files_total += len(files)
        listed += [f"{name}/{h}" for h in hits]
        share = 100 * len(hits) / max(1, len(files))
        print(f"{name:28} {len(files):>7} {len(hits):>8} {share:>7.3f}% {before:>8}")
    share = 100 * flagged_total / max(1, files_total)
    print(f"{'all':28} {files_total:>7} {flagged_total:>8} {share:>7.3f}%")
    for line in listed:
        print(f"  flagged: {line}")

    print("\n## Cost: worker-seconds of the scan, one thread, files in memory\n")
    tree = work / "tree"
    if not tree.exists():
        make = [sys.executable, str(ROOT / "bench" / "tree.py"), str(tree)]
        make += ["--mb", str(args.mb), "--files", str(args.files)]
        subprocess.run(make, check=True, capture_output=True)
    tree_datas = [d for _p, d in files_of(tree)]
    print(f"{'data':24} {'MiB':>7} {'before s':>9} {'MiB/s':>7} {'after s':>8} {'MiB/s':>7}")
    for label, datas in (("bench tree", tree_datas), ("ordinary code", all_datas)):
        mib = sum(map(len, datas)) / (1 << 20)
        scan_secrets(b"warm up the prefilter")
        after, _ = timed(scan_secrets, datas)
        if old is not None:
            before, _ = timed(old, datas)
            print(
                f"{label:24} {mib:>7.0f} {before:>9.2f} {mib / before:>7.0f} "
                f"{after:>8.2f} {mib / after:>7.0f}"
            )
        else:
            print(f"{label:24} {mib:>7.0f} {'-':>9} {'-':>7} {after:>8.2f} {mib / after:>7.0f}")
    from packer.secrets import _prefilter

    print(f"(prefilter engine: {_prefilter().engine})")
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
