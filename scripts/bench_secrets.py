"""Secrets corpus through every way text enters, leaves or is shown by the memory.

    python scripts/bench_secrets.py [--out bench-results/secrets.json] [--show-all]

Each secret of scripts/secrets_corpus.py (cloud keys, tokens, JWTs, private keys,
connection strings, cookies, env dumps) enters a real store (SQLite file + embedded
chromadb, hashing embedder) five ways:

- retrospective: a run whose goal, failing program, crash output and the model's analysis
  (ScriptedLLM) all carry the secret, fixed in round 2, learned with `retrospectives.learn`;
- add: `Memory.add` with the secret in every field and in the evidence;
- seed: a plain record through `lessons import`'s seed path (`memory.seed.seed_lessons`);
- import: a full export line (`memory.export.import_lessons`);
- edit: `Memory.update` of a stored lesson.

Then: stored (every byte of the store directory: SQLite file, WAL, chroma files), shown
(recall + `render_lessons` with the secret's own context as the query; the CLI's `lessons
show --json` for every lesson, `list --json`, `search`), exported (`export_lessons` and
`lessons export`). A leak is the secret, or any 10 characters of it, found in text (in raw
bytes: its start, middle or end). False positives: the lines of `ORDINARY` that `redact`
changes. tests/test_secrets_corpus.py asserts 0 leaks and 0 false positives.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from agent.app.cli_lessons import lessons_app
from agent.app.session import finish_run
from agent.candidate import Candidate
from agent.feedback import Feedback
from agent.llm.base import Usage
from agent.llm.scripted import ScriptedLLM
from agent.result import RoundRecord, RunResult
from memory import HashEmbedder, Lesson, LessonDraft, LessonQuery, Memory, render_lessons
from memory.export import export_lessons, header_line, import_lessons, lesson_line
from memory.redact import redact, secret_kinds
from memory.seed import seed_lessons
from memory.types import Evidence, LessonFilter
from retrospectives.extract import Retrospective
from retrospectives.learn import learn
from scripts._benchlib import REPO, write_json_atomic
from scripts.secrets_corpus import ORDINARY, SECRETS, Secret

WINDOW = 10
_NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
PATHS = ("retrospective", "add", "seed", "import", "edit")
ALL_STATUSES = LessonFilter(status=("candidate", "validated", "deprecated", "merged"), limit=1000)


class Leak(BaseModel):
    """Where a secret (or a part of it) was found."""

    model_config = ConfigDict(frozen=True)

    kind: str
    index: int
    where: str


class SecretsReport(BaseModel):
    """The figures of one pass over the corpus."""

    model_config = ConfigDict(frozen=True)

    secrets: int
    kinds: int
    write_paths: tuple[str, ...]
    lessons_stored: int
    recalled: int  # recall queries (one per secret) that returned at least one lesson
    not_detected: tuple[str, ...]  # contexts `secret_kinds` finds nothing in
    self_identifying: int  # secrets found even without their context (placed bare)
    stored: tuple[Leak, ...]
    shown: tuple[Leak, ...]
    exported: tuple[Leak, ...]
    ordinary: int
    false_positives: tuple[str, ...]
    seconds: float


def leaked(secret: str, text: str) -> bool:
    """The secret, or any WINDOW consecutive characters of it, appear in `text`."""
    width = min(len(secret), WINDOW)
    return any(secret[i : i + width] in text for i in range(len(secret) - width + 1))


def _probes(secret: str) -> list[bytes]:
    width = min(len(secret), WINDOW)
    mid = max(0, len(secret) // 2 - width // 2)
    parts = {secret[:width], secret[mid : mid + width], secret[-width:]}
    return [p.encode() for p in parts]


def _leaks(texts: Iterable[tuple[str, str]]) -> list[Leak]:
    found = []
    for where, text in texts:
        for i, s in enumerate(SECRETS):
            if leaked(s.secret, text):
                found.append(Leak(kind=s.kind, index=i, where=where))
    return found


def _raw_leaks(store: Path) -> list[Leak]:
    found = []
    for path in sorted(p for p in store.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for i, s in enumerate(SECRETS):
            if any(probe in data for probe in _probes(s.secret)):
                found.append(Leak(kind=s.kind, index=i, where=str(path.relative_to(store))))
    return found


# -- the five write paths -------------------------------------------------------------


def bare(s: Secret) -> str:
    """The secret alone where it names itself (`ghp_...`, `AKIA...`), else in its context.

    A bare password or hex token has no structure to find: redaction that masked every
    such string would mask every hash and id in the logs too, so a bare one is only
    fair to place where its context says what it is.
    """
    return s.secret if secret_kinds(s.secret) else s.context


def _run_with(i: int, s: Secret) -> RunResult:
    """A run that crashed on the secret's log line, then passed without the secret."""
    leaky = f'CONFIG = """{s.context}"""\nconnect(CONFIG)\n'
    fixed = "import json\njson.dump(42, open('out.json', 'w'))\n"
    crash = Feedback(
        kind="runtime_error",
        stage="execution",
        summary=f"{s.context}\nConnectionError: refused",
        error_type="ConnectionError",
        location="solution.py:2",
        key_message=" ".join(s.context.split())[:400],
        failing_example=bare(s),
    )
    ok = Feedback(kind="success", stage="execution", summary="check passed")
    rounds = tuple(
        RoundRecord(
            round=n,
            action="generate" if n == 1 else "refine",
            candidate=Candidate(files={"solution.py": body}, text=body, fix_note=note),
            checks=(fb,),
            usage=Usage(prompt_tokens=10, completion_tokens=10, calls=1),
            seconds=0.1,
        )
        for n, body, fb, note in ((1, leaky, crash, None), (2, fixed, ok, f"drop {bare(s)}"))
    )
    return RunResult(
        run_id=f"run-secret-{i:03d}",
        task_id=f"secret-{i:03d}",
        scope=f"s{i:03d}",
        goal=f"Write 42 to out.json; the service credential is {bare(s)}",
        passed=True,
        stop_reason="passed",
        rounds=rounds,
        best_round=2,
        unresolved=(),
        usage=Usage(prompt_tokens=20, completion_tokens=20, calls=2),
        seconds=0.2,
    )


def _analysis(s: Secret) -> str:
    return json.dumps(
        {
            "root_cause": f"the program connected with the credential in {s.context}",
            "fix": f"do not call the service; the key {bare(s)} is not needed",
            "applies_when": f"programs whose config holds {bare(s)}",
        }
    )


def _draft(i: int, s: Secret, path: str) -> LessonDraft:
    return LessonDraft(
        scope=f"s{i:03d}",
        error_type="runtime_error",
        symptom=f"{path}: {s.context}",
        root_cause=f"the credential {bare(s)} was rejected by the service",
        fix=f"read the secret from the keyring instead of hard-coding {bare(s)}",
        applies_when=f"logs showing {s.context}",
        evidence=(Evidence(run_id=f"run-{path}-{i:03d}", excerpt=s.context),),
    )


def write_all(memory: Memory) -> None:
    """Push every secret through every write path."""
    for i, s in enumerate(SECRETS):
        llm = ScriptedLLM([_analysis(s)])
        run = _run_with(i, s)
        finish_run(memory, run)  # learn() reads a finished run (the run's goal carries a secret)
        learn(run, memory=memory, retrospective=Retrospective(llm))
        added = memory.add(_draft(i, s, "add"))
        d = _draft(i, s, "seed")
        record = {
            k: getattr(d, k)
            for k in ("scope", "error_type", "symptom", "root_cause", "fix", "applies_when")
        }
        seed_lessons(memory, [json.dumps(record)])
        imported = Lesson(
            id=f"les_{0xA000 + i:016x}",
            **record | {"symptom": f"import: {s.context}"},
            evidence=(Evidence(run_id=f"run-import-{i:03d}", excerpt=s.context),),
            created_at=_NOW,
            updated_at=_NOW,
        )
        import_lessons(memory, [header_line(), lesson_line(imported)])
        if added.lesson is not None:
            memory.update(added.lesson.id, fix=f"rotate {bare(s)}; {s.context}")


# -- what leaves the store ------------------------------------------------------------


def _lessons(memory: Memory) -> list[Lesson]:
    return list(memory.list_lessons(ALL_STATUSES).items)


def shown_texts(memory: Memory) -> Iterator[tuple[str, str]]:
    """Prompts rendered from recall: the secret's own context is the query."""
    for i, s in enumerate(SECRETS):
        query = LessonQuery(
            text=s.context, scope=f"s{i:03d}", limit=10, token_budget=5000, min_similarity=-1.0
        )
        hits = memory.recall(query)
        yield f"recall s{i:03d} ({len(hits)} hits)", render_lessons(hits)
        for run in {e.run_id for h in hits for e in h.lesson.evidence}:
            try:
                yield f"run {run}", memory.get_run(run).model_dump_json()
            except LookupError:
                continue


def cli_texts(store: Path, lessons: list[Lesson], *, show_all: bool) -> Iterator[tuple[str, str]]:
    """What a person sees through the CLI: show, list, search, export."""
    runner = CliRunner()
    env = {"LESSONLOOP_EMBEDDER": "hash", "LESSONLOOP_HOME": str(store.parent)}

    def invoke(*args: str) -> str:
        result = runner.invoke(lessons_app, ["--memory", str(store), *args], env=env)
        if result.exit_code != 0:
            raise RuntimeError(f"lessons {' '.join(args)} failed: {result.output}")
        return result.output

    picked = lessons if show_all else lessons[:: max(1, len(lessons) // 20)]
    for lesson in picked:
        yield f"cli show {lesson.id}", invoke("show", lesson.id, "--json")
    yield "cli list", invoke("list", "--json", "--limit", "1000")
    for i, s in list(enumerate(SECRETS))[:: 1 if show_all else 8]:
        scope = f"s{i:03d}"
        yield f"cli search {scope}", invoke("search", "--scope", scope, "--json", "--", s.context)
    yield "cli export", invoke("export")


def run(root: Path, *, show_all: bool = False) -> SecretsReport:
    """One pass over the corpus in a fresh store under `root`."""
    started = time.perf_counter()
    store = root / "memory"
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        write_all(memory)
    stored = _raw_leaks(store)
    with Memory.open(str(store), embedder=HashEmbedder()) as memory:
        lessons = _lessons(memory)
        stored += _leaks((f"lesson {x.id}", x.model_dump_json()) for x in lessons)
        shown = list(shown_texts(memory))
        out = io.StringIO()
        export_lessons(memory, out)
    recalled = sum(
        1 for where, _ in shown if where.startswith("recall") and "(0 hits)" not in where
    )
    cli = list(cli_texts(store, lessons, show_all=show_all))
    exported = [("export_lessons", out.getvalue()), *(t for t in cli if t[0] == "cli export")]
    return SecretsReport(
        secrets=len(SECRETS),
        kinds=len({s.kind for s in SECRETS}),
        write_paths=PATHS,
        lessons_stored=len(lessons),
        recalled=recalled,
        not_detected=tuple(s.kind for s in SECRETS if not secret_kinds(s.context)),
        self_identifying=sum(1 for s in SECRETS if bare(s) == s.secret),
        stored=tuple(stored),
        shown=tuple(_leaks([*shown, *(t for t in cli if t[0] != "cli export")])),
        exported=tuple(_leaks(exported)),
        ordinary=len(ORDINARY),
        false_positives=tuple(line for line in ORDINARY if redact(line) != line),
        seconds=round(time.perf_counter() - started, 1),
    )


def _print(report: SecretsReport) -> None:
    console = Console()
    table = Table(title="secrets corpus")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("secrets (kinds)", f"{report.secrets} ({report.kinds})"),
        ("write paths", ", ".join(report.write_paths)),
        ("lessons stored", str(report.lessons_stored)),
        ("recall queries with hits", f"{report.recalled}/{report.secrets}"),
        ("not detected by redact", str(len(report.not_detected))),
        ("self-identifying (placed bare)", str(report.self_identifying)),
        ("stored leaks", str(len(report.stored))),
        ("shown leaks", str(len(report.shown))),
        ("exported leaks", str(len(report.exported))),
        ("false positives", f"{len(report.false_positives)}/{report.ordinary}"),
        ("seconds", str(report.seconds)),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for leak in [*report.stored, *report.shown, *report.exported]:
        console.print(f"LEAK {leak.kind} #{leak.index} in {leak.where}")
    for line in report.false_positives:
        console.print(f"false positive: {line!r} -> {redact(line)!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "secrets.json")
    parser.add_argument(
        "--show-all", action="store_true", help="`lessons show` every lesson (slower)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lessonloop-secrets-") as tmp:
        report = run(Path(tmp), show_all=args.show_all)
    _print(report)
    write_json_atomic(args.out, report.model_dump(mode="json"))
    leaks = len(report.stored) + len(report.shown) + len(report.exported)
    return 1 if leaks or report.not_detected else 0


if __name__ == "__main__":
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    raise SystemExit(main())
