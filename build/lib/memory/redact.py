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

_KV_NAMES = r"password|passwd|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|token"

# (kind, pattern, replacement). Order matters: whole blocks first, then structured keys,
# then generic name=value pairs (so `token=sk-...` is not masked twice in odd ways).
_RULES: tuple[tuple[str, re.Pattern[str], _Replacer], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
            # Log excerpts are often cut: mask to the END line, or to the end of the base64.
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s]*)",
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
    # OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-); \b keeps "task-..." intact.
    ("openai_key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), MASK),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), MASK),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        MASK,
    ),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), MASK),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), MASK),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), MASK),
    (
        "assignment",
        # password=..., "client_secret": "...", DB_PASSWD: ..., aws_secret_access_key = ...
        # `token\b` so that max_tokens=512 and tokenizer=... survive.
        re.compile(
            r"(?i)(\b[\w.\-]*?(?:" + _KV_NAMES + r")(?:[_-]?(?:key|id))?)\b"
            r"([\"']?\s*[:=]\s*)([\"']?)([^\s\"'&;,]+)"
        ),
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}",
    ),
)


def redact(text: str) -> str:
    """`text` with credentials masked. Idempotent: redacting twice changes nothing more."""
    for _kind, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def secret_kinds(text: str) -> list[str]:
    """Which kinds of secrets `text` contains (for reports and tests); empty if none."""
    return [kind for kind, pattern, _ in _RULES if pattern.search(text)]


def redact_evidence(evidence: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
    """Evidence with redacted excerpts (run ids are ours, never secrets)."""
    return tuple(Evidence(run_id=e.run_id, excerpt=redact(e.excerpt)) for e in evidence)


def redact_draft(draft: LessonDraft) -> LessonDraft:
    """A copy of `draft` with every free-text field redacted."""
    return draft.model_copy(
        update={
            "symptom": redact(draft.symptom),
            "root_cause": redact(draft.root_cause),
            "fix": redact(draft.fix),
            "applies_when": redact(draft.applies_when),
            "evidence": redact_evidence(draft.evidence),
        }
    )
