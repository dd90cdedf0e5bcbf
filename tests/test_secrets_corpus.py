"""The secrets corpus (scripts/secrets_corpus.py, 76 secrets of 45 kinds) through every
write path of the memory and out through recall, rendering, the CLI and exports.

Real store (SQLite file + embedded chromadb), the real retrospective with a scripted model,
the CLI through typer's runner. Pass: no secret, nor any 10 characters of one, is in the
store's files, in what is shown, or in an export; no ordinary log or code line is changed
by redaction. `python scripts/bench_secrets.py` prints the same figures.
"""

from __future__ import annotations

from pathlib import Path

from scripts.bench_secrets import leaked, run
from scripts.secrets_corpus import ORDINARY, SECRETS


def test_corpus_is_large_and_varied() -> None:
    assert len(SECRETS) >= 60 and len({s.kind for s in SECRETS}) >= 30
    assert len(ORDINARY) >= 50
    assert all(s.secret in s.context for s in SECRETS)


def test_leak_detector_finds_a_partial_secret() -> None:
    secret = SECRETS[0].secret
    assert leaked(secret, f"key {secret[3:14]} in a log")
    assert not leaked(secret, "key [REDACTED] in a log")


def test_no_secret_is_stored_shown_or_exported(tmp_path: Path) -> None:
    report = run(tmp_path)
    assert report.lessons_stored >= len(SECRETS) and report.recalled == len(SECRETS)
    assert report.not_detected == ()
    assert report.stored == () and report.shown == () and report.exported == ()
    assert report.false_positives == ()
