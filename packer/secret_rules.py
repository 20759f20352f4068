"""The secret rules: the shapes of credentials, and how to tell a written secret from code.

Two kinds of rule. A *token rule* knows a credential by its shape (a provider's prefix and
alphabet, a PEM header, a password in a URL) and is anchored at a literal every match holds. An
*assignment* is a value written next to a secret-sounding name (`password = "..."`, `<password>`,
`ENV API_KEY ...`, `define('DB_PASSWORD', '...')`); whether the value is a secret is judged from
the value itself: long and random enough, and not a placeholder or a documentation example
(`scott:tiger`, `p@ssw0rd`), a reference, a path, a template, a timestamp, an identifier, a
slug, a hex digest, base64 of readable text or a phrase of words. Some names say the value is
not a credential whatever it looks like: keys that look things up (`cache_key`), and names
that end in what is about a secret rather than the secret (`token_type`, `password_hash`).

Token shapes come from providers' documentation and the public rule lists of secret scanners;
the patterns and the judgement are this project's. Every pattern has bounded repetition only,
and runs only in a bounded window around a literal the prefilter found, so a scan is linear in
the size of its input whatever the input is.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from urllib.parse import unquote, unquote_to_bytes

import blake3

# --- judging a value ------------------------------------------------------------------------------

_PLACEHOLDER_WORDS = (
    "changeme",
    "change_me",
    "change-me",
    "placeholder",
    "your",
    "dummy",
    "sample",
    "redacted",
    "replace",
    "insert",
    "fake",
    "xxxx",
    "****",
    "....",
    "todo",
    "fixme",
    "notasecret",
    "not_a_secret",
    "not-a-secret",
    "<",
    ">",
    # A value that says what it is ("my-secret-key", "env-secret") was written by a person.
    "secret",
    "passw",
    "token",
    "apikey",
    "api-key",
    "api_key",
    "aws4_request",
    # a regular expression, not a value (and see `_REGEX_SYNTAX`)
    "(?",
    "[^",
    # Passwords that documentation and tutorials use as examples (Oracle's scott/tiger and the
    # like): written to be read, so they are no one's secret.
    "tiger",
    "hunter2",
    "letmein",
    "qwerty",
    "12345",
    "abc123",
    "foobar",
    "correcthorse",
)
# Letters people write as digits or symbols ("p@ssw0rd", "s3cr3t"): read back as letters before
# a value is compared with placeholder words or cut into words, but only between two letters,
# so a generated value keeps its digits.
_LEET = re.compile(r"(?<=[A-Za-z])[@4310$57!](?=[A-Za-z])")
_LEET_LETTERS = dict(zip("@4310$57!", "aaeiossti", strict=True))


# Only symbols when a value is cut into words: digits between letters are common in generated
# values, and reading them as letters would make pseudo-words of random ones.
_LEET_SYMBOLS = re.compile(r"(?<=[A-Za-z])[@$!](?=[A-Za-z])")


def unleet(value: str, *, digits: bool = True) -> str:
    """``value`` with the symbols (and, with ``digits``, the digits) that stand for letters
    read as those letters."""
    pattern = _LEET if digits else _LEET_SYMBOLS
    return pattern.sub(lambda m: _LEET_LETTERS[m.group()], value)


# Stored password hashes: what a user table keeps, not a password.
_HASH = re.compile(r"(?:pbkdf2|argon2|bcrypt|scrypt|sha\d+|md5|\$\d[a-z]?\$|\{[A-Z]+\})")
_TEMPLATE_MARKERS = ("{", "}", "%(", "$(", "${", "[[", "]]")
_REFERENCE_MARKERS = (
    "environ",
    "getenv",
    "process.env",
    "env[",
    "env(",
    "env.",
    "secrets.",
    "vault",
    "settings.",
    "config.",
    "params.",
)
_WEAK_DEFAULTS = frozenset(
    {
        "admin",
        "changeit",
        "guest",
        "pass",
        "passw0rd",
        "password",
        "postgres",
        "mysql",
        "redis",
        "root",
        "secret",
        "test",
        "user",
        "rabbitmq",
        "minio",
        "minioadmin",
        "oracle",
        "sa",
        "toor",
        "letmein",
        "hunter2",
    }
)
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
# A dotted name, with calls or subscripts by number or quoted name after its parts
# (`config.items[1].name`, `settings["db"].user`).
_DOTTED = re.compile(
    r"""[A-Za-z_$][\w$]*(?:\(\)|\[(?:\d{1,6}|"\w{1,64}"|'\w{1,64}')\])*"""
    r"""(?:(?:\.|::|->)[A-Za-z_$][\w$]*(?:\(\)|\[(?:\d{1,6}|"\w{1,64}"|'\w{1,64}')\])*)+"""
)
_HEX = re.compile(r"[0-9a-fA-F]+")
# Lowercase words joined by separators: a slug ("cached-sak", "my-process"), not a secret.
_SLUG = re.compile(r"[a-z]+(?:[-_.][a-z]+)+")
_HEX_GROUPS = re.compile(r"[0-9a-fA-F]+(?:[-:][0-9a-fA-F]+)+")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_BASE64_VALUE = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}")
_NUMBERISH = re.compile(r"[\d.,:/ +-]+")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.][\w.]+)?")
_PATHISH = re.compile(r"(?:[~.]{0,2}/)?(?:[\w.-]+/)+[\w.-]*|[A-Za-z]:\\[\w\\. -]*")
_MIME = re.compile(r"[a-z]+/[a-z0-9.+-]+")
# A run of letters in one case (an optional capital in front), or of digits, or anything else:
# the pieces a value is cut into to see whether it is a phrase of words.
_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^A-Za-z\d]+")
_VOWELS = frozenset("aeiouyAEIOUY")
_CONSONANT_RUN = re.compile(r"[^aeiouyAEIOUY\d\W_]{5,}")


def entropy(value: str) -> float:
    """Bits of Shannon entropy per character of ``value`` (0.0 for the empty string)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


# Letter pairs common in English words and in the names code is written with. A run of letters
# most of whose pairs are here reads as a word; random letters seldom do ("jqgoq" has one).
_BIGRAMS = frozenset(
    str.split(
        """th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io
        le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe
        ec pr no ct us ac ot il tr ly nc et ut ss so rs un lo wa ge ie wh ee wi em ad ol rt po we
        na ul ni ts mo ow pa im mi ai sh ir su id os iv ia am fi ci vi pl ig tu ev ld ry mp fe bl
        ab gh ty op wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep tt oc
        fa ef cu rn sc gi da yo cr cl du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt
        pi rc rr eg au ck ew mu br bi pt ak pu ui rg ib tl ny ki rk ys ob mm fu ph og ms ye ud mb
        ip ub oi rl gu dr hr cc tw ft wn nu af hu nn eo vo rv nf xp gn sm fl iz ok nl my gl aw ju
        oa eq sy sl ps jo lf nv je nk kn gs dy hy ze ks xt bj yp oy lv ka lp mt ix wr hn xa ek ax
        sk oh yi yt rp ky ae dd sw tp dl ym za zi zo ya yl yn oe ah ck cy nm ox xy xi oz"""
    )
)


def _is_word(piece: str) -> bool:
    if len(piece) < 4 or len(piece) > 16:
        return False
    vowels = sum(1 for c in piece if c in _VOWELS)
    if not 0.2 <= vowels / len(piece) <= 0.7 or _CONSONANT_RUN.search(piece):
        return False
    low = piece.lower()
    common = sum(1 for a, b in pairwise(low) if a + b in _BIGRAMS)
    # A short run of random letters has few pairs, so each must be common; a longer one may
    # have a rare pair or two, as long words do.
    if len(low) <= 4:
        return common == len(low) - 1
    if len(low) <= 6:
        return common >= len(low) - 2
    return common >= 0.85 * (len(low) - 1)


def is_wordish(value: str) -> bool:
    """Words joined by separators, digits or case ("refreshed-token-123", "PasswordLastUsed",
    "testPassword1", "veryPriv@ate"): what a person writes as a test value or a name, not a
    generated secret."""
    if _wordish(value):
        return True
    plain = unleet(value, digits=False)
    return plain != value and _wordish(plain)


def _wordish(value: str) -> bool:
    covered = 0.0
    words = 0
    for m in _PIECE.finditer(value):
        piece = m.group()
        if piece[0].isalpha():
            if _is_word(piece):
                covered += len(piece)
                words += 1
            elif len(piece) == 3 and _is_word(piece + piece[-1]):
                covered += 1.5  # a short word ("new", "my") counts for half
        elif piece[0].isdigit():
            covered += len(piece) if len(piece) <= 6 else 0
        else:
            covered += len(piece)
    return words > 0 and covered >= 0.85 * len(value)


# Short words ("fake", "your", "todo") turn up by chance inside long random values: they count
# only where they start or end a word of the value. Only longer words are also looked for with
# digits and symbols read as letters.
_SHORT_WORDS = tuple(w for w in _PLACEHOLDER_WORDS if len(w) <= 4 and w.isalpha() and w != "xxxx")
_LONG_WORDS = tuple(w for w in _PLACEHOLDER_WORDS if w not in _SHORT_WORDS)
_LEET_WORDS = tuple(w for w in _LONG_WORDS if len(w) >= 5)


def _word_at_edge(value: str, lowered: str, word: str) -> bool:
    i = lowered.find(word)
    while i >= 0:
        j = i + len(word)
        if (
            i == 0
            or not value[i - 1].isalpha()
            or (value[i].isupper() and value[i - 1].islower())
            or j == len(value)
            or not value[j].isalpha()
            or (value[j].isupper() and value[j - 1].islower())
        ):
            return True
        i = lowered.find(word, i + 1)
    return False


# Documentation examples: values providers publish in their docs, exactly as published. They
# are in every copy of those pages, so they are no one's secret; only the whole value counts
# (see `is_example`). Sources: the AWS IAM user guide (the first pair), the Amazon S3 user
# guide (the second), the AWS Signature Version 4 test suite (the third) and the AWS STS API
# reference's examples (the last two).
DOCUMENTED_EXAMPLES = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AKIAI44QH8DHBEXAMPLE",
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "AKIDEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
        "8P+SQvWIuLnKhh8d++jpw0nNmQRBZvNEXAMPLEKEY",
    }
)
# The session tokens of the STS API reference's examples (the first two are also in the
# Signature Version 4 test suite), kept as BLAKE3 digests of their bytes: as exact as the
# values, without pages of base64 here.
DOCUMENTED_EXAMPLE_DIGESTS = frozenset(
    {
        "63b4e268f90b23b8a3803557107041afb76f58e7242c7fc964535c46c342cba1",
        "fc04f4369092707d0bbd1dbf7027e483e0108e3568e50eac46ee84d9cd699d24",
        "f3858ae786a05740a57b318fb9a526e76d0c91942548c805a81803d33656c825",
    }
)
_EXAMPLE_WORD = re.compile("example", re.IGNORECASE)


def is_example(value: str) -> bool:
    """A documentation example: one of the exact values providers publish, or a value that is
    an example in words ("example-api-key", "AKIA1234EXAMPLE", whose rest is too short to be a
    key). A long generated run with the word spliced in is not: it is someone's key written
    over the documentation's, and only the published value itself is known to be harmless."""
    if value in DOCUMENTED_EXAMPLES:
        return True
    if "example" not in value.lower():
        return False
    if blake3.blake3(value.encode()).hexdigest() in DOCUMENTED_EXAMPLE_DIGESTS:
        return True
    rest = _EXAMPLE_WORD.sub("", value)
    return not looks_random(rest, 16)


# A regular expression, not a value: a character class with a range or a class escape
# (`[-!#$%&'*+.^_`|~0-9a-zA-Z]+`, `[\w.-]+`), or a class escape with a quantifier. A generated
# secret holds brackets seldom and such a range inside them never.
_REGEX_SYNTAX = re.compile(
    r"\[[^\]]{0,64}?(?:[a-z]-[a-z]|[A-Z]-[A-Z]|[0-9]-[0-9]|\\[dwsDWS])[^\]]{0,64}\]"
    r"|\\[dwsDWS][+*?{]"
)


def is_placeholder(value: str) -> bool:
    lowered = value.lower()
    if any(w in lowered for w in _LONG_WORDS):
        return True
    if "example" in lowered and is_example(value):
        return True
    if ("[" in value or "\\" in value) and _REGEX_SYNTAX.search(value):
        return True
    if any(w in lowered and _word_at_edge(value, lowered, w) for w in _SHORT_WORDS):
        return True
    plain = unleet(lowered)
    # "s3cr3t", "ex4mple": no generated value spells a word so.
    if plain != lowered and any(w in plain for w in _LEET_WORDS):
        return True
    if "example" in plain and "example" not in lowered:
        return True
    if any(m in value for m in _TEMPLATE_MARKERS) or value[0] in "$%@&*#:":
        return True
    if any(m in lowered for m in _REFERENCE_MARKERS):
        return True
    if len(set(lowered)) <= 3:
        return True  # "aaaaaaaa", "x-x-x-x-x"
    # "abcdefghijklmnop" and "0123456789abcdef" look random to an entropy measure.
    steps = sum(1 for a, b in pairwise(value) if abs(ord(b) - ord(a)) == 1)
    return steps * 2 >= len(value)


_MEMBER_SEP = re.compile(r"\.|::|->")
# Names joined by dots and slashes, each a name that may hold "-".
_QUALIFIED = re.compile(r"@?[A-Za-z_$][\w$-]*(?:[./][A-Za-z_$][\w$-]*)+")
_QUALIFIED_SEP = re.compile(r"[./]")
_MEMBER_REF = re.compile(r"[a-z][\w$]*(?:\.[A-Za-z_$][\w$]*)+#[A-Za-z_$][\w$]*")


def is_name_shaped(value: str) -> bool:
    """Built the way code names things: whole words, acronyms and short numbers joined in
    camel or snake case (`MLKEM768PrivateKey`, `HTTP2Connection`, `sha256_digest`). A
    generated value changes case or class every character or two; a name changes them only
    between its words, so its pieces are long, and each long piece is a word or an acronym."""
    pieces = _PIECE.findall(value)
    if len(pieces) * 3 > len(value):
        return False
    words = 0
    for piece in pieces:
        if piece[0].isdigit():
            if len(piece) > 5:
                return False  # a number in a name is a size or a curve ("25519"), not a run
        elif not piece[0].isalpha():
            if piece.strip("_"):
                return False  # "$", "!": a name joins its words with "_" only
        elif piece.isupper() and len(piece) <= 6:
            continue  # an acronym ("MLKEM", "HTTP")
        elif len(piece) >= 4:
            if not _is_word(piece):
                return False
            words += 1
    return words > 0


def _generated(part: str, min_length: int = 16) -> bool:
    """A long run of mixed case and digits that is no phrase of words and no name: after a
    dot it is a token's body ("hvs.CAES..."), not an attribute's or a class's name
    (`mlkem.MLKEM768PrivateKey`); between slashes, a piece of base64, not a folder's."""
    return (
        len(part) >= min_length
        and any(c.isupper() for c in part)
        and any(c.islower() for c in part)
        and any(c.isdigit() for c in part)
        and not is_wordish(part)
        and not is_name_shaped(part)
    )


def is_reference(value: str) -> bool:
    """A value that names a variable, an attribute, an import path, a file, a MIME type, a
    date or a version: not a secret."""
    if "://" in value or value.startswith(("./", "../", "~/")):
        return True
    if _DOTTED.fullmatch(value) and not any(map(_generated, _MEMBER_SEP.split(value))):
        return True
    if (
        "." in value
        and _QUALIFIED.fullmatch(value)
        and not any(map(_generated, _QUALIFIED_SEP.split(value)))
    ):
        # `io.modelcontextprotocol/subscriptionId`, `k8s.io/api/core`: a name under a domain
        # or a package. The dot keeps base64 out: its alphabet has "/" but no ".".
        return True
    if _MEMBER_REF.fullmatch(value):
        return True  # `smithy.api#noAuth`, `java.util.List#add`: a name in a namespace
    if _UUID.fullmatch(value) or _VERSION.fullmatch(value):
        return True
    if _HASH.match(value) or "%2F" in value:
        return True
    if _DATE.search(value) or _NUMBERISH.fullmatch(value) or _MIME.fullmatch(value):
        return True
    if (
        value.startswith("/")
        and _PATHISH.fullmatch(value)
        and value.count("/") >= 2
        and not any(_generated(part, 12) for part in value.split("/"))
    ):
        return True
    if _IDENTIFIER.fullmatch(value):
        # Random tokens mix digits in; identifiers are words joined by "_" or in CONSTANT_CASE.
        if not any(c.isdigit() for c in value):
            return True
        if "_" in value and (value.isupper() or value.islower()):
            return True
        if is_name_shaped(value):
            return True  # a type or a class: `private_key: Ed25519PrivateKey`
    return False


def _classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def looks_random(value: str, min_length: int) -> bool:
    """Long enough, varied enough and not made of words: a generated secret."""
    if len(value) < min_length or is_placeholder(value) or is_reference(value):
        return False
    if _HEX_GROUPS.fullmatch(value):
        # Hex in groups (a piece of a UUID, a MAC address, a fingerprint) counts by its digits.
        value = value.replace("-", "").replace(":", "")
    if _HEX.fullmatch(value):
        # A hex secret is long; short hex is a colour, an id or a hash prefix.
        return len(value) >= 20 and entropy(value) >= 3.0 and any(c.isalpha() for c in value)
    if is_wordish(value) or _classes(value) < 2 or _SLUG.fullmatch(value):
        return False
    # The most a string of n characters can have is log2(n) bits: ask for most of that.
    bar = min(3.5, math.log2(len(value)) - 0.7)
    return entropy(value) >= bar


# Symbols a password policy makes people add, as against the separators between words.
_POLICY_SYMBOL = re.compile(r"[^\w\s./:-]")
# Words that name a password: a value made of them and digits or symbols only ("pass#pass",
# "pass123", "secret!") names what belongs there.
_PASSWORD_NAMES = re.compile(r"pass(?:w(?:or)?d)?|pwd|pw|secret")


def policy_shaped(value: str) -> bool:
    """Words with digits and a symbol added, as a password policy asks ("Summer2024!"): a
    person's password. Not a name or a test value: "veryPriv@ate" has its symbol for a letter
    and no digit, "refreshed-token-123" only separators."""
    plain = unleet(value, digits=False)
    return (
        any(c.isalpha() for c in plain)
        and any(c.isdigit() for c in plain)
        and _POLICY_SYMBOL.search(plain) is not None
    )


def password_is_real(value: str, *, words: bool = False) -> bool:
    """A password written where the syntax says it is one (a URL's userinfo, `-p`, `IDENTIFIED
    BY`): shorter ones count, weak defaults do not, nor placeholders, nor phrases of words
    unless a policy shaped them ("Summer2024!").

    ``words``: a phrase of words counts too (user "root", password "rootpass"). Only
    a URL's userinfo asks for this: nothing but a password can stand there, while a word after
    `--password` in a manual is as often the name of what to type. A value that is only the
    word password with digits or symbols ("pass#pass") still names what belongs there."""
    if len(value) < 6 or value.lower() in _WEAK_DEFAULTS or " " in value:
        return False
    if len(value) < 8 and _classes(value) < 3:
        return False  # "foo(b]c": too short and too plain to be anyone's password
    if is_placeholder(value) or _SLUG.fullmatch(value):
        return False
    if words:
        rest = _PASSWORD_NAMES.sub("", unleet(value.lower()))
        return any(c.isalpha() for c in rest) and entropy(value) >= 2.3
    if is_reference(value) or (is_wordish(value) and not policy_shaped(value)):
        return False
    return _classes(value) >= 2 and entropy(value) >= 2.3


def base64_text(value: bytes) -> bytes | None:
    """The text ``value`` encodes in base64 (standard or URL-safe, padding optional), or None
    when it does not decode to text."""
    raw = value.rstrip(b"=")
    if len(raw) % 4 == 1 or len(raw) < 8:
        return None
    padded = raw + b"=" * (-len(raw) % 4)
    try:
        decoded = base64.b64decode(padded.replace(b"-", b"+").replace(b"_", b"/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    if not decoded:
        return None
    printable = sum(1 for b in decoded if 32 <= b < 127 or b in (9, 10, 13))
    return decoded if printable >= 0.95 * len(decoded) else None


def _basic_credentials(value: bytes) -> bool:
    """Base64 of `user:password` with a password that is not a placeholder."""
    text = base64_text(value)
    if text is None or b":" not in text:
        return False
    password = text.split(b":", 1)[1].decode("ascii", "replace")
    return bool(password) and password_is_real(password)


# --- names --------------------------------------------------------------------------------------

# Compared against the name lowercased with everything but letters and digits removed.
PASSWORD_WORDS = ("password", "passwd", "passphrase", "passcode", "secret", "credential")
TOKEN_WORDS = (
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "secretkey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "clientkey",
    "appkey",
    "licensekey",
    "accountkey",
    "servicekey",
    "adminkey",
    "consumerkey",
    "subscriptionkey",
    "webhookkey",
    "authkey",
    "bearer",
    "apisecret",
    "sharedkey",
    "cryptkey",
    "hmackey",
)
# A name whose last word is one of these holds something about a secret, not the secret.
_NOT_SECRET_ENDINGS = frozenset(
    str.split(
        """path paths file files filename dir folder url uri urls endpoint host hostname port name
    names type types kind method methods mode header headers hdr field fields length len count
    size format class prefix suffix env var vars id ids digest checksum hash hashed hasher salt
    used at time date expiry expires expiration ttl timeout policy policies rule rules regex re
    pattern label title text message msg description desc help hint placeholder required enabled
    min max version algorithm algo scheme provider providers store storage manager handler factory
    service validator generator parser builder error errors exception reset confirm confirmation
    change changed strength hint lifetime age changed last ref reference location source sources
    flag flags option options param params arg args key_id keyid index idx list set map dict
    prompt input widget form view label module plugin backend policy callback fn func function
    config settings setting opts template example sample test tests spec schema struct enum
    pattern validation valid invalid check checker verify verifier mask masked visible shown
    show hide hidden display position pos offset start end begin stop limit rotation interval
    duration period count counter number num region regions zone scope scopes domain audience
    issuer user username email owner role roles arn bucket table queue topic fingerprint
    thumbprint locale cache process command cmd program helper script executable"""
    )
)
# "<word> key" where the key looks something up or orders it: an identifier, not a credential.
_LOOKUP_KEYS = frozenset(
    str.split(
        """cache session lookup primary foreign partition sort row column range routing shard
    dedup dedupe object i18n translation map dict group item entity record registry composite
    unique natural surrogate"""
    )
)
_NOT_REAL = frozenset(
    {"test", "tests", "fake", "mock", "dummy", "example", "sample", "masked"}
    # tokens that page through results or prove a request, not credentials
    | {"next", "continuation", "page", "pagination", "output", "input", "purchase", "marker"}
    | {"verification", "grant", "idempotency", "request", "cursor", "sync", "csrf", "old"}
)
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@functools.lru_cache(maxsize=4096)
def name_class(name: str) -> str | None:
    """ "password" for a password-like name, "token" for a token or key name, None otherwise."""
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words or words[-1] in _NOT_SECRET_ENDINGS:
        return None
    if any(w in _NOT_REAL for w in words):
        return None  # TEST_SECRET, fake_token, mock_api_key: written to look like one
    squashed = "".join(words).replace("author", "")
    if squashed.endswith("key") and (
        any(squashed.endswith(w + "key") for w in _LOOKUP_KEYS) or "cached" in words
    ):
        return None  # cache_key, session_key, sortKey, cached_token_key
    if any(w in squashed for w in PASSWORD_WORDS) or "pwd" in words or "pass" in words:
        return "password"
    if any(w in squashed for w in TOKEN_WORDS) or "auth" in words:
        return "token"
    if words[-1] == "key":
        # A bare "key" names anything from a dictionary key to a storage account's secret:
        # only a long generated value after it counts (see `value_is_secret`).
        return "key" if len(words) > 1 else "bare key"
    return None


def encoded_text(value: str) -> str | None:
    """The readable text that ``value`` encodes in base64, or None. Random bytes, what a
    generated secret encodes, are almost never readable text."""
    if not _BASE64_VALUE.fullmatch(value) or _HEX.fullmatch(value):
        return None
    text = base64_text(value.encode("ascii"))
    return None if text is None else text.decode("ascii", "replace").rstrip("\r\n")


_BARE_KEY_VALUE = re.compile(r"[A-Za-z0-9]{32,}(?:[+/][A-Za-z0-9]+)*={0,2}")


@functools.lru_cache(maxsize=4096)
def value_is_secret(name_kind: str, value: str, name: str = "") -> bool:
    """Whether ``value``, written after a name of class ``name_kind``, is a secret. Values
    repeat (`token: null`, a fixture used a hundred times): verdicts are remembered."""
    if len(value) < 6:
        return False  # shorter than any password this scan would call one
    if "%" in value and _PERCENT_ESCAPE.search(value):
        if is_reference(value):
            return False  # an escaped path or URL
        value = unquote(value)  # a URL's escapes say nothing about the value
        if not value:
            return False
    decoded = encoded_text(value)
    if decoded is not None:
        # Base64 of readable text: the text decides. Basic credentials ("user:password"),
        # or an encoded password, are secrets; an encoded sentence, JSON or a pagination
        # cursor is not.
        if name_kind == "token" and _basic_credentials(value.encode("ascii")):
            return True
        if not decoded or any(c.isspace() for c in decoded):
            return False
        return value_is_secret(name_kind, decoded, name)
    if _UUID.fullmatch(value):
        # A UUID is an id or a request token, unless the name says it authenticates
        # (npm's legacy `_authToken`, `HEROKU_API_KEY`).
        squashed = re.sub(r"[^a-z]", "", name.lower())
        return any(w in squashed for w in ("authtoken", "apikey", "authkey", "accesstoken"))
    if name_kind == "password":
        return looks_random(value, 8) or (
            len(value) >= 8 and password_is_real(value) and _classes(value) >= 3
        )
    if name_kind == "token":
        return looks_random(value, 16) or _basic_credentials(value.encode("ascii", "replace"))
    if name_kind == "bare key":
        # Letters of both cases and digits, nothing else (no path, no slug, no file name).
        return (
            _BARE_KEY_VALUE.fullmatch(value) is not None
            and _classes(value) >= 3
            and looks_random(value, 32)
        )
    return looks_random(value, 20)


# --- token rules ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenRule:
    """A credential known by its shape.

    ``literals``: every match holds one of them (ASCII case ignored), at most ``before`` bytes
    after the match starts; a match ends at most ``after`` bytes past the literal's end.
    ``group``: the part of the match that is the secret (what redaction replaces). ``check``
    judges that part; ``context``, given the bytes and the match, judges its surroundings.
    ``anchor``: a byte every match holds after its literal (within ``after`` bytes), so a hit
    with no anchor that near is passed over without running the pattern.
    ``end``: for a block, the pattern that closes it, searched up to ``reach`` bytes on; a block
    whose end is not found cannot be redacted exactly.
    ``at_literal``: every match starts where one of the literals does, so the pattern is tried
    at each hit alone, not searched for in a window around it: for literals that are common
    words, where a window's search would cost more than the rule finds.
    """

    kind: str
    literals: tuple[bytes, ...]
    pattern: re.Pattern[bytes]
    before: int = 0
    after: int = 512
    group: str | int = 0
    check: Callable[[bytes], bool] | None = None
    multiline: bool = False
    in_binary: bool = True
    end: re.Pattern[bytes] | None = None
    reach: int = 0
    context: Callable[[bytes, re.Match[bytes]], bool] | None = None
    anchor: bytes | None = None
    at_literal: bool = False


def _ascii(check: Callable[[str], bool]) -> Callable[[bytes], bool]:
    return lambda value: check(value.decode("ascii", "replace"))


def _not_example(value: bytes) -> bool:
    lowered = value.lower()
    if any(w in lowered for w in (b"your", b"placeholder", b"redacted")):
        return False
    return not is_example(value.decode("ascii", "replace"))


def _mixed(value: bytes) -> bool:
    """A generated token mixes cases or digits into letters; a word or a slug does not."""
    text = value.decode("ascii", "replace")
    return _not_example(value) and _classes(text) >= 2 and not is_wordish(text)


def _openai(value: bytes) -> bool:
    tail = value.split(b"-", 1)[1]
    # "sk-" followed by kebab-case words is a CSS class or a slug, not a key.
    return _mixed(tail) and not (b"-" in tail and tail.replace(b"-", b"").isalpha())


def _url_password(value: bytes) -> bool:
    # Only a password can stand in a URL's userinfo, whatever the scheme, so one made of words
    # counts ("rootpass"); "user:pass", "username:password" and their kin name the place.
    password = unquote_to_bytes(value).decode("utf-8", "replace")
    return password_is_real(password, words=True)


# A user named for its role in the syntax ("user", "username", "dbuser", "userdiff").
_ROLE_USER = re.compile(rb"(?i)user")
_HOST = re.compile(rb"[A-Za-z0-9.-]{1,253}")
# Names reserved for documentation and tests (RFC 2606, RFC 6761): no real service lives there.
_EXAMPLE_DOMAINS = (b"example.com", b"example.org", b"example.net", b"example", b"test", b"invalid")


def _url_credentials(data: bytes, match: re.Match[bytes]) -> bool:
    """The text between "//" and ":" is a user, not a host with a port and a path; the
    password is not the user's name again (`postgres:postgres`, `app:app`: a default); and the
    URL leads to a real host, not one of the names reserved for examples."""
    user, password = match.group("user"), match.group("v")
    if user.lower() == password.lower():
        return False
    if _ROLE_USER.search(user) and not password_is_real(
        unquote_to_bytes(password).decode("utf-8", "replace")
    ):
        # A user that names its place (`username:apples%2Foranges@hostspec`, `userdiff:passdiff`)
        # marks a template or a test's fixture: there a password of words illustrates the
        # syntax. A real user ("root", "svc") with a password of words is still a secret, and
        # so is a generated or policy-shaped password under any user.
        return False
    if b"/" in password:
        head = password.split(b"/", 1)[0]
        if head.isdigit() or b"." in user:
            return False
    host = _HOST.match(data, match.end())
    if host is None:
        return True
    name = host.group().lower().rstrip(b".")
    return not any(name == d or name.endswith(b"." + d) for d in _EXAMPLE_DOMAINS)


_URL_RUN = re.compile(rb"""[^\s"'<>`]{0,4096}""")
_SAS_EXPIRY = re.compile(rb"(?:^|[?&;])se=(\d{4}-\d{2}-\d{2})")
# A shared access signature carries its expiry; one that expired before this rule was written
# has expired for whoever reads it, on any day, so the verdict never depends on the clock.
_EXPIRED_BEFORE = b"2025-01-01"


def _sas_live(data: bytes, match: re.Match[bytes]) -> bool:
    back = data[max(0, match.start() - 4096) : match.start()][::-1]
    start = match.start() - _URL_RUN.match(back).end()  # type: ignore[union-attr]
    end = _URL_RUN.match(data, match.end()).end()  # type: ignore[union-attr]
    expiry = _SAS_EXPIRY.search(data[start:end].replace(b"&amp;", b"&"))
    return expiry is None or expiry.group(1) >= _EXPIRED_BEFORE


def _rule(
    kind: str,
    literals: tuple[str, ...],
    pattern: bytes,
    **options: object,
) -> TokenRule:
    return TokenRule(
        kind,
        tuple(lit.encode() for lit in literals),
        re.compile(pattern, re.VERBOSE),
        **options,  # type: ignore[arg-type]
    )


_B64 = rb"[A-Za-z0-9+/]"
_BOUNDARY = rb"(?<![A-Za-z0-9_-])"

TOKEN_RULES: tuple[TokenRule, ...] = (
    _rule(
        "private key block",
        ("PRIVATE KEY",),
        rb"""-----BEGIN[ ](?:[A-Z0-9]{1,16}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----
        # A real key has its base64 body close by: optional armor headers, then the data.
        # "\n" escapes and string concatenation cover keys embedded in JSON or source.
        (?:\\[nr]|[\s"'+,]){1,24}
        (?:[A-Za-z][A-Za-z-]{0,30}:[^\n]{0,200}(?:\\[nr]|\s){1,8}){0,4}
        [A-Za-z0-9+/=]{32}""",
        before=48,
        after=600,
        multiline=True,
        end=re.compile(rb"-----END[ ](?:[A-Z0-9]{1,16}[ ]){0,3}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"),
        reach=64 << 10,
    ),
    _rule(
        "PuTTY private key",
        ("PuTTY-User-Key-File-",),
        rb"PuTTY-User-Key-File-[1-9]:[ ]?[\w-]{1,40}",
        end=re.compile(rb"Private-(?:MAC|Hash):[ ]?[0-9a-fA-F]{16,128}"),
        reach=64 << 10,
    ),
    _rule(
        "AWS access key id",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        rb"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
        check=lambda v: not is_example(v.decode("ascii")),
    ),
    _rule(
        "AWS secret access key",
        ("secret_access_key", "secretaccesskey", "secret-access-key", "aws_secret"),
        rb"""(?i:(?:aws_?)?secret_?-?access_?-?key|aws_secret)[\\"']{0,2}[ \t]{0,4}
        (?:=|:|=>)[ \t]{0,4}[\\"']{0,2}(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])""",
        before=8,
        group="v",
        check=_mixed,
    ),
    _rule(
        "GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _BOUNDARY
        + rb"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{50,244})(?![A-Za-z0-9_])",
    ),
    _rule(
        "GitLab token",
        (
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glcbt-",
            "glft-",
            "glimt-",
            "glsoat-",
            "gloas-",
            "glagent-",
            "glwt-",
            "GR1348941",
        ),
        _BOUNDARY
        + rb"""(?:gl(?:pat|dt|rt|ptt|cbt|ft|imt|soat|oas|agent|wt)-|GR1348941)
        [A-Za-z0-9_.-]{20,300}""",
        check=_mixed,
    ),
    _rule(
        "Slack token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxr-", "xoxs-", "xoxe", "xapp-"),
        rb"(?<![A-Za-z0-9-])(?:xox[abposre]|xoxe\.xox[bp]|xapp)-[A-Za-z0-9-]{10,250}",
        check=_mixed,
    ),
    _rule(
        "Slack webhook",
        ("hooks.slack.com/",),
        rb"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,200}",
    ),
    _rule(
        "Anthropic key",
        ("sk-ant-",),
        _BOUNDARY + rb"sk-ant-[a-z]{3,8}\d{0,3}-[A-Za-z0-9_-]{32,250}",
    ),
    _rule(
        "OpenAI key",
        ("sk-",),
        _BOUNDARY + rb"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,250}(?![A-Za-z0-9_-])",
        check=_openai,
    ),
    _rule(
        "Google API key",
        ("AIza",),
        _BOUNDARY + rb"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        check=_not_example,
    ),
    _rule(
        "Google OAuth secret",
        ("GOCSPX-", "ya29."),
        _BOUNDARY + rb"(?:GOCSPX-[A-Za-z0-9_-]{24,40}|ya29\.[A-Za-z0-9_-]{30,400})",
        check=_mixed,
    ),
    _rule(
        "Stripe key",
        ("k_live_", "k_test_", "whsec_"),
        rb"(?<![A-Za-z0-9_])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{10,250}|whsec_[A-Za-z0-9+/=]{24,})",
        before=1,
        check=_mixed,
    ),
    _rule(
        "SendGrid key",
        ("SG.",),
        _BOUNDARY + rb"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}",
    ),
    _rule(
        "Mailgun key",
        ("key-",),
        _BOUNDARY + rb"key-[0-9a-f]{32}(?![A-Za-z0-9])",
        check=_mixed,
    ),
    _rule(
        "Mailchimp key",
        ("-us",),
        rb"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])",
        before=32,
    ),
    _rule(
        "Shopify token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        _BOUNDARY + rb"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}",
    ),
    _rule(
        "npm token",
        ("npm_",),
        rb"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        check=_mixed,
    ),
    _rule(
        "PyPI token",
        ("pypi-AgE",),
        _BOUNDARY + rb"pypi-AgE[A-Za-z0-9_-]{50,}",
    ),
    _rule(
        "Hugging Face token",
        ("hf_", "api_org_"),
        rb"(?<![A-Za-z0-9_])(?:hf_|api_org_)[A-Za-z0-9]{30,40}(?![A-Za-z0-9_])",
        check=_mixed,
    ),
    _rule(
        "DigitalOcean token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        _BOUNDARY + rb"do[opr]_v1_[a-f0-9]{64}",
    ),
    _rule(
        "Telegram bot token",
        (":AA",),
        rb"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
        before=10,
    ),
    _rule(
        "Discord webhook",
        ("/api/webhooks/",),
        rb"/api/webhooks/[0-9]{15,20}/[A-Za-z0-9_-]{60,80}",
    ),
    _rule(
        "Heroku key",
        ("HRKU-", "heroku"),
        rb"""(?:HRKU-[A-Za-z0-9_-]{40,80}
        |(?i:heroku)[\w.-]{0,30}(?i:key|token)[\\"']{0,2}[ \t]{0,4}(?:=|:|=>)[ \t]{0,4}[\\"']{0,2}
         (?P<v>[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}))""",
    ),
    # An API key's SID: "SK" and 32 hex digits, wherever it is written (`Client("SK...",
    # secret)`). The prefilter looks for "sk" and a hex digit: "sk" alone is in too many words
    # ("task", "ask"), and every SID holds one of these sixteen.
    _rule(
        "Twilio key",
        tuple("sk" + c for c in "0123456789abcdef"),
        _BOUNDARY + rb"SK[0-9a-fA-F]{32}(?![A-Za-z0-9_])",
        after=32,
        at_literal=True,
        check=lambda v: _mixed(v[2:]),
    ),
    _rule(
        "Vault token",
        ("hvs.", "hvb.", "hvr."),
        _BOUNDARY + rb"hv[sbr]\.[A-Za-z0-9_-]{24,250}(?![A-Za-z0-9_-])",
        check=_mixed,
    ),
    _rule(
        "JSON web token",
        ("eyJ",),
        rb"(?<![A-Za-z0-9_.-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
        after=16 << 10,
    ),
    _rule(
        "Azure storage key",
        ("AccountKey=", "SharedAccessKey=", "AccessKey="),
        rb"(?:Account|SharedAccess|Access)Key=(?P<v>[A-Za-z0-9+/]{30,100}={0,2})",
        before=13,
        group="v",
        check=_mixed,
    ),
    _rule(
        "Azure SAS signature",
        ("sig=",),
        rb"[?&;]sig=(?P<v>[A-Za-z0-9%+/]{30,120}(?:%3[Dd]|=){0,2})",
        before=1,
        group="v",
        check=_mixed,
        context=_sas_live,
    ),
    _rule(
        "Azure client secret",
        ("Q~",),
        rb"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        before=4,
        check=_mixed,
    ),
    _rule(
        "kubeconfig client key",
        ("client-key-data",),
        rb"client-key-data[\\\"']{0,2}[ \t]{0,4}:[ \t]{0,4}[\\\"']{0,2}(?P<v>[A-Za-z0-9+/=]{40,})",
        group="v",
        after=64 << 10,
    ),
    # user:password@ in a URL: everything up to the last "@" before the host is the password,
    # so a password with a "/" or an unescaped "@" in it is hidden whole.
    _rule(
        "password in URL",
        ("://",),
        rb"""://(?P<user>[^\s:/?#@"'`<>\\]{0,128}):(?P<v>[^\s"'`<>\\]{1,256})
        @(?=[A-Za-z0-9\[_-])""",
        group="v",
        check=_url_password,
        context=_url_credentials,
        anchor=b"@",
        in_binary=False,
    ),
    _rule(
        "basic auth credentials",
        ("basic ",),
        rb"(?i:basic)[ ]+(?P<v>[A-Za-z0-9+/_-]{8,600}={0,2})(?![A-Za-z0-9+/=_-])",
        group="v",
        check=_basic_credentials,
    ),
    _rule(
        "bearer token",
        ("bearer ", "authorization: token ", "authorization: token=", "Authorization=token "),
        rb"""(?i:bearer|authorization:[ ]token[ =]?|authorization=token)[ ]+
        (?P<v>[A-Za-z0-9_.~+/=-]{16,2000})(?![A-Za-z0-9_.~+/=-])""",
        before=24,
        group="v",
        check=_ascii(lambda v: value_is_secret("token", v)),
        in_binary=False,
    ),
    _rule(
        "password on a command line",
        ("curl", "--user", "-u ", "mysql", "mariadb", "--pass", "sshpass", "redis-cli", "login"),
        rb"""(?:
          (?<![^\s"'(])(?:-u|--user)(?:[ =]|[ ]{2,4})["']?[^\s:"'$]{1,64}:(?P<v>[^\s"']{3,128})
        | \b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]{0,200}?
          \s-p(?P<v2>[^\s"';|&]{3,128})
        | (?<!\S)--pass(?:word)?(?:=|[ ]{1,4})["']?(?P<v3>[^\s"';|&]{3,128})
        | \b(?:sshpass|redis-cli|docker[ ]login|podman[ ]login|helm[ ]registry[ ]login)\b
          [^\n|;&]{0,200}?\s-[pa][ ]{1,4}["']?(?P<v4>[^\s"';|&]{3,128})
        )""",
        before=220,
        after=400,
        group="v",
        check=_ascii(password_is_real),
        in_binary=False,
    ),
    # A user and a password after a label, as a README or a wiki page gives them:
    # `Login: admin / ...`, `**Credentials:** ops / ...`, `Default login (staging): ...`. The
    # password is judged as one written after a password's name: a label and a slash say less
    # than a URL's syntax does ("Login: GitHub / Google" names two ways to sign in). The
    # words are everywhere in code (`credential` 7,700 times in 234 MiB of it), so the
    # pattern is tried at each of them, not searched for around them; "login" and
    # "credential" are literals of other rules already, so they cost the prefilter nothing.
    _rule(
        "password after a login",
        ("login", "credential", "creds"),
        rb"""(?i:login|credentials|creds)(?:[ \t]{1,4}\([^)\n]{1,40}\))?[*_]{0,2}[ \t]{0,4}
        [:=][*_]{0,2}[ \t]{0,4}[`"']?[\w.@+-]{1,64}[`"']?[ \t]{0,4}/[ \t]{0,4}[`"']?
        (?P<v>[^\s`"']{5,127}[^\s`"'.,;:)])""",
        after=300,
        at_literal=True,
        group="v",
        check=_ascii(lambda v: value_is_secret("password", v)),
        in_binary=False,
    ),
    _rule(
        "SQL password",
        ("identified by", "password '"),
        rb"(?i:identified[ ]by|password)[ ]+'(?P<v>[^'\s]{6,128})'",
        before=16,
        group="v",
        check=_ascii(password_is_real),
        in_binary=False,
    ),
    _rule(
        "PowerShell secure string",
        ("ConvertTo-SecureString",),
        rb"""ConvertTo-SecureString[ ]+(?:-String[ ]+)?["'](?P<v>[^"'\n]{4,200})["']""",
        group="v",
        check=_ascii(password_is_real),
        in_binary=False,
    ),
)

# --- assignments ----------------------------------------------------------------------------------

# Literals of secret-sounding names; the name around a hit is then cut out and judged.
ASSIGNMENT_LITERALS: tuple[bytes, ...] = tuple(
    w.encode()
    for w in (
        "password", "passwd", "passphrase", "passcode", "pwd", "secret", "credential",
        "token", "auth", "bearer", "_pass", "-pass", ".pass", "pass=", "pass:", "pass\"",
        "_key", "-key", ".key", "apikey", "accesskey", "privatekey", "secretkey", "signingkey",
        "masterkey", "encryptionkey", "appkey", "licensekey", "accountkey",
        "consumerkey", "subscriptionkey", "clientkey", "servicekey", "adminkey", "webhookkey",
        "authkey", "sharedkey", "hmackey", "cryptkey", "\"key\"", "'key'",
    )
)  # fmt: skip
MAX_NAME = 64

# What follows a name, up to the value: the end of a quoted name or a subscript, a type
# annotation (`: str`, `: &'static str`) or a Go type (`dbPassword string`), an operator, or
# the "is" of a sentence (`# the staging password is ...`).
AFTER_NAME = re.compile(
    rb"""
    (?P<close>\\?["']\]?|\])?
    (?:[ \t]{0,4}:[ \t]{0,4}&?(?:'[a-z]+[ ])?[A-Za-z_\[(][\w\[\]<>&., |?*;()]{0,48}?
       (?=[ \t]{1,4}=[^=>]))?
    (?:[ \t]{1,4}\*?[A-Za-z_\[][\w.\[\]*]{0,32}(?=[ \t]{0,4}=[^=>]))?
    [ \t]{0,8}(?P<op>=>|:=|\|\|=|\?\?=|\?=|===?|!==?|=|:|,|->|(?<=[ \t])(?:is|was)(?=[ \t]))
    [ \t]{0,8}
    (?:!!str[ \t]+|new[ ]+String\(|[(\[]?[ \t]{0,2})?
    """,
    re.VERBOSE,
)
# A bare value runs up to a delimiter. "&" is one only where a query's next parameter
# (`&user=`), an HTML entity (`&amp;`, `&quot;`) or a shell's `&&` starts: elsewhere it is
# part of the value, as at the end of a password in a properties file that a policy made end
# in "&".
_BARE = rb"""(?P<bare>[^\s"'`,;&(){}\[\]<>\\|]{1,4096}
    (?:&(?!&|\#?\w{1,10};|[\w.-]{1,64}=)[^\s"'`,;&(){}\[\]<>\\|]{0,4096}){0,8})"""
# A value: quoted (a "\" before a quote is JSON's or a shell's escape), or bare up to a
# delimiter. String prefixes of Python, C#, Rust are skipped.
VALUE = re.compile(
    rb"""
    (?:[bBrRuUfF]{1,2}(?=["'])|@(?=")|r\#(?="))?
    (?:\\?"(?P<dq>[^"\\\s]{1,4096})\\?"
     |\\?'(?P<sq>[^'\\\s]{1,4096})\\?'
     |`(?P<bq>[^`\s]{1,4096})`
     |"""
    + _BARE
    + rb""")
    """,
    re.VERBOSE,
)
# Forms where only blanks separate a name from its value: what comes between the start of the
# statement (a line, or what follows a ";") and the name.
BLANK_PREFIX = re.compile(
    rb"""[ \t]*(?:(?i:env|arg)|\#[ \t]*define|setx|set[ ]-[gxU]{1,3}|login[ \t]+\S{1,128})[ \t]+""",
    re.VERBOSE,
)
BLANK_VALUE = re.compile(
    rb"""[ \t]{1,8}(?:\\?"(?P<dq>[^"\\\s]{1,4096})\\?"|'(?P<sq>[^'\s]{1,4096})'
    |"""
    + _BARE
    + rb""")""",
    re.VERBOSE,
)
# `<password>value</password>` and `<add key="Password" value="..."/>`.
XML_VALUE = re.compile(rb">(?P<bare>[^<\s]{1,4096})</")
XML_ATTRIBUTE = re.compile(rb"""\s{1,8}value\s{0,4}=\s{0,4}["'](?P<dq>[^"'\s]{1,4096})["']""")
# `- name: DB_PASSWORD` then `value: ...` (Kubernetes env lists, JSON name/value pairs).
PAIR_NAME_PREFIX = re.compile(rb"""(?i:name|key)["']?[ \t]{0,4}[:=][ \t]{0,4}["']?$""")
PAIR_VALUE = re.compile(
    rb"""["']?[ \t]{0,4}(?:,[ \t]{0,4}|\r?\n[ \t]{0,16}-?[ \t]{0,4})
    ["']?(?i:value)["']?[ \t]{0,4}[:=][ \t]{0,4}""",
    re.VERBOSE,
)
XML_KEY_PREFIX = re.compile(rb"""(?i:key|name)\s{0,4}=\s{0,4}["']$""")
