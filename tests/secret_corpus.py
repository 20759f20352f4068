"""Planted secrets: a repository of realistic files with secrets in many forms, and where each is.

    python tests/secret_corpus.py DIR [--seed N] [--heldout]

`plant(root, seed, heldout=False)` writes one file per form (a credential in the syntax of a
language, a config format, a shell line, a notebook, an encoding) and returns a `Plant` per
secret: the form's name, the file, and the *needles*, the strings whose presence anywhere in a
store or a render means the secret leaked (the value, and its encoded form where the file holds
it encoded). Every value is drawn from the seeded generator, so each is unique and the same seed
gives the same corpus. The held-out corpus (`heldout=True`) uses other templates for its forms:
the scanner is tuned against the default corpus and only measured against the held-out one.

Values are assembled at run time: this file holds no string a secret scanner flags.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Plant:
    form: str
    path: str
    needles: tuple[str, ...]  # any 8+ character piece of one of these found anywhere is a leak


class Values:
    """Random secret values; every one is new."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, alphabet: str, n: int) -> str:
        wanted = [
            c for c in (string.digits, string.ascii_uppercase, "abcdef") if set(c) & set(alphabet)
        ]
        while True:
            s = "".join(self.rng.choice(alphabet) for _ in range(n))
            # A generated secret mixes classes; retry the rare draw that does not.
            if n < 8 or all(set(c) & set(s) for c in wanted):
                return s

    def password(self, n: int = 16, symbols: str = "#%^*!+") -> str:
        return self.pick(ALNUM, n - 3) + self.rng.choice(symbols) + self.pick(string.digits, 2)

    def b64(self, n: int) -> str:
        return self.pick(ALNUM + "+/", n)

    def human(self, words: tuple[str, ...], symbols: str = "!#$&*?") -> str:
        """A password a person makes to satisfy a policy: a word, a year and a symbol."""
        return (
            self.rng.choice(words) + str(self.rng.randrange(2010, 2027)) + self.rng.choice(symbols)
        )

    def phrase(self, first: tuple[str, ...], second: tuple[str, ...]) -> str:
        """A password of two lowercase words run together."""
        return self.rng.choice(first) + self.rng.choice(second)

    def pem_body(self, lines: int = 6) -> list[str]:
        return ["MII" + self.pick(ALNUM + "+/", 61)] + [
            self.pick(ALNUM + "+/", 64) for _ in range(lines - 1)
        ]


def _pem(label: str, body: list[str], nl: str = "\n") -> str:
    begin = "-----BEGIN " + label + "PRIVATE" + " KEY-----"
    end = "-----END " + label + "PRIVATE" + " KEY-----"
    return nl.join([begin, *body, end])


Form = Callable[[Values, str], tuple[str, bytes, tuple[str, ...]]]
FORMS: dict[str, Form] = {}
HELDOUT: dict[str, Form] = {}
HELDOUT2: dict[str, Form] = {}
HELDOUT3: dict[str, Form] = {}
# The tuned corpus, the first held-out corpus, a second held-out corpus written after the
# scanner's precision work, and a third written with issue 21's rules, before they were run on
# it (each held-out corpus measured, never tuned on).
CORPORA = {"tuned": FORMS, "held-out": HELDOUT, "held-out-2": HELDOUT2, "held-out-3": HELDOUT3}


def form(name: str, *, heldout: bool | str = False) -> Callable[[Form], Form]:
    corpus = "held-out" if heldout is True else heldout or "tuned"

    def register(fn: Form) -> Form:
        CORPORA[corpus][name] = fn
        return fn

    return register


def simple(
    name: str,
    path: str,
    template: str,
    make: Callable[[Values], str],
    *,
    heldout: bool | str = False,
) -> None:
    """A form whose file is ``template`` with ``{v}`` replaced by one value."""

    def build(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
        v = make(vals)
        # A URL's public head is not the secret: the needle is what follows the last "/".
        needle = v.rsplit("/", 1)[1] if v.startswith("https://") else v
        return path.format(tag=tag), template.replace("{v}", v).encode(), (needle,)

    form(name, heldout=heldout)(build)


def tok(prefix: str, alphabet: str, n: int) -> Callable[[Values], str]:
    return lambda vals: prefix + vals.pick(alphabet, n)


def pw(n: int = 16, symbols: str = "#%^*!+") -> Callable[[Values], str]:
    return lambda vals: vals.password(n, symbols)


P = "pass" + "word"
GH = "gh" + "p_"
AK = "AK" + "IA"

# --- the tuned corpus -----------------------------------------------------------------------------

simple(
    "python assignment", "app/settings_{tag}.py", f'DEBUG = False\nDB_{P.upper()} = "{{v}}"\n', pw()
)
simple("python kwarg", "app/client_{tag}.py", f"conn = connect(host='db', {P}='{{v}}')\n", pw())
simple("go var", "cmd/{tag}/main.go", f'package main\n\nvar db{P.title()} string = "{{v}}"\n', pw())
simple(
    "go short",
    "pkg/{tag}/db.go",
    'func f() {\n\tapiToken := "{v}"\n\t_ = apiToken\n}\n',
    tok("", ALNUM, 32),
)
simple(
    "java field",
    "src/{tag}/Db.java",
    f'class Db {{ private static final String DB_{P.upper()} = "{{v}}"; }}\n',
    pw(),
)
simple("csharp", "src/{tag}/Cfg.cs", 'public const string ApiKey = "{v}";\n', tok("", ALNUM, 32))
simple("rust const", "src/{tag}.rs", 'const API_TOKEN: &str = "{v}";\n', tok("", ALNUM, 40))
simple("ruby", "config/{tag}.rb", f"config.{P} = '{{v}}'\n", pw())
simple("kotlin", "app/{tag}/K.kt", 'val apiSecret: String = "{v}"\n', tok("", ALNUM, 28))
simple("swift", "ios/{tag}/K.swift", 'let clientSecret = "{v}"\n', tok("", ALNUM, 28))
simple(
    "shell export", "scripts/{tag}.sh", "#!/bin/sh\nexport SERVICE_TOKEN={v}\n", tok("", ALNUM, 30)
)
simple("yaml", "deploy/{tag}.yaml", f"db:\n  host: db\n  {P}: {{v}}\n", pw())
simple("ini", "conf/{tag}.ini", f"[db]\nuser = app\n{P} = {{v}}\n", pw())
simple("properties", "conf/{tag}.properties", f"spring.datasource.{P}={{v}}\n", pw())
simple("toml", "conf/{tag}.toml", '[api]\nsecret_key = "{v}"\n', tok("", ALNUM, 40))
simple("json", "conf/{tag}.json", '{"service": {"api_key": "{v}"}}\n', tok("", ALNUM, 32))
simple(
    "jdbc url",
    "conf/{tag}.conf",
    f"url=jdbc:postgresql://db/app?user=app&{P}={{v}}\n",
    pw(16, "#%^*!"),
)
simple(
    "url password",
    "conf/{tag}.env.sh",
    "DATABASE_URL=postgres://app:{v}@db.internal:5432/app\n",
    pw(16, "^*!"),
)
simple(
    "url password slash",
    "conf/{tag}_redis.txt",
    "redis://default:{v}@cache:6379\n",
    lambda vals: vals.pick(ALNUM, 8) + "/" + vals.pick(ALNUM, 8),
)
simple(
    "dotnet connection string",
    "web/{tag}.config",
    '<connectionStrings><add name="db" '
    f'connectionString="Server=db;User Id=sa;{P.title()}={{v}};"/></connectionStrings>\n',
    pw(16, "#%^*!"),
)
simple(
    "webconfig value",
    "web/{tag}.Web.config",
    '<appSettings>\n  <add key="ApiSecret" value="{v}" />\n</appSettings>\n',
    tok("", ALNUM, 30),
)
simple(
    "maven",
    "maven/{tag}/settings.xml",
    f"<servers><server><id>r</id><username>u</username><{P}>{{v}}</{P}></server></servers>\n",
    pw(),
)
simple("php define", "wp/{tag}-config.php", f"<?php\ndefine('DB_{P.upper()}', '{{v}}');\n", pw())
simple("powershell", "ps/{tag}.ps1", f'${P} = "{{v}}"\n', pw())
simple(
    "dockerfile env",
    "docker/{tag}/Dockerfile",
    "FROM python:3.12\nENV API_KEY {v}\n",
    tok("", ALNUM, 32),
)
simple(
    "dockerfile arg",
    "docker/{tag}/Dockerfile.dev",
    "FROM node:20\nARG NPM_TOKEN=" + "{v}\n",
    tok("", ALNUM, 36),
)
simple(
    "curl -u",
    "scripts/{tag}_curl.sh",
    "curl -u deploy:{v} https://ci.internal/api\n",
    pw(14, "^*!+"),
)
simple(
    "mysql -p", "scripts/{tag}_db.sh", "mysqldump -u root -p{v} app > dump.sql\n", pw(14, "^*!+")
)
simple(
    "basic header",
    "http/{tag}.http",
    "GET /api\nAuthorization: Basic {v}\n",
    lambda vals: base64.b64encode(("svc:" + vals.password()).encode()).decode(),
)
simple(
    "bearer header",
    "http/{tag}_b.http",
    "GET /api\nAuthorization: Bearer {v}\n",
    tok("", ALNUM + "-_", 40),
)
simple(
    "aws key id",
    "aws/{tag}.py",
    'client = boto3.client("s3", aws_access_key_id="{v}")\n',
    lambda vals: AK + vals.pick(string.ascii_uppercase + string.digits, 16),
)
simple(
    "aws secret",
    "aws/{tag}.cfg",
    "[default]\naws_secret_access_key = {v}\n",
    lambda vals: vals.b64(40),
)
simple(
    "github token",
    "ci/{tag}.yml",
    "steps:\n  - run: gh auth login --with-token <<< {v}\n",
    tok(GH, ALNUM, 36),
)
simple("gitlab token", "ci/{tag}.gitlab.txt", "token {v}\n", tok("glpat" + "-", ALNUM, 20))
simple(
    "slack bot",
    "bots/{tag}.js",
    "const slack = new WebClient('{v}');\n",
    lambda vals: (
        "xox"
        + "b-"
        + vals.pick(string.digits, 12)
        + "-"
        + vals.pick(string.digits, 12)
        + "-"
        + vals.pick(ALNUM, 24)
    ),
)
simple(
    "slack app",
    "bots/{tag}_app.js",
    "const appToken = '{v}';\n",
    lambda vals: (
        "xa"
        + "pp-1-A"
        + vals.pick(string.ascii_uppercase + string.digits, 10)
        + "-"
        + vals.pick(string.digits, 13)
        + "-"
        + vals.pick(HEX, 64)
    ),
)
simple(
    "slack webhook",
    "bots/{tag}_hook.txt",
    "{v}\n",
    lambda vals: (
        "https://hooks."
        + "slack.com/services/T"
        + vals.pick(string.ascii_uppercase + string.digits, 9)
        + "/B"
        + vals.pick(string.ascii_uppercase + string.digits, 9)
        + "/"
        + vals.pick(ALNUM, 24)
    ),
)
simple("stripe test", "pay/{tag}.rb", "Stripe.api_key = '{v}'\n", tok("sk" + "_test_", ALNUM, 24))
simple("stripe restricted", "pay/{tag}_r.txt", "key: {v}\n", tok("rk" + "_live_", ALNUM, 24))
simple(
    "sendgrid",
    "mail/{tag}.py",
    "sg = SendGridAPIClient('{v}')\n",
    lambda vals: "SG." + vals.pick(ALNUM, 22) + "." + vals.pick(ALNUM + "-_", 43),
)
simple("shopify", "shop/{tag}.txt", "{v}\n", tok("shp" + "at_", HEX, 32))
simple(
    "digitalocean",
    "infra/{tag}.tf",
    'provider "digitalocean" {\n  token = "{v}"\n}\n',
    tok("dop" + "_v1_", HEX, 64),
)
simple(
    "telegram",
    "bots/{tag}_tg.py",
    "bot = telebot.TeleBot('{v}')\n",
    lambda vals: vals.pick(string.digits, 10) + ":AA" + vals.pick(ALNUM + "_-", 33),
)
simple(
    "discord webhook",
    "bots/{tag}_dc.txt",
    "{v}\n",
    lambda vals: (
        "https://discord.com/api/"
        + "webhooks/"
        + vals.pick(string.digits, 18)
        + "/"
        + vals.pick(ALNUM + "_-", 68)
    ),
)
simple("huggingface", "ml/{tag}.py", "login('{v}')\n", tok("hf" + "_", string.ascii_letters, 34))
simple(
    "pypi",
    "release/{tag}.pypirc",
    f"[pypi]\nusername = __token__\n{P} = {{v}}\n",
    lambda vals: "pypi-" + "AgEIcHlwaS5vcmc" + vals.pick(ALNUM + "-_", 70),
)
simple(
    "npm", "web/{tag}.npmrc", "//registry.npmjs.org/:_authToken={v}\n", tok("np" + "m_", ALNUM, 36)
)
simple(
    "openai",
    "ml/{tag}_oa.py",
    "client = OpenAI(api_key='{v}')\n",
    tok("sk" + "-proj-", ALNUM + "_-", 48),
)
simple(
    "anthropic",
    "ml/{tag}_an.ts",
    "const c = new Anthropic({ apiKey: '{v}' });\n",
    lambda vals: "sk" + "-ant-api03-" + vals.pick(ALNUM + "_-", 93) + "AA",
)
simple("google api key", "maps/{tag}.js", "const k = '{v}';\n", tok("AI" + "za", ALNUM + "_-", 35))
simple(
    "jwt",
    "auth/{tag}.txt",
    "token={v}\n",
    lambda vals: (
        "ey"
        + "J"
        + vals.pick(ALNUM, 20)
        + ".ey"
        + "J"
        + vals.pick(ALNUM, 40)
        + "."
        + vals.pick(ALNUM + "-_", 43)
    ),
)
simple(
    "azure account key",
    "azure/{tag}.txt",
    "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={v};EndpointSuffix=core.windows.net\n",
    lambda vals: vals.b64(86) + "==",
)
simple("twilio token", "sms/{tag}.py", "TWILIO_AUTH_TOKEN = '{v}'\n", tok("", HEX, 32))
simple("datadog", "obs/{tag}.yaml", "datadog:\n  api_key: {v}\n", tok("", HEX, 32))
simple(
    "heroku",
    "ops/{tag}.sh",
    "export HEROKU_API_KEY={v}\n",
    lambda vals: "-".join(vals.pick(HEX, n) for n in (8, 4, 4, 4, 12)),
)
simple("mailgun", "mail/{tag}_mg.txt", "{v}\n", tok("key" + "-", HEX, 32))
simple(
    "bare secret in yaml list",
    "k8s/{tag}_env.yaml",
    "env:\n  - name: DB_PASSWORD\n    value: {v}\n",
    pw(),
)
simple("env.production", "config/env.production", f"DB_{P.upper()}=easy{{v}}\n", pw())


@form("private key file")
def _pem_file(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body()
    return f"keys/{tag}/server.pem", (_pem("RSA ", body) + "\n").encode(), tuple(body)


@form("private key in source")
def _pem_source(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body()
    text = (
        "KEY = (\n" + "".join(f'    "{line}\\n"\n' for line in _pem("", body).split("\n")) + ")\n"
    )
    return f"src/{tag}_key.py", text.encode(), tuple(body)


@form("openssh key")
def _openssh(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = ["b3BlbnNzaC1rZXktdjEAAAAA" + vals.pick(ALNUM + "+/", 46)] + [
        vals.pick(ALNUM + "+/", 70) for _ in range(4)
    ]
    return f"deploy/{tag}_deploy_key", (_pem("OPENSSH ", body) + "\n").encode(), tuple(body)


@form("gcp service account")
def _gcp(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body()
    doc = {
        "type": "service_account",
        "project_id": "p",
        "private_key_id": vals.pick(HEX, 40),
        "private_key": _pem("", body) + "\n",
        "client_email": "x@p.iam.gserviceaccount.com",
    }
    return f"gcp/{tag}-sa.json", json.dumps(doc, indent=2).encode(), tuple(body)


@form("notebook assignment")
def _notebook(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password()
    cell = {"cell_type": "code", "metadata": {}, "source": ["import db\n", f'{P} = "{v}"\n']}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return f"notebooks/{tag}.ipynb", json.dumps(nb, indent=1).encode(), (v,)


@form("notebook pem")
def _notebook_pem(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body()
    cell = {"cell_type": "code", "source": [f"key = '''{_pem('RSA ', body)}'''\n"]}
    nb = {"cells": [cell], "nbformat": 4}
    return f"notebooks/{tag}_key.ipynb", json.dumps(nb).encode(), tuple(body)


@form("utf-16 powershell")
def _utf16(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password()
    text = f'# deploy\r\n${P} = "{v}"\r\n'
    return f"ps/{tag}_u16.ps1", text.encode("utf-16"), (v, v.encode("utf-16-le").decode("latin-1"))


@form("base64 credentials")
def _b64(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password()
    enc = base64.b64encode(json.dumps({"user": "svc", P: v}).encode()).decode()
    return f"k8s/{tag}_blob.txt", f"config_blob: {enc}\n".encode(), (v, enc)


@form("kubeconfig client key")
def _kubeconfig(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body()
    enc = base64.b64encode((_pem("RSA ", body) + "\n").encode()).decode()
    text = f"users:\n- name: admin\n  user:\n    client-key-data: {enc}\n"
    return f"kube/{tag}.kubeconfig", text.encode(), (*body, enc)


@form("putty key")
def _ppk(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    priv = [vals.pick(ALNUM + "+/", 64) for _ in range(3)]
    text = (
        "PuTTY-User-Key-File-" + "3: ssh-rsa\nEncryption: none\nComment: k\nPublic-Lines: 1\n"
        + vals.pick(ALNUM, 64) + "\nPrivate-Lines: 3\n" + "\n".join(priv)
        + "\nPrivate-MAC: " + vals.pick(HEX, 64) + "\n"
    )  # fmt: skip
    return f"putty/{tag}/key.txt", text.encode(), tuple(priv)


@form("token in file name")
def _file_name(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = GH + vals.pick(ALNUM, 36)
    return f"backup/{tag}/{v}.txt", b"nothing secret inside\n", (v,)


# --- the forms issue 21 found leaking ---------------------------------------------------------

SEASONS = ("Summer", "Winter", "Autumn", "Spring", "Sunshine", "Dragon", "Falcon", "Harbor")
FIRST_WORDS = ("root", "admin", "blue", "lucky", "silver", "mango", "ocean", "maple")
SECOND_WORDS = ("pass", "cloud", "storm", "stone", "river")

simple(
    "twilio api key sid",
    "sms/{tag}_client.py",
    'from twilio.rest import Client\n\nclient = Client("{v}", "x")\n',
    tok("S" + "K", HEX, 32),
)
simple(
    "yaml human password",
    "deploy/{tag}/db.yaml",
    f"db:\n  user: app\n  {P}: {{v}}\n",
    lambda vals: vals.human(SEASONS),
)
simple(
    "url password of words",
    "conf/{tag}_db.py",
    'DATABASE_URL = "mysql://root:{v}@localhost:3306/app"\n',
    lambda vals: vals.phrase(FIRST_WORDS, SECOND_WORDS),
)
simple(
    "libpq dsn with more keys",
    "db/{tag}/conn.py",
    f'conn = psycopg2.connect("host=db user=app {P}={{v}} dbname=app")\n',
    pw(),
)
simple(
    "password in a comment",
    "scripts/{tag}/backup.sh",
    f"#!/bin/sh\n# the staging admin {P} is {{v}}\npg_dump app > app.sql\n",
    pw(),
)
simple("readme login", "docs/{tag}/README.md", "## Staging\n\nLogin: admin / {v}\n", pw())


@form("base64 of a key id and secret")
def _b64_aws(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    key_id = AK + vals.pick(string.ascii_uppercase + string.digits, 16)
    secret = vals.b64(40)
    enc = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
    return f"ops/{tag}/registry.yaml", f"registry:\n  blob: {enc}\n".encode(), (enc, key_id, secret)


@form("aws secret with EXAMPLE in it")
def _aws_example(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    key_id = AK + vals.pick(string.ascii_uppercase + string.digits, 16)
    secret = vals.b64(26) + "EXAM" + "PLE" + vals.b64(7)
    text = f'AWS_ACCESS_KEY_ID = "{key_id}"\nAWS_SECRET_ACCESS_KEY = "{secret}"\n'
    return f"aws/{tag}_keys.py", text.encode(), (key_id, secret)


# --- the held-out corpus: other templates, other places -------------------------------------------

simple(
    "python dict",
    "svc/{tag}.py",
    "CONFIG = {'host': 'db', 'db_pass': '{v}'}\n",
    pw(18),
    heldout=True,
)
simple(
    "js object",
    "web/{tag}.mjs",
    "export default { clientSecret: `{v}` };\n",
    tok("", ALNUM, 30),
    heldout=True,
)
simple(
    "typescript class",
    "web/{tag}.ts",
    "class S { private readonly authToken = '{v}'; }\n",
    tok("", ALNUM, 36),
    heldout=True,
)
simple("c define", "native/{tag}.h", '#define API_KEY "{v}"\n', tok("", ALNUM, 32), heldout=True)
simple("cpp", "native/{tag}.cc", 'static const char* kPassword = "{v}";\n', pw(), heldout=True)
simple("scala", "jvm/{tag}.scala", 'val dbPassword = "{v}"\n', pw(), heldout=True)
simple("lua", "game/{tag}.lua", 'local api_secret = "{v}"\n', tok("", ALNUM, 30), heldout=True)
simple("perl", "cgi/{tag}.pl", "my $password = '{v}';\n", pw(), heldout=True)
simple("r", "stats/{tag}.R", 'Sys.setenv(API_TOKEN = "{v}")\n', tok("", ALNUM, 30), heldout=True)
simple(
    "terraform",
    "tf/{tag}.tf",
    'resource "x" "y" {\n  admin_password = "{v}"\n}\n',
    pw(),
    heldout=True,
)
simple(
    "ansible",
    "ansible/{tag}.yml",
    '- hosts: all\n  vars:\n    mysql_root_password: "{v}"\n',
    pw(),
    heldout=True,
)
simple(
    "helm values", "charts/{tag}/values.yaml", "auth:\n  rootPassword: {v}\n", pw(), heldout=True
)
simple(
    "docker compose",
    "compose/{tag}.yml",
    "services:\n  db:\n    environment:\n      - POSTGRES_PASSWORD={v}\n",
    pw(),
    heldout=True,
)
simple("sql", "db/{tag}.sql", "CREATE USER app IDENTIFIED BY '{v}';\n", pw(), heldout=True)
simple(
    "mongodb url",
    "svc/{tag}.go",
    'const uri = "mongodb+srv://admin:{v}@cluster0.x.mongodb.net/db"\n',
    pw(16, "^*!"),
    heldout=True,
)
simple(
    "amqp url",
    "svc/{tag}_q.ex",
    'config :app, url: "amqp://svc:{v}@rabbit:5672"\n',
    pw(16, "^*!"),
    heldout=True,
)
simple(
    "git credentials url",
    "ci/{tag}_clone.sh",
    "git clone https://bot:{v}@github.com/org/repo.git\n",
    tok(GH, ALNUM, 36),
    heldout=True,
)
simple(
    "redis-cli -a",
    "ops/{tag}_r.sh",
    "redis-cli -h cache -a {v} PING\n",
    pw(14, "^*!+"),
    heldout=True,
)
simple(
    "sshpass", "ops/{tag}_s.sh", "sshpass -p {v} ssh deploy@host\n", pw(14, "^*!+"), heldout=True
)
simple(
    "--password flag",
    "ops/{tag}_p.sh",
    "psql --host db --password={v}\n",
    pw(14, "^*!+"),
    heldout=True,
)
simple(
    "x-api-key header",
    "http/{tag}.py",
    "headers = {'X-Api-Key': '{v}'}\n",
    tok("", ALNUM, 32),
    heldout=True,
)
simple(
    "bearer in js",
    "web/{tag}_f.js",
    "fetch(u, { headers: { Authorization: 'Bearer {v}' } });\n",
    tok("", ALNUM, 40),
    heldout=True,
)
simple(
    "github fine-grained",
    "ci/{tag}_pat.txt",
    "GH_PAT: {v}\n",
    lambda vals: "github" + "_pat_" + vals.pick(ALNUM, 22) + "_" + vals.pick(ALNUM, 59),
    heldout=True,
)
simple(
    "slack user token",
    "bots/{tag}_u.py",
    "SLACK = '{v}'\n",
    lambda vals: (
        "xox"
        + "p-"
        + vals.pick(string.digits, 11)
        + "-"
        + vals.pick(string.digits, 12)
        + "-"
        + vals.pick(string.digits, 13)
        + "-"
        + vals.pick(HEX, 32)
    ),
    heldout=True,
)
simple(
    "stripe live",
    "pay/{tag}.php",
    "\\Stripe\\Stripe::setApiKey('{v}');\n",
    tok("sk" + "_live_", ALNUM, 30),
    heldout=True,
)
simple("gitlab deploy", "ci/{tag}_gl.txt", "{v}\n", tok("gldt" + "-", ALNUM, 20), heldout=True)
simple(
    "aws session",
    "aws/{tag}_s.sh",
    "export AWS_ACCESS_KEY_ID={v}\n",
    lambda vals: "AS" + "IA" + vals.pick(string.ascii_uppercase + string.digits, 16),
    heldout=True,
)
simple(
    "google oauth",
    "gcp/{tag}_o.json",
    '{"web": {"client_secret": "{v}"}}\n',
    tok("GOC" + "SPX-", ALNUM + "_-", 28),
    heldout=True,
)
simple(
    "npm legacy",
    "web/{tag}_legacy.npmrc",
    "_auth = {v}\n",
    lambda vals: base64.b64encode(("ci:" + vals.password()).encode()).decode(),
    heldout=True,
)
simple(
    "properties token",
    "conf/{tag}_app.properties",
    "app.jwt.signing-key={v}\n",
    tok("", ALNUM, 48),
    heldout=True,
)
simple(
    "markdown doc",
    "docs/{tag}.md",
    "Use this for staging:\n\n```\nAPI_SECRET={v}\n```\n",
    tok("", ALNUM, 32),
    heldout=True,
)


@form("ec key in yaml", heldout=True)
def _ec_yaml(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body(3)
    text = "tls:\n  key: |\n" + "".join(
        "    " + line + "\n" for line in _pem("EC ", body).split("\n")
    )
    return f"charts/{tag}/tls.yaml", text.encode(), tuple(body)


@form("notebook output", heldout=True)
def _nb_output(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = tok("", ALNUM, 32)(vals)
    cell = {"cell_type": "code", "outputs": [{"text": [f"api_token: {v}\n"]}], "source": []}
    return f"nb/{tag}.ipynb", json.dumps({"cells": [cell]}).encode(), (v,)


@form("utf-16 be config", heldout=True)
def _utf16be(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password()
    data = "\ufeff[db]\nPassword=" + v + "\n"
    return f"win/{tag}.ini", data.encode("utf-16-be"), (v, v.encode("utf-16-be").decode("latin-1"))


@form("base64 env", heldout=True)
def _b64_env(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password()
    enc = base64.b64encode(f"DB_PASSWORD={v}\n".encode()).decode()
    return f"ops/{tag}.b64", f"{enc}\n".encode(), (v, enc)


@form("json escaped url", heldout=True)
def _json_url(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password(16, "^*!")
    text = json.dumps({"dsn": f"postgres://u:{v}@db/x"}).replace("/", "\\/")
    return f"conf/{tag}_dsn.json", text.encode(), (v,)


@form("token in folder name", heldout=True)
def _dir_name(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = "xox" + "b-" + vals.pick(string.digits, 12) + "-" + vals.pick(ALNUM, 24)
    return f"cache/{v}/{tag}.json", b"{}\n", (v,)


simple("prod.env", "deploy/prod.env", "SECRET=plain{v}\n", pw(), heldout=True)


# --- the second held-out corpus: written after the precision work, measured, never tuned on -----

H2 = "held-out-2"


def pw2(n: int) -> Callable[[Values], str]:
    """A generated password with a wider set of symbols than the first corpora use."""
    return lambda vals: vals.password(n, "#%^*!+-_~")


simple(
    "terraform provider block",
    "infra/{tag}/providers.tf",
    'provider "aws" {\n  region     = "eu-west-1"\n  secret_key = "{v}"\n}\n',
    lambda vals: vals.b64(40),
    heldout=H2,
)
simple(
    "helm values nested auth",
    "charts/{tag}/values-prod.yaml",
    'postgresql:\n  auth:\n    username: app\n    password: "{v}"\n    database: app\n',
    pw2(20),
    heldout=H2,
)
simple(
    "github actions job env",
    ".github/workflows/{tag}.yml",
    "jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      DEPLOY_TOKEN: {v}\n"
    "    steps:\n      - run: ./deploy.sh\n",
    tok("", ALNUM, 40),
    heldout=H2,
)
simple(
    "pypirc private index",
    "release/{tag}/.pypirc",
    "[distutils]\nindex-servers =\n    internal\n\n[internal]\n"
    "repository = https://pypi.corp.internal/\nusername = deploy\npassword = {v}\n",
    pw2(22),
    heldout=H2,
)
simple(
    "java properties short name",
    "src/main/resources/{tag}.properties",
    "db.url=jdbc:mysql://db.prod:3306/shop\ndb.user=shop\ndb.pass={v}\n",
    pw2(18),
    heldout=H2,
)
simple(
    "spring application.yml",
    "svc/{tag}/src/main/resources/application.yml",
    "spring:\n  datasource:\n    url: jdbc:postgresql://pg:5432/orders\n"
    "    username: orders\n    password: '{v}'\n",
    pw2(16),
    heldout=H2,
)
simple(
    "appsettings connection string",
    "web/{tag}/appsettings.Production.json",
    '{\n  "ConnectionStrings": {\n    "Default": '
    '"Server=sql.prod;Database=Shop;User Id=shop;Password={v};"\n  }\n}\n',
    lambda vals: vals.pick(ALNUM, 14) + vals.rng.choice("#%^*!") + vals.pick(string.digits, 3),
    heldout=H2,
)
simple(
    "appsettings signing key",
    "web/{tag}/appsettings.json",
    '{\n  "Jwt": {\n    "Issuer": "shop",\n    "SigningKey": "{v}"\n  }\n}\n',
    tok("", ALNUM, 44),
    heldout=H2,
)
simple(
    "go struct literal",
    "internal/{tag}/client.go",
    'package {tag}\n\nvar cfg = Config{\n\tBaseURL: "https://api.vendor.io",\n'
    '\tAPIKey:  "{v}",\n}\n'.replace("{tag}", "cfg"),
    tok("", ALNUM, 32),
    heldout=H2,
)
simple(
    "rust byte string const",
    "crates/{tag}/src/keys.rs",
    'pub const SIGNING_SECRET: &[u8] = b"{v}";\n',
    tok("", ALNUM, 40),
    heldout=H2,
)
simple(
    "swift static let",
    "ios/{tag}/Keys.swift",
    'enum Keys {\n    static let backendSecret = "{v}"\n}\n',
    tok("", ALNUM, 32),
    heldout=H2,
)
simple(
    "kotlin const val",
    "android/{tag}/Api.kt",
    'object Api {\n    private const val API_TOKEN = "{v}"\n}\n',
    tok("", ALNUM, 36),
    heldout=H2,
)
simple(
    "inline env before a command",
    "scripts/{tag}/migrate.sh",
    "#!/usr/bin/env bash\nset -euo pipefail\nDB_PASSWORD='{v}' ./bin/migrate up\n",
    pw2(18),
    heldout=H2,
)
simple(
    "libpq keyword dsn",
    "db/{tag}/connect.sql",
    '-- run with psql\n\\connect "host=pg.prod dbname=app user=app password={v}"\n',
    lambda vals: vals.pick(ALNUM, 15) + vals.rng.choice("^*!") + vals.pick(string.digits, 2),
    heldout=H2,
)
simple(
    "compose environment map",
    "deploy/{tag}/docker-compose.yml",
    "services:\n  api:\n    image: shop/api\n    environment:\n      REDIS_PASSWORD: {v}\n",
    pw2(20),
    heldout=H2,
)
simple(
    "kubernetes secret stringData",
    "k8s/{tag}/secret.yaml",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  API_SECRET: {v}\n",
    tok("", ALNUM, 32),
    heldout=H2,
)
simple(
    "php config array",
    "config/{tag}/database.php",
    "<?php\nreturn [\n    'mysql' => [\n        'username' => 'shop',\n"
    "        'password' => '{v}',\n    ],\n];\n",
    pw2(18),
    heldout=H2,
)
simple(
    "elixir repo config",
    "config/{tag}_prod.exs",
    'config :shop, Shop.Repo,\n  username: "shop",\n  password: "{v}",\n  pool_size: 10\n',
    pw2(20),
    heldout=H2,
)
simple(
    "ini single-word secret",
    "conf/{tag}/stripe.ini",
    "[webhook]\nendpoint = /hooks/stripe\nsecret = {v}\n",
    tok("", ALNUM, 32),
    heldout=H2,
)
simple(
    "gitlab ci variables",
    "ci/{tag}/.gitlab-ci.yml",
    'variables:\n  SONAR_TOKEN: "{v}"\nstages: [test]\n',
    tok("", HEX, 40),
    heldout=H2,
)
simple(
    "curl custom auth header",
    "scripts/{tag}/ping.sh",
    'curl -s -H "X-Auth-Token: {v}" https://status.internal/api/ping\n',
    tok("", ALNUM, 36),
    heldout=H2,
)
simple(
    "azure sas url",
    "ops/{tag}/backup.ps1",
    "$dest = 'https://acct.blob.core.windows.net/backups?sv=2024-05-04&se=2031-01-01T00:00:00Z"
    "&sr=c&sp=rw&sig={v}'\n",
    lambda vals: vals.pick(ALNUM + "%", 43) + "%3D",
    heldout=H2,
)
simple(
    "readme curl basic auth",
    "docs/{tag}/README.md",
    "## Grafana\n\n```sh\ncurl -u admin:{v} https://grafana.internal/api/dashboards\n```\n",
    pw2(16),
    heldout=H2,
)
simple(
    "dockerfile index url",
    "images/{tag}/Dockerfile",
    "FROM python:3.12-slim\n"
    "RUN pip install --index-url https://__token__:{v}@pypi.corp.internal/simple shop\n",
    tok("", ALNUM + "-_", 40),
    heldout=H2,
)
simple(
    "vault token hcl",
    "infra/{tag}/vault.tf",
    'provider "vault" {\n  address = "https://vault.corp:8200"\n  token   = "{v}"\n}\n',
    lambda vals: "hvs." + vals.pick(ALNUM, 24),
    heldout=H2,
)
simple(
    "yaml anchor database.yml",
    "config/{tag}/database.yml",
    "default: &default\n  adapter: postgresql\n\nproduction:\n  <<: *default\n  password: {v}\n",
    pw2(18),
    heldout=H2,
)
simple(
    "csv credential table",
    "data/{tag}/service_accounts.csv",
    "service,username,password\nbilling,svc_billing,{v}\n",
    pw2(18),
    heldout=H2,
)
simple(
    "js fallback default",
    "server/{tag}/auth.js",
    "const jwtSecret = process.env.JWT_SECRET || '{v}';\n",
    tok("", ALNUM, 32),
    heldout=H2,
)
simple(
    "python requests auth tuple",
    "jobs/{tag}/sync.py",
    'resp = requests.get(URL, auth=("svc-sync", "{v}"))\n',
    pw2(18),
    heldout=H2,
)
simple(
    "npmrc scoped password",
    "web/{tag}/.npmrc",
    "@corp:registry=https://npm.corp.internal/\n//npm.corp.internal/:username=ci\n"
    "//npm.corp.internal/:_password={v}\n//npm.corp.internal/:always-auth=true\n",
    lambda vals: base64.b64encode(vals.password(18, "#%^*!").encode()).decode(),
    heldout=H2,
)


@form("kubernetes secret data", heldout=H2)
def _k8s_data(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.password(20, "#%^*!")
    enc = base64.b64encode(v.encode()).decode()
    text = f"apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n  db-password: {enc}\n"
    return f"k8s/{tag}/db-secret.yaml", text.encode(), (v, enc)


@form("terraform heredoc key", heldout=H2)
def _tf_heredoc(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    body = vals.pem_body(5)
    text = (
        'resource "tls_cert_request" "web" {\n  private_key_pem = <<EOT\n'
        + _pem("RSA ", body)
        + "\nEOT\n}\n"
    )
    return f"infra/{tag}/tls.tf", text.encode(), tuple(body)


@form("notebook output dict", heldout=H2)
def _nb_dict(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = vals.pick(ALNUM, 32)
    out = {"output_type": "execute_result", "data": {"text/plain": [f"{{'api_key': '{v}'}}"]}}
    cell = {"cell_type": "code", "source": ["settings"], "outputs": [out]}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return f"analysis/{tag}.ipynb", json.dumps(nb, indent=1).encode(), (v,)


@form("appsettings two secrets", heldout=H2)
def _appsettings_two(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    a, b = vals.pick(ALNUM, 40), vals.password(18, "#%^*!")
    text = json.dumps(
        {"Smtp": {"Host": "smtp.corp", "User": "noreply", "Password": b}, "Storage": {"Key": a}},
        indent=2,
    )
    return f"api/{tag}/appsettings.Staging.json", text.encode(), (a, b)


# --- the third held-out corpus: issue 21's classes in other forms, written before a run ---------

H3 = "held-out-3"
NAMES = ("Charlie", "Buster", "Jordan", "Phoenix", "Maverick", "Willow", "Ranger", "Cooper")
LEFT = ("green", "quiet", "brave", "amber", "cobalt", "copper", "velvet")
RIGHT = ("lake", "forest", "meadow", "harbor", "canyon", "garden")

simple(
    "twilio sid in json",
    "conf/{tag}/messaging.json",
    '{"messaging": {"sid": "{v}", "region": "us1"}}\n',
    tok("S" + "K", HEX, 32),
    heldout=H3,
)
simple(
    "twilio sid in a yaml list",
    "conf/{tag}/keys.yaml",
    "keys:\n  - {v}\n",
    lambda vals: "S" + "K" + vals.pick("0123456789ABCDEF", 32),
    heldout=H3,
)
simple(
    "properties human password",
    "src/main/resources/{tag}.properties",
    "mail.host=smtp.corp\nmail.password={v}\n",
    lambda vals: vals.human(NAMES),
    heldout=H3,
)
simple(
    "json human password",
    "conf/{tag}/smtp.json",
    '{"smtp": {"user": "noreply", "password": "{v}"}}\n',
    lambda vals: vals.human(NAMES, "%&*@"),
    heldout=H3,
)
simple(
    "toml human password",
    "conf/{tag}/app.toml",
    '[database]\nuser = "app"\npassword = "{v}"\n',
    lambda vals: vals.human(NAMES),
    heldout=H3,
)
simple(
    "amqp url of words",
    "svc/{tag}/queue.ex",
    'config :svc, broker: "amqp://svc:{v}@rabbit.internal:5672/"\n',
    lambda vals: vals.phrase(LEFT, RIGHT),
    heldout=H3,
)
simple(
    "ftp url of words",
    "scripts/{tag}/upload.sh",
    "curl -T build.zip ftp://deploy:{v}@files.corp.lan/upload/\n",
    lambda vals: vals.phrase(LEFT, RIGHT),
    heldout=H3,
)
simple(
    "smtp url of words in yaml",
    "deploy/{tag}/mailer.yaml",
    "mailer:\n  dsn: smtp://mailer:{v}@smtp.corp:587\n",
    lambda vals: vals.phrase(LEFT, RIGHT),
    heldout=H3,
)
simple(
    "shell variables before psql",
    "scripts/{tag}/restore.sh",
    "#!/bin/sh\nPGPASSWORD={v} PGUSER=app psql -h db -f dump.sql\n",
    pw(16, "#^*!+"),
    heldout=H3,
)
simple(
    "go dsn string",
    "internal/{tag}/db.go",
    'db, err := sql.Open("postgres",\n'
    '\t"dbname=shop user=shop password={v} host=pg sslmode=require")\n',
    pw(16, "#^*!+"),
    heldout=H3,
)
simple(
    "markdown prose password",
    "docs/{tag}/grafana.md",
    "# Grafana\n\nThe Grafana admin password is `{v}`.\n",
    pw(),
    heldout=H3,
)
simple(
    "sql comment prose",
    "db/{tag}/rotate.sql",
    "-- root password was {v} before the rotation\nALTER USER root;\n",
    pw(),
    heldout=H3,
)
simple(
    "js comment api token",
    "web/{tag}/client.js",
    "// NOTE: the API token is {v} (staging only)\nfetch(url);\n",
    tok("", ALNUM, 32),
    heldout=H3,
)
simple(
    "markdown credentials label",
    "docs/{tag}/ops.md",
    "## Access\n\n**Credentials:** ops / {v}\n",
    pw(),
    heldout=H3,
)
simple(
    "login with a note and backticks",
    "docs/{tag}/staging.md",
    "Default login (staging): `deploy` / `{v}`\n",
    pw(),
    heldout=H3,
)
simple(
    "yaml aws secret with EXAMPLE",
    "aws/{tag}/creds.yaml",
    "aws_secret_access_key: {v}\n",
    lambda vals: vals.b64(20) + "EXAM" + "PLE" + vals.b64(13),
    heldout=H3,
)
simple(
    "shell aws secret with EXAMPLE",
    "aws/{tag}/env.sh",
    "export AWS_SECRET_ACCESS_KEY={v}\n",
    lambda vals: "EXAM" + "PLE" + vals.b64(33),
    heldout=H3,
)


@form("base64 of a github token", heldout=H3)
def _b64_github(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = GH + vals.pick(ALNUM, 36)
    enc = base64.b64encode(v.encode()).decode()
    text = f"apiVersion: v1\nkind: ConfigMap\ndata:\n  gh: {enc}\n"
    return f"k8s/{tag}/cm.yaml", text.encode(), (enc, v)


@form("base64 of a slack token after text", heldout=H3)
def _b64_slack(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = "xox" + "b-" + vals.pick(string.digits, 12) + "-" + vals.pick(ALNUM, 24)
    enc = base64.b64encode(f"bot={v}\n".encode()).decode()
    return f"bots/{tag}/bundle.txt", f'slack_bundle = "{enc}"\n'.encode(), (enc, v)


@form("base64 of a stripe key", heldout=H3)
def _b64_stripe(vals: Values, tag: str) -> tuple[str, bytes, tuple[str, ...]]:
    v = "sk" + "_live_" + vals.pick(ALNUM, 24)
    enc = base64.b64encode(f"{{'key': '{v}'}}".encode()).decode()
    return f"pay/{tag}/blob.txt", f"{enc}\n".encode(), (enc, v)


# --- adversarial inputs: what a linear scan must get through quickly ------------------------------

# Each is about 5 MB of what the scan's rules look for, repeated: literals by the million, names
# without values, values without ends, escapes. `tests/test_secrets.py` bounds the scan's time on
# them; `bench/secrets_bench.py` prints it.
ADVERSARIAL = {
    "letters": b"a" * 5_000_000,
    "assignments": b"password=" * 560_000,
    "jwt-parts": b"eyJa." * 1_000_000,
    "unclosed-quotes": (b"secret = '" + b"x9" * 200) * 12_000,
    "pem-headers": b"-----BEGIN " * 450_000,
    "pem-labels": b"PRIVATE KEY" * 450_000,
    "url-parts": b"://a:" * 1_000_000,
    "base64-keywords": b"cGFzc3dvcmQ" * 450_000,
    "words": (b"token " * 10 + b"\n") * 80_000,
    "names-then-newlines": b"token:\n" * 700_000,
    "short-values": b"token: x\n" * 550_000,
    "escaped-pairs": b'\\"token\\": \\"x\\",' * 280_000,
    "escaped-newlines": b"token\\n" * 700_000,
}


# --- writing a corpus -----------------------------------------------------------------------------


def plant(
    root: Path, seed: int, *, heldout: bool = False, corpus: str | None = None
) -> list[Plant]:
    """Write every form's file of a corpus ("tuned", "held-out" or "held-out-2"; ``heldout``
    is short for "held-out") below ``root``; return where each secret is."""
    rng = random.Random(seed)
    vals = Values(rng)
    plants = []
    forms = CORPORA[corpus or ("held-out" if heldout else "tuned")]
    for name, build in sorted(forms.items()):
        tag = "".join(rng.choice(string.ascii_lowercase) for _ in range(6))
        path, data, needles = build(vals, tag)
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        plants.append(Plant(name, path, needles))
    return plants


def pieces(needle: str, n: int = 8) -> set[str]:
    """Every ``n``-character piece of ``needle``: a leak of any of them is a leak."""
    return {needle[i : i + n] for i in range(max(1, len(needle) - n + 1))}


def exposed(root: Path, cas: Callable[..., tuple[int, bytes, bytes]]) -> list[bytes]:
    """Everything a pack of ``root`` exposes: the report of ``cas pack --json`` and its stderr,
    every manifest, `cas show`, `cas render` in every format and mode, every blob in the store
    (decompressed), and the store's file itself (caches and keys). ``cas(*args)`` runs the
    command line in ``root`` and returns (exit code, stdout, stderr)."""
    from cas import Store

    out: list[bytes] = []
    code, stdout, stderr = cas("init", "--store-only")
    code, stdout, stderr = cas("pack", "--json")
    if code != 0:
        raise RuntimeError(f"cas pack failed: {stderr.decode(errors='replace')}")
    out += [stdout, stderr]
    code, stdout, stderr = cas("pack")  # the human report, from the caches this time
    out += [stdout, stderr]
    for manifest in sorted((root / "manifests").glob("*.pack")):
        out.append(manifest.read_bytes())
        name = manifest.name[: -len(".pack")]
        for args in (("show", name), ("show", name, "--json")):
            out += list(cas(*args)[1:])
        for fmt in ("markdown", "xml", "plain"):
            for mode in ("lite", "full"):
                out += list(cas("render", name, "--format", fmt, "--mode", mode)[1:])
            split = root.parent / f"split-{root.name}-{fmt}"
            cas("render", name, "--format", fmt, "--mode", "split", "-o", str(split))
            out += [p.read_bytes() for p in sorted(split.rglob("*")) if p.is_file()]
    with Store.at(root / ".cas", readonly=True) as store:
        out += [store.get(d) for d in store.iterate()]
    out += [p.read_bytes() for p in sorted((root / ".cas").rglob("*")) if p.is_file()]
    return out


def leaks(plants: list[Plant], exposed: list[bytes]) -> dict[str, list[str]]:
    """Per form, the needles of which some 8-character piece appears in what was exposed."""
    import ahocorasick_rs

    owners: dict[bytes, tuple[str, str]] = {}
    for p in plants:
        for needle in p.needles:
            for piece in pieces(needle):
                owners[piece.encode("latin-1")] = (p.form, needle)
    search = ahocorasick_rs.BytesAhoCorasick(list(owners))
    keys = list(owners)
    found: dict[str, list[str]] = {}
    for blob in exposed:
        for i, _s, _e in search.find_matches_as_indexes(blob, overlapping=True):
            form_name, needle = owners[keys[i]]
            if needle not in found.setdefault(form_name, []):
                found[form_name].append(needle)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--heldout", action="store_true")
    parser.add_argument("--corpus", choices=sorted(CORPORA))
    args = parser.parse_args(argv)
    for p in plant(args.dir, args.seed, heldout=args.heldout, corpus=args.corpus):
        print(f"{p.form:32} {p.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
