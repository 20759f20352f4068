"""memory.scopes: what a scope may be called, and the pin that holds each scope's memory."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cas.errors import UsageError
from memory.scopes import check_scope, pin_name, scope_of_pin

ids = st.from_regex(r"[A-Za-z0-9._@-]{1,64}", fullmatch=True)


@given(st.sampled_from(["user", "session"]), ids)
def test_every_well_formed_scope_round_trips_through_its_pin(kind: str, ident: str) -> None:
    scope = f"{kind}:{ident}"
    assert check_scope(scope) == scope
    assert scope_of_pin(pin_name(scope)) == scope


@pytest.mark.parametrize(
    "bad", ["", "Global", "user:", "user", "team:x", "session:a b", "user:" + "x" * 65, "user:ä"]
)
def test_anything_else_is_refused_with_what_a_scope_looks_like(bad: str) -> None:
    with pytest.raises(UsageError, match="use 'global', 'user:ID' or 'session:ID'"):
        check_scope(bad)


def test_two_scopes_never_share_a_pin() -> None:
    assert pin_name("global") == "memory/global"
    assert len({pin_name(s) for s in ["global", "user:a", "session:a", "user:b"]}) == 4
    assert scope_of_pin("release-1") is None and scope_of_pin("memory/nope:x") is None
