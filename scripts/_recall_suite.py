"""The labelled set of scripts/bench_recall.py and the queries it sends recall.

benchmarks/recall/lessons.toml holds the curated lessons (one per root cause) and
distractors, cases.toml small faulty programs, each labelled with the lesson that fixes
it, and unrelated cases (other errors, goals). `run_case` runs a program in the sandbox
with the trap tasks' check command and builds the query the loop would send at
reflection from the real output; `task_start` builds the seed query of the task a
labelled case stands for.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from agent.classify import classify
from agent.queries import error_types
from agent.sandbox import Sandbox
from memory import LessonDraft
from memory.types import RecallStage
from scripts._benchlib import REPO
from scripts._recall_stages import seed_parts

SUITE = REPO / "benchmarks" / "recall"
CHECKER = REPO / "examples" / "traps" / "_checker.py"
CHECK = 'python solution.py && python "$TASK_DIR/check.py" result.json'


class LessonSpec(LessonDraft):
    """A curated lesson; `id` is the label the cases point to."""

    id: str


class CaseSpec(BaseModel):
    """A faulty program (or, for unrelated queries, a goal) and the lesson that fixes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    lesson: str | None = None
    program: str | None = None
    goal: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    encodings: dict[str, str] = Field(default_factory=dict)
    expected: str | None = None
    timeout_s: float = 20.0
    task_goal: str | None = None


class Suite(NamedTuple):
    lessons: tuple[LessonSpec, ...]
    cases: tuple[CaseSpec, ...]
    unrelated: tuple[CaseSpec, ...]


class Query(BaseModel):
    """What recall is asked: the compressed feedback (or goal), filter and target label."""

    model_config = ConfigDict(frozen=True)

    id: str
    target: str | None
    text: str
    error_types: tuple[str, ...]
    stage: RecallStage
    kind: str
    surface: tuple[str, ...] = ()  # a task start's input heads (LessonQuery.surface)
    # The case's input heads at both stages, as the loop sends its data (LessonQuery.data).
    data: tuple[str, ...] = ()


def load_suite(root: Path = SUITE) -> Suite:
    """Read lessons.toml and cases.toml; every case must name a known lesson."""
    lessons = tomllib.loads((root / "lessons.toml").read_text(encoding="utf-8"))["lesson"]
    data = tomllib.loads((root / "cases.toml").read_text(encoding="utf-8"))
    suite = Suite(
        lessons=tuple(LessonSpec(**x) for x in lessons),
        cases=tuple(CaseSpec(**x) for x in data["case"]),
        unrelated=tuple(CaseSpec(**x) for x in data.get("unrelated", ())),
    )
    unknown = {c.lesson or "<none>" for c in suite.cases} - {x.id for x in suite.lessons}
    if unknown:
        raise ValueError(f"cases point to unknown lessons: {unknown}")
    return suite


def run_case(case: CaseSpec, sandbox: Sandbox, checker: Path = CHECKER) -> Query:
    """Run a case's program in the sandbox (or take its goal) and build the loop's query."""
    if case.goal is not None:
        text, heads = seed_parts(case.goal, case.files, case.encodings)
        return Query(id=case.id, target=None, text=text, error_types=(), stage="seed",
                     kind="goal", surface=heads, data=heads)  # fmt: skip
    if case.program is None:
        raise ValueError(f"case {case.id}: needs a program or a goal")
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        task_dir = Path(tmp) / "task"
        workspace = task_dir / "workspace"
        workspace.mkdir(parents=True)
        for name, text in case.files.items():
            (workspace / name).write_bytes(text.encode(case.encodings.get(name, "utf-8")))
        shutil.copy(checker, task_dir / "check.py")
        (task_dir / "expected.json").write_text(case.expected or "{}", encoding="utf-8")
        result = sandbox.run(
            CHECK,
            files={"solution.py": case.program},
            workspace=workspace,
            task_dir=task_dir,
            timeout_s=case.timeout_s,
        )
    feedback = classify(result)
    if feedback.passed:
        raise ValueError(f"case {case.id}: the faulty program passed its check")
    return Query(
        id=case.id,
        target=case.lesson,
        text=feedback.compressed(),
        error_types=error_types(feedback),  # the loop's reflection gate
        stage="reflection",
        kind=feedback.kind,
        data=seed_parts("", case.files, case.encodings)[1],
    )


def task_start(case: CaseSpec) -> Query | None:
    """The seed query of the task a labelled case stands for (None without a `task_goal`)."""
    if case.task_goal is None:
        return None
    text, heads = seed_parts(case.task_goal, case.files, case.encodings)
    return Query(id=f"{case.id}@task", target=case.lesson, error_types=(), stage="seed",
                 text=text, kind="task start", surface=heads, data=heads)  # fmt: skip
