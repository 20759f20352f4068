"""memory.scopes: what a scope may be called, and the pin that holds each scope's memory."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.errors import SecretInName, UsageError
from cas.locate import usable_pack_name
from memory.scopes import check_scope, pack_scope, pin_name, scope_of_pin
from tests.secret_corpus import Values, pieces

ids = st.from_regex(r"[A-Za-z0-9._@-]{1,64}", fullmatch=True)


@given(st.sampled_from(["user", "session"]), ids)
def test_a_scope_accepted_anywhere_can_be_pinned_and_packed(kind: str, ident: str) -> None:
    """One rule: what `check_scope` accepts, `mem add` stores and `mem pack` names; what it
    refuses is refused with what a scope looks like, before anything is stored."""
    scope = f"{kind}:{ident}"
    try:
        assert check_scope(scope) == scope
    except UsageError as refused:
        too_long = len(f"mem.{kind}-" + ident.replace("@", "_at_")) > 200
        assert ident.endswith(".") or too_long
        assert "is not one" in str(refused) or "too long" in str(refused)
        return
    assert scope_of_pin(pin_name(scope)) == scope
    assert usable_pack_name(pack_scope(scope))


@pytest.mark.parametrize(
    "bad",
    ["", "Global", "user:", "user", "team:x", "session:a b", "user:" + "x" * 65, "user:ä",
     "user:.", "user:..", "session:a."],
)  # fmt: skip
def test_anything_else_is_refused_with_what_a_scope_looks_like(bad: str) -> None:
    with pytest.raises(UsageError, match="use 'global', 'user:ID' or 'session:ID'"):
        check_scope(bad)


def test_pack_scopes_are_usable_pack_names() -> None:
    assert pack_scope("global") == "mem.global"
    assert pack_scope("user:a@b.c") == "mem.user-a_at_b.c"
    assert pack_scope("session:42") == "mem.session-42"


def test_a_scope_whose_pack_name_would_be_too_long_is_refused_where_it_comes_in() -> None:
    assert check_scope("user:a@b.c") == "user:a@b.c"
    with pytest.raises(UsageError, match="too long"):
        check_scope("session:" + "@" * 64)


def test_a_scope_holding_a_secret_is_refused_by_kind_and_never_shown() -> None:
    token = "gh" + "p_" + Values(random.Random(41)).pick(string.ascii_letters + string.digits, 36)
    for scope in (f"user:{token}", f"session:ci@{token}", f"user:{token}/x"):
        with pytest.raises(SecretInName, match=r"scope id holds a secret \(GitHub token\)") as e:
            check_scope(scope)
        assert not any(p in str(e.value) for p in pieces(token))
        assert scope_of_pin("memory/" + scope) is None


def test_two_scopes_never_share_a_pin() -> None:
    assert pin_name("global") == "memory/global"
    assert len({pin_name(s) for s in ["global", "user:a", "session:a", "user:b"]}) == 4
    assert scope_of_pin("release-1") is None and scope_of_pin("memory/nope:x") is None
