"""memory.context: the context for a turn, fitted to one exact budget with the one fitter:
recent turns and facts always, what the question finds, nothing the session holds unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cas import Store
from cas import manifest as mf
from cas.textindex import TextIndex
from memory.context import FACTS_FILE, get_context, pin_name
from memory.ops import put_fact, remember
from memory.shortterm import Policy, add_turn
from packer.render import GIVEN
from packer.tokens import TokenCounter
from tests.conftest import run_cas

DAY = "2026-11-29"
MODULES = {
    "src/shop/cart.py": '"""Carts."""\n\n\nclass Cart:\n    """A cart of items."""\n\n'
    + "".join(
        f"    def add_item_{i}(self, name: str) -> None:\n        self.items.append(name)\n\n"
        for i in range(30)
    ),
    "src/shop/discount.py": '"""Discounts."""\n\n\ndef apply_discount(total, percent):\n'
    '    """TOTAL less PERCENT."""\n    return total * (1 - percent / 100)\n',
    "src/shop/tax.py": '"""Taxes."""\n\n\ndef vat(total):\n    """The VAT of a total."""\n'
    "    return total * 0.2\n",
    "README.md": "# Shop\n\nCarts, discounts and taxes.\n",
}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    for rel, text in MODULES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cas.toml").write_text(
        "[pack]\nhistory = 0\n\n[load]\nbudget = { target = 900, max = 900 }\n"
    )
    r = run_cas("pack", cwd=root, timeout=300)
    assert r.code == 0, r.err
    return root


def context(root: Path, query: str, budget: int | None = None, session: str = "s1", **kw: object):  # type: ignore[no-untyped-def]
    with Store.at(root / ".cas") as store, TextIndex.open(store.path) as index:
        return get_context(
            store, index, root, "user:a", session, query, date=DAY, budget=budget, **kw
        )  # type: ignore[arg-type]


def write(root: Path, fn) -> None:  # type: ignore[no-untyped-def]
    with Store.at(root / ".cas") as store:
        fn(store)


def high(c) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {e.path: str(e.digest) for e in c.load.manifest.entries if e.tier == "high"}


def test_turns_and_facts_are_always_in_full_first_and_the_budget_is_exact(shop: Path) -> None:
    write(shop, lambda s: put_fact(s, "user:a", "currency", "EUR", date=DAY))
    write(shop, lambda s: add_turn(s, "user:a", "s1", "what does a cart hold?", "items", date=DAY))
    for budget in (400, 900, 3000):
        c = context(shop, "how is a discount applied?", budget)
        facts, turns = "memory/user:a/" + FACTS_FILE, "memory/user:a/sessions/s1/turns.md"
        summary = "memory/user:a/conversation-context.md"
        # the summary of the last sessions on the session's first context only
        assert c.pinned == ((summary,) if budget == 400 else ()) + (facts, turns)
        assert facts in high(c) and turns in high(c)
        assert "- currency: EUR" in c.text and "- user: what does a cart hold?" in c.text
        # first in the render: before any file of the packs
        assert c.text.index("currency: EUR") < c.text.find("### `src/") or "### `src/" not in c.text
        assert c.budget == budget and c.tokens["markdown"] <= budget
        assert TokenCounter("o200k_base").count(c.text) == c.tokens["markdown"]
        with Store.at(shop / ".cas") as store:
            assert store.refs.pins()[pin_name("user:a", "s1")] == c.digest
            m = mf.decode(store.get(c.digest))
        assert m.kind == "load" and m.query == "how is a discount applied?"
        assert [n for n, _ in m.sources][-1] == "memory/user:a"


def test_what_the_session_holds_unchanged_is_left_out_and_a_change_comes_back(shop: Path) -> None:
    first = context(shop, "how is a discount applied with apply_discount?", 900)
    given = high(first)
    assert "src/shop/discount.py" in given and first.given == 0
    again = context(shop, "how is a discount applied with apply_discount?", 900)
    assert "src/shop/discount.py" not in high(again)
    left = [e.path for e in again.load.manifest.entries if e.reason == GIVEN]
    assert "src/shop/discount.py" in left and again.given == len(left)
    assert f"{again.given} file" in again.text and "given earlier in this session" in again.text
    # A session never gets a file it holds as a summary summarized again.
    summarized = {e.path: e.digest for e in first.load.manifest.entries if e.tier == "medium"}
    for e in again.load.manifest.entries:
        if e.path in summarized and e.digest == summarized[e.path]:
            assert e.tier != "medium", e.path
    # Changed on disk and packed again: the new version is given.
    path = shop / "src/shop/discount.py"
    path.write_text(path.read_text() + "\n\ndef no_discount(total):\n    return total\n")
    assert run_cas("pack", cwd=shop, timeout=300).code == 0
    changed = context(shop, "how is a discount applied with apply_discount?", 900)
    assert "src/shop/discount.py" in high(changed)
    assert high(changed)["src/shop/discount.py"] != given["src/shop/discount.py"]
    # Another session holds nothing yet.
    other = context(shop, "how is a discount applied with apply_discount?", 900, session="s2")
    assert other.given == 0 and "src/shop/discount.py" in high(other)


def test_the_same_memory_and_packs_give_the_same_bytes_anywhere(shop: Path, tmp_path: Path) -> None:
    write(shop, lambda s: put_fact(s, "user:a", "currency", "EUR", date=DAY))
    write(shop, lambda s: remember(s, "user:a", "taxes changed in March", date=DAY))
    copy = tmp_path / "elsewhere" / "shop2"
    shutil.copytree(shop, copy)
    for query in ("what changed about taxes?", "vat of a total", "Cart add_item_3"):
        a, b = context(shop, query, 700), context(copy, query, 700)
        assert (a.digest, a.text, a.given) == (b.digest, b.text, b.given)


def test_a_memory_without_packs_still_gives_a_context(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "cas.toml").write_text("")
    with Store.create(root / ".cas") as store:
        remember(store, "user:a", "the release is on Friday", date=DAY)
        add_turn(store, "user:a", "s1", "when is the release?", "Friday", date=DAY)
    c = context(root, "release day", 500)
    assert "the release is on Friday" in c.text and "- assistant: Friday" in c.text
    assert c.load.packs == ["memory/user:a"]


def test_turns_too_long_for_the_budget_are_shown_newest_first_within_half_of_it(
    shop: Path,
) -> None:
    long = "a long question about carts and discounts " * 150
    for i in range(3):
        write(shop, lambda s, i=i: add_turn(s, "user:a", "s1", f"turn {i}: {long}", "ok", date=DAY,
                                           policy=Policy(max_tokens=100_000)))  # fmt: skip
    small = context(shop, "discount", 600)
    assert small.tokens["markdown"] <= 600
    assert "- user: turn 2:" in small.text and "more characters)" in small.text
    assert "(2 earlier turns not shown here:" in small.text
    roomy = context(shop, "discount", 3000)
    assert "- user: turn 2:" in roomy.text and "- user: turn 0:" not in roomy.text
    assert "(2 earlier turns not shown here:" in roomy.text
    whole = context(shop, "discount", 20_000)
    assert "- user: turn 0:" in whole.text and "not shown here" not in whole.text
