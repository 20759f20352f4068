"""`cas.ancestors`: every walk up a folder chain ends, at the root, each folder seen once."""

from __future__ import annotations

import itertools
from pathlib import Path, PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from cas.ancestors import ancestors, at_and_above

# Path parts as the packer keeps them (any text but "/"), and any text at all.
parts = st.text(alphabet=st.characters(blacklist_characters="/\x00"), min_size=1, max_size=4)
normal_paths = st.lists(parts, min_size=1, max_size=6).map("/".join)
any_text = st.text(alphabet=st.sampled_from("/a.b é"), max_size=12)


def test_the_folders_of_a_path_nearest_first_ending_at_the_root() -> None:
    assert list(ancestors("a/b/c.py")) == ["a/b", "a", ""]
    assert list(ancestors("a.py")) == [""]
    assert list(ancestors("__init__.py")) == [""]
    # the root has no folder above it: a loop over its ancestors does not run at all
    assert list(ancestors("")) == []


def test_odd_slashes_only_give_fewer_or_shorter_folders() -> None:
    assert list(ancestors("/")) == [""]
    assert list(ancestors("/a")) == [""]
    assert list(ancestors("a/")) == ["a", ""]
    assert list(ancestors("a//b")) == ["a/", "a", ""]
    assert list(ancestors("..a/a.")) == ["..a", ""]


@given(normal_paths)
def test_a_normal_path_has_one_folder_per_slash(path: str) -> None:
    found = list(ancestors(path))
    split = path.split("/")
    assert found == ["/".join(split[:k]) for k in range(len(split) - 1, 0, -1)] + [""]
    # each is the folder of the one before (the path itself first)
    for child, folder in zip([path, *found], found, strict=False):
        assert folder == child.rpartition("/")[0]


@given(any_text)
def test_any_text_climbs_strictly_down_to_the_root_once(path: str) -> None:
    found = list(ancestors(path))
    lengths = [len(f) for f in found]
    assert lengths == sorted(set(lengths), reverse=True)  # strictly shorter each step
    assert all(len(f) < len(path) and path.startswith(f) for f in found)
    assert found.count("") == (1 if path else 0)
    assert (found[-1] == "") if path else not found
    assert len(found) <= path.count("/") + 1


@given(st.lists(parts.filter(lambda p: p not in (".", "..")), max_size=6), st.booleans())
def test_at_and_above_is_the_folder_then_each_parent_to_the_top(
    names: list[str], absolute: bool
) -> None:
    folder = PurePosixPath("/" if absolute else ".", *names)
    found = list(at_and_above(Path(folder)))
    assert found[0] == Path(folder)
    assert found[-1] == Path("/" if absolute else ".")
    assert len(found) == len(names) + 1 == len(set(found))
    for child, parent in itertools.pairwise(found):
        assert parent == child.parent


def test_at_and_above_the_top_is_the_top_alone() -> None:
    assert list(at_and_above(Path("/"))) == [Path("/")]
    assert list(at_and_above(Path("."))) == [Path(".")]
