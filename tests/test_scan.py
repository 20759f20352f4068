"""The repository walker: ignore rules checked against git itself, and every odd file kind."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cas.errors import InputError, UsageError
from packer.ignore import IgnoreStack, split_ignore_file
from packer.scan import ScanResult, decode_text, is_binary, scan

# by name: a package that re-exports scan() would shadow the module as an attribute
scan_module = importlib.import_module("packer.scan")
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


# --- helpers -------------------------------------------------------------------------------------


def write(root: Path, rel: str, data: str | bytes = "x") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    p.write_bytes(data)
    return p


def paths(result: ScanResult) -> list[str]:
    return [f.path for f in result.files]


def notes(result: ScanResult) -> dict[str, str]:
    return {n.path: n.reason for n in result.notes}


def git_env(home: str) -> dict[str, str]:
    # no user or system configuration may change what git ignores (core.excludesFile, say)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=home, XDG_CONFIG_HOME=home, GIT_CONFIG_NOSYSTEM="1")
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    return env


def git_init(root: Path) -> None:
    assert GIT is not None
    subprocess.run(
        [GIT, "init", "-q", str(root)], check=True, env=git_env(str(root / ".git")), timeout=30
    )


def git_untracked(root: Path) -> set[str]:
    assert GIT is not None
    out = subprocess.run(
        [GIT, "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root,
        check=True,
        capture_output=True,
        env=git_env(str(root / ".git")),
        timeout=30,
    ).stdout
    return {p.decode("utf-8") for p in out.split(b"\0") if p}


# --- ignore rules against git --------------------------------------------------------------------


GITIGNORE_ROOT = [
    "# a comment, and a blank line",
    "",
    "\\#hash.txt",
    "*.log",
    "!keep.log",
    "build/",
    "/rootonly.txt",
    "**/deep.tmp",
    "a/**/b.txt",
    "docs/*.md",
    "!docs/README.md",
    "excluded/",
    "!excluded/reinclude.txt",
    "trailing.txt   ",
    "tail\\ ",
    "foo/**/",
    "!keep.dat",
]

FILES = [
    "#hash.txt",
    "notes.log",
    "keep.log",
    "build/out.bin",
    "src/build/out.bin",
    "lib/build",  # a file named like the dir-only pattern: kept
    "rootonly.txt",
    "src/rootonly.txt",
    "x/y/deep.tmp",
    "deep.tmp",
    "a/b.txt",
    "a/q/r/b.txt",
    "docs/guide.md",
    "docs/README.md",
    "docs/deeper/guide.md",
    "excluded/reinclude.txt",
    "excluded/other",
    "trailing.txt",
    "tail ",
    "tail",
    "foo/keep",
    "foo/sub/gone",
    "sub/x.log",
    "sub/a.txt",
    "sub/deeper/x.log",
    "sub/deeper/y.log",
    "sub/anchored",
    "sub/inner/anchored",
    "sub/inner/d/x.txt",
    "sub/inner/d/x.c",
    "info.dat",
    "keep.dat",
    "readme",
]


@needs_git
def test_matches_git_on_tricky_patterns(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git_init(root)
    write(root, ".gitignore", "\n".join(GITIGNORE_ROOT) + "\n")
    # deeper files override shallower ones, both ways
    write(root, "sub/.gitignore", "!*.log\n/anchored\n*.txt\n")
    write(root, "sub/deeper/.gitignore", "x.log\n")
    write(root, "sub/inner/.gitignore", "!d\n")
    write(root, ".git/info/exclude", "*.dat\n")  # outranked by the root .gitignore
    for rel in FILES:
        write(root, rel)

    got = set(paths(scan(root)))
    assert got == git_untracked(root)
    # the oracle could agree with a broken scanner on a vacuous tree: pin the interesting cases
    assert {"keep.log", "docs/README.md", "lib/build", "tail", "foo/keep", "readme"} <= got
    assert {"sub/x.log", "sub/deeper/y.log", "sub/inner/d/x.c", "keep.dat"} <= got
    assert {"sub/inner/anchored", "docs/deeper/guide.md", "src/rootonly.txt"} <= got
    assert "excluded/reinclude.txt" not in got  # no re-include under an excluded directory
    assert "sub/inner/d/x.txt" not in got  # the deeper `!d` names the directory, not its files
    assert {"tail ", "#hash.txt", "trailing.txt", "foo/sub/gone", "info.dat"}.isdisjoint(got)
    assert {"sub/deeper/x.log", "sub/anchored", "a/q/r/b.txt", "x/y/deep.tmp"}.isdisjoint(got)


# small alphabets, so that drawn patterns often hit drawn names
SEGMENTS = ["a", "b", "c.txt", "*", "**", "***", "*.txt", "?", "[ab]", "[!a]", "a*", "\\*"]
SEGMENTS += ["!", "\\!a", "#a", "\\#a"]
NAMES = ["a", "b", "c.txt", "ab", "d.txt", "!a", "#a", "*"]


@st.composite
def patterns(draw: st.DrawFn) -> str:
    segs = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3))
    text = "/".join(segs)
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()):
        text += "/"
    if draw(st.integers(0, 3)) == 0:
        text = "!" + text
    return text + draw(st.sampled_from(["", "", "  ", "\\ ", "\t"]))


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[str]]:
    files = draw(
        st.lists(
            st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map("/".join),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    dirs = sorted({f.rsplit("/", 1)[0] for f in files if "/" in f} | {""})
    ignore_files = draw(
        st.dictionaries(
            st.sampled_from(dirs), st.lists(patterns(), min_size=1, max_size=5), max_size=3
        )
    )
    exclude = draw(st.lists(patterns(), max_size=2))
    return files, ignore_files, exclude


def build(root: Path, files: list[str], ignore_files: dict[str, list[str]]) -> None:
    for d, lines in ignore_files.items():
        (root / d).mkdir(parents=True, exist_ok=True)
        if not (root / d).is_dir():
            continue
        (root / d / ".gitignore").write_text("\n".join(lines) + "\n")
    for rel in files:
        p = root / rel
        # a path that is both a file and a directory in the drawn tree: keep what came first
        if any(q.is_file() for q in p.parents) or p.exists():
            continue
        try:
            write(root, rel)
        except (FileExistsError, NotADirectoryError):
            continue


@needs_git
@settings(max_examples=40, deadline=None)
@given(trees())
@example((["d/c.txt", "c.txt"], {"": ["*.txt"], "d": ["!d"]}, []))
@example((["a/b/c.txt", "a/ab"], {"": ["a/**/", "!a/ab"]}, []))
@example((["a/b", "a/c.txt"], {"": ["a/*", "!a/b"]}, ["a/"]))
def test_matches_git_on_random_trees(
    case: tuple[list[str], dict[str, list[str]], list[str]],
) -> None:
    files, ignore_files, exclude = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        git_init(root)
        (root / ".git" / "info").mkdir(exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text("\n".join(exclude) + "\n")
        build(root, files, ignore_files)
        assert set(paths(scan(root))) == git_untracked(root)


def test_deeper_negation_does_not_reach_files_of_the_directory() -> None:
    # pathspec alone answers "this path or one of its directories"; git judges each path on its
    # own, so a deeper `!d` re-includes the directory d but not what a shallower rule excludes
    stack = IgnoreStack().push("", ["*.txt"]).push("sub", ["!d"])
    assert not stack.is_ignored("sub/d", is_dir=True)
    assert stack.is_ignored("sub/d/x.txt", is_dir=False)
    assert not stack.is_ignored("sub/d/x.c", is_dir=False)


def test_ignore_stack_rules() -> None:
    stack = IgnoreStack().push("", ["build/", "/top", "x/**/", "tab\t", "bad\\"])
    assert stack.is_ignored("build", is_dir=True)
    assert stack.is_ignored("a/build", is_dir=True)
    assert not stack.is_ignored("build", is_dir=False)  # dir-only pattern, a file
    assert stack.is_ignored("top", is_dir=False)
    assert not stack.is_ignored("a/top", is_dir=False)  # anchored to its own directory
    assert not stack.is_ignored("x", is_dir=True)  # `x/**/` names what is below x only
    assert stack.is_ignored("x/y", is_dir=True)
    assert not stack.is_ignored("x/y", is_dir=False)
    assert stack.is_ignored("tab\t", is_dir=False)  # git keeps a trailing tab
    assert not stack.is_ignored("tab", is_dir=False)
    assert not stack.is_ignored("bad", is_dir=False)  # a malformed line matches nothing
    nested = stack.push("a", ["/top", "!build"])
    assert nested.is_ignored("a/top", is_dir=False)  # anchored to a/
    assert not nested.is_ignored("a/build", is_dir=True)  # deeper file wins
    assert stack.is_ignored("a/build", is_dir=True)  # the parent stack is unchanged


def test_split_ignore_file_is_git_reading() -> None:
    assert split_ignore_file(b"\xef\xbb\xbfa\r\nb\n") == ["a\r", "b", ""]
    assert split_ignore_file(b"x\x0by") == ["x\x0by"]  # only LF splits


# --- .casignore ----------------------------------------------------------------------------------


def test_casignore_outranks_gitignore_at_its_level_but_not_deeper(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "!secret.env\n*.tmp\n")
    write(tmp_path, ".casignore", "secret.env\n!keep.tmp\ndata/\n")
    for rel in ["secret.env", "a.tmp", "keep.tmp", "data/big.csv", "sub/secret.env"]:
        write(tmp_path, rel)
    write(tmp_path, "deep/.gitignore", "!secret.env\n")
    write(tmp_path, "deep/secret.env")
    got = paths(scan(tmp_path))
    assert got == [".casignore", ".gitignore", "deep/.gitignore", "deep/secret.env", "keep.tmp"]


def test_ignore_files_are_listed_unless_ignored(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", ".casignore\n")
    write(tmp_path, ".casignore", "x\n")
    write(tmp_path, "x")
    assert paths(scan(tmp_path)) == [".gitignore"]


# --- symlinks ------------------------------------------------------------------------------------


def test_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, "dir/f.txt", "hello")
    write(tmp_path, "outside.txt")
    os.symlink("dir/f.txt", root / "to_file")
    os.symlink("dir", root / "to_dir")
    os.symlink(".", root / "dir" / "self")
    os.symlink(str(root / "dir" / "f.txt"), root / "absolute")
    os.symlink("../outside.txt", root / "out")
    os.symlink(str(tmp_path), root / "out_dir")
    os.symlink("missing", root / "dangling")
    os.symlink("loop", root / "loop")

    result = scan(root)
    by_path = {f.path: f for f in result.files}
    assert sorted(by_path) == ["absolute", "dir/f.txt", "dir/self", "to_dir", "to_file"]
    link = by_path["to_dir"]
    assert (link.kind, link.link_target, link.size) == ("symlink", "dir", 3)
    assert os.path.islink(link.abspath)
    assert by_path["to_file"].link_target == "dir/f.txt"
    assert by_path["dir/self"].link_target == "."
    assert by_path["absolute"].link_target == "dir/f.txt"  # no trace of this machine's path
    assert by_path["dir/f.txt"].kind == "file"
    assert by_path["dir/f.txt"].link_target is None
    assert notes(result) == {
        "dangling": "dangling symlink",
        "loop": "unresolvable symlink: Too many levels of symbolic links",
        "out": "symlink points outside the root",
        "out_dir": "symlink points outside the root",
    }


def test_symlink_size_is_utf8_length_of_target(tmp_path: Path) -> None:
    write(tmp_path, "é.txt")
    os.symlink("é.txt", tmp_path / "link")
    (link,) = [f for f in scan(tmp_path).files if f.kind == "symlink"]
    assert link.size == len("é.txt".encode())


# --- special files -------------------------------------------------------------------------------


def scan_with_deadline(root: Path, seconds: float = 20) -> ScanResult:
    """scan() in a thread, so a walker that opened a FIFO fails the test instead of hanging it."""
    box: list[ScanResult] = []
    t = threading.Thread(target=lambda: box.append(scan(root)), daemon=True)
    t.start()
    t.join(seconds)
    assert box, "scan did not finish: did it open a FIFO?"
    return box[0]


def test_fifo_is_noted_and_never_opened(tmp_path: Path) -> None:
    write(tmp_path, "a.txt")
    os.mkfifo(tmp_path / "pipe")
    os.mkfifo(tmp_path / "ignored.pipe")
    write(tmp_path, ".gitignore", "*.pipe\n")
    result = scan_with_deadline(tmp_path)
    assert paths(result) == [".gitignore", "a.txt"]
    assert notes(result) == {"pipe": "fifo skipped"}  # an ignored one is silent


def test_socket_is_noted(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)  # a unix socket path is limited to ~100 bytes; keep it short
        sock.bind("sock")
    except OSError as e:
        pytest.skip(f"cannot create a unix socket here: {e}")
    finally:
        os.chdir(cwd)
    try:
        assert notes(scan_with_deadline(tmp_path)) == {"sock": "socket skipped"}
    finally:
        sock.close()


def test_device_is_noted(tmp_path: Path) -> None:
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot create a device node here: {e}")
    assert notes(scan_with_deadline(tmp_path)) == {"null": "device skipped"}


# --- names ---------------------------------------------------------------------------------------


def test_invalid_utf8_names_are_noted_and_skipped(tmp_path: Path) -> None:
    base = os.fsencode(tmp_path)
    os.mkdir(base + b"/d")
    for name in [b"/d/bad\xff.txt", b"/ok.txt", b"/ignored\xfe.log"]:
        os.close(os.open(base + name, os.O_CREAT | os.O_WRONLY, 0o644))
    os.mkdir(base + b"/baddir\xc3")
    os.close(os.open(base + b"/baddir\xc3/inside", os.O_CREAT | os.O_WRONLY, 0o644))
    write(tmp_path, ".gitignore", "*.log\n")
    result = scan(tmp_path)
    assert paths(result) == [".gitignore", "ok.txt"]
    assert notes(result) == {
        "baddir\\xc3": "file name is not valid UTF-8",
        "d/bad\\xff.txt": "file name is not valid UTF-8",
    }


def test_nfd_names_are_recorded_nfc(tmp_path: Path) -> None:
    nfd = "cafe\u0301"
    write(tmp_path, f"{nfd}/{nfd}.txt", "menu")
    (f,) = scan(tmp_path).files
    assert f.path == "caf\u00e9/caf\u00e9.txt"
    assert Path(f.abspath).read_text() == "menu"  # abspath keeps the name on disk


def test_nfc_collision_keeps_one_and_notes_the_other(tmp_path: Path) -> None:
    write(tmp_path, "caf\u00e9", "nfc")
    write(tmp_path, "cafe\u0301", "nfd")
    result = scan(tmp_path)
    (f,) = result.files
    # the first by raw bytes wins, on every run: NFD "e\u0301" starts 0x65, NFC "é" 0xc3
    assert Path(f.abspath).read_text() == "nfd"
    assert [n.path for n in result.notes] == ["caf\u00e9"]


def test_sorted_by_utf8_bytes_of_the_whole_path(tmp_path: Path) -> None:
    for rel in ["ab", "a0", "a/c", "a/b/c", "a.b", "a-b", "Z", "é", "\uff5e", "\U0001f600"]:
        write(tmp_path, rel)
    # not a per-directory walk order: "a/..." sorts between "a.b" and "a0"
    assert paths(scan(tmp_path)) == [
        "Z",
        "a-b",
        "a.b",
        "a/b/c",
        "a/c",
        "a0",
        "ab",
        "é",
        "\uff5e",
        "\U0001f600",
    ]


# --- what is never entered -----------------------------------------------------------------------


def test_git_dirs_are_never_entered(tmp_path: Path) -> None:
    write(tmp_path, ".git/HEAD")
    write(tmp_path, "sub/.git/config")
    write(tmp_path, "wt/.git", "gitdir: elsewhere")  # a worktree's .git file
    write(tmp_path, "sub/a.py")
    assert paths(scan(tmp_path)) == ["sub/a.py"]


def test_exclude_dirs(tmp_path: Path) -> None:
    for rel in ["manifests/p.pack", ".cas/data.mdb", "a/b/c", "a/bc", "keep/b/c", "x"]:
        write(tmp_path, rel)
    got = paths(scan(tmp_path, exclude_dirs=["manifests", "./.cas/", str(tmp_path / "a/b")]))
    assert got == ["a/bc", "keep/b/c", "x"]
    with pytest.raises(UsageError):
        scan(tmp_path, exclude_dirs=["."])


def test_bad_root(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="No such file"):
        scan(tmp_path / "missing")
    write(tmp_path, "f")
    with pytest.raises(InputError, match="not a directory"):
        scan(tmp_path / "f")


def test_progress_and_file_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "PROGRESS_EVERY", 10)  # the step, not the mechanism
    for i in range(25):
        (tmp_path / f"{i:02}").write_bytes(b"x" * (i % 7))
    seen: list[int] = []
    result = scan(tmp_path, progress=seen.append)
    assert seen == [10, 20, 25]
    f = result.files[13]
    st_ = os.stat(tmp_path / "13")
    assert (f.path, f.kind, f.size, f.abspath) == ("13", "file", 6, str(tmp_path / "13"))
    assert (f.mtime_ns, f.ctime_ns, f.ino, f.dev) == (
        st_.st_mtime_ns,
        st_.st_ctime_ns,
        st_.st_ino,
        st_.st_dev,
    )
    (tmp_path / "24").unlink()
    seen.clear()
    scan(tmp_path, progress=seen.append)
    assert seen == [10, 20, 24]
    for i in range(24, 30):
        (tmp_path / f"{i:02}").touch()
    seen.clear()
    scan(tmp_path, progress=seen.append)
    assert seen == [10, 20, 30]  # no repeated final report


# --- unreadable directories ----------------------------------------------------------------------


def scan_here(root: Path) -> dict[str, list[object]]:
    result = scan(root)
    return {"files": paths(result), "notes": [[n.path, n.reason] for n in result.notes]}


def scan_as_nobody(root: Path) -> dict[str, list[object]]:
    """scan() in a forked child that gave up root, where chmod 000 really stops reads."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(scan_here(root)).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        pytest.skip("running as root, and a child without root could not run the scan")
    got: dict[str, list[object]] = json.loads(data)
    return got


def test_unreadable_directory_is_noted() -> None:
    root = Path(tempfile.mkdtemp(prefix="cas-scan-"))  # in /tmp: reachable by another user
    try:
        write(root, "ok.txt")
        write(root, "locked/secret.txt")
        os.chmod(root, 0o755)
        os.chmod(root / "locked", 0)
        if os.geteuid() == 0:
            # root reads through chmod 000: the walk must simply not trip over it
            assert paths(scan(root)) == ["locked/secret.txt", "ok.txt"]
            run = scan_as_nobody
        else:
            run = scan_here
        assert run(root) == {
            "files": ["ok.txt"],
            "notes": [["locked", "unreadable directory: Permission denied"]],
        }
        # an unreadable root is a note too, not a crash
        assert run(root / "locked") == {
            "files": [],
            "notes": [[".", "unreadable directory: Permission denied"]],
        }
    finally:
        os.chmod(root / "locked", 0o755)
        shutil.rmtree(root)


# --- content sniffing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "binary"),
    [
        (b"", False),
        (b"\0", True),
        (b"plain text\n", False),
        ("café crème, déjà vu\n".encode("latin-1"), False),  # not UTF-8, still text
        (b"\x1b[31mred\x1b[0m\r\n\tx\x08\x0c", False),
        (b"\x01" * 31 + b"a" * 69, True),  # 31% control bytes
        (b"\x01" * 29 + b"a" * 71, False),
        (b"\x7f" * 40 + b"a" * 60, True),
        (b"a" * 8192 + b"\0", False),  # only the first 8 KiB is looked at
        (b"a" * 8191 + b"\0", True),
        (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", True),
    ],
)
def test_is_binary(data: bytes, binary: bool) -> None:
    assert is_binary(data) is binary


@given(st.text())
def test_utf8_text_is_never_binary_without_controls(text: str) -> None:
    data = "".join(c for c in text if c >= " " and c != "\x7f").encode("utf-8")
    assert not is_binary(data)
    assert decode_text(data) == data.decode("utf-8")


def test_decode_text() -> None:
    assert decode_text(b"\xef\xbb\xbfhi\r\n") == "hi\r\n"  # BOM gone, CRLF kept
    assert decode_text(b"a\xef\xbb\xbfb") == "a\ufeffb"  # only a leading BOM is dropped
    assert decode_text("café".encode("latin-1")) == "caf\ufffd"
    assert decode_text(b"") == ""


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(NAMES), max_size=2).map("/".join),
            st.lists(patterns(), min_size=1, max_size=4),
        ),
        max_size=4,
    ),
    st.lists(st.sampled_from(NAMES), max_size=3).map("/".join),
    st.sampled_from(NAMES),
    st.booleans(),
)
def test_a_directory_judges_its_entries_as_the_whole_stack_does(
    files: list[tuple[str, list[str]]], folder: str, name: str, is_dir: bool
) -> None:
    """`IgnoreStack.in_dir` (what a walk asks of every entry): the files that reach a folder
    found once, then each name judged as `is_ignored` judges the path."""
    stack = IgnoreStack()
    for where, lines in sorted(files, key=lambda f: f[0].count("/") if f[0] else -1):
        stack = stack.push(where, lines)
    rel = f"{folder}/{name}" if folder else name
    assert stack.in_dir(folder)(name, is_dir) == stack.is_ignored(rel, is_dir)
