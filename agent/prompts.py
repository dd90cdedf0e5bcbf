"""Prompts are data: one template per role, rendered by small functions (each has a test)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from string import Template

from agent.candidate import Candidate
from agent.feedback import Feedback, FeedbackKind
from agent.llm.base import Message
from agent.task import Task

GENERATOR_SYSTEM = """\
You are a careful Python programmer. You write complete, working files.
Answer with every requested file as a fenced code block, each preceded by a line
"### <filename>". Use only the Python standard library unless told otherwise."""

GENERATOR_USER = Template("""\
Task: $goal

Files to write: $outputs
$workspace$lessons$failure
Write the files now.""")

# A fresh attempt in a failing round: the earlier attempt's failure, not its code.
GENERATOR_FAILURE = Template("""
An earlier attempt at this task failed this check:
$feedback
Write a new solution that cannot fail this way.
""")

CRITIC_SYSTEM = """\
You are a strict reviewer. You check an answer against a checklist and report every
problem you find. Do not fix anything. Reply with JSON only:
{"passed": true|false, "score": 1-10, "feedback": "<one or two sentences>",
 "issues": ["<one concrete problem per entry>", ...]}
"passed" is true only if no problem remains; then "issues" is []."""

CRITIC_USER = Template("""\
Task: $goal

Checklist:
$checklist

Answer to review:
$answer""")

REFINER_SYSTEM = """\
You repair a previous attempt using the evidence given. First write three lines:
Phenomenon: <what went wrong, restating the failing example or message>
Root cause: <why it went wrong>
Fix: <the smallest change that removes the cause>
Then give every requested file again, complete, as a fenced code block preceded by a line
"### <filename>". Keep what was right; change only what the evidence points to."""

REFINER_SYSTEM_TEXT = """\
You repair a previous answer using the evidence given. First write three lines:
Phenomenon: <what is wrong, quoting the problem>
Root cause: <why it is wrong>
Fix: <the smallest change that removes the cause>
Then a line "ANSWER:" followed by the complete revised answer. Keep what was right."""

REFINER_USER = Template("""\
Task: $goal
$workspace
Previous attempt:
$previous

Check result (round $round):
$feedback

$guidance$tried$lessons
Repair the attempt now.""")

# Said to the refiner after its last answer to the same prompt could not be checked: without
# it the hot samples that follow a repeat tend to repeat it too.
REPEAT_NOTE = (
    "Your last answer to this request repeated a program that was already run, and it "
    "failed. That is not a repair: change the code where the evidence points."
)
NO_FILES_NOTE = (
    "Your last answer to this request had no complete file in it. Give every requested "
    'file, complete, as a fenced code block preceded by a line "### <filename>".'
)

# Each feedback kind needs a different reflection strategy.
KIND_GUIDANCE: Mapping[FeedbackKind, str] = {
    "syntax_error": (
        "The file does not parse. Look at the reported line and the lines just before it "
        "(unclosed brackets, quotes, indentation). Fix the syntax; do not redesign."
    ),
    "runtime_error": (
        "The program crashed. Start from the exception type, message and line: what value "
        "did that line receive, and why was it not what the code expected? Handle the real "
        "input format rather than hiding the error with a broad try/except."
    ),
    "resource_error": (
        "The program exceeded a memory, CPU, file-size or process limit. Reduce the work: "
        "stream instead of loading everything, avoid unbounded loops, recursion and forks."
    ),
    "timeout": (
        "The program did not finish in time. Look for infinite loops, waiting on input, "
        "or needlessly slow algorithms; make it finish quickly."
    ),
    "check_failed": (
        "The program ran but the result is wrong. Restate the failing example: which value "
        "was expected and which was produced? Find the step that produced the wrong value."
    ),
    "critic_rejected": (
        "A reviewer found the problems listed. Address each listed problem and nothing else."
    ),
    "success": "The checks passed. Only change something with concrete evidence of a defect.",
}

# Added to the guidance when the check result shows the input (`Feedback.input_evidence`):
# the 1.5B read a list of repeated rows or of eleven spellings of "yes" and changed something
# else.
EVIDENCE_GUIDANCE = (
    'The "in the input:" part of the check result quotes the data the program read. Go '
    "through every value and row it lists: which of them does the program handle wrongly? "
    "Fix it for all of them."
)


def render_generator(
    goal: str,
    outputs: Sequence[str],
    workspace: Mapping[str, str],
    lessons: str,
    failure: str = "",
) -> str:
    """The generator's user turn; `failure` (a compressed check result) makes it a fresh retry."""
    return GENERATOR_USER.substitute(
        goal=goal,
        outputs=", ".join(outputs) if outputs else "(answer in plain text)",
        workspace=_workspace_block(workspace),
        lessons=f"\n{lessons}\n" if lessons else "",
        failure=GENERATOR_FAILURE.substitute(feedback=failure) if failure else "",
    )


def render_critic(goal: str, checklist: Sequence[str], answer: str) -> str:
    return CRITIC_USER.substitute(
        goal=goal,
        checklist="\n".join(f"{i}. {item}" for i, item in enumerate(checklist, 1)),
        answer=answer,
    )


def render_refiner(
    *,
    goal: str,
    previous: str,
    round_no: int,
    feedback: str,
    kind: FeedbackKind,
    tried: Sequence[str],
    lessons: str,
    passed_external: bool,
    workspace: Mapping[str, str] | None = None,
    evidence: bool = False,
) -> str:
    """The refiner's user turn. `workspace` previews the input files, as the generator saw
    them: a repair of a crash on an input value needs the other values' formats too.
    `evidence`: the feedback shows the input, so the guidance points at it."""
    guidance = KIND_GUIDANCE[kind] + (f"\n{EVIDENCE_GUIDANCE}" if evidence else "")
    if passed_external:
        guidance += (
            "\nThe attempt already passes the automatic checks: keep its behaviour, change "
            "only what the listed problems require."
        )
    tried_block = ""
    if tried:
        tried_block = (
            "\nFixes already tried (they did not work; do not repeat them):\n"
            + "\n".join(f"- {t}" for t in tried)
        )
    return REFINER_USER.substitute(
        goal=goal,
        workspace=_workspace_block(workspace or {}),
        previous=previous,
        round=round_no,
        feedback=feedback,
        guidance=guidance + "\n",
        tried=tried_block + ("\n" if tried_block else ""),
        lessons=f"\n{lessons}\n" if lessons else "",
    )


def with_note(messages: list[Message], note: str | None) -> list[Message]:
    """`messages` with `note` appended to the last (user) turn; unchanged without a note."""
    if not note:
        return messages
    last = messages[-1]
    return [*messages[:-1], Message(role=last.role, content=f"{last.content}\n\n{note}")]


def render_files(files: Mapping[str, str], text: str) -> str:
    """A candidate as the refiner and critic see it."""
    if not files:
        return text
    return "\n\n".join(f"### {name}\n```\n{body.rstrip()}\n```" for name, body in files.items())


def _workspace_block(workspace: Mapping[str, str]) -> str:
    if not workspace:
        return ""
    parts = ["\nInput files in the working directory (first lines shown):"]
    for name, preview in workspace.items():
        head = "\n".join(preview.splitlines()[:8])
        parts.append(f"--- {name} ---\n{head}")
    return "\n".join(parts) + "\n"


def refiner_messages(
    task: Task,
    candidate: Candidate,
    checks: tuple[Feedback, ...],
    round_no: int,
    *,
    tried: Sequence[str],
    lessons: str,
    inputs: dict[str, str],
) -> list[Message]:
    """The refiner's prompt for repairing `candidate` of `task`, judged by `checks` in
    `round_no`: `lessons` rendered, `inputs` the input files' preview."""
    verdict = checks[-1]
    user = render_refiner(
        goal=task.goal,
        previous=render_files(candidate.files, candidate.text),
        round_no=round_no,
        feedback=verdict.compressed(),
        kind=verdict.kind,
        tried=tried,
        lessons=lessons,
        passed_external=any(c.stage == "execution" and c.passed for c in checks),
        workspace=inputs,
        evidence=verdict.input_evidence is not None,
    )
    system = REFINER_SYSTEM if task.output else REFINER_SYSTEM_TEXT
    return [Message(role="system", content=system), Message(role="user", content=user)]
