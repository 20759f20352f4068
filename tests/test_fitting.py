"""Fitting: every file competes on value per token; the room is filled and never exceeded."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from packer.fitting import (
    HIGH,
    LOW,
    MEDIUM,
    OMITTED,
    Offer,
    Point,
    SymbolOffer,
    fit,
    hull,
    points,
    summary_points,
)


def offer(
    path: str,
    *,
    full: tuple[int, int] | None = None,
    head: tuple[int, int] | None = None,
    symbols: tuple[tuple[int, int, int], ...] = (),
    listed: tuple[int, int] | None = None,
    ceiling: int = HIGH,
    floor: int = LOW,
) -> Offer:
    return Offer(
        path,
        ceiling=ceiling,
        floor=floor,
        listed=listed,
        full=full,
        head=head,
        symbols=tuple(SymbolOffer(c, v, p) for c, v, p in symbols),
    )


def test_summary_points_bring_enclosing_symbols_and_keep_the_best_first() -> None:
    o = offer("a.py", head=(10, 5), symbols=((4, 1, -1), (3, 50, 0), (6, 20, -1)))
    pts = summary_points(o)
    # best symbol first: #1 (value 50) needs its class #0, so both lines are paid at once
    assert [p.keep for p in pts] == [(), (1,), (1, 2), (0, 1, 2)]
    assert pts[1].cost == 10 + 3 + 4 and pts[1].value == 5 + 50 + 1
    # keeping #0 explicitly later costs nothing more: it was already shown
    assert pts[3].cost == pts[2].cost


def test_hull_skips_dominated_points_and_densities_fall() -> None:
    opts = [OMITTED, Point(10, 100, MEDIUM), Point(20, 110, MEDIUM), Point(30, 400, HIGH)]
    steps = hull(OMITTED, opts, 1000)
    assert steps == [Point(30, 400, HIGH)]  # 400/30 beats 100/10 then the rest
    steps = hull(OMITTED, opts, 25)
    assert steps == [Point(10, 100, MEDIUM), Point(20, 110, MEDIUM)]


def test_small_budget_prefers_summaries_of_many_files_to_one_file_in_full() -> None:
    offers = [
        offer(
            f"f{i}.py",
            full=(400, 700),
            head=(10, 10),
            symbols=tuple((8, 60 - j * 5, -1) for j in range(10)),
        )
        for i in range(5)
    ]
    result = fit(offers, 300)
    assert all(c.tier == MEDIUM for c in result.choices.values())
    assert result.cost <= 300
    result = fit(offers, 5000)
    assert all(c.tier == HIGH for c in result.choices.values())


def test_floors_hold_and_ceilings_cap() -> None:
    offers = [
        offer("req.md", full=(500, 1), head=(5, 1), floor=HIGH),
        offer("cap.py", full=(50, 10_000), head=(5, 100), ceiling=MEDIUM),
        offer("bin.dat", full=(5, 10_000), ceiling=LOW, listed=(3, 1)),
    ]
    result = fit(offers, 10_000)
    assert result.choices["req.md"].tier == HIGH
    assert result.choices["cap.py"].tier == MEDIUM
    assert result.choices["bin.dat"].tier == LOW and result.choices["bin.dat"].listed


def test_unread_offers_are_read_only_when_their_bound_reaches_the_top() -> None:
    reads: list[str] = []

    def lazy(path: str, value: int) -> Offer:
        def expand() -> Offer:
            reads.append(path)
            return offer(path, head=(10, value), symbols=((5, value, -1),))

        return Offer(path, bound=(2 * value, 15), expand=expand)

    offers = [lazy(f"f{i:02d}", 1000 - i * 10) for i in range(60)]
    result = fit(offers, 60)
    assert result.cost <= 60
    assert len(reads) < 10  # only the best few were ever read
    assert reads[0] == "f00"


# --- properties ---------------------------------------------------------------------------------

_sym = st.tuples(st.integers(1, 40), st.integers(0, 500), st.integers(-1, 5))


@st.composite
def offers_strategy(draw: st.DrawFn) -> list[Offer]:
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        syms = draw(st.lists(_sym, max_size=6))
        fixed = tuple((c, v, p if p < j else -1) for j, (c, v, p) in enumerate(syms))
        out.append(
            offer(
                f"d{i % 3}/f{i}.py",
                full=draw(st.none() | st.tuples(st.integers(1, 400), st.integers(0, 3000))),
                head=draw(st.none() | st.tuples(st.integers(1, 30), st.integers(0, 200))),
                symbols=fixed,
                listed=draw(st.none() | st.tuples(st.integers(1, 12), st.integers(0, 20))),
                ceiling=draw(st.sampled_from([LOW, MEDIUM, HIGH])),
            )
        )
    return out


@settings(max_examples=200)
@given(offers_strategy(), st.integers(0, 2000), st.randoms(use_true_random=False))
def test_fit_is_within_room_valid_maximal_and_order_independent(
    offers: list[Offer], room: int, rnd: random.Random
) -> None:
    result = fit(offers, room)
    assert result.cost <= room
    assert result.cost == sum(c.cost for c in result.choices.values())
    leftover = room - result.cost
    for o in offers:
        choice = result.choices[o.path]
        assert choice.tier <= o.ceiling
        opts = points(o)
        assert any(
            (p.cost, p.value, p.tier, p.keep, p.listed)
            == (choice.cost, choice.value, choice.tier, choice.keep, choice.listed)
            for p in opts
        )
        # maximal: no point of more value fits in what is left
        assert not any(p.value > choice.value and p.cost - choice.cost <= leftover for p in opts), (
            o.path
        )
    shuffled = list(offers)
    rnd.shuffle(shuffled)
    assert fit(shuffled, room).choices == result.choices


@st.composite
def lazy_offers_strategy(draw: st.DrawFn) -> list[Offer]:
    """Offers of which some are not read yet: a bound (honest or not) and the offer on read."""
    out = []
    for o in draw(offers_strategy()):
        if o.floor > LOW or not draw(st.booleans()):
            out.append(o)
            continue
        bound = (draw(st.integers(0, 4000)), draw(st.integers(1, 60)))
        out.append(
            Offer(o.path, ceiling=o.ceiling, listed=o.listed, bound=bound, expand=lambda o=o: o)
        )
    return out


@settings(max_examples=300)
@given(lazy_offers_strategy(), st.integers(0, 400))
def test_clearing_dead_heap_entries_never_changes_the_fit(offers: list[Offer], room: int) -> None:
    """The fit drops, now and then, the entries that can no longer be bought or read; as
    often as it can or never, the choices, their cost and the reads are the same."""
    from unittest import mock

    from packer import fitting

    with mock.patch.object(fitting, "_PRUNE_AFTER", 0):
        eager = fit(offers, room)
    with mock.patch.object(fitting, "_PRUNE_AFTER", 1 << 60):
        never = fit(offers, room)
    assert (eager.choices, eager.cost, eager.expanded) == (
        never.choices,
        never.cost,
        never.expanded,
    )
