"""Remote records and settings (cas/remote/config.py): no credentials kept or shown, URLs and
endpoints checked, settings from the environment, then the remote, then the defaults."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cas import Store
from cas.errors import NotFound, UsageError
from cas.remote.config import (
    DEFAULT_ATTEMPTS,
    DEFAULT_MAX_BLOB,
    DEFAULT_READ_TIMEOUT,
    TABLE,
    add_remote,
    check_endpoint,
    choose_remote,
    get_remote,
    list_remotes,
    make_remote,
    parse_setting,
    remove_remote,
    settings,
    shown_url,
)
from tests.remotefixture import AWS, cas, empty_project, one_line

# --- configuration (no server) --------------------------------------------------------------


def test_remote_records_hold_no_credentials(tmp_path: Path) -> None:
    root = empty_project(tmp_path / "p")
    secret = "sekrit" + secrets.token_hex(12)
    aws = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret}
    r = cas(
        "remote", "add", "origin", "s3://team-packs/cas/main", "--endpoint",
        "https://s3.example.com:9000/", "--region", "eu-west-1", cwd=root, env=aws,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert cas("remote", "add", "backup", "s3://other-bucket", cwd=root).code == 0
    listed = json.loads(cas("remote", "list", "--json", cwd=root).out)
    assert listed == [
        {"name": "backup", "url": "s3://other-bucket", "endpoint": None, "region": None,
         "profile": None},
        {"name": "origin", "url": "s3://team-packs/cas/main", "endpoint":
         "https://s3.example.com:9000", "region": "eu-west-1", "profile": None},
    ]  # fmt: skip
    # Twice the same name, a bad URL, a bad name, an endpoint holding credentials: refused.
    for args, expected in [
        (("origin", "s3://x-bucket"), "already exists"),
        (("new", "https://bucket/prefix"), "must look like s3://"),
        (("new", "s3://Bad_Bucket"), "not a valid S3 bucket"),
        (("new", "s3://good-bucket/a//b"), "prefix"),
        (("_bad", "s3://good-bucket"), "remote name"),
        (("new", "s3://good-bucket", "--endpoint", f"https://user:{secret}@host"), "holds a"),
        (("new", "s3://good-bucket", "--endpoint", "ftp://host"), "http:// or https://"),
    ]:
        r = cas("remote", "add", *args, cwd=root, env=aws)
        assert r.code == 2, (args, r.err)
        assert expected in one_line(r.err), r.err
        assert secret not in r.out + r.err
    assert secret.encode() not in (root / ".cas" / "data.mdb").read_bytes()
    # Two remotes: push must be told which; an unknown one is not found.
    r = cas("push", cwd=root)
    assert r.code == 2 and "several remotes" in one_line(r.err)
    assert cas("remote", "remove", "nope", cwd=root).code == 1
    assert cas("remote", "remove", "backup", cwd=root).code == 0
    r = cas("remote", "list", cwd=root)
    assert r.out.split() == [
        "origin", "s3://team-packs/cas/main", "endpoint=https://s3.example.com:9000",
        "region=eu-west-1",
    ]  # fmt: skip


def test_choose_remote_rules(store: Store) -> None:
    with pytest.raises(UsageError, match="no remote configured"):
        choose_remote(store, None)
    add_remote(store, make_remote("a", "s3://bucket-a/x"))
    assert choose_remote(store, None).name == "a"
    add_remote(store, make_remote("b", "s3://bucket-b"))
    with pytest.raises(UsageError, match="several remotes"):
        choose_remote(store, None)
    assert choose_remote(store, "b").key("blobs/00") == "blobs/00"
    assert choose_remote(store, "a").key("blobs/00") == "x/blobs/00"
    remove_remote(store, "a")
    with pytest.raises(NotFound):
        choose_remote(store, "a")
    assert [r.name for r in list_remotes(store)] == ["b"]


def test_settings_come_from_the_environment_then_the_remote_then_the_defaults(
    tmp_path: Path,
) -> None:
    remote = make_remote("r", "s3://some-bucket", read_timeout=2.5, max_blob=8 << 30)
    assert settings(remote, {}).read_timeout == 2.5
    assert settings(remote, {}).max_blob == 8 << 30
    assert settings(remote, {}).attempts == DEFAULT_ATTEMPTS
    chosen = settings(remote, {"CAS_REMOTE_READ_TIMEOUT": "2m", "CAS_REMOTE_MAX_BLOB": "512M"})
    assert (chosen.read_timeout, chosen.max_blob) == (120.0, 512 << 20)
    plain = settings(make_remote("p", "s3://some-bucket"), {})
    assert (plain.read_timeout, plain.max_blob) == (DEFAULT_READ_TIMEOUT, DEFAULT_MAX_BLOB)
    assert parse_setting("connect_timeout", "250ms", "x") == 0.25
    assert parse_setting("max_blob", "4GiB", "x") == 4 << 30
    assert parse_setting("max_blob", "1048576", "x") == 1 << 20
    assert parse_setting("lock_wait", "0", "x") == 0.0
    assert parse_setting("lock_wait", "1h", "x") == 3600.0
    assert plain.lock_wait == 0.0
    assert settings(remote, {"CAS_REMOTE_LOCK_WAIT": "10m"}).lock_wait == 600.0
    for key, text in [
        ("attempts", "0"),
        ("attempts", "-1"),
        ("attempts", "3.5"),
        ("max_blob", "12X"),
        ("max_blob", "1KiB"),
        ("read_timeout", "0"),
        ("read_timeout", "2h"),
        ("read_timeout", "nan"),
        ("lock_wait", "25h"),
        ("lock_wait", "soon"),
    ]:
        with pytest.raises(UsageError, match=r"^CAS_X: "):
            parse_setting(key, text, "CAS_X")
    # Kept in the store and shown by remote list, read back as they were written.
    root = empty_project(tmp_path / "p")
    r = cas("remote", "add", "r", "s3://some-bucket", "--read-timeout", "2.5s",
            "--max-blob", "8GiB", "--attempts", "5", "--lock-wait", "90s", cwd=root)  # fmt: skip
    assert r.code == 0, r.err
    listed = json.loads(cas("remote", "list", "--json", cwd=root).out)
    assert listed[0]["read_timeout"] == 2.5 and listed[0]["attempts"] == 5
    assert listed[0]["lock_wait"] == 90.0
    assert listed[0]["max_blob"] == 8 << 30 and "connect_timeout" not in listed[0]
    with Store.at(root / ".cas", readonly=True) as store:
        assert get_remote(store, "r") == make_remote(
            "r", "s3://some-bucket", read_timeout=2.5, attempts=5, max_blob=8 << 30, lock_wait=90
        )


# --- 3 and 4. malformed endpoints; nothing secret ever shown ----------------------------------


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("http://[::1", "is not a valid URL: a bracketed host must be an IPv6 address"),
        ("http://[not-v6]:9000", "is not a valid URL"),
        ("http://h:99999", "has an invalid port"),
        ("http://h:abc", "has an invalid port"),
        ("http://h:0", "has an invalid port"),
        ("http://h:", "has an invalid port"),
        ("http://", "has no host"),
        ("http://:80", "has no host"),
        ("https:///bucket", "has no host"),
        ("ftp://h", "must start with http:// or https://"),
        ("h.example.com", "must start with http:// or https://"),
        ("http://h h", "must not hold spaces or control characters"),
        ("http://h\x07", "must not hold spaces or control characters"),
        ("http://bad_host!", "is not a host name or IP address"),
        ("", "must start with http:// or https://"),
    ],
)
def test_malformed_endpoints_are_one_clear_line(
    endpoint: str, expected: str, tmp_path: Path
) -> None:
    root = empty_project(tmp_path / "p")
    r = cas("remote", "add", "x", "s3://some-bucket", "--endpoint", endpoint, cwd=root)
    assert r.code == 2, r.out + r.err
    line = one_line(r.err)
    assert line.startswith("cas: error: endpoint ") and expected in line, line


def test_endpoints_that_parse_are_kept_as_given(tmp_path: Path) -> None:
    for endpoint in ("http://[::1]:9000", "HTTPS://S3.Example.com", "http://10.0.0.1/gw/"):
        assert check_endpoint(endpoint) == endpoint.rstrip("/")


SECRET_PARTS = st.text(
    alphabet=st.characters(blacklist_characters="/?#@[]", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
)


@given(
    scheme=st.sampled_from(["http", "https", "ftp", "HTTP", ""]),
    user=SECRET_PARTS,
    password=st.none() | SECRET_PARTS,
    host=st.sampled_from(["h.example.com", "127.0.0.1", "[::1]", "[::1", "", "h:99999"]),
    path=st.sampled_from(["", "/", "/gw", "/a@b"]),
    query=st.none() | SECRET_PARTS,
    fragment=st.none() | SECRET_PARTS,
)
@example(scheme="http", user="me", password="pw", host="[::1", path="", query="q", fragment=None)
def test_no_message_shows_an_endpoints_user_password_query_or_fragment(
    scheme: str,
    user: str,
    password: str | None,
    host: str,
    path: str,
    query: str | None,
    fragment: str | None,
) -> None:
    marker = "ZQXJ"
    userinfo = f"{marker}{user}" + (f":{marker}{password}" if password is not None else "")
    tail = (f"?{marker}{query}" if query is not None else "") + (
        f"#{marker}{fragment}" if fragment is not None else ""
    )
    for url in (
        f"{scheme}://{userinfo}@{host}{path}{tail}",
        f"{scheme}://{host}{path}{tail}",
        f"{userinfo}@{host}{path}{tail}",
    ):
        if marker not in url:
            continue
        assert marker not in shown_url(url)
        try:
            check_endpoint(url)
        except UsageError as exc:
            assert marker not in str(exc)
        else:
            raise AssertionError(f"{url!r} was accepted")
        if tail:
            with pytest.raises(UsageError) as info:
                make_remote("r", f"s3://some-bucket{tail}")
            assert marker not in str(info.value)


def test_credentials_in_a_url_are_refused_without_being_shown(tmp_path: Path) -> None:
    root = empty_project(tmp_path / "p")
    secret = "sekrit" + secrets.token_hex(8)
    for args in [
        ("x", "s3://some-bucket", "--endpoint", f"https://me:{secret}@s3.example.com"),
        ("x", "s3://some-bucket", "--endpoint", f"https://{secret}@[::1"),
        ("x", f"s3://AKIDEXAMPLE:{secret}@some-bucket/p"),
    ]:
        for debug in ((), ("--debug",)):
            r = cas(*debug, "remote", "add", *args, cwd=root)
            assert r.code == 2, r.out + r.err
            assert secret not in r.out + r.err
            if not debug:
                line = one_line(r.err)
                assert "holds a user or password (not shown)" in line, line
                assert "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in line
    for args in [
        (
            "x",
            "s3://some-bucket",
            "--endpoint",
            f"https://s3.example.com/?X-Amz-Signature={secret}",
        ),
        ("x", "s3://some-bucket", "--endpoint", f"https://s3.example.com#{secret}"),
        ("x", f"s3://some-bucket/p?token={secret}"),
    ]:
        r = cas("remote", "add", *args, cwd=root)
        assert r.code == 2 and secret not in r.out + r.err
        assert "must not have a query or fragment (not shown)" in one_line(r.err)
    # A record that holds one anyway (written by hand, or damaged) is refused, not shown.
    with Store.at(root / ".cas") as store:
        record = {
            "version": 1,
            "url": "s3://some-bucket",
            "endpoint": f"https://s3.example.com/?token={secret}",
            "region": None,
            "profile": None,
        }
        store.kv.put(TABLE, [(b"bad", msgpack.packb(record, use_bin_type=True))])
    for args in (("remote", "list"), ("remote", "list", "--json"), ("push", "bad")):
        r = cas(*args, cwd=root, env=AWS)
        assert r.code == 2, (args, r.out + r.err)
        assert secret not in r.out + r.err
        assert "must not have a query or fragment (not shown)" in one_line(r.err)
