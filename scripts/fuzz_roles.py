"""Malformed model output, one role at a time: the cases and what each must lead to.

Shared by tests/test_fuzz_model_output.py (a few dozen cases per role) and
scripts/bench_fuzz.py (500 per role). Each role has a hypothesis strategy of `Case`s and a
`run_<role>` that plays the case through the real code with ScriptedLLM (the loop with the
real sandbox for the generator, refiner and critic; the retrospective for its own role, in
scripts/fuzz_retro.py, imported at the end of this module) and
returns an `Outcome`: crashed (an exception escaped), false pass (a pass the answer does not
earn), untyped (a failure without a feedback kind and a message), escaped (a file appeared
outside the workspace).

Categories (the issue's list): prose-wrapped, truncated mid-fence, wrong types, missing
fields, unicode junk, 1 MB answers, JSON in JSON, files outside the workspace; plus valid
answers, so that passing stays possible. Whether a case may pass is known by construction:
a code answer passes only if its program really writes 42 (run again, outside the loop); a
verdict or an analysis may be accepted only if it was built valid and its corruption keeps
it readable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import get_args

from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from agent.container import Limits
from agent.feedback import Feedback, FeedbackKind
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from agent.task import Task
from memory.types import NullRecall

GEN, REFINE, CRITIC, LESSON = (
    "careful Python programmer",
    "You repair",
    "strict reviewer",
    "You write one lesson",
)
MEGABYTE = 1_000_000
GOOD = "import json\njson.dump(42, open('out.json', 'w'))\n"
WRONG = "import json\njson.dump(41, open('out.json', 'w'))\n"
CRASH = "import json\nx = {}['missing']\n"
SYNTAX = "def f(:\n    return 42\n"
BODIES = (GOOD, WRONG, CRASH, SYNTAX, "")
JUNK = ("\x00", "\ufeff", "\u202e", "\ud800", "\x1b[31m", "\u0301" * 20, "🙂", "\r", "\t", "\\")
# Names outside the workspace a reply may put in its file header.
OUTSIDE = ("../escape.py", "../../escape.py", "/tmp/{token}/escape.py", "~/escape.py")


class Case(BaseModel):
    """One model answer (or script of answers) and whether it may legitimately pass."""

    model_config = ConfigDict(frozen=True)

    category: str
    reply: str
    may_pass: bool = True  # code cases: the oracle decides; verdict/analysis: by construction
    token: str = ""


class Outcome(BaseModel):
    """What happened to one case."""

    model_config = ConfigDict(frozen=True)

    role: str
    category: str
    passed: bool = False
    crashed: str | None = None
    false_pass: bool = False
    untyped: bool = False
    escaped: bool = False

    @property
    def ok(self) -> bool:
        return not (self.crashed or self.false_pass or self.untyped or self.escaped)


def fenced(body: str, name: str = "solution.py", lang: str = "python") -> str:
    return f"### {name}\n```{lang}\n{body}```\n"


# -- code answers (generator and refiner) ------------------------------------------------

_bodies = st.sampled_from(BODIES)
_junk = st.lists(st.sampled_from(JUNK), min_size=1, max_size=8).map("".join)


# The issue's kinds of malformed output, plus valid answers (which may pass).
CATEGORIES = [
    "valid",
    "prose-wrapped",
    "truncated mid-fence",
    "wrong types",
    "missing fields",
    "unicode junk",
    "1 MB answer",
    "JSON in JSON",
    "files outside the workspace",
]


@st.composite
def code_case(draw: st.DrawFn) -> Case:
    category = draw(st.sampled_from(CATEGORIES))
    body = draw(_bodies)
    if category == "valid":
        reply = fenced(body)
    elif category == "prose-wrapped":
        before = draw(st.sampled_from(["Sure! Here is the code:\n", "Phenomenon: x\nFix: y\n", ""]))
        reply = before + fenced(body) + draw(st.sampled_from(["\nHope it helps.", "", "\n```"]))
    elif category == "truncated mid-fence":
        whole = fenced(body)
        reply = whole[: draw(st.integers(0, max(0, len(whole) - 4)))]
    elif category == "wrong types":
        reply = draw(
            st.sampled_from(
                ["null", "[]", "42", "true", '{"solution.py": 42}', '{"files": null}', "```\n```"]
            )
        )
    elif category == "missing fields":
        reply = draw(
            st.sampled_from(
                [
                    "### solution.py\n",
                    body,  # code without a fence
                    "```python\n```",
                    "ANSWER:\n",
                    fenced(body, name="other.py"),
                    fenced(body, lang="json"),
                ]
            )
        )
    elif category == "unicode junk":
        junk = draw(_junk)
        where = draw(st.sampled_from(["inside", "around", "only"]))
        reply = {
            "inside": fenced(body.replace("\n", junk + "\n", 1)),
            "around": junk + fenced(body) + junk,
            "only": junk + draw(st.text(max_size=200)),
        }[where]
    elif category == "1 MB answer":
        filler = draw(st.sampled_from(["x", "# pad\n", "prose and more prose. ", "{"]))
        pad = filler * (MEGABYTE // len(filler))
        where = draw(st.sampled_from(["prose", "comment", "line"]))
        reply = {
            "prose": pad + fenced(body),
            "comment": fenced("# " + pad.replace("\n", " ") + "\n" + body),
            "line": fenced(body + "s = '" + "x" * MEGABYTE + "'\n"),
        }[where]
    elif category == "JSON in JSON":
        inner = json.dumps({"solution.py": body})
        reply = draw(
            st.sampled_from(
                [
                    json.dumps({"files": inner}),
                    fenced(inner, lang="json"),
                    fenced(json.dumps({"code": body})),
                ]
            )
        )
    else:
        token = uuid.uuid4().hex
        name = draw(st.sampled_from(OUTSIDE)).format(token=token)
        reply = fenced(body, name=name) + draw(st.sampled_from(["", fenced(WRONG)]))
        return Case(category=category, reply=reply, token=token)
    return Case(category=category, reply=reply)


def make_task(root: Path) -> Task:
    task_dir = root / "task"
    (task_dir / "workspace").mkdir(parents=True)
    (task_dir / "check.py").write_text(
        "import json; assert json.load(open('out.json')) == 42, 'expected 42'"
    )
    return Task(
        id="fuzz",
        goal="Write 42 to out.json",
        output=("solution.py",),
        check='python solution.py && python "$TASK_DIR/check.py"',
        timeout_s=20,
        task_dir=task_dir,
    )


def really_writes_42(program: str) -> bool:
    """The oracle: run the program outside the loop, in a fresh directory."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "solution.py"
        try:
            path.write_text(program, encoding="utf-8")
        except UnicodeEncodeError:
            return False
        try:
            subprocess.run(
                [sys.executable, str(path)], cwd=tmp, capture_output=True, timeout=20, check=False
            )
            return bool(json.loads((Path(tmp) / "out.json").read_text()) == 42)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            return False


def _typed(feedback: Feedback) -> bool:
    return feedback.kind in get_args(FeedbackKind) and (
        feedback.kind == "success" or bool(feedback.summary.strip())
    )


def _escaped(root: Path, token: str) -> bool:
    places = [root / "escape.py", root / "task" / "escape.py", root.parent / "escape.py"]
    if token:
        places.append(Path("/tmp") / token)
    return any(p.exists() for p in places)


def _play(
    role: str, case: Case, sandbox: Sandbox, routes: dict[str, list[str]], **cfg: object
) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        root = Path(tmp)
        task = make_task(root)
        if role == "critic":
            task = task.model_copy(update={"check": None, "output": ("answer.md",)})
        agent = ReflectiveAgent(
            ScriptedLLM.by_system(routes),
            recall=NullRecall(),
            sandbox=sandbox,
            config=LoopConfig(pool_size=1, first_pool=1, **cfg),
        )
        try:
            result = agent.run(task)
        except Exception as exc:  # noqa: BLE001 - an escaping exception is what we count
            return Outcome(
                role=role, category=case.category, crashed=f"{type(exc).__name__}: {exc}"[:300]
            )
        untyped = not all(_typed(r.feedback) for r in result.rounds)
        if role == "critic":
            false_pass = result.passed and not case.may_pass
        else:
            best = result.rounds[result.best_round - 1].candidate
            program = best.files.get("solution.py", "")
            false_pass = result.passed and not really_writes_42(program)
        return Outcome(
            role=role,
            category=case.category,
            passed=result.passed,
            false_pass=false_pass,
            untyped=untyped,
            escaped=_escaped(root, case.token),
        )


def run_generator(case: Case, sandbox: Sandbox) -> Outcome:
    """The generator's answer is the only one: one round, checked in the sandbox."""
    return _play("generator", case, sandbox, {GEN: [case.reply]}, max_rounds=1, critic="never")


def run_refiner(case: Case, sandbox: Sandbox) -> Outcome:
    """Round 1 fails (wrong value), the refiner's answer is round 2."""
    # An unchanged answer is re-sampled: enough copies for every call the round may make.
    routes = {GEN: [fenced(WRONG)] * 6, REFINE: [case.reply] * 6}
    return _play("refiner", case, sandbox, routes, max_rounds=2, critic="never")


# -- verdicts (critic) ---------------------------------------------------------------------

_CLEAN = ("The answer meets every item.", "Correct and complete.", "")
_PROBLEM = ("Good, but day 3 lacks a budget.", "The totals are not rounded.")
_ISSUES_NONE: tuple[list[str], ...] = ([], ["none"], ["No issues found."])
_ISSUES_REAL: tuple[list[str], ...] = (["day 3 lacks a budget"], ["none", "totals not rounded"])


@st.composite
def verdict_case(draw: st.DrawFn) -> Case:
    """A critique built valid or not, then corrupted; `may_pass` iff it stays a clean pass."""
    passed = draw(st.booleans())
    clean = draw(st.booleans())
    verdict = {
        "passed": passed,
        "score": draw(st.integers(1, 10)),
        "feedback": draw(st.sampled_from(_CLEAN if clean else _PROBLEM)),
        "issues": draw(st.sampled_from(_ISSUES_NONE if clean else _ISSUES_REAL)),
    }
    strict = passed and clean
    text = json.dumps(verdict)
    category = draw(st.sampled_from(CATEGORIES))
    keeps = True  # the corruption leaves the verdict readable
    if category == "valid":
        reply = text
    elif category == "prose-wrapped":
        reply = draw(st.sampled_from(["Verdict: ", "Here you go:\n```json\n", "I think "])) + text
        reply += draw(st.sampled_from(["", "\n```", " Let me know."]))
    elif category == "truncated mid-fence":
        whole = f"```json\n{text}\n```"
        reply = whole[: draw(st.integers(0, len(whole) - 6))]  # cut before the closing "}"
        keeps = False
    elif category == "wrong types":
        field, value = draw(
            st.sampled_from(
                [
                    ("passed", "pass"),
                    ("passed", [True]),
                    ("score", "high"),
                    ("score", 11),
                    ("issues", "none"),
                    ("issues", None),
                    ("feedback", None),
                ]
            )
        )
        reply = json.dumps({**verdict, field: value})
        keeps = False
    elif category == "missing fields":
        field = draw(st.sampled_from(["passed", "score", "issues", "feedback"]))
        reply = json.dumps({k: v for k, v in verdict.items() if k != field})
        keeps = False
    elif category == "unicode junk":
        junk = draw(_junk)
        if draw(st.booleans()):
            reply = junk + text + junk  # junk around: the verdict is still there
        else:
            reply = junk + draw(st.text(max_size=200))
            keeps = False
    elif category == "1 MB answer":
        pad = draw(st.sampled_from(["x", "{", "reasoning. "]))
        pad = pad * (MEGABYTE // len(pad))
        if draw(st.booleans()):
            reply = pad + "\n" + text
        else:
            reply = text[:-1] + pad  # the verdict never closes
            keeps = False
    elif category == "JSON in JSON":
        if draw(st.booleans()):
            reply = json.dumps({"verdict": text})  # as a string: no verdict object
            keeps = False
        else:
            reply = json.dumps({"verdict": verdict})  # nested object: readable
    else:
        reply = text.replace('"passed"', '"../../passed"', 1)
        keeps = False
    return Case(category=category, reply=reply, may_pass=strict and keeps)


def run_critic(case: Case, sandbox: Sandbox) -> Outcome:
    """A task without a check command: the critic's verdict (after one repair) decides."""
    routes = {GEN: [fenced("The answer.\n", name="answer.md", lang="")], CRITIC: [case.reply] * 2}
    return _play("critic", case, sandbox, routes, max_rounds=1, critic="auto")


from scripts.fuzz_retro import analysis_case, run_retrospective  # noqa: E402 - needs Case

ROLES = {
    "generator": (code_case(), run_generator),
    "refiner": (code_case(), run_refiner),
    "critic": (verdict_case(), run_critic),
    "retrospective": (analysis_case(), run_retrospective),
}


def default_sandbox() -> Sandbox:
    return Sandbox(Limits(cpu_s=10))


def examples_per_role(default: int) -> int:
    """LESSONLOOP_FUZZ_EXAMPLES (scripts/bench_fuzz.py sets 500), else `default`."""
    return int(os.environ.get("LESSONLOOP_FUZZ_EXAMPLES", default))
