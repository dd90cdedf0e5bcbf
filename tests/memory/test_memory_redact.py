"""Redaction: realistic credentials are masked, look-alike non-secrets survive."""

from __future__ import annotations

import pytest

from memory.redact import MASK, redact, redact_draft, secret_kinds
from memory.types import Evidence, LessonDraft

# (text, secret that must disappear, kind); the key samples are fake but well-formed.
SECRETS = [
    (
        "export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxYZ0123456789abcd",
        "sk-abcdefghijklmnopqrstuvwxYZ0123456789abcd",
        "openai_key",
    ),
    (
        "client = OpenAI(api_key='sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab-cD')",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab-cD",
        "openai_key",
    ),
    (
        "anthropic key sk-ant-api03-AAAAbbbbCCCCddddEEEEffff1111",
        "sk-ant-api03-AAAAbbbbCCCCddddEEEEffff1111",
        "openai_key",
    ),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "assignment",
    ),
    (
        "git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/org/repo",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_token",
    ),
    (
        "GITHUB_TOKEN: github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_token",
    ),
    (
        "slack webhook token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack_token",
    ),
    (
        "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "jwt",
    ),
    (
        "curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0'",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "bearer",
    ),
    ("DB_PASSWORD=correct-horse-battery", "correct-horse-battery", "assignment"),
    ('{"user": "bob", "password": "hunter2!"}', "hunter2!", "assignment"),
    ("passwd: s3cr3t_Value", "s3cr3t_Value", "assignment"),
    ("client_secret=abc123def456", "abc123def456", "assignment"),
    (
        "engine = create_engine('postgresql://app_user:Pa55w0rd@db.internal:5432/prod')",
        "Pa55w0rd",
        "url_credentials",
    ),
    ("redis://:only-a-password@cache:6379/0", "only-a-password", "url_credentials"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4Ul\nq2X0Zg==\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAx4Ul",
        "private_key",
    ),
    (
        "log cut: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
        "b3BlbnNzaC1rZXktdjEA",
        "private_key",
    ),
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_secret_is_masked(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "REDACTED" in out
    assert kind in secret_kinds(text)
    assert redact(out) == out  # idempotent


def test_connection_string_keeps_user_and_host() -> None:
    out = redact("could not connect: postgresql://app_user:Pa55w0rd@db.internal:5432/prod")
    assert out == f"could not connect: postgresql://app_user:{MASK}@db.internal:5432/prod"


# Text from real logs that looks a little like a secret and must survive intact.
NOT_SECRETS = [
    "task-1234567890abcdefghijklmnop failed",  # "sk" inside a word
    "the disk-usage-report-generator-tool crashed",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b broke the build",
    "sha256: 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "max_tokens=512, tokenizer=cl100k_base",
    "the password must be at least 12 characters",
    "token budget exceeded while rendering lessons",
    "bearer authentication is configured in settings.py",
    "KeyError: 'token'",
    "see https://example.com:8080/path?x=1 and user@example.com",
    "ssh://git@github.com/org/repo.git",
    "AKIA is the prefix of AWS access key ids",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_non_secret_survives(text: str) -> None:
    assert redact(text) == text
    assert secret_kinds(text) == []


def test_redact_draft_covers_every_text_field() -> None:
    leaked = "password=hunter2"
    draft = LessonDraft(
        error_type="runtime_error",
        symptom=leaked,
        root_cause=leaked,
        fix=leaked,
        applies_when=leaked,
        evidence=(Evidence(run_id="run-1", excerpt=leaked),),
    )
    clean = redact_draft(draft)
    fields = [clean.symptom, clean.root_cause, clean.fix, clean.applies_when]
    assert all("hunter2" not in f for f in [*fields, clean.evidence[0].excerpt])
    assert clean.evidence[0].run_id == "run-1"
