# The C half of the data file's walk (cas/datafile.py, cas/_pages.c); built where a compiler is.

def walk_table(
    fd: int, psize: int, in_file: int, live: bytearray, root: int, depth: int, key_size: int
) -> bool: ...
