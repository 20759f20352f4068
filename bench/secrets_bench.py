"""The secret scan: recall on planted secrets, false positives on ordinary code, and cost.

    .venv/bin/python -m bench.secrets_bench [--out DIR] [--no-download] [--mb 300]
                                            [--skip-recall] [--skip-tree] [--skip-adversarial]

Three scanners run side by side, loaded from git: *old* (BASELINE, the scanner before issue 9),
*before* (PREVIOUS, the first version of the new scan) and *after* (this working tree).

1. **Recall**, per form, on four corpora of planted secrets (`tests/secret_corpus.py`): the
   tuned forms, the held-out forms, a second held-out corpus written after the precision work
   and a third written with issue 21's rules, each with its own seed. *after* packs the corpus
   with `cas pack`; a form leaks if any 8-character piece of its secret appears in the pack
   report, a manifest, `cas show`, any render (every format and mode) or anything in the store.
   *before* is the file-level check: the file scanned and redacted (or withheld) by that
   scanner, and its path. *old*: did that scanner flag the file at all. Then the same
   file-level check over many seeds (`--seeds`): values are drawn anew each time, so a form
   whose verdict depends on its value shows there.
2. **False positives**: ordinary code that holds no secret, fetched the way a fresh machine can
   (`pip download --no-binary :all:` sdists of large projects and `npm pack` tarballs), cached in
   `bench/.cache/secrets-corpus/`. Every flagged file is listed with the kinds found, for
   *before* and *after*. A file whose only findings are private keys that parse (a DER
   structure of the right length, or an OpenSSH key) holds a real secret: it is counted apart,
   as a real secret in ordinary code, not as a false positive.
3. **Cost**: CPU seconds of the scan (one thread, every file in memory first) over the
   synthetic bench tree (`bench/tree.py`) and over the ordinary code, for the three scanners in
   the same run; and the seconds each scanner takes on the adversarial inputs of
   `tests/test_secrets.py`.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import ROOT
from packer import secrets as current
from tests.secret_corpus import ADVERSARIAL, CORPORA, exposed, leaks, pieces, plant

BASELINE = "caef5e5"  # the last commit with the scanner issue 9 replaced
PREVIOUS = "df12659"  # the first version of the new scan, before its precision and cost work
SDISTS = ("Django==5.1.4", "botocore==1.35.90", "httpx==0.28.1", "requests==2.32.3",
          "SQLAlchemy==2.0.36")  # fmt: skip
NPM = ("typescript@5.7.2", "lodash@4.17.21", "express@4.21.2", "axios@1.7.9", "react-dom@19.0.0")
CACHE = harness.CACHE / "secrets-corpus"
LARGE = 8 << 20
SEEDS = {"tuned": 1, "held-out": 7, "held-out-2": 23, "held-out-3": 31}


@dataclass
class Scanner:
    label: str
    scan: Callable[[bytes], list[Any]]
    module: Any


def scanner_at(label: str, commit: str, modules: tuple[str, ...]) -> Scanner | None:
    """The scanner as it was at ``commit``: ``modules`` of packer/ (dependencies first) loaded
    from git under names of their own; None if git lacks the commit."""
    prefix = f"_bench_{label.replace('-', '_')}_"
    for name in modules:
        try:
            source = subprocess.run(
                ["git", "show", f"{commit}:packer/{name}.py"],
                cwd=ROOT, capture_output=True, check=True, text=True,
            ).stdout  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            return None
        for other in modules:
            source = source.replace(f"from packer.{other} import", f"from {prefix}{other} import")
        module = types.ModuleType(prefix + name)
        sys.modules[prefix + name] = module  # dataclasses look their module up
        exec(compile(source, f"{commit}:packer/{name}.py", "exec"), module.__dict__)
    module = sys.modules[prefix + "secrets"]
    return Scanner(label, module.scan_secrets, module)


def cas_runner(root: Path) -> Callable[..., tuple[int, bytes, bytes]]:
    env = harness.clean_env()

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


def sealed_by(scanner: Scanner, path: str, data: bytes, needles: tuple[str, ...]) -> bool:
    """File-level recall of a scanner that has redaction: its path is withheld or cut, and its
    content is withheld or redacted so that no 8-character piece of a needle is left."""
    m = scanner.module
    if m.secret_path_kind(path) is not None:
        return True
    found = m.scan_secrets(data)
    body = m.redact(data, found) if found else data
    shown = (body or b"") + m.redact_path(path).encode()
    return not any(p.encode("latin-1") in shown for n in needles for p in pieces(n))


def recall(
    work: Path, corpus: str, before: Scanner | None, old: Scanner | None
) -> list[tuple[str, str, str, str]]:
    root = work / corpus
    root.mkdir(parents=True)
    plants = plant(root, SEEDS[corpus], corpus=corpus)
    bad = leaks(plants, exposed(root, cas_runner(root)))
    rows = []
    for p in plants:
        data = (root / p.path).read_bytes()
        was = "-"
        if before is not None:
            was = "sealed" if sealed_by(before, p.path, data, p.needles) else "LEAKED"
        flagged = "-"
        if old is not None:
            flagged = "flagged" if old.scan(data) else "missed"
        rows.append((p.form, "LEAKED" if p.form in bad else "sealed", was, flagged))
    return rows


def recall_over_seeds(
    work: Path, seeds: int, scanners: list[Scanner]
) -> dict[str, dict[tuple[str, str], int]]:
    """File-level misses per (corpus, form) over ``seeds`` seeds: the values are drawn anew
    each time, so a form whose judgement depends on the drawn value shows here."""
    misses: dict[str, dict[tuple[str, str], int]] = {s.label: {} for s in scanners}
    for seed in range(1000, 1000 + seeds):
        for corpus in CORPORA:
            root = work / f"seeds-{corpus}-{seed}"
            root.mkdir(parents=True)
            for p in plant(root, seed, corpus=corpus):
                data = (root / p.path).read_bytes()
                for s in scanners:
                    if not sealed_by(s, p.path, data, p.needles):
                        key = (corpus, p.form)
                        misses[s.label][key] = misses[s.label].get(key, 0) + 1
            shutil.rmtree(root)
    return misses


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
        wanted = [("pypi", s) for s in missing]
        if shutil.which("npm"):
            for spec in NPM:
                name = spec.rsplit("@", 1)[0].replace("/", "-")
                if not any(archives.glob(f"{name}-*.tgz")):
                    wanted.append(("npm", spec))
        for source, spec in wanted:
            try:
                harness.download(source, spec, archives)
            except harness.BenchError as exc:
                harness.note(str(exc))  # that project is left out of the false positives
    for archive in sorted(archives.iterdir()):
        name = archive.name.split(".tar")[0].removesuffix(".tgz")
        target = CACHE / "unpacked" / name
        if not target.exists():
            harness.unpack(archive, target)
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


_PEM_BLOCK = re.compile(
    rb"-----BEGIN ([A-Z0-9 ]{0,40})PRIVATE KEY-----\r?\n(.{16,65536}?)-----END \1PRIVATE KEY-----",
    re.DOTALL,
)
_KEY_KINDS = {"private key block", "PuTTY private key"}


def _der_is_whole(body: bytes) -> bool:
    """A DER SEQUENCE whose length field covers exactly the rest of ``body``."""
    if len(body) < 4 or body[0] != 0x30:
        return False
    if body[1] < 0x80:
        return 2 + body[1] == len(body)
    n = body[1] & 0x7F
    return 0 < n <= 4 and 2 + n + int.from_bytes(body[2 : 2 + n], "big") == len(body)


def real_private_keys(data: bytes) -> bool:
    """Whether ``data`` holds private keys that parse, and only those: real secrets."""
    blocks = list(_PEM_BLOCK.finditer(data))
    if not blocks:
        return False
    for block in blocks:
        lines = [ln for ln in block.group(2).splitlines() if b":" not in ln]
        try:
            body = base64.b64decode(b"".join(ln.strip() for ln in lines), validate=True)
        except (binascii.Error, ValueError):
            return False
        if not (body.startswith(b"openssh-key-v1\0") or _der_is_whole(body)):
            return False
    return True


@dataclass
class Verdict:
    kinds: tuple[str, ...]
    real: bool


def judge(scan: Callable[[bytes], list[Any]], data: bytes) -> Verdict | None:
    found = scan(data)
    if not found:
        return None
    kinds = tuple(sorted({f.kind for f in found}))
    return Verdict(kinds, set(kinds) <= _KEY_KINDS and real_private_keys(data))


def false_positives(
    corpora: dict[str, Path], before: Scanner | None
) -> tuple[list[bytes], list[str]]:
    """Print the false-positive table; return every file's bytes and the flagged list."""
    print("\n## False positives on ordinary code (files flagged / files)\n")
    print(
        f"{'project':22} {'files':>6} {'FP before':>10} {'FP after':>9} {'share after':>12}"
        f" {'real secrets before/after':>26}"
    )
    datas: list[bytes] = []
    listed: list[str] = []
    real_listed: list[str] = []
    totals = [0, 0, 0, 0, 0]
    for name, root in corpora.items():
        files = files_of(root)
        datas += [d for _p, d in files]
        fp_before = fp_after = real_before = real_after = 0
        for path, data in files:
            shown = f"{name}/{path.split('/', 1)[-1]}"
            after = judge(current.scan_secrets, data)
            was = judge(before.scan, data) if before is not None else None
            if after is not None and after.real:
                real_after += 1
                real_listed.append(f"  real secret: {shown}  ({', '.join(after.kinds)})")
            if was is not None and was.real:
                real_before += 1
            fp_a = after is not None and not after.real
            fp_b = was is not None and not was.real
            fp_after += fp_a
            fp_before += fp_b
            if fp_a or fp_b:
                mark = ("B" if fp_b else "-") + ("A" if fp_a else "-")
                kinds = [
                    f"{label}: {'; '.join(v.kinds)}"
                    for label, v, fp in (("before", was, fp_b), ("after", after, fp_a))
                    if fp and v is not None
                ]
                listed.append(f"  {mark}  {shown}  ({' | '.join(kinds)})")
        for path_text in current.secrets_in_paths([p for p, _d in files]):
            fp_after += 1
            listed.append(f"  -A  {name}/{path_text}  (secret in its path)")
        n = len(files)
        share = 100 * fp_after / max(1, n)
        print(
            f"{name:22} {n:>6} {fp_before:>10} {fp_after:>9} {share:>11.3f}%"
            f" {real_before:>13}/{real_after}"
        )
        for i, v in enumerate((n, fp_before, fp_after, real_before, real_after)):
            totals[i] += v
    n, fp_b, fp_a, r_b, r_a = totals
    print(
        f"{'all':22} {n:>6} {fp_b:>10} {fp_a:>9} {100 * fp_a / max(1, n):>11.3f}% {r_b:>13}/{r_a}"
    )
    print(f"(before: {100 * fp_b / max(1, n):.3f}% of files)")
    print(
        "\nFalse positives, per file (B: flagged before, A: flagged after; the kinds each found):"
    )
    for line in listed:
        print(line)
    print("\nReal secrets in ordinary code (counted apart; private keys that parse):")
    for line in real_listed:
        print(line)
    return datas, listed


def cpu(scan: Callable[[bytes], object], datas: list[bytes]) -> float:
    start = time.process_time()
    for d in datas:
        scan(d)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--out", type=Path, help="work here (default: a temporary folder)")
    parser.add_argument("--no-download", action="store_true", help="use only the cached corpora")
    parser.add_argument("--mb", type=float, default=300.0, help="size of the synthetic tree")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--seeds", type=int, default=50, help="seeds for recall over values")
    parser.add_argument("--skip-tree", action="store_true")
    parser.add_argument("--skip-adversarial", action="store_true")
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="cas-secrets-"))
    work.mkdir(parents=True, exist_ok=True)
    old = scanner_at("old", BASELINE, ("secrets",))
    before = scanner_at("before", PREVIOUS, ("literal_search", "secret_rules", "secrets"))
    for label, scanner, commit in (("old", old, BASELINE), ("before", before, PREVIOUS)):
        if scanner is None:
            print(f"(git has no {commit}: the {label!r} columns are left empty)")
    scanners = [s for s in (old, before) if s is not None]

    if not args.skip_recall:
        print("\n## Recall: planted secrets, per form (sealed = no 8-character piece anywhere)\n")
        print(f"{'corpus':11} {'form':34} {'after':8} {'before':8} {'old'}")
        totals = {}
        for corpus in CORPORA:
            rows = recall(work, corpus, before, old)
            for form, after, was, flagged in rows:
                print(f"{corpus:11} {form:34} {after:8} {was:8} {flagged}")
            totals[corpus] = (
                sum(1 for r in rows if r[1] == "sealed"),
                sum(1 for r in rows if r[2] == "sealed"),
                sum(1 for r in rows if r[3] == "flagged"),
                len(rows),
            )
        for corpus, (a, b, o, n) in totals.items():
            print(f"{corpus}: after {a}/{n} sealed; before {b}/{n} sealed; old flagged {o}/{n}")
        if args.seeds:
            print(f"\n## Recall over {args.seeds} seeds, file by file: forms ever missed\n")
            with_redact = [s for s in (before,) if s is not None]
            misses = recall_over_seeds(
                work, args.seeds, [Scanner("after", current.scan_secrets, current), *with_redact]
            )
            keys = sorted({k for m in misses.values() for k in m})
            print(f"{'corpus':11} {'form':34} {'after missed':>13} {'before missed':>14}")
            for corpus, form in keys:
                row = f"{corpus:11} {form:34}"
                for label in ("after", "before"):
                    n = misses.get(label, {}).get((corpus, form), 0)
                    row += f" {n:>{13 if label == 'after' else 14}}"
                print(row)
            plantings = args.seeds * sum(len(f) for f in CORPORA.values())
            for label, m in misses.items():
                lost = sum(m.values())
                print(f"{label}: {lost} of {plantings} plantings missed")

    corpora = fetch_ordinary(not args.no_download)
    ordinary, _listed = false_positives(corpora, before)

    print("\n## Cost: CPU seconds of the scan, one thread, files in memory (same run)\n")
    sets = [("ordinary code", ordinary)]
    if not args.skip_tree:
        tree = work / "tree"
        if not tree.exists():
            make = [sys.executable, "-m", "bench.tree", str(tree)]
            make += ["--mb", str(args.mb), "--files", str(args.files)]
            subprocess.run(make, check=True, capture_output=True, cwd=ROOT)
        sets.insert(0, ("bench tree", [d for _p, d in files_of(tree)]))
    head = f"{'data':16} {'MiB':>5}"
    for s in [*scanners, Scanner("after", current.scan_secrets, current)]:
        head += f" {s.label + ' s':>9} {'MiB/s':>6}"
    print(head + f" {'after vs old':>13}")
    for label, datas in sets:
        mib = sum(map(len, datas)) / (1 << 20)
        row = f"{label:16} {mib:>5.0f}"
        seconds = {}
        for s in [*scanners, Scanner("after", current.scan_secrets, current)]:
            s.scan(b"warm up the prefilter")
            seconds[s.label] = t = cpu(s.scan, datas)
            row += f" {t:>9.2f} {mib / t:>6.0f}"
        ratio = seconds["old"] / seconds["after"] if "old" in seconds else float("nan")
        print(row + f" {ratio:>12.2f}x")
    print(f"(prefilter engine: {current._prefilter().engine})")

    if not args.skip_adversarial:
        print("\n## Adversarial inputs: CPU seconds per input (tests/test_secrets.py)\n")
        print(f"{'input':20} {'MB':>4} {'before s':>9} {'after s':>8}")
        for name, data in ADVERSARIAL.items():
            was = cpu(before.scan, [data]) if before is not None else float("nan")
            now = cpu(current.scan_secrets, [data])
            print(f"{name:20} {len(data) / 1e6:>4.1f} {was:>9.2f} {now:>8.2f}")

    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
