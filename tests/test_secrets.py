"""Secrets by path, by content and in paths: every form is found, ordinary code is not, values
never leak, and exact spans are cut out instead of withholding a useful file.

Every fake secret here is assembled at run time from pieces, so this file itself holds no string
that the scanner flags: the project packs itself, tests included (asserted below).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from cas.digest import Digest
from packer.literal_search import LiteralSearch, hyperscan
from packer.secret_rules import value_is_secret
from packer.secrets import (
    _LITERALS,
    SECRETS_VERSION,
    SecretFinding,
    _escaped_views,
    _scan_view,
    _unescaped,
    redact,
    redact_path,
    scan_secrets,
    secret_path_kind,
    secrets_in_paths,
)
from tests.conftest import ROOT, run_cas
from tests.secret_corpus import (
    ADVERSARIAL,
    ALNUM,
    CORPORA,
    FORMS,
    Values,
    exposed,
    leaks,
    pieces,
    plant,
)

# Pieces that look random enough to pass the entropy test; no single piece is a secret.
MIXED = "k9Xq2Lm7" + "Pz4Rt8Wv"
B64 = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzQ3nA8dL5sVu"
P = "pass" + "word"


def pem_block(label: str, end: bool = True) -> str:
    begin = "-----BEGIN " + label + " PRIVATE" + " KEY-----"
    body = ("MIIEowIBAAKCAQEA" + "q7Lw" * 12 + "\n") * 3
    return begin + "\n" + body + ("-----END " + label + " PRIVATE" + " KEY-----\n" if end else "")


AWS_ID = "AK" + "IA" + "Q7" * 8
TWILIO = "S" + "K" + "0f1e2d3c4b5a6978" * 2
GITHUB = "gh" + "p_" + "aB3" * 12
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" + "aB3dE" * 12
SLACK = "xo" + "xb-" + "1234567890-" + "aB3dE" * 4
SLACK_APP = "xa" + "pp-1-A0" + "7QWERTY9-" + "4432" * 3 + "-" + "9f8e" * 8
SLACK_HOOK = "https://hooks." + "slack.com/services/" + "T0123ABCD/B0123ABCD/" + "aBcD" * 6
OPENAI = "s" + "k-" + "aB3dE" * 10
OPENAI_PROJ = "s" + "k-proj-" + "aB3dE_" * 10
GOOGLE = "AI" + "za" + "Sy" + "aB3_-" * 6 + "abc"
STRIPE = "sk" + "_live_" + "aB3dE" * 5
STRIPE_TEST = "sk" + "_test_" + "aB3dE" * 5
NPM = "np" + "m_" + "aB3dE4" * 6
GITLAB = "glp" + "at-" + "xR4kQ9" * 4
HF = "hf" + "_" + "QwErTyUiOp" * 3 + "AsDf"
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + "Cq9Zx7Lw2" * 7
SENDGRID = "SG." + "aB3dE4fG5h" * 2 + "Xy." + "Qw9Er8Ty7U" * 4 + "Zx1"
SHOPIFY = "shp" + "at_" + "0f1e2d3c4b5a6978" * 2
DIGITALOCEAN = "dop" + "_v1_" + "0f1e2d3c4b5a6978" * 4
TELEGRAM = "1234567890" + ":AA" + "Fq9Zx7Lw2" * 3 + "Rt8Wv4"
DISCORD = "https://discord.com/api/" + "webhooks/" + "123456789012345678/" + "aB3dE4fG-_" * 7
AZURE = "AccountKey=" + "Qw9Er8Ty7U" * 8 + "Zx1Cv2==;"
JWT = (
    "ey"
    + "JhbGciOiJIUzI1NiJ9"
    + ".ey"
    + "JzdWIiOiIxMjM0NTY3ODkwIn0"
    + "."
    + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV"
)

# kind -> (a line holding a secret of that kind, the secret value itself)
CASES: dict[str, tuple[str, str]] = {
    "private key block": (pem_block("RSA"), "MIIEowIBAAKCAQEA"),
    "AWS access key id": (f"aws_access_key_id = {AWS_ID}", AWS_ID),
    "AWS secret access key": ("aws_secret_access_key = " + B64[:40], B64[:40]),
    "GitHub token": (f'token = "{GITHUB}"', GITHUB),
    "GitLab token": (f"token {GITLAB}", GITLAB),
    "Slack token": (f"SLACK={SLACK}", SLACK),
    "Slack webhook": (f"url: {SLACK_HOOK}", SLACK_HOOK[-24:]),
    "OpenAI key": (f"client = OpenAI(api_key='{OPENAI}')", OPENAI),
    "Google API key": (f'const k = "{GOOGLE}";', GOOGLE),
    "Stripe key": (f"stripe.api_key = {STRIPE}", STRIPE),
    "npm token": (f"//registry.npmjs.org/:_authToken={NPM}", NPM),
    "Hugging Face token": (f"login('{HF}')", HF),
    "PyPI token": (f"{P} = {PYPI}", PYPI),
    "SendGrid key": (f"sg = Client('{SENDGRID}')", SENDGRID),
    "Shopify token": (SHOPIFY, SHOPIFY),
    "DigitalOcean token": (f'token = "{DIGITALOCEAN}"', DIGITALOCEAN),
    "Telegram bot token": (f"bot = Bot('{TELEGRAM}')", TELEGRAM),
    "Discord webhook": (DISCORD, DISCORD[-70:]),
    "Azure storage key": ("DefaultEndpointsProtocol=https;" + AZURE, AZURE[11:-1]),
    "JSON web token": (f"Authorization: Bearer {JWT}", JWT),
    "password in URL": ("DATABASE_URL=postgres://app:" + MIXED + "@db.internal/app", MIXED),
    "high-entropy assignment to 'db_password'": (f'db_{P} = "{MIXED}"', MIXED),
}


def kinds(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [f.kind for f in scan_secrets(data)]


def assert_sealed(data: bytes, value: str) -> None:
    """The scan finds the value; cutting it out (or withholding the file) hides it, and what is
    kept scans clean."""
    found = scan_secrets(data)
    assert found, data
    body = redact(data, found)
    if body is not None:
        assert value.encode() not in body
        assert scan_secrets(body) == []


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_is_found_on_its_line_without_its_value(kind: str) -> None:
    line, value = CASES[kind]
    text = "first line\n\n" + line + "\nlast line\n"
    found = scan_secrets(text.encode())
    assert (kind, 3) in [(f.kind, f.line) for f in found]
    for f in found:
        assert value not in str(f)
        assert value not in f.kind
    assert_sealed(text.encode(), value)


def test_a_finding_has_no_field_that_could_hold_the_value() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(SecretFinding)}
    assert fields == {"kind": "str", "line": "int", "start": "int", "end": "int"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        SecretFinding("x", 1).kind = "y"  # type: ignore[misc]


# --- the forms the testers found leaking ------------------------------------------------------

LEAKED_FORMS = {
    "notebook assignment": (
        json.dumps({"cells": [{"source": ["import db\n", f'{P} = "{MIXED}"\n']}]}),
        MIXED,
    ),
    "notebook PEM": (json.dumps({"cells": [{"source": [pem_block("RSA")]}]}), "q7Lwq7Lw"),
    "JDBC URL": (f"url=jdbc:postgresql://db/app?user=app&{P}={MIXED}", MIXED),
    "Go var": (f'var db{P.title()} string = "{MIXED}"', MIXED),
    "Slack app token": (f"token: {SLACK_APP}", SLACK_APP),
    "URL password with /": (
        "redis://default:" + MIXED[:8] + "/" + MIXED[8:] + "@cache:6379",
        MIXED[8:],
    ),
    "bare Stripe test key": (STRIPE_TEST, STRIPE_TEST),
    "restricted Stripe key": ("rk" + "_live_" + "aB3dE" * 5, "aB3dEaB3dE"),
    "kubeconfig client-key-data": (
        "    client-key-data: " + base64.b64encode(pem_block("RSA").encode()).decode(),
        base64.b64encode(pem_block("RSA").encode()).decode()[:40],
    ),
    "PuTTY key": (
        "PuTTY-User-Key-File-"
        + "3: ssh-ed25519\nPrivate-Lines: 1\n"
        + B64
        + "\n"
        + "Private-MAC: "
        + "0f1e2d3c4b5a6978" * 4,
        B64,
    ),
    "Maven password": (f"<server><{P}>{MIXED}</{P}></server>", MIXED),
    "web.config value": (f'<add key="ApiSecret" value="{MIXED}" />', MIXED),
    "PHP define": (f"define('DB_{P.upper()}', '{MIXED}');", MIXED),
    "curl -u": (f"curl -u deploy:{MIXED} https://ci/api", MIXED),
    "mysql -p": (f"mysql -u root -p{MIXED} app", MIXED),
    "Basic header": (
        "Authorization: Basic " + base64.b64encode(f"svc:{MIXED}".encode()).decode(),
        base64.b64encode(f"svc:{MIXED}".encode()).decode(),
    ),
    "Bearer header": ("Authorization: Bearer " + MIXED + "Hn5Bc1Yd6Jf3", MIXED),
    "Dockerfile ENV": (f"FROM x\nENV API_KEY {MIXED}{MIXED}", MIXED),
    "base64 credentials": (
        "blob: " + base64.b64encode(json.dumps({P: MIXED}).encode()).decode(),
        base64.b64encode(json.dumps({P: MIXED}).encode()).decode(),
    ),
    "k8s env pair": (f"env:\n  - name: DB_{P.upper()}\n    value: {MIXED}\n", MIXED),
    "Rust const": (f'const API_TOKEN: &str = "{MIXED}{MIXED}";', MIXED),
    "C define": (f'#define API_KEY "{MIXED}{MIXED}"', MIXED),
    "SQL": (f"CREATE USER app IDENTIFIED BY '{MIXED}';", MIXED),
    # issue 21
    "Twilio API key SID": (f'client = Client("{TWILIO}", "x")', TWILIO),
    "password a policy shaped": (f"db:\n  {P}: Summer2024!\n", "Summer2024!"),
    "URL password of words": ("mysql://root:" + "rootpass@localhost/app", "rootpass"),
    "libpq DSN with more keys": (f'"host=db user=app {P}={MIXED}#1 dbname=app"', MIXED),
    "base64 of a key id and secret": (
        "blob: " + base64.b64encode(f"{AWS_ID}:{B64[:40]}".encode()).decode(),
        base64.b64encode(f"{AWS_ID}:{B64[:40]}".encode()).decode(),
    ),
    "password in a comment": (f"# the staging admin {P} is {MIXED}#1", MIXED),
    "login in a README": (f"Login: admin / {MIXED}#1", MIXED),
    "AWS secret with EXAMPLE in it": (
        f'AWS_SECRET_ACCESS_KEY = "{B64[:26]}EXAM' + f'PLE{B64[26:33]}"',
        B64[:26],
    ),
}


@pytest.mark.parametrize("form", sorted(LEAKED_FORMS))
def test_forms_that_once_leaked_are_found_and_sealed(form: str) -> None:
    text, value = LEAKED_FORMS[form]
    assert_sealed(text.encode(), value)


def test_utf16_powershell_is_found_and_withheld_whole() -> None:
    for codec in ("utf-16", "utf-16-le", "utf-16-be"):
        data = "$" + f'{P} = "{MIXED}"\r\n'
        found = scan_secrets(("# deploy\r\n" + data).encode(codec))
        assert found and not any(f.exact for f in found), codec
        assert redact(("# deploy\r\n" + data).encode(codec), found) is None


def test_an_unterminated_key_block_cannot_be_cut_exactly() -> None:
    data = ("x = 1\n" + pem_block("RSA", end=False)).encode()
    found = scan_secrets(data)
    assert [f.kind for f in found] == ["private key block"]
    assert redact(data, found) is None


def test_escaped_secrets_only_a_decoding_reveals_withhold_the_file() -> None:
    url = "postgres:" + "\\/\\/" + "app:" + MIXED + "@db" + "\\/" + "x"
    data = json.dumps({"dsn": "placeholder"}).replace("placeholder", url).encode()
    found = scan_secrets(data)
    assert found
    assert redact(data, found) is None or MIXED.encode() not in (redact(data, found) or b"")


def test_redaction_cuts_only_the_value_and_keeps_the_rest() -> None:
    data = f'import os\nDB_{P.upper()} = "{MIXED}"\nprint("ok")\n'.encode()
    body = redact(data, scan_secrets(data))
    assert body == (
        b"import os\nDB_" + P.upper().encode() + b' = "[REDACTED: high-entropy assignment to '
        b"'DB_" + P.upper().encode() + b'\']"\nprint("ok")\n'
    )


# --- precision: ordinary code, placeholders and the testers' false positives -----------------

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
    # the testers' false positives
    'proxy_auth_hdr = "Proxy-Authorization"',
    '"PasswordLastUsed": "2016-09-08T21:47:36Z",',
    '"ClientRequestToken": "123e4567-e89b-12d3-a456-426614174000",',
    '"output_token": "NextContinuationToken",',
    '"output_token": "Contents[-1].Key || NextMarker",',
    "newToken: 'refreshed-token-123'",
    '>>> URL("https://jo%40email.com:a%20secret@example.com/")',
    "postgres://postgres:postgres@localhost:5432/app",
    "f'postgres://{user}:{password}@{host}/db'",
    "http://localhost:8080/path@section",
    'password = "testPassword1"',
    "curl -u $USER:$TOKEN https://x",
    "mysql -u root -p$MYSQL_ROOT_PASSWORD",
    'headers["Authorization"] = "Bearer " + token',
    "Authorization: Bearer <token>",
    "ENV PYTHONDONTWRITEBYTECODE 1",
    'assert err.key == "scopes.core.exclude[1]"',
    # a bare "key" looks things up unless its value is long and generated
    '{"key": "user-settings-cache-entry-for-home-page"}',
    '{"key": "d41d8cd98f00b204e9800998ecf8427e00112233"}',
    "{'key': 'ThisIsALongCamelCaseIdentifierName'}",
    '"Key": "photos/2024/summer/beach-day-001.jpg",',
]


@pytest.mark.parametrize("line", ORDINARY_CODE)
def test_ordinary_code_and_placeholders_are_not_secrets(line: str) -> None:
    assert scan_secrets(line.encode()) == []


SAS = "sig=" + "aBBKDWQvyuVcTPH9EBp" + "%2FXTI9E%2F%2Fmq171%2BZU178wcwqU%3D"
# The false positives left on ordinary code (Django, botocore, httpx, SQLAlchemy, axios), one
# line per category: each was flagged by the first version of this scan.
NOT_SECRETS_BY_CATEGORY = {
    # documentation's example passwords, and letters written as digits or symbols
    "scott/tiger": 'engine = create_engine("mssql+pyodbc://scott:tiger^5HHH@mssql2017:1433/test")',
    "scott/tiger in SQL": "CREATE LOGIN scott WITH PASSWORD = 'tiger^5HHH';",
    "leetspeak placeholder": 'connection.settings_dict["PASSWORD"] = "p@ssword"',
    "leetspeak words": '            "PASSWORD": "veryPriv@ate",',
    # names of keys that look things up, and of programs
    "session key": '>>> s = SessionStore(session_key="2b1189a188b44ad18c35e113ac6ceead")',
    "cache key": "        token_cache_key = 'f395038c92f1828cbb3991d2d6152d326b895606'",
    "cached key": "        self.cached_token_key = '40a89917e3175433e361b710a9d43528d7f1890a'",
    "region": "            credential_scope_region = 'us-east-1'",
    "program": "            'default': {'credential_process': 'my-process'}",
    "slug": "                'SecretAccessKey': 'cached-sak',",
    # identifiers and encodings of text
    "hex groups": '{"name": "app1", "api_key": "a06b-c462cffae87a"},',
    "base64 of a sentence": '"PasswordData": "TGludXggdmVyc2lvbiAyLjYuMTYteGVuVSAoYnVpbGRlckBw"',
    "base64 of a phrase": '"token": "eW91J3JlIG5vdCBzdXBwb3NlZCB0byBkZWNvZGUgdGhpcyE=",',
    "bearer of a phrase": '"Authorization": "Bearer '
    'eW91J3JlIG5vdCBzdXBwb3NlZCB0byBkZWNvZGUgdGhpcyE="',
    "base64 of JSON": "        token = 'eyJmb28iOiAiYmFyIn0='",
    "escaped path": "'X-Amz-Credential=access_key%2F20170322%2Fus-east-1%2Fsts%2F'",
    # code, not a value
    "ternary": 'body:i,duplex:"half",credentials:A?y:void 0})),e.next=20,fetch(x)',
    # URLs that hold no credential
    "example host": '"https://user%20name:Xk9mQ2vL7pRz@example.com",',
    "port and path": '"input": "https://localhost:3000/jqueryui@1.2.3",',
    "short and plain": '"input": "http://&a:foo(b]c@d:2/",',
    "escaped short and plain": '"password": "foo(b%5Dc",',
    # an Azure SAS that expired before the rule was written
    "expired SAS": "<code>sp=r&amp;st=2023-12-20T14:54:52Z&amp;se=2023-12-20T22:54:52Z&amp;"
    "spr=https&amp;sv=2021-06-08&amp;sr=c&amp;" + SAS + "</code>",
    # a name in a namespace, in a list
    "member reference": '"auth":["smithy.api#noAuth"]',
    # code, and runs that say they are placeholders
    "keyword argument": 'password = click.prompt("Password", hide_input=True)',
    "run of Xs": '"WebIdentityToken": "Atza%7CIQEBLjAsAhRFiXuWpUXuRvQ9PZL3GMFcYevydwIUFAHZwXZ'
    'XXXXXXXXJnrulxKD",',
    # a first line that is code, not a table's header
    "not a table": f"from botocore import auth, {P}\nx = ('a', 'b', '{MIXED}#1')\n",
    # issue 21: the false alarms on 9,200 files of ordinary code, and their kin
    "type annotation": "    mlkem_key: mlkem.MLKEM768PrivateKey\n",
    "type annotation of a parameter": "def sign(self, mlkem_key: mlkem.MLKEM768PrivateKey):",
    "type annotation, no module": "    private_key: Ed25519PrivateKey\n",
    "regular expression": 'token = r"[-!#$%&\'*+.^_`|~0-9a-zA-Z]+"',
    "regular expression with class escapes": 'api_key = r"\\w+-\\d{4}"',
    "name under a domain": 'SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"',
    "name under a domain, with a dash": 'RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"',
    "docstring URL, user:pass": '    """Connect with ``https://user:pass@host:5432/db``."""',
    "docstring URL, username:password": '    """e.g. https://username:password@proxy.corp:8080"""',
    "URL password that only names a password": "http://user:pass%23pass@complex.url.com",
    "URL password that repeats the user": "amqp://rabbit:rabbit@queue.internal:5672",
    # documentation examples, exactly as published
    "AWS's documented key pair": (
        "AWS_ACCESS_KEY_ID = AKIAIOSFODNN7EXAMPLE\n"
        "AWS_SECRET_ACCESS_KEY = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
    ),
    "an id that is the word EXAMPLE and a few characters": '"AccessKeyId": "AK' + 'IA1234EXAMPLE",',
    # sentences and labels about a password, not giving one
    "a sentence about a password": f"# the admin {P} is required and stored hashed.",
    "a comparison in code": f"if {P} is None or token is not None:",
    "a login with two ways in": "Login: GitHub / Google",
    # "&" ends a query's value
    "a query string": f"?user=app&{P}=changeme&next=%2Fhome",
    # ... and so does an HTML entity: the value before it is a path
    "a path before an HTML entity": "&quot;&amp;ssl_key=/home/gord/client-ssl/client-key.pem&quot;",
    # a user that names its place: the URL is a template or a fixture
    "URL template with a password of words": "dbtype://username:apples%2Foranges@hostspec/db",
    "fixture URL with a password of words": '"mssql+pyodbc://userdiff:passdiff@localhost/dbdiff"',
    "AWS's documented STS secret key": '"SecretAccessKey": "8P+SQvWIuLnKhh8d++jpw0nNmQRBZvN'
    + 'EXAMPLEKEY",',
}


@pytest.mark.parametrize("category", sorted(NOT_SECRETS_BY_CATEGORY))
def test_false_positives_of_ordinary_code_by_category(category: str) -> None:
    assert scan_secrets(NOT_SECRETS_BY_CATEGORY[category].encode()) == []


# ... and what the same rules must still find.
STILL_SECRETS = {
    "live SAS": "https://a.blob.core.windows.net/c?sv=2024-05-04&se=2031-01-01T00:00:00Z&" + SAS,
    "SAS without expiry": "https://a.blob.core.windows.net/c?sv=2024-05-04&sr=c&" + SAS,
    "URL to a real host": f"redis://default:{MIXED}@cache.internal:6379",
    "base64 of a password": "  db-password: " + base64.b64encode(MIXED.encode()).decode(),
    "leetspeak random": f'{P} = "k9@q2Lm7P$4Rt8W"',
    "short name with operator": f"pass={MIXED}",
    "short name with colon": f"pass: {MIXED}",
    "access key in a header": f'curl -H "X-Auth-Token: {MIXED}{MIXED}" https://status.internal',
    "slice type": f'pub const SIGNING_SECRET: &[u8] = b"{MIXED}{MIXED}";',
    "fallback default": f"const jwtSecret = process.env.JWT_SECRET || '{MIXED}{MIXED}';",
    "lookup default": f'SECRET_KEY = os.environ.get("SECRET_KEY", "{MIXED}{MIXED}")',
    "user and password pair": f'resp = requests.get(URL, auth=("svc-sync", "{MIXED}#1"))',
    "user and password call": f'auth = HTTPBasicAuth("svc", "{MIXED}#1")',
    "table column": f"service,username,{P}\nbilling,svc_billing,{MIXED}#1\n",
    "table column, quoted": f'"service";"{P}"\n"billing";"{MIXED}#1"\n',
    "user and password list": f'auth = ["svc", "{MIXED}#1"]',
    "first of a list": f'api_keys = ["{MIXED}{MIXED}", "x"]',
    "password with an equals sign": f"{P}: Xk9mQ=" + "2vL7pRz",
    "Vault token": 'token = "' + "hv" + "s." + MIXED + "Qz3" + '"',
    "generated part after a dot": f'api_token = "tk.{MIXED}Qz3"',
    "a short word inside random": 'api_key = "mfAkEETst2g8eU' + MIXED + '"',
    "base64 with slashes": 'aws_secret = "/dgVZ0Az7pb0v2w98230iM' + '/KFjo1j7uo6MtgZqb/"',
    # issue 21: the new rules' exceptions leave these secrets found
    "real password in a docstring URL": f'    """Connect with https://deploy:{MIXED}#1@db.internal."""',
    "password of words in a docstring URL": '    """e.g. redis://cache:blue'
    + 'storm@cache.internal"""',
    "generated part under a domain": f'API_KEY = "io.vendor/{MIXED}Qz3"',
    "generated part after a class name": f'api_key: str = "Client.{MIXED}Qz3"',
    "password ending in &": f"mail.{P}=Cooper2016&\n",
    "sentence going on after the password": f"-- the root {P} was {MIXED}#1 before the rotation",
    "Google key with EXAMPLE in it": 'const k = "AI'
    + "za"
    + "Sy"
    + "EXAMPLE"
    + "k9Xq2Lm7Pz4Rt8Wv"
    + 'aB3dE_-aB3";',
    "policy password under a role user": "postgres://dbuser:Winter" + "2023!@db.internal/app",
    "password of words under a real user": "mysql://deploy:silver" + "harbor@db.internal/app",
}


def test_generated_values_are_judged_secrets_nearly_always() -> None:
    # Placeholder words, phrases of words and paths turn up by chance in random values: a
    # generated secret must almost never be taken for one (bench/secrets_bench.py prints the
    # recall per form; here 3,000 seeded values of each shape).
    vals = Values(random.Random(3))
    shapes = {
        "password": lambda: vals.password(16),
        "token": lambda: vals.pick(ALNUM, 32),
        "key": lambda: vals.b64(40),
    }
    for kind, make in shapes.items():
        missed = [v for v in (make() for _ in range(3000)) if not value_is_secret(kind, v)]
        assert len(missed) <= 3, (kind, len(missed))


@pytest.mark.parametrize("form", sorted(STILL_SECRETS))
def test_the_same_rules_still_find_real_secrets(form: str) -> None:
    data = STILL_SECRETS[form].encode()
    found = scan_secrets(data)
    assert found, form
    body = redact(data, found)
    assert body is not None and scan_secrets(body) == []


def test_a_public_certificate_is_not_a_secret_by_name_or_content() -> None:
    cert = "-----BEGIN CERTIFICATE-----\n" + ("MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq" * 2 + "\n") * 5
    cert += "-----END CERTIFICATE-----\n"
    assert secret_path_kind("certs/ca.pem") is None
    assert secret_path_kind("certs/ca.crt") is None
    assert scan_secrets(cert.encode()) == []


def test_binary_catalogs_do_not_trip_assignment_rules() -> None:
    # A compiled gettext catalog: NUL-separated strings, "Password" and random-looking bytes.
    mo = b"\xde\x12\x04\x95\x00\x00\x00\x00" + b"\x00".join(
        [b"Password", b"Passwort", f"{P}: {MIXED}".encode(), b"token", MIXED.encode() * 3]
    )
    assert scan_secrets(mo) == []
    # A real token in a binary file is still found, and the file withheld whole.
    found = scan_secrets(mo + b"\x00" + GITHUB.encode())
    assert [f.kind for f in found] == ["GitHub token"]
    assert redact(mo, found) is None


@pytest.mark.parametrize(
    "text",
    [
        "x" + "AK" + "IA" + "Q" * 16,
        "AK" + "IA" + "Q" * 17,
        "mask-" + "aB3dE" * 10,
        "AK" + "IAIOSFODNN7" + "EXAMPLE",
        "gh" + "p_" + "abc",
        "s" + "k-" + "short",
        "pk" + "_live_" + "aB3dE" * 5,
        "s" + "k-button-primary-large-rounded-shadow-hover",
        "hf" + "_hub_download_with_retries_and_cache_dirs",
        "ta" + TWILIO,  # a longer word that holds the shape
        TWILIO[:-1],  # 31 hex digits
        "S" + "K" + "0123456789" * 3 + "01",  # digits only: a number, not a key
        "S" + "K" + "0f1e2d3c" * 4 + "9",
    ],
)
def test_lookalikes_are_not_tokens(text: str) -> None:
    assert scan_secrets(text.encode()) == []


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
        "//registry.npmjs.org/:_authToken=" + "a1b2c3d4-e5f6-4789-abcd-" + "ef1234567890",
        f'val apiSecret: String = "{MIXED}"',
        f'let clientSecret = "{MIXED}"',
        f"os.environ['API_TOKEN'] = '{MIXED}'",
        f"SECRET = b'{MIXED}'",
        f'Sys.setenv("API_TOKEN", "{MIXED}")',
        f'  "Key": "{MIXED}{MIXED}",',
        f"{{'key': '{MIXED}{MIXED}'}}",
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
        [f"{AWS_ID} {AWS_ID}", "nothing here", f'db_{P} = "{MIXED}"; k = "{GITHUB}"', f"{AWS_ID}"]
    )
    assert [(f.kind, f.line) for f in scan_secrets(text.encode())] == [
        ("AWS access key id", 1),
        ("AWS access key id", 1),
        ("GitHub token", 3),
        (f"high-entropy assignment to 'db_{P}'", 3),
        ("AWS access key id", 4),
    ]


def test_crlf_and_invalid_utf8_do_not_shift_lines() -> None:
    data = b"a\r\n\xff\xfebad\r\n" + AWS_ID.encode() + b"\xc3\r\n"
    assert [(f.kind, f.line) for f in scan_secrets(data)] == [("AWS access key id", 3)]


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_a_megabyte_of_adversarial_input_scans_in_linear_time(name: str) -> None:
    data = ADVERSARIAL[name][: 1 << 20]
    start = time.process_time()
    scan_secrets(data)
    # CPU seconds, so a busy machine does not count. The whole five megabytes of each input
    # take under 4 s on the development VM (bench/secrets_bench.py prints them), a megabyte a
    # fifth of that; a quadratic pattern would take many minutes on a megabyte, and the first
    # version of this scan, a full Python step per literal hit, took 3-5 s on one of "words".
    assert time.process_time() - start < 4.0


# --- by path ------------------------------------------------------------------------------------

PATH_CASES = {
    ".env": "env file",
    "app/.env": "env file",
    ".env.local": "env file",
    ".env.production": "env file",
    "deploy/prod.env": "env file",
    "config/env.production": "env file",
    "config/env.staging": "env file",
    "tls.KEY": "key file",
    "store.p12": "key file",
    "store.pfx": "key file",
    "android/release.jks": "key file",
    "release.keystore": "key file",
    "putty/server.ppk": "key file",
    "home/.ssh/id_rsa": "ssh private key",
    "id_ed25519": "ssh private key",
    "id_rsa_deploy": "ssh private key",
    ".netrc": "netrc file",
    ".pgpass": "pgpass file",
    "web/.htpasswd": "htpasswd file",
    ".git-credentials": "git credentials file",
    "credentials": "credentials file",
    ".aws/credentials": "credentials file",
    "ci.credentials": "credentials file",
    "service-account.json": "service account key",
    "config/secrets.yml": "secrets file",
}


@pytest.mark.parametrize("path", sorted(PATH_CASES))
def test_secret_files_by_name(path: str) -> None:
    assert secret_path_kind(path) == PATH_CASES[path]


@pytest.mark.parametrize(
    "path",
    [
        ".env.example",
        ".env.sample",
        "app/.env.local.example",
        "example.env",
        "id_rsa.pub",
        ".npmrc",
        "environment.py",
        "env.py",
        "env.d.ts",
        "docs/env.md",
        "config/env.example",
        "keys.py",
        "credentials.py",
        "secrets.py",
        "packer/secrets.py",
        "server.pem",
        "ca.crt",
        "",
        "dir/",
    ],
)
def test_templates_public_keys_and_code_are_not_secret_files(path: str) -> None:
    assert secret_path_kind(path) is None


def test_a_token_in_a_path_is_found_and_cut_out_of_it() -> None:
    paths = ["src/app.py", f"backup/{GITHUB}.txt", f"cache/{SLACK}/x.json", "docs/token-auth.md"]
    found = secrets_in_paths(paths)
    assert sorted(found) == sorted(paths[1:3])
    assert redact_path(paths[1], found[paths[1]]) == "backup/[REDACTED: GitHub token].txt"
    assert GITHUB not in redact_path(paths[1])
    assert redact_path("src/app.py") == "src/app.py"


def test_version_is_a_nonempty_string() -> None:
    assert isinstance(SECRETS_VERSION, str)
    assert SECRETS_VERSION


def _own_sources() -> list[str]:
    """Every text file of this repository's code, tests, benchmarks and docs."""
    found = [*ROOT.glob("*.md"), ROOT / "pyproject.toml", ROOT / "cas.toml"]
    for folder in ("cas", "packer", "tests", "bench", ".ci"):
        found += [p for p in (ROOT / folder).rglob("*") if p.is_file() and ".cache" not in p.parts]
    return sorted(
        str(p.relative_to(ROOT)) for p in found if p.suffix not in (".pyc",) and p.is_file()
    )


OWN_SOURCES = _own_sources()


def test_the_project_does_not_flag_its_own_sources() -> None:
    assert {"packer/secrets.py", "tests/secret_corpus.py", "README.md"} <= set(OWN_SOURCES)
    flagged = {rel: kinds_of(ROOT / rel) for rel in OWN_SOURCES}
    assert {rel: k for rel, k in flagged.items() if k} == {}


def kinds_of(path: Path) -> list[str]:
    return [f"{f.kind} (line {f.line})" for f in scan_secrets(path.read_bytes())]


# --- properties -----------------------------------------------------------------------------------


@pytest.mark.skipif(hyperscan is None, reason="hyperscan has no wheel for this platform")
@given(st.lists(st.sampled_from([*_LITERALS, b"x", b"\n", b"A", b"-", b"\x00"]), max_size=60))
def test_both_prefilter_engines_find_the_same_hits(parts: list[bytes]) -> None:
    data = b"".join(p.upper() if i % 3 == 0 else p for i, p in enumerate(parts))
    fast = LiteralSearch(_LITERALS, engine="hyperscan").find(data)
    portable = LiteralSearch(_LITERALS, engine="aho-corasick").find(data)
    assert fast == portable


@given(st.binary(max_size=2000))
@example(b"\xff" * 20 + b"-----BEGIN PRIVATE KEY-----\\n")
@example(b"password=\x00" + b"\x80" * 30)
def test_never_raises_and_output_is_well_formed(data: bytes) -> None:
    found = scan_secrets(data)
    assert found == sorted(set(found), key=lambda f: (f.line, f.kind, f.start, f.end))
    last_line = data.count(b"\n") + 1
    assert all(1 <= f.line <= last_line for f in found)
    assert all(0 <= f.start < f.end <= len(data) for f in found if f.exact)


@given(
    lines=st.lists(
        st.text(alphabet="abcdefghij klmnop=:;,.()", max_size=60), min_size=1, max_size=30
    ),
    at=st.integers(min_value=0),
    form=st.sampled_from(sorted(LEAKED_FORMS)),
)
def test_a_planted_secret_anywhere_is_found_and_cut_out(
    lines: list[str], at: int, form: str
) -> None:
    text, value = LEAKED_FORMS[form]
    index = at % (len(lines) + 1)
    lines.insert(index, text)
    data = "\n".join(lines).encode()
    found = scan_secrets(data)
    assert found
    body = redact(data, found)
    if body is not None:
        assert value.encode() not in body
        assert scan_secrets(body) == []


def test_only_the_published_value_is_an_example_wherever_the_word_is_spliced_in() -> None:
    # A generated secret key with EXAMPLE written into it at any place is someone's key; the
    # published example itself, in the same place, is not.
    key = B64[:33]
    for at in range(len(key) + 1):
        value = key[:at] + "EXAM" + "PLE" + key[at:]
        for line in (f"AWS_SECRET_ACCESS_KEY = {value}", f'api_key = "{value}"'):
            assert_sealed(line.encode(), value)
    published = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
    for line in (f"AWS_SECRET_ACCESS_KEY = {published}", f'api_key = "{published}"'):
        assert scan_secrets(line.encode()) == []


DSN_PAIRS = ["host=db", "user=app", "dbname=app", "port=5432", "sslmode=require"]


@given(st.permutations([*DSN_PAIRS, f"{P}={MIXED}#1"]), st.sampled_from(['"', "'", "", "\n"]))
def test_a_password_among_key_value_pairs_is_found_in_any_order(
    pairs: list[str], quote: str
) -> None:
    # A libpq connection string or variables before a command: each pair ends where the next
    # begins, whatever follows the password.
    data = f"conn = connect({quote}{' '.join(pairs)}{quote})".encode()
    assert_sealed(data, MIXED)


@given(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    st.sampled_from([AWS_ID, GITHUB, STRIPE]),
)
def test_base64_of_text_holding_a_token_is_found_at_any_offset(
    before: str, after: str, token: str
) -> None:
    # The token's head is looked for in each of the three alignments base64 can give it.
    enc = base64.b64encode(f"{before} {token}:{B64[:40]} {after}".encode()).decode()
    data = f"blob: {enc}\n".encode()
    found = scan_secrets(data)
    assert [f.kind for f in found][:1] and found[0].kind.startswith("base64-encoded"), found
    assert_sealed(data, enc)


WORDS = ["the", "staging", "admin", "box", "for", "now", "and", "note:", "old", "(temp)"]


@given(
    st.lists(st.sampled_from(WORDS), max_size=6),
    st.sampled_from(["is", "was"]),
    st.sampled_from([f"{MIXED}#1", f"`{MIXED}#1`", f'"{MIXED}#1"']),
    st.lists(st.sampled_from(WORDS), max_size=6),
    st.sampled_from(["# ", "// ", "-- ", "", "> "]),
)
def test_a_password_given_in_a_sentence_is_found(
    before: list[str], verb: str, value: str, after: list[str], lead: str
) -> None:
    text = " ".join([*before, P, verb, value, *after]) + "."
    assert_sealed((lead + text + "\n").encode(), MIXED)


# Pieces of text around string escapes: names, operators, quotes, values, URLs, newlines.
ESCAPE_PIECES = [
    P, "api_key", "token", " = ", ": ", "=", '"', "'", '\\"', "\\'", "\\n", "\\/", "\\\\",
    "\\u0070", MIXED, MIXED[::-1], "postgres:", "//", "u:", "@db", " ", "\n", "x", "(", ")", ",",
    "- name: DB_PASSWORD", "value: ", "ENV API_KEY ", GITHUB[:3],
]  # fmt: skip


def _whole_view_findings(data: bytes) -> set[tuple[str, int]]:
    """What the scan once did: the whole file with its escapes undone, scanned again."""
    view = _unescaped(data)
    if view is None:
        return set()
    return {(f.kind, view.count(b"\n", 0, f.start) + 1) for f in _scan_view(view, binary=False)}


def _windowed_findings(data: bytes) -> set[tuple[str, int]]:
    out = set()
    for offset, view in _escaped_views(data):
        first = data.count(b"\n", 0, offset)
        for f in _scan_view(view, binary=False):
            out.add((f.kind, first + view.count(b"\n", 0, f.start) + 1))
    return out


@given(st.lists(st.sampled_from(ESCAPE_PIECES), max_size=80))
@example([P, " = ", '\\"', MIXED, '\\"'])
@example(["postgres:", "\\/", "\\/", "u:", MIXED, "@db"])
@example(["- name: DB_PASSWORD", "\n", "value: ", '\\"', MIXED, '\\"'])
def test_escapes_are_read_again_only_around_themselves_and_miss_nothing(parts: list[str]) -> None:
    # Only the text near an escape is unescaped and scanned again; what that finds is what
    # scanning the whole unescaped file finds, wherever the raw bytes hid nothing.
    data = "".join(parts).encode()
    assume(not _scan_view(data, binary=False))
    assert _windowed_findings(data) == _whole_view_findings(data)


def test_escapes_far_apart_are_read_in_separate_windows() -> None:
    line = "x = 1\n"
    data = (line * 400 + 'a = "\\n"\n' + line * 400 + 'b = "\\n"\n' + line * 400).encode()
    views = _escaped_views(data)
    assert len(views) == 2
    assert sum(len(v) for _o, v in views) < len(data) // 2


TRIGGERS = tuple(lit.decode() for lit in _LITERALS)


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=400))
def test_random_ascii_without_any_literal_has_no_findings(text: str) -> None:
    lowered = text.lower()
    assume(not any(t in lowered for t in TRIGGERS))
    assert scan_secrets(text.encode()) == []


# --- every corpus, file by file -----------------------------------------------------------------


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_every_planted_form_is_found_and_cut_out_of_its_file(tmp_path: Path, corpus: str) -> None:
    plants = plant(tmp_path, seed=23, corpus=corpus)
    leaked = set()
    for p in plants:
        if secret_path_kind(p.path) is not None:
            continue  # withheld by its name
        data = (tmp_path / p.path).read_bytes()
        found = scan_secrets(data)
        shown = (redact(data, found) or b"") + redact_path(p.path).encode()
        if any(piece.encode("latin-1") in shown for n in p.needles for piece in pieces(n)):
            leaked.add(p.form)
    assert leaked == set()


# --- end to end: nothing planted leaks through cas pack -----------------------------------------


def _cas_in(root: Path):  # type: ignore[no-untyped-def]
    def cas(*args: str) -> tuple[int, bytes, bytes]:
        r = run_cas(*args, cwd=root)
        return r.code, r.stdout_bytes, r.err.encode()

    return cas


def test_no_planted_secret_reaches_the_store_a_manifest_a_report_or_a_render(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    plants = plant(root, seed=11)
    assert len(plants) == len(FORMS) >= 60
    # Ordinary files beside them, including the testers' false positives, stay whole.
    (root / "urllib_request.py").write_text('proxy_auth_hdr = "Proxy-Authorization"\n')
    # ... and issue 21's false alarms: a type, a regular expression, a name under a domain, a
    # placeholder URL in a docstring, the published AWS example pair.
    issue21 = "\n".join(
        NOT_SECRETS_BY_CATEGORY[c]
        for c in (
            "type annotation",
            "regular expression",
            "name under a domain",
            "docstring URL, user:pass",
            "AWS's documented key pair",
        )
    )
    (root / "mcp_types.py").write_text(issue21 + "\n")
    (root / "ca.pem").write_text(
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----\n"
    )
    out = exposed(root, _cas_in(root))
    assert leaks(plants, out) == {}
    show = run_cas("show", "repo", "--json", cwd=root)
    entries = {e["path"]: e for e in json.loads(show.out)["entries"]}
    assert (
        entries["urllib_request.py"]["digest"]
        and "secret" not in entries["urllib_request.py"]["reason"]
    )
    assert entries["ca.pem"]["digest"]
    # Stored whole: the entry's blob is the file's bytes, nothing cut.
    assert entries["mcp_types.py"]["digest"] == str(Digest.of((issue21 + "\n").encode()))
    # A redacted file is kept, marked, and listed in the report like a withheld one.
    redacted = [e for e in entries.values() if "secrets redacted" in (e["reason"] or "")]
    assert len(redacted) >= 40
    report = json.loads(run_cas("pack", "--json", cwd=root).out)
    assert {r["path"] for r in report["redacted"]} == {e["path"] for e in redacted}
    # The file whose name holds a token is left out, and the note shows its path cut.
    assert not any("backup/" in p for p in entries)
    assert any("left out: its path holds a secret" in n["reason"] for n in report["notes"])
    shutil.rmtree(root / ".cas")
