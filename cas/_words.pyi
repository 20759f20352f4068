# The C half of cas/words.py, cas/textindex.py, packer/lexicon.py and packer/rating.py
# (cas/_words.c); built where a compiler is.

def terms(
    data: bytes, window: int, max_windows: int, max_chain: int
) -> tuple[bytes, bytes, int, int, list[tuple[int, int, int]]]: ...
def build(keys: list[bytes], masks: list[bytes]) -> tuple[bytes, bytes, bytes, bytes]: ...
def merge(
    parts: list[tuple[bytes, memoryview, memoryview, memoryview, memoryview]],
) -> tuple[bytes, bytes, bytes, bytes]: ...
def refs(
    code: bytes, prose: bytes, min_len: int, max_refs: int, exclude: bytes, wanted: bytes
) -> tuple[bytes, bytes, bytes]: ...
def fingerprints(names: bytes) -> tuple[bytes, bytes]: ...
def comments(data: bytes, slash: bool) -> tuple[bytes | None, bytes, int]: ...
def declarations(
    data: bytes,
    decls: tuple[tuple[bytes, int, int, bool], ...],
    modifiers: tuple[bytes, ...],
    keywords: frozenset[bytes],
    bare_indented: bool,
) -> list[tuple[int, int, bytes, bool, list[bytes]]]: ...
def python_names(data: bytes) -> tuple[list[tuple[int, int, bytes, bool]], list[bytes]]: ...
def python_defs(
    data: bytes,
) -> tuple[list[bytes], list[bytes], list[bytes], list[bytes], list[bytes]]: ...
def keyed_hits(
    fps: object,
    families: object,
    salt: int,
    factor: int,
    bitmap: object,
    shift: int,
    keys: object,
    sizes: object,
    max_size: int,
    starts: object,
    bucket_shift: int,
) -> tuple[bytes, bytes]: ...
def text_key(text: str) -> int: ...
def qualified(
    data: bytes, locals: tuple[bytes, ...]
) -> tuple[list[tuple[int, bytes]], bytes | None]: ...
