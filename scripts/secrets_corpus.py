"""The secrets corpus of scripts/bench_secrets.py: credentials as logs leak them, and
ordinary log and code lines that must survive redaction.

Every secret is fake but has the structure of the real thing (prefix, alphabet, length),
generated from a fixed seed so the corpus is the same on every run. Each one sits in the
context it leaks through in practice: a traceback, an environment dump, a URL, an HTTP
header, a config file, a .env file. `ORDINARY` holds text that looks a little like a
secret (hashes, UUIDs, base64 test data, long identifiers, paths, versions) and is useful
evidence that redaction must leave alone.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_RNG = random.Random(20261201)
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _r(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _pem_body(lines: int) -> str:
    return "\n".join(_r(_B64, 64) for _ in range(lines))


def _jwt() -> str:
    def part(raw: str) -> str:
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    sub = _r(_ALNUM, 10)
    payload = f'{{"sub":"{sub}","role":"admin","exp":1999999999}}'
    header = part('{"alg":"HS256","typ":"JWT"}')
    return f"{header}.{part(payload)}.{_r(_URLSAFE, 43)}"


@dataclass(frozen=True)
class Secret:
    """One leaked credential: its family, the text it leaks in, and the secret value."""

    kind: str
    context: str
    secret: str


def _traceback(line: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/solution.py", line 14, in <module>\n'
        "    main()\n"
        '  File "/srv/app/solution.py", line 9, in main\n'
        f"    {line}\n"
        "ConnectionError: request failed"
    )


def _secrets() -> list[Secret]:
    out: list[Secret] = []

    def add(kind: str, secret: str, template: str) -> None:
        out.append(Secret(kind, template.format(s=secret), secret))

    # -- cloud keys ------------------------------------------------------------------
    add("aws_access_key", "AKIA" + _r(_UPPER, 16), "aws_access_key_id = {s}")
    add("aws_access_key", "ASIA" + _r(_UPPER, 16), "export AWS_ACCESS_KEY_ID={s}")
    aws_secret = _r(_B64, 40)
    add("aws_secret", aws_secret, "AWS_SECRET_ACCESS_KEY={s}\nAWS_DEFAULT_REGION=eu-west-1")
    add("aws_secret", _r(_B64, 40), 'boto3.client("s3", aws_secret_access_key="{s}")')
    add("aws_session", _r(_B64, 120), "AWS_SESSION_TOKEN={s}")
    add("gcp_api_key", "AIza" + _r(_URLSAFE, 35), "https://maps.googleapis.com/maps/api?key={s}")
    add(
        "gcp_service_account",
        _r(_B64, 64),
        '{{"type": "service_account", "private_key_id": "'
        + _r(_HEX, 40)
        + '", "private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n'
        + _r(_B64, 64)
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "ci@proj.iam.gserviceaccount.com"}}',
    )
    add("gcp_key_id", _r(_HEX, 40), '"private_key_id": "{s}",')
    add("gcp_oauth", "GOCSPX-" + _r(_URLSAFE, 28), "client_secret: {s}")
    add("gcp_oauth", "ya29." + _r(_URLSAFE, 60), "Authorization: Bearer {s}")
    add(
        "azure_storage",
        _r(_B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={s};"
        "EndpointSuffix=core.windows.net",
    )
    add(
        "azure_sas",
        _r(_B64, 43) + "%3D",
        "https://prodlogs.blob.core.windows.net/c/x.csv?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&se=2027-01-01T00:00:00Z&sig={s}",
    )
    add(
        "azure_client_secret",
        _r(_URLSAFE, 3) + "8Q~" + _r(_URLSAFE + ".~", 34),
        "AZURE_CLIENT_SECRET={s}",
    )
    add(
        "azure_client_secret",
        _r(_URLSAFE, 3) + "8Q~" + _r(_URLSAFE + ".~", 34),
        "ClientSecretCredential(tenant, client_id, '{s}')",
    )
    # -- code hosting and chat tokens --------------------------------------------------
    add("github", "ghp_" + _r(_ALNUM, 36), "git clone https://{s}@github.com/org/repo.git")
    add("github", "gho_" + _r(_ALNUM, 36), "Authorization: token {s}")
    add("github", "ghs_" + _r(_ALNUM, 36), "GITHUB_TOKEN={s}")
    add("github", "github_pat_11" + _r(_UPPER, 20) + "_" + _r(_ALNUM, 59), "GH_TOKEN: {s}")
    add(
        "gitlab",
        "glpat-" + _r(_URLSAFE, 20),
        "git remote add origin https://oauth2:{s}@gitlab.com/g/p.git",
    )
    add("gitlab", "glpat-" + _r(_URLSAFE, 20), "PRIVATE-TOKEN: {s}")
    add(
        "slack",
        "xoxb-" + _r(string.digits, 12) + "-" + _r(string.digits, 13) + "-" + _r(_ALNUM, 24),
        "slack_sdk.errors.SlackApiError: invalid_auth for token {s}",
    )
    add(
        "slack",
        "xoxp-" + _r(string.digits, 12) + "-" + _r(string.digits, 12) + "-" + _r(_HEX, 32),
        "SLACK_USER_TOKEN={s}",
    )
    add(
        "slack",
        "xapp-1-A" + _r(_UPPER, 10) + "-" + _r(string.digits, 13) + "-" + _r(_HEX, 64),
        "SLACK_APP_TOKEN={s}",
    )
    add(
        "slack_webhook",
        "T" + _r(_UPPER, 8) + "/B" + _r(_UPPER, 8) + "/" + _r(_ALNUM, 24),
        "requests.post('https://hooks.slack.com/services/{s}', json=msg)",
    )
    add(
        "discord_webhook",
        _r(string.digits, 18) + "/" + _r(_URLSAFE, 68),
        "POST https://discord.com/api/webhooks/{s} -> 401",
    )
    # -- payment and AI providers --------------------------------------------------------
    add("stripe", "sk_live_" + _r(_ALNUM, 24), "stripe.api_key = '{s}'")
    add(
        "stripe",
        "rk_live_" + _r(_ALNUM, 24),
        "stripe.error.AuthenticationError: Invalid API Key provided: {s}",
    )
    add("stripe", "whsec_" + _r(_ALNUM, 32), "STRIPE_WEBHOOK_SECRET={s}")
    add(
        "openai",
        "sk-proj-" + _r(_URLSAFE, 48),
        "openai.AuthenticationError: Incorrect API key provided: {s}",
    )
    add("openai", "sk-" + _r(_ALNUM, 48), 'client = OpenAI(api_key="{s}")')
    add("anthropic", "sk-ant-api03-" + _r(_URLSAFE, 93), "x-api-key: {s}")
    add("huggingface", "hf_" + _r(_ALNUM, 34), "HUGGING_FACE_HUB_TOKEN={s}")
    add("npm", "npm_" + _r(_ALNUM, 36), "//registry.npmjs.org/:_authToken={s}")
    add("pypi", "pypi-AgEIcHlwaS5vcmc" + _r(_URLSAFE, 60), "TWINE_PASSWORD={s}")
    add(
        "sendgrid",
        "SG." + _r(_URLSAFE, 22) + "." + _r(_URLSAFE, 43),
        "sg = SendGridAPIClient('{s}')",
    )
    add("twilio", _r(_HEX, 32), "TWILIO_AUTH_TOKEN={s}")
    # -- JWTs, bearer headers, cookies, sessions ---------------------------------------
    add("jwt", _jwt(), "401 Unauthorized: token {s} expired")
    add("jwt", _jwt(), "Authorization: Bearer {s}")
    add("bearer", _r(_ALNUM, 40), "curl -H 'Authorization: Bearer {s}' https://api.example.com/v1")
    add(
        "basic_auth",
        base64.b64encode(b"deploy:" + _r(_ALNUM, 14).encode()).decode(),
        "Authorization: Basic {s}",
    )
    add("cookie", _r(_HEX, 32), "Cookie: sessionid={s}; csrftoken=" + _r(_ALNUM, 32))
    add("cookie", _r(_URLSAFE, 40), "Set-Cookie: session={s}; Path=/; HttpOnly; Secure")
    add("cookie", _r(_HEX, 26).upper(), "GET /account HTTP/1.1\nCookie: theme=dark; PHPSESSID={s}")
    add("session", _r(_HEX, 32), "redirect to /login?next=/admin&JSESSIONID={s}")
    add("session", "s%3A" + _r(_URLSAFE, 32) + "." + _r(_URLSAFE, 43), "connect.sid={s}")
    # -- private keys --------------------------------------------------------------------
    add(
        "private_key",
        _pem_body(1),
        "-----BEGIN RSA PRIVATE KEY-----\n{s}\n" + _pem_body(3) + "\n-----END RSA PRIVATE KEY-----",
    )
    add("private_key", _pem_body(1), "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n" + _pem_body(2))
    add(
        "private_key",
        _pem_body(1),
        "-----BEGIN EC PRIVATE KEY-----\n{s}\n-----END EC PRIVATE KEY-----",
    )
    add(
        "private_key",
        _pem_body(1),
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{s}\n="
        + _r(_B64, 4)
        + "\n-----END PGP PRIVATE KEY BLOCK-----",
    )
    add(
        "private_key",
        _pem_body(1),
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{s}\n"
        + _pem_body(2)
        + "\n-----END ENCRYPTED PRIVATE KEY-----",
    )
    # -- connection strings with passwords ---------------------------------------------
    add(
        "postgres",
        _r(_ALNUM, 16),
        "psycopg.OperationalError: connection to postgresql://app:{s}@db.internal:5432/prod failed",
    )
    add("postgres", _r(_ALNUM, 12) + "!#", "DATABASE_URL=postgres://report:{s}@10.0.3.7/reports")
    add(
        "mysql",
        _r(_ALNUM, 14),
        "engine = create_engine('mysql+pymysql://root:{s}@mysql:3306/shop')",
    )
    add("mysql", _r(_ALNUM, 14), "jdbc:mysql://mysql:3306/shop?user=root&password={s}&useSSL=false")
    add(
        "mongodb",
        _r(_ALNUM, 18),
        "pymongo.errors.OperationFailure: mongodb+srv://svc:{s}@cluster0.ab1cd.mongodb.net/?retryWrites=true",
    )
    add("redis", _r(_ALNUM, 20), "redis.exceptions.AuthenticationError: redis://:{s}@cache:6379/0")
    add("redis", _r(_ALNUM, 20), "REDIS_URL=rediss://default:{s}@redis-1234.cloud.example.com:6380")
    add(
        "amqp",
        _r(_ALNUM, 16),
        "pika.exceptions.ProbableAuthenticationError: amqp://worker:{s}@rabbit:5672/%2F",
    )
    add(
        "mssql",
        _r(_ALNUM, 12) + ";x",
        'Server=tcp:sql1,1433;Database=erp;User Id=sa;Password="{s}";Encrypt=true',
    )
    add(
        "basic_auth_url",
        _r(_ALNUM, 15),
        "urllib.error.HTTPError: https://ci-bot:{s}@nexus.example.com/repository/pypi/simple",
    )
    add("ftp", _r(_ALNUM, 10), "ftp://backup:{s}@files.example.com/dumps/")
    # -- tracebacks, env dumps and .env files ----------------------------------------------
    add("traceback_local", _r(_ALNUM, 18), _traceback("connect(host='db', password='{s}')"))
    add("traceback_local", "sk-" + _r(_ALNUM, 48), _traceback("api_key = '{s}'"))
    add(
        "env_dump",
        _r(_URLSAFE, 50),
        "os.environ: environ({{'HOME': '/root', 'DJANGO_SECRET_KEY': '{s}', 'LANG': 'C.UTF-8'}})",
    )
    add("env_dump", _r(_B64, 44), "PATH=/usr/bin\nJWT_SECRET={s}\nPORT=8080")
    add("env_dump", _r(_HEX, 64), "SECRET_KEY_BASE={s}")
    add("dotenv", _r(_B64, 32), "# .env\nDEBUG=false\nENCRYPTION_KEY={s}\nLOG_LEVEL=info")
    add("dotenv", _r(_ALNUM, 20), "DB_HOST=db\nDB_USER=app\nDB_PASS={s}\nDB_NAME=app")
    add("dotenv", _r(_ALNUM, 24), 'MAIL_PASSWORD="{s}"')
    add("yaml", _r(_ALNUM, 22), "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {s}")
    add(
        "json_config",
        _r(_ALNUM, 12) + " " + _r(_ALNUM, 8),
        '{{"user": "svc", "password": "{s}", "host": "db"}}',
    )
    add("ini", _r(_ALNUM, 16), "[client]\nuser = backup\npassword = {s}")
    add("cli_flag", _r(_ALNUM, 14), "mysqldump -u root --password={s} shop > dump.sql")
    add("cli_flag", _r(_ALNUM, 14), "psql exited 2: PGPASSWORD={s} psql -h db -U app")
    add("header", _r(_HEX, 32), "X-API-Key: {s}")
    add(
        "header",
        _r(_ALNUM, 40),
        "requests.exceptions.HTTPError: 403 for url https://api.example.com/v2/items?api_key={s}&page=2",
    )
    return out


SECRETS: tuple[Secret, ...] = tuple(_secrets())

# Ordinary lines from code and logs: none of them holds a credential.
ORDINARY: tuple[str, ...] = (
    # git
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "Merge: 1a2b3c4 5d6e7f8",
    "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 refs/heads/main",
    "HEAD is now at 9fceb02 Fix the off-by-one in the pager",
    "index 83db48f..bf269f4 100644",
    # hashes and digests
    "sha256: 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "md5(data) = d41d8cd98f00b204e9800998ecf8427e",
    "docker pull python@sha256:4c8b6f1e2a0e9f1c3b7d5a8e6f2d4c1b9a7e5f3d1c8b6a4e2f0d9c7b5a3e1f2d",
    "integrity sha512-9Yf6kS3bB6xXk0Qb2rE1Vd5Kx3hZxGx0fA1Ew0Xp3Q4mVd8mZf0rZLkZ3i3uV2mJr5xQ==",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    # ids
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "run_id=run-20261201-0a1b2c3d4e5f",
    "lesson les_00000000000000a7 merged into les_00000000000000b2",
    "container 4f2a9c1e8b7d started",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "ObjectId('507f1f77bcf86cd799439011') not found",
    "ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV",
    # base64 test data
    "expected b'aGVsbG8gd29ybGQ=' to decode to b'hello world'",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "assert base64.b64encode(b'\\x00\\x01\\x02') == b'AAEC'",
    "fixture = 'U29tZSBsb25nZXIgdGVzdCBkYXRhIHRoYXQgaXMgbm90IGEgc2VjcmV0IGF0IGFsbA=='",
    # long identifiers and code
    "AbstractSingletonProxyFactoryBeanConfigurationException raised in loader",
    "def test_refresh_token_is_rotated_after_expiry_when_clock_skews():",
    "tokenizer = AutoTokenizer.from_pretrained(model_dir)",
    "max_tokens=512, tokenizer=cl100k_base",
    "token_count = len(tokens)",
    "password = getpass.getpass('Password: ')",
    "api_key = os.environ['OPENAI_API_KEY']",
    "secret = settings.SECRET_KEY",
    "if not password:\n    raise ValueError('password must not be empty')",
    "KeyError: 'token'",
    "TypeError: login() missing 1 required positional argument: 'password'",
    "the password must be at least 12 characters",
    "token budget exceeded while rendering lessons",
    "bearer authentication is configured in settings.py",
    "from cryptography.hazmat.primitives import serialization  # load_pem_private_key",
    "AKIA is the prefix of AWS access key ids",
    "sk-learn is not the package name; use scikit-learn",
    "task-1234567890abcdefghijklmnop failed",
    "the disk-usage-report-generator-tool crashed",
    # paths
    "/usr/lib/python3.11/site-packages/sqlalchemy/engine/base.py:1969: OperationalError",
    "C:\\Users\\build\\AppData\\Local\\Temp\\pip-req-build-8x2k1q\\setup.py",
    "~/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/e4ce9877abf3edfe10b0d82785e83bdcb973e22e",
    "/var/lib/docker/overlay2/5f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4/merged",
    # versions and URLs without credentials
    "numpy==1.26.4 pandas==2.2.2 torch==2.13.0+cpu",
    "Python 3.11.9 (main, Apr  2 2024, 08:25:04) [GCC 12.2.0] on linux",
    "version 0.1.0a3.dev20261201+g3f78685",
    "see https://example.com:8080/path?x=1 and user@example.com",
    "ssh://git@github.com/org/repo.git",
    "git@github.com:org/repo.git",
    "https://pypi.org/simple/requests/#sha256=942c5a758f98d790eaed1a29cb6eefc7ffb0d1cf7af05c3d2791656dbd6ad1e1",
    "postgresql://localhost/test",
    "redis://cache:6379/0",
    "mailto:ops@example.com?subject=build%20failed",
    # logs
    "2026-12-01T17:16:54.123Z INFO worker-3 processed 1200 rows in 0.84s",
    "WARNING: token refresh skipped (no refresh_token configured)",
    "session closed after 300 s idle",
    "Set-Cookie header missing on /health",
    'HTTP/1.1 401 Unauthorized (WWW-Authenticate: Bearer realm="api")',
    "ValueError: could not convert string to float: '$1,200.50'",
    "[2026-12-01 10:00:00] cache key user:42:profile miss",
    "IPv6 address fe80::1ff:fe23:4567:890a unreachable",
)
