"""The redaction gate (`memory.redact._ANCHORS`) changes nothing but the time redaction takes.

`redact` runs a rule only when the text holds one of the rule's anchors. Two checks, over
the secrets corpus (scripts/secrets_corpus.py), the redaction tests' samples, the lesson
corpus, the bulk benchmark's synthetic lessons and a seeded fuzz of near misses:

- every match of every rule, at every step of the rule chain, contains one of that rule's
  anchors (so the gate cannot skip a rule that would have matched), and every rule matches
  somewhere in the corpus (so that check is not empty);
- the gated `redact` returns exactly what running every rule unconditionally returns.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from memory_corpus import LESSONS
from test_memory_redact import NOT_SECRETS
from test_memory_redact import SECRETS as REDACT_SAMPLES

from memory.redact import _ANCHORS, _RULES, _may_match, redact
from scripts._synthetic_lessons import SCOPES, generate
from scripts.secrets_corpus import ORDINARY, SECRETS


def ungated(text: str) -> str:
    """Redaction as it was before the gate: every rule, in order."""
    for _kind, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


# Pieces that come close to a rule without (always) making a match: anchors, credential
# words, separators, values, case changes.
_FRAGMENTS = (
    [a for anchors in _ANCHORS.values() for a in anchors]
    + [a.upper() for anchors in _ANCHORS.values() for a in anchors]
    + ["password", "Passwd", "API_KEY", "DB_PASS", "SECRET_KEY_BASE", "session_id", "sid"]
    + ["token", "Token", "KeyError", "monkey", "inside", "decode", "author", "sig"]
    + ["=", ":", ": ", " = ", "'", '"', "?", "&", ";", "@", "/", "//", "://", "\n", " ", "-"]
    + ["hunter2", "s3cr3t_Value", "os.environ['X']", "None", "${VAR}", "***", "[REDACTED]"]
    + ["AKIAIOSFODNN7EXAMPLE", "ghp_" + "a1" * 18, "sk-" + "Ab3" * 8, "xoxb-1234567890-ab"]
    + ["eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxIn0", "Bearer ", "9f8e7d6c5b4a3928170"]
    + ["https://", "postgres://u:p@h/db", "Cookie: a=b; Path=/", "-----BEGIN RSA PRIVATE KEY-----"]
    + ["hooks.slack.com/services/", "AIza" + "x" * 35, "hf_" + "y" * 30, "abc8Q~" + "z" * 32]
    + ["ſ", "\u212a", "€", "é"]  # non-ASCII letters: the ungated path
)


# One credential per anchor, so each anchor is checked against a real match.
_ALNUM = "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0"
PER_ANCHOR = [
    f"-----BEGIN EC PRIVATE KEY-----\n{_ALNUM}\n-----END EC PRIVATE KEY-----",
    "https://hooks.slack.com/services/T000/B000/XXXX and mysql://root:pw1@db/x",
    "Authorization: Basic dXNlcjpwYXNzd29yZDEyMzQ=",
    "Set-Cookie: sessionid=abc123; Path=/",
    *(f"key {p}k_{m}_{_ALNUM}" for p in "sr" for m in ("live", "test")),
    "whsec_" + _ALNUM,
    "ASIA" + "Q" * 16,
    *(f"token gh{c}_{_ALNUM}x" for c in "pousr"),
    "github_pat_" + _ALNUM,
    *(f"xox{c}-1234567890-abcdef" for c in "abposr"),
    "xapp-1-A0123456789-abc",
    *(f"gl{p}-{_ALNUM}" for p in ("pat", "ptt", "dt", "rt", "cbt", "oas")),
    "GOCSPX-" + _ALNUM,
    "ya29." + _ALNUM,
    "npm_" + _ALNUM + "abcdef",
    "pypi-AgE" + _ALNUM * 2,
    f"SG.{_ALNUM[:20]}.{_ALNUM[:20]}",
    *(f"do{c}_v1_{'ab12' * 16}" for c in "opr"),
    "abc8Q~" + _ALNUM + "xyz",
    *(
        f"https://x.example/f?a=1{sep}{name}=v4lue"
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
    ),  # fmt: skip
    *(
        f"MY{suffix}=v4lue"
        for suffix in (
            "_KEY",
            "_SECRET",
            "_TOKEN",
            "_PASS",
            "_PWD",
            "_AUTH",
            "_CREDENTIALS",
            "_SIGNATURE",
        )
    ),  # fmt: skip
    *(f"{name}: v4lue" for name in ("passphrase", "pwd", "secret", "apikey", "token", "sid")),
    "session_id=v4lue",
]


def _fuzz(n: int, seed: int = 20261202) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(n):
        yield "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 9)))


def _corpus() -> list[str]:
    texts = [s.context for s in SECRETS] + list(ORDINARY) + list(NOT_SECRETS)
    texts += [text for text, _secret, _kind in REDACT_SAMPLES] + PER_ANCHOR
    drafts = list(LESSONS.values()) + generate(300, seed=5, scopes=SCOPES)
    texts += [t for d in drafts for t in (d.symptom, d.root_cause, d.fix, d.applies_when)]
    texts += [t.upper() for t in texts] + [t.swapcase() for t in texts]
    return texts + list(_fuzz(4000))


CORPUS = _corpus()


def _separated(text: str) -> bool:
    return ":" in text or "=" in text


def test_every_match_holds_an_anchor_of_its_rule() -> None:
    seen: set[tuple[str, str]] = set()  # (rule, anchor) pairs found inside a match
    for text in CORPUS:
        if not text.isascii():
            continue  # redact does not gate these
        for kind, pattern, replacement in _RULES:
            for m in pattern.finditer(text):
                piece = m.group(0).lower()
                # The anchor is inside the match; the separator may be anywhere in the text.
                assert _may_match(kind, piece, _separated(text)), (kind, m.group(0))
                seen.update((kind, a) for a in _ANCHORS[kind] if a in piece)
            text = pattern.sub(replacement, text)  # the next rule sees this text
    # Every anchor was checked against a real match: none is there by guesswork alone.
    assert {(k, a) for k, anchors in _ANCHORS.items() for a in anchors} <= seen


def test_gated_redaction_equals_every_rule_run() -> None:
    changed = 0
    for text in CORPUS:
        expected = ungated(text)
        assert redact(text) == expected, text
        changed += expected != text
    assert changed > 500  # the corpus exercises masking, not only clean text


@pytest.mark.parametrize("letter", ["ſ", "\u212a"])
def test_non_ascii_case_folds_are_still_masked(letter: str) -> None:
    # Under re.IGNORECASE 'ſ' matches 's' and the Kelvin sign 'k'; lower() keeps them apart
    # from the anchors, so such text must take the ungated path.
    text = {"ſ": "paſſword=hunter2", "\u212a": "api_\u212aey=hunter2"}[letter]
    assert "hunter2" not in redact(text)
    assert redact(text) == ungated(text)
