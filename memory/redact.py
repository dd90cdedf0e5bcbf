"""Secret redaction applied to every text before it is stored (lessons, evidence excerpts).

Lessons are built from task logs, and logs leak credentials. Anything stored is later pasted
into prompts and exports, so we mask on write. The patterns favour precision on the
structure of real credentials (prefixes, lengths) over entropy guessing: hex digests, UUIDs
and commit hashes in logs are useful evidence and must survive.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memory.types import Evidence, LessonDraft

MASK = "[REDACTED]"

_Replacer = str | Callable[[re.Match[str]], str]

_KV_NAMES = (
    r"password|passwd|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|token"
    r"|(?:private|signing|encryption|master|account|shared[_-]?access)[_-]?key"
    r"|sess(?:ion)?(?:[_-]?id)|sid"
)
# Names of environment variables that hold credentials (`DB_PASS=`, `SECRET_KEY_BASE=`).
_ENV_NAME = (
    r"\b(?<![.$])[A-Z][A-Z0-9_]*_(?:KEY|KEY_BASE|SECRET|TOKEN|PASS|PASSWORD|PWD|AUTH"
    r"|CREDENTIALS?|SIGNATURE)\b"
)
# The value of a name=value pair: quoted (to the closing quote) or a bare word.
_VALUE = r"""(?:(?P<q>["'])(?P<quoted>[^"'\n]*)(?P=q)|(?P<bare>[^\s"'&;,]+))"""
# Values that are code or placeholders, not credentials: `getpass.getpass(`, `os.environ[`,
# `settings.SECRET_KEY`, `${DB_PASSWORD}`, `<token>`, `None`, `***`.
_NOT_A_VALUE = re.compile(
    r"[A-Za-z_][\w.]*[(\[].*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[$<{%].*|\*+|x+|None|null|nil"
    r"|true|false|True|False|" + re.escape(MASK) + r"|\[REDACTED:\w+\]",
)
# HTTP headers and cookie attributes that are not secrets.
_COOKIE_ATTRIBUTES = {"path", "domain", "expires", "max-age", "samesite", "secure", "httponly"}


def _mask_value(m: re.Match[str]) -> str:
    quoted, bare = m.group("quoted"), m.group("bare")
    value = quoted if quoted is not None else bare
    if not value or _NOT_A_VALUE.fullmatch(value):
        return m.group(0)
    start = m.start("quoted") if quoted is not None else m.start("bare")
    end = m.end("quoted") if quoted is not None else m.end("bare")
    whole = m.group(0)
    return whole[: start - m.start()] + MASK + whole[end - m.start() :]


def _mask_cookies(m: re.Match[str]) -> str:
    def one(pair: re.Match[str]) -> str:
        if pair.group(1).strip().lower() in _COOKIE_ATTRIBUTES:
            return pair.group(0)
        return f"{pair.group(1)}={MASK}"

    return m.group(1) + re.sub(r"([^=;\s][^=;]*)=([^;\r\n]*)", one, m.group(2))


# (kind, pattern, replacement). Order matters: whole blocks first, then structured keys,
# then generic name=value pairs (so `token=sk-...` is not masked twice in odd ways).
_RULES: tuple[tuple[str, re.Pattern[str], _Replacer], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # Log excerpts are often cut, and their lines joined (" | ", JSON's "\n", a
            # diff summary's "`...`; `...`"): mask to the END line, or else to the end of
            # the base64 lines and whatever joins them.
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[A-Za-z0-9+/=\s|;,`'\"]|\\n)*)",
            re.DOTALL,
        ),
        f"{MASK[:-1]}:private_key]",
    ),
    (
        "url_credentials",
        # scheme://user:password@host -> keep user and host, mask the password.
        re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://)([^:/@\s]*):([^@\s/]+)@"),
        lambda m: f"{m.group(1)}{m.group(2)}:{MASK}@",
    ),
    (
        "webhook_url",
        # The path of a chat webhook is its credential.
        re.compile(
            r"(https://(?:hooks\.slack\.com/(?:services|workflows)|(?:[\w-]+\.)?discord(?:app)?"
            r"\.com/api/webhooks|[\w-]+\.webhook\.office\.com/webhookb2)/)[\w\-/@.~%]+"
        ),
        lambda m: f"{m.group(1)}{MASK}",
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), MASK),
    (
        "bearer",
        # A real token has a digit or is long: "bearer authentication" is prose, not a secret.
        re.compile(
            r"\b(Bearer|Authorization:\s*Basic|Authorization:\s*Token)(\s+)"
            r"(?:(?=[A-Za-z\-._~+/]*\d)[A-Za-z0-9\-._~+/]{12,}|[A-Za-z0-9\-._~+/]{24,})=*",
            re.IGNORECASE,
        ),
        lambda m: f"{m.group(1)}{m.group(2)}{MASK}",
    ),
    (
        "cookie",
        # Every value of a Cookie / Set-Cookie header line (attributes such as Path stay).
        re.compile(r"(?im)^(.*?\b(?:set-)?cookie:[ \t]*)([^\r\n]+)"),
        _mask_cookies,
    ),
    # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-); \b keeps "task-..." intact.
    ("openai_key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), MASK),
    (
        "stripe_key",
        re.compile(r"\b(?:[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
        MASK,
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        MASK,
    ),
    (
        "slack_token",
        re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}"),
        MASK,
    ),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), MASK),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), MASK),
    (
        "service_token",
        # Fixed-prefix tokens: GitLab, Google OAuth, npm, PyPI, SendGrid, DigitalOcean, Azure
        # AD client secrets ("xxx8Q~...").
        re.compile(
            r"\b(?:gl(?:pat|ptt|dt|rt|cbt|oas)-[\w-]{20,}|GOCSPX-[\w-]{20,}|ya29\.[\w-]{20,}"
            r"|npm_[A-Za-z0-9]{36}|pypi-AgE[\w-]{50,}|SG\.[\w-]{16,}\.[\w-]{16,}"
            r"|do[opr]_v1_[a-f0-9]{64}|[\w-]{3}\dQ~[\w.~-]{31,34})"
        ),
        MASK,
    ),
    (
        "url_parameter",
        # Query parameters that carry credentials: Azure SAS `sig`, AWS presigned URLs, keys.
        re.compile(
            r"(?i)([?&;](?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token"
            r"|access_token|auth|code|key)=)([^&\s#\"']+)"
        ),
        lambda m: f"{m.group(1)}{MASK}",
    ),
    (
        "env_assignment",
        # DB_PASS=..., SECRET_KEY_BASE: ...; case-sensitive: env names are upper case.
        re.compile(r"(" + _ENV_NAME + r")([\"']?[ \t]*[:=][ \t]*)" + _VALUE),
        _mask_value,
    ),
    (
        "assignment",
        # password=..., "client_secret": "...", DB_PASSWD: ..., aws_secret_access_key = ...
        # `token\b` so that max_tokens=512 and tokenizer=... survive.
        re.compile(
            r"(?i)(\b[\w.\-]*?(?:" + _KV_NAMES + r")(?:[_-]?(?:key|id))?)\b"
            r"([\"']?[ \t]*[:=][ \t]*)" + _VALUE
        ),
        _mask_value,
    ),
)


# What each rule cannot match without, as lower-case substrings of an ASCII text: a rule can
# match only if one of its anchors is in `text.lower()` (and, for the name=value rules, the
# text holds a ':' or '='). Every anchor is a piece every match of the rule contains, read
# off the pattern: "://" in a URL with credentials, "sk-" in an OpenAI key, one of the
# credential words in a name=value pair. Checking ~80 substrings costs a few microseconds;
# running the ~17 patterns costs ~30 per field, and most stored text holds no candidate at
# all (tests/memory/test_redact_gate.py checks the anchors against every match of the
# corpora, and the gated result against the ungated one).
_SEPARATED = frozenset({"env_assignment", "assignment"})
_ANCHORS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin ",),
    "url_credentials": ("://",),
    "webhook_url": ("://",),
    "jwt": ("eyj",),
    "bearer": ("bearer", "authorization"),
    "cookie": ("cookie:",),
    "openai_key": ("sk-",),
    "stripe_key": ("k_live_", "k_test_", "whsec_"),
    "aws_access_key": ("akia", "asia"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox", "xapp-"),
    "google_api_key": ("aiza",),
    "huggingface_token": ("hf_",),
    "service_token": (
        *(f"gl{p}-" for p in ("pat", "ptt", "dt", "rt", "cbt", "oas")),
        "gocspx-",
        "ya29.",
        "npm_",
        "pypi-age",
        "sg.",
        "_v1_",
        "q~",
    ),
    "url_parameter": tuple(
        f"{sep}{name}="
        for sep in "?&;"
        for name in (
            "sig",
            "signature",
            "x-amz-signature",
            "x-amz-credential",
            "x-amz-security-token",
            "access_token",
            "auth",
            "code",
            "key",
        )
    ),
    "env_assignment": (
        "_key",
        "_secret",
        "_token",
        "_pass",
        "_pwd",
        "_auth",
        "_credential",
        "_signature",
    ),
    # Every name of `_KV_NAMES` holds one of these.
    "assignment": ("pass", "pwd", "secret", "key", "token", "sess", "sid"),
}


# Every anchor of every rule in one pattern: most text holds none (97 % of the synthetic
# lessons' fields), and one scan in C rules all the rules out, where testing each rule's
# anchors in turn cost about as much as a bulk load's SQL insert (0.5 CPU s per 10k lessons).
_ANY_ANCHOR = re.compile(
    "|".join(
        re.escape(anchor)
        for anchor in sorted({a for anchors in _ANCHORS.values() for a in anchors}, key=len)[::-1]
    )
)


def _may_match(kind: str, low: str, separated: bool) -> bool:
    """Whether rule `kind` can match the ASCII text whose lower case is `low`."""
    if kind in _SEPARATED and not separated:
        return False
    return any(anchor in low for anchor in _ANCHORS[kind])


def redact(text: str) -> str:
    """`text` as the store keeps it: credentials masked, and NUL (a program's binary output
    in a symptom; PostgreSQL cannot store it) as U+FFFD, as a browser shows it. Idempotent:
    redacting twice changes nothing more."""
    masked = _mask(text)
    return masked.replace("\0", "\ufffd") if "\0" in masked else masked


def _mask(text: str) -> str:
    """`text` with credentials masked."""
    if not text.isascii():
        # Case-insensitive patterns match some non-ASCII letters ('ſ' for 's', the Kelvin
        # sign for 'k') that lower() does not turn into the anchors: no gate.
        for _kind, pattern, replacement in _RULES:
            text = pattern.sub(replacement, text)
        return text
    low, separated = text.lower(), ":" in text or "=" in text
    if _ANY_ANCHOR.search(low) is None:
        return text  # no rule's anchor: no rule can match
    for kind, pattern, replacement in _RULES:
        if _may_match(kind, low, separated):
            masked = pattern.sub(replacement, text)
            if masked != text:
                # A mask is ASCII too; later rules are gated on the text as it is now.
                text, low, separated = masked, masked.lower(), ":" in masked or "=" in masked
    return text


def secret_kinds(text: str) -> list[str]:
    """Which kinds of secrets `text` contains (for reports and tests); empty if none."""
    return [kind for kind, pattern, _ in _RULES if pattern.search(text)]


def redact_evidence(evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Evidence with redacted excerpts (run ids are ours, never secrets)."""
    out = []
    for e in evidence:
        excerpt = redact(e.excerpt)
        out.append(e if excerpt == e.excerpt else Evidence(run_id=e.run_id, excerpt=excerpt))
    return tuple(out)


def redact_draft(draft: LessonDraft) -> LessonDraft:
    """`draft` with every free-text field redacted (itself when nothing was masked)."""
    update: dict[str, object] = {
        name: redact(value)
        for name, value in (
            ("symptom", draft.symptom),
            ("root_cause", draft.root_cause),
            ("fix", draft.fix),
            ("applies_when", draft.applies_when),
        )
    }
    update["evidence"] = redact_evidence(draft.evidence)
    changed = {k: v for k, v in update.items() if v != getattr(draft, k)}
    return draft.model_copy(update=changed) if changed else draft
