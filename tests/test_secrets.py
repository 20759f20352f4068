"""Secrets by path and by content: every kind is found, ordinary code is not, values never leak.

Every fake secret here is assembled at run time from pieces, so this file itself holds no string
that the scanner flags: the project packs itself, tests included (asserted below).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from packer.secrets import SECRETS_VERSION, SecretFinding, scan_secrets, secret_path_kind

ROOT = Path(__file__).resolve().parent.parent

# Pieces that look random enough to pass the entropy test; no single piece is a secret.
MIXED = "k9Xq2Lm7" + "Pz4Rt8Wv"
B64 = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzQ3nA8dL5sVu"


def pem_block(label: str) -> str:
    begin = "-----BEGIN " + label + " PRIVATE" + " KEY-----"
    return begin + "\n" + ("MIIEowIBAAKCAQEA" + "q7Lw" * 12 + "\n") * 3 + "-----END-----\n"


# kind -> (a line holding a secret of that kind, the secret value itself)
AWS_ID = "AK" + "IA" + "Q" * 16
GITHUB = "gh" + "p_" + "aB3" * 12
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" + "aB3dE" * 12
SLACK = "xo" + "xb-" + "1234567890-" + "aB3dE" * 4
SLACK_HOOK = "https://hooks." + "slack.com/services/" + "T0123ABCD/B0123ABCD/" + "aBcD" * 6
OPENAI = "s" + "k-" + "aB3dE" * 10
OPENAI_PROJ = "s" + "k-proj-" + "aB3dE_" * 10
GOOGLE = "AI" + "za" + "Sy" + "aB3_-" * 6 + "abc"
STRIPE = "sk" + "_live_" + "aB3dE" * 5
NPM = "np" + "m_" + "aB3dE4" * 6
JWT = (
    "ey"
    + "JhbGciOiJIUzI1NiJ9"
    + ".ey"
    + "JzdWIiOiIxMjM0NTY3ODkwIn0"
    + "."
    + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"
)

CASES: dict[str, tuple[str, str]] = {
    "private key block": (pem_block("RSA"), "MIIEowIBAAKCAQEA"),
    "AWS access key id": (f"aws_access_key_id = {AWS_ID}", AWS_ID),
    "AWS secret access key": ("aws_secret_access_key = " + B64[:40], B64[:40]),
    "GitHub token": (f'token = "{GITHUB}"', GITHUB),
    "Slack token": (f"SLACK={SLACK}", SLACK),
    "Slack webhook": (f"url: {SLACK_HOOK}", SLACK_HOOK),
    "OpenAI key": (f"client = OpenAI(api_key='{OPENAI}')", OPENAI),
    "Google API key": (f'const k = "{GOOGLE}";', GOOGLE),
    "Stripe live key": (f"stripe.api_key = {STRIPE}", STRIPE),
    "npm token": (f"//registry.npmjs.org/:_authToken={NPM}", NPM),
    "JSON web token": (f"Authorization: Bearer {JWT}", JWT),
    "password in URL": ("DATABASE_URL=postgres://app:" + MIXED + "@db.internal/app", MIXED),
    "high-entropy assignment to 'db_password'": (f'db_password = "{MIXED}"', MIXED),
}


def kinds(text: str) -> list[str]:
    return [f.kind for f in scan_secrets(text.encode())]


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_is_found_on_its_line_without_its_value(kind: str) -> None:
    line, value = CASES[kind]
    text = "first line\n\n" + line + "\nlast line\n"
    found = scan_secrets(text.encode())
    assert SecretFinding(kind, 3) in found
    for f in found:
        assert value not in str(f)
        assert value not in repr(f)
        assert value not in f.kind


def test_a_finding_has_no_field_that_could_hold_the_value() -> None:
    assert [f.name for f in dataclasses.fields(SecretFinding)] == ["kind", "line"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SecretFinding("x", 1).kind = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    "label", ["RSA", "EC", "DSA", "OPENSSH", "PGP", "ENCRYPTED", ""], ids=lambda s: s or "plain"
)
def test_every_flavour_of_private_key_block(label: str) -> None:
    header = "-----BEGIN " + (label + " " if label else "") + "PRIVATE KEY"
    header += " BLOCK-----" if label == "PGP" else "-----"
    armor = "Version: GnuPG v2\n\n" if label == "PGP" else ""
    text = "x = 1\n" + header + "\n" + armor + "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE" * 2 + "\n"
    assert scan_secrets(text.encode()) == [SecretFinding("private key block", 2)]


def test_key_embedded_in_json_with_escaped_newlines() -> None:
    key = "-----BEGIN " + "PRIVATE KEY-----\\n" + "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" * 2 + "\\n"
    assert kinds('{"type": "service_account",\n "private_key": "' + key + '"}') == [
        "private key block"
    ]


def test_header_without_a_key_body_is_only_talk_about_keys() -> None:
    doc = "Paste the -----BEGIN " + "PRIVATE KEY----- block into the form.\n"
    assert scan_secrets(doc.encode()) == []


def test_more_token_shapes() -> None:
    assert kinds(f"t={GITHUB_PAT}") == ["GitHub token"]
    assert kinds(f"OPENAI_API_KEY={OPENAI_PROJ}") == ["OpenAI key"]
    assert kinds("restricted " + "rk" + "_live_" + "aB3dE" * 5) == ["Stripe live key"]
    assert kinds("AS" + "IA" + "ABCDEFGHIJ234567") == ["AWS access key id"]


@pytest.mark.parametrize(
    "text",
    [
        # embedded in a longer word: not a token boundary
        "x" + "AK" + "IA" + "Q" * 16,
        "AK" + "IA" + "Q" * 17,
        "mask-" + "aB3dE" * 10,
        # the documented AWS example key
        "AK" + "IAIOSFODNN7" + "EXAMPLE",
        # too short to be the real thing
        "gh" + "p_" + "abc",
        "s" + "k-" + "short",
        # publishable Stripe keys are public by design
        "pk" + "_live_" + "aB3dE" * 5,
        # a CSS class is not an OpenAI key
        "s" + "k-button-primary-large-rounded-shadow-hover",
        # credentials in a URL that are a template or a weak local default
        "postgres://postgres:postgres@localhost:5432/app",
        "f'postgres://{user}:{password}@{host}/db'",
    ],
)
def test_lookalikes_are_not_tokens(text: str) -> None:
    assert scan_secrets(text.encode()) == []


ORDINARY_CODE = [
    'password = os.environ["PASSWORD"]',
    "token: str",
    "def get_token(self) -> str:",
    "secret_key = settings.SECRET_KEY",
    'api_key = os.getenv("OPENAI_API_KEY_PRODUCTION_2")',
    "const apiKey = process.env.S3_ACCESS_KEY_ID;",
    "self.auth_grant = OAuth2AuthorizationCodeGrant(request_validator)",
    'AUTH_USER_MODEL = "accounts.CustomUserModel"',
    'private_key: "_EllipticCurvePrivateKey"',
    '"requests_oauthlib": "types-requests-oauthlib",',
    'author = "Jane Q. Public <jane@example.org>"',
    "if token == Comment.Special:",
    "token_path = /var/run/secrets/kubernetes.io/serviceaccount/token",
    'tokenizer = "o200k_base"',
    "max_tokens = 4096",
    'password = "changeme-changeme-123"',
    'token = "${GITHUB_TOKEN_FOR_RELEASES}"',
    'password: "{{ vault_db_password_prod }}"',
    'api_key = "<your-api-key-goes-here>"',
    'SECRET = "xxxxxxxxxxxxxxxxxxxxxxxx"',
    'secret = "aaaaaaaaaaaaaaaaaaaaaaaaaaaa"',
    'secret = "abcdefghijklmnopqrstuvwxyz"',
    'auth_token = "0123456789abcdef0123"',
    "password = get_password_from_keyring(service_name)",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "export GITHUB_TOKEN=$GITHUB_TOKEN_FROM_CI_SECRETS",
    'password_hash_algorithm = "pbkdf2_sha256_iterations"',
]


@pytest.mark.parametrize("line", ORDINARY_CODE)
def test_ordinary_code_and_placeholders_are_not_secrets(line: str) -> None:
    assert scan_secrets(line.encode()) == []


@pytest.mark.parametrize(
    "line",
    [
        f'password = "{MIXED}"',
        f"PASSWORD={MIXED}",
        f'    "client_secret": "{MIXED}",',
        f"api-key: '{MIXED}'",
        f'secret_key: str = "{MIXED}"',
        f"config.auth_token = `{MIXED}`",
        "webhook_secret => " + "3f9a0c4e7b1d2a8f" + "6e5d4c3b",
        f"$password = '{MIXED}';",
        # a legacy .npmrc token: content decides for .npmrc
        "//registry.npmjs.org/:_authToken=" + "a1b2c3d4-e5f6-4789-abcd-" + "ef1234567890",
    ],
)
def test_high_entropy_assignments_in_many_syntaxes(line: str) -> None:
    found = kinds(line)
    assert len(found) == 1
    assert found[0].startswith("high-entropy assignment to ")


def test_a_token_is_reported_once_not_also_as_an_assignment() -> None:
    assert kinds(f'GITHUB_TOKEN = "{GITHUB}"') == ["GitHub token"]


def test_findings_are_sorted_and_deduplicated() -> None:
    text = "\n".join(
        [
            f"{AWS_ID} {AWS_ID}",  # two of a kind on one line: one finding
            "nothing here",
            f'db_password = "{MIXED}"; k = "{GITHUB}"',
            f"{AWS_ID}",
        ]
    )
    assert scan_secrets(text.encode()) == [
        SecretFinding("AWS access key id", 1),
        SecretFinding("GitHub token", 3),
        SecretFinding("high-entropy assignment to 'db_password'", 3),
        SecretFinding("AWS access key id", 4),
    ]


def test_crlf_and_invalid_utf8_do_not_shift_lines() -> None:
    data = b"a\r\n\xff\xfe\x00bad\r\n" + AWS_ID.encode() + b"\xc3\r\n"
    assert scan_secrets(data) == [SecretFinding("AWS access key id", 3)]


@pytest.mark.parametrize(
    "data",
    [
        b"a" * 5_000_000,
        b"password=" * 560_000,
        b"eyJa." * 1_000_000,
        (b"secret = '" + b"x9" * 200) * 12_000,
        b"-----BEGIN " * 450_000,
    ],
    ids=["letters", "assignments", "jwt-parts", "unclosed-quotes", "pem-headers"],
)
def test_five_megabytes_of_adversarial_input_scans_in_linear_time(data: bytes) -> None:
    start = time.perf_counter()
    scan_secrets(data)
    # Measured well under a second; a quadratic pattern would take hours on this input.
    assert time.perf_counter() - start < 5.0


PATH_CASES = {
    ".env": "env file",
    "app/.env": "env file",
    ".env.local": "env file",
    ".env.production": "env file",
    "deploy/prod.env": "env file",
    "certs/server.pem": "key file",
    "tls.KEY": "key file",
    "store.p12": "key file",
    "store.pfx": "key file",
    "android/release.jks": "key file",
    "release.keystore": "key file",
    "home/.ssh/id_rsa": "ssh private key",
    "id_dsa": "ssh private key",
    "id_ecdsa": "ssh private key",
    "id_ed25519": "ssh private key",
    "id_rsa_deploy": "ssh private key",
    ".netrc": "netrc file",
    ".pgpass": "pgpass file",
    "web/.htpasswd": "htpasswd file",
    "credentials": "credentials file",
    ".aws/credentials": "credentials file",
    "gcp/credentials.json": "credentials file",
    "ci.credentials": "credentials file",
    "service-account.json": "service account key",
    "keys/service-account-prod.json": "service account key",
    "config/secrets.yml": "secrets file",
    "secrets.yaml": "secrets file",
    "secrets.json": "secrets file",
}


@pytest.mark.parametrize("path", sorted(PATH_CASES))
def test_secret_files_by_name(path: str) -> None:
    assert secret_path_kind(path) == PATH_CASES[path]


@pytest.mark.parametrize(
    "path",
    [
        ".env.example",
        ".env.sample",
        ".env.template",
        ".env.dist",
        "app/.env.local.example",
        "example.env",
        "id_rsa.pub",
        "id_ed25519.pub",
        ".npmrc",  # content decides
        "environment.py",
        "docs/env.md",
        "keys.py",
        "monkey.py",
        "credentials.py",
        "service-account.md",
        "secrets.py",
        "packer/secrets.py",
        "",
        "dir/",
    ],
)
def test_templates_public_keys_and_code_are_not_secret_files(path: str) -> None:
    assert secret_path_kind(path) is None


def test_version_is_a_nonempty_string() -> None:
    assert isinstance(SECRETS_VERSION, str)
    assert SECRETS_VERSION


@pytest.mark.parametrize(
    "rel", ["tests/test_secrets.py", "packer/secrets.py", "tests/test_summarize.py"]
)
def test_the_project_does_not_flag_its_own_sources(rel: str) -> None:
    path = ROOT / rel
    assert path.is_file(), rel  # the test names files this repository holds
    assert scan_secrets(path.read_bytes()) == []


TRIGGERS = (
    "-----begin",
    "akia",
    "asia",
    "aws",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "sk-",
    "sk_live_",
    "rk_live_",
    "aiza",
    "npm_",
    "eyj",
    "://",
)


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=400))
@example("AKIB" + "Q" * 16 + " ghz_" + "a" * 36 + " sk_test_" + "a" * 30 + " eyK." + "x" * 20)
def test_random_ascii_without_trigger_prefixes_has_no_token_findings(text: str) -> None:
    lowered = text.lower()
    assume(not any(t in lowered for t in TRIGGERS))
    for finding in scan_secrets(text.encode()):
        assert finding.kind.startswith("high-entropy assignment to ")


@given(st.binary(max_size=2000))
@example(b"\xff" * 20 + b"-----BEGIN PRIVATE KEY-----\\n")
@example(b"password=\x00" + b"\x80" * 30)
def test_never_raises_and_output_is_well_formed(data: bytes) -> None:
    found = scan_secrets(data)
    assert found == sorted(set(found), key=lambda f: (f.line, f.kind))
    last_line = data.count(b"\n") + 1
    assert all(1 <= f.line <= last_line for f in found)


@given(
    lines=st.lists(
        st.text(alphabet="abcdefghij klmnop=:;,.()", max_size=60),
        min_size=1,
        max_size=30,
    ),
    at=st.integers(min_value=0),
)
def test_a_planted_key_is_found_on_its_line(lines: list[str], at: int) -> None:
    index = at % (len(lines) + 1)
    lines.insert(index, "key " + AWS_ID + " here")
    found = scan_secrets("\n".join(lines).encode())
    assert SecretFinding("AWS access key id", index + 1) in found


@given(
    st.lists(
        st.sampled_from(
            [
                "pass" + "word = '" + "Xq7#pLm2$vR9!kZw4'\n",
                "api-" + "key: " + "AbC123dEf456GhI789jKl\n",
                "x = 1\n",
                "tOk" + "En=" + "ZZZ9999abcdef01234567\n",
                "author = 'Somebody Longname Here'\n",
                "İİ sec" + "ret_value := " + "qwertyuiop1234567890\n",
                "plain words and_more_words = 'nothing here really'\n",
                "\n",
                "ÄÖÜ a_b-c: v\n",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_line_filtered_assignment_pass_equals_the_full_pass(text: str) -> None:
    from packer.secrets import _ASSIGNMENT, _assignments, _secret_name

    data = text.encode()
    full = [m.span() for m in _ASSIGNMENT.finditer(data) if _secret_name(m.group("name").decode())]
    fast = [m.span() for m in _assignments(data) if _secret_name(m.group("name").decode())]
    assert fast == full
