"""The fit loop: trials led by a plan, the best within the budget kept; pieces counted exactly;
a pack's manifest built from the fit's choices."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from cas import manifest as mf
from cas.digest import Digest
from packer.config import Budget
from packer.fit_loop import (
    ROUNDS,
    FileRow,
    Pieces,
    Rooms,
    Steps,
    Trial,
    manifest_of,
    refit,
)
from packer.fitting import HIGH, LOW, MEDIUM, Choice
from packer.tokens import SUPPORTED_ENCODINGS, TokenCounter

# --- a document whose estimate is off from its count, as a pack's is --------------------------


class Document:
    """A chooser over ``content`` tokens of material: for a room it shows what fits the room
    (its estimate), and the exact count is that times ``num / den`` plus ``extra`` (a render
    in another format, a summary's fences), in every format the list gives."""

    def __init__(self, content: int, floors: int, ratios: list[tuple[int, int, int]]) -> None:
        self.content = content
        self.floors = floors
        self.ratios = ratios
        self.rooms: list[int] = []

    def trial(self, room: int) -> Trial[int]:
        self.rooms.append(room)
        cost = self.floors + min(max(room, 0), self.content)
        formats = ("markdown", "xml", "plain")
        tokens = {
            fmt: cost * num // den + extra
            for fmt, (num, den, extra) in zip(formats, self.ratios, strict=False)
        }
        return Trial(room, tokens, cost)


ratios = st.lists(
    st.tuples(st.integers(90, 130), st.just(100), st.integers(0, 40)), min_size=1, max_size=3
)


@given(
    content=st.integers(0, 50_000),
    floors=st.integers(0, 3_000),
    ratio=ratios,
    target=st.integers(1, 20_000),
    slack=st.integers(0, 4_000),
    overhead=st.integers(0, 500),
)
def test_rooms_keep_the_best_trial_within_the_max(
    content: int,
    floors: int,
    ratio: list[tuple[int, int, int]],
    target: int,
    slack: int,
    overhead: int,
) -> None:
    budget = Budget(target, target + slack)
    doc = Document(content, floors, ratio)
    tried: list[Trial[int]] = []

    def trial(room: int) -> Trial[int]:
        tried.append(doc.trial(room))
        return tried[-1]

    best = refit(trial, Rooms(budget, target - overhead))
    within = [t for t in tried if t.worst <= budget.max]
    assert len(tried) <= ROUNDS + 1  # the rounds, then the floors alone
    if best is None:
        assert not within
        # nothing fit: the floors alone were tried, and did not fit either
        assert any(max(room, 0) == 0 for room in doc.rooms)
    else:
        assert best.worst <= budget.max
        assert best.shown == max(t.shown for t in within)
        assert best is next(t for t in within if t.shown == best.shown)  # the first of equals


@given(
    content=st.integers(0, 50_000),
    target=st.integers(1, 20_000),
    slack=st.integers(0, 4_000),
)
def test_an_exact_estimate_fits_in_one_trial(content: int, target: int, slack: int) -> None:
    """When the counts are what the chooser estimated, the first room is the answer; with less
    to show than the target, one larger room is tried and changes nothing."""
    doc = Document(content, 0, [(1, 1, 0)])
    best = refit(doc.trial, Rooms(Budget(target, target + slack), target))
    assert best is not None and best.shown == min(target, content)
    assert best.made == target
    assert doc.rooms == [target] if content >= target * 98 // 100 else len(doc.rooms) == 2


@given(content=st.integers(100, 50_000), target=st.integers(200, 20_000), extra=st.integers(1, 60))
def test_an_estimate_too_low_shrinks_the_room_until_it_fits(
    content: int, target: int, extra: int
) -> None:
    """Every render costs ``extra`` more than estimated: the room shrinks by the overflow."""
    doc = Document(content, 0, [(1, 1, extra)])
    best = refit(doc.trial, Rooms(Budget(target, target), target))
    assert best is not None and best.worst <= target
    if content + extra > target:
        assert doc.rooms[0] == target and doc.rooms[1] < target
        assert best.shown >= target * 98 // 100 or best.shown >= target - extra - 2


@given(content=st.integers(0, 5_000), budget=st.integers(1, 5_000), over=st.integers(0, 200))
def test_rooms_without_growing_take_the_first_fit(content: int, budget: int, over: int) -> None:
    """The recent changes' plan: the room shrinks by what the last try was over, no margin,
    the first within is the result, and nothing is tried at a room below 1."""
    rooms: list[int] = []

    def trial(room: int) -> Trial[int] | None:
        if room < 1:
            return None
        rooms.append(room)
        shown = min(room, content) + over
        return Trial(room, {"markdown": shown}, room)

    best = refit(trial, Rooms(Budget(budget, budget), budget, grow=False, margin=0, floors=False))
    for a, b in itertools.pairwise(rooms):
        assert b == a - (min(a, content) + over - budget)  # exactly the overflow off
    if best is not None:
        assert best.made == rooms[-1] and best.worst <= budget
        assert all(min(r, content) + over > budget for r in rooms[:-1])
    assert len(rooms) <= ROUNDS


@given(sizes=st.lists(st.integers(0, 1_000), min_size=1, max_size=30), limit=st.integers(0, 800))
def test_steps_stop_at_the_first_trial_within_its_limit(sizes: list[int], limit: int) -> None:
    tried: list[int] = []

    def trial(k: int) -> Trial[int] | None:
        if k >= len(sizes):
            return None
        tried.append(k)
        return Trial(k, {"markdown": sizes[k]}, sizes[k])

    best = refit(trial, Steps(lambda _k: limit))
    first = next((k for k, n in enumerate(sizes) if n <= limit), None)
    assert (best.made if best is not None else None) == first
    assert tried == list(range(first + 1 if first is not None else len(sizes)))


def test_steps_ask_the_limit_after_each_trial() -> None:
    """A memory pack's limit changes as it goes (its target while a log can show less, its max
    after): the plan asks for it after each trial is made."""
    state = {"logs": 2}
    sizes = [120, 110, 105, 90]

    def trial(k: int) -> Trial[int] | None:
        if k >= len(sizes):
            return None
        state["logs"] = max(0, 2 - k)
        return Trial(k, {"markdown": sizes[k]}, sizes[k])

    best = refit(trial, Steps(lambda _k: 100 if state["logs"] else 108))
    assert best is not None and best.made == 2  # 105 <= 108 once no log is left


# --- pieces ------------------------------------------------------------------------------------

FRAGMENTS = [
    "- `a/b.py` source\n", "### `x.rs`\n", "```py\n", "```\n\n", "\n", "  indented\n", "/* c */\n",
    "/", " ", "\t", "word", "Word", "'s", "12", "!\n", "!\n/", "\r\n", "é", "中文", "😀",
    "<file path=\"a\">\n", "==== a ====\n", "\u00a0x\n",
]  # fmt: skip


@given(
    pieces=st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("".join), max_size=12),
    name=st.sampled_from(SUPPORTED_ENCODINGS),
)
def test_pieces_count_exactly_what_their_join_counts(pieces: list[str], name: str) -> None:
    counter = TokenCounter(name)
    count = Pieces(counter)
    assert count.total(pieces) == counter.count("".join(pieces))
    assert count.total(pieces) == counter.count("".join(pieces))  # counted from what it knows


def test_pieces_are_counted_once() -> None:
    counter = TokenCounter("o200k_base")
    count = Pieces(counter)
    count.total(["# a\n", "- b\n"])
    assert set(count._known) == {"# a\n", "- b\n"}
    count.total(["# a\n", " c\n"])  # a piece starting with a space joins the one before
    assert "# a\n c\n" in count._known


# --- the manifest from choices -----------------------------------------------------------------


def test_manifest_of_lists_every_file_as_chosen_with_its_totals() -> None:
    d = [Digest.of(bytes([i])) for i in range(4)]
    rows = [
        FileRow("z.py", "file", d[0], 100, "source", 7),
        FileRow("a.py", "file", d[1], 40, "source", 9),
        FileRow("é.md", "file", d[2], 10, "documentation", 3),
        FileRow(".env", "file", None, 5, "env file", 1),
    ]
    choices = {
        "z.py": Choice(MEDIUM, (0, 2), cost=30),
        "a.py": Choice(HIGH, cost=50),
        "é.md": Choice(LOW, listed=True, cost=4),
        ".env": Choice(LOW),
    }
    texts: dict[Digest, str] = {}
    head = mf.Manifest("s", "t", "o200k_base", 100, 120, (), parent=d[3])
    m = manifest_of(rows, choices, lambda row, keep: f"{row.path} {keep}\n", texts, head, 2)
    assert [e.path for e in m.entries] == sorted((r.path for r in rows), key=str.encode)
    by = {e.path: e for e in m.entries}
    summary = by["z.py"].summary
    assert summary is not None and texts == {summary: "z.py (0, 2)\n"}
    assert summary == Digest.of(b"z.py (0, 2)\n")
    assert (by["a.py"].tier, by["a.py"].tokens, by["a.py"].rating) == ("high", 50, 9)
    assert by["é.md"].listed and by["é.md"].tier == "low"
    assert m.totals["high"] == {"files": 1, "bytes": 40, "tokens": 50}
    assert m.totals["medium"] == {"files": 1, "bytes": 100, "tokens": 30}
    assert m.totals["low"] == {"files": 1, "bytes": 10, "tokens": 4}
    assert (m.totals["withheld"], m.totals["group_depth"], m.totals["files"]) == (1, 2, 4)
    assert (m.scope, m.target, m.parent, m.budget_max) == ("s", "t", d[3], 120)
    mf.decode(mf.encode(m))  # a valid manifest
