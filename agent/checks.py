"""The checks of one candidate, cheapest first: rule checks, the task's check command in the
sandbox, then the LLM critic. The first failing stage is the verdict; later stages do not run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from agent import prompts
from agent.candidate import Candidate
from agent.classify import classify, missing_module, missing_module_issue
from agent.critic import Critique, critique_feedback, unreadable_critique
from agent.errors import StructuredOutputError, TaskCheckError
from agent.evidence import crashed_on_data, crashed_on_missing, data_evidence
from agent.feedback import Feedback
from agent.llm.base import LLM, Message, Usage
from agent.pytrace import check_defect
from agent.rules import bom_writes, catches, imported, own_modules, rule_check
from agent.sandbox import Sandbox
from agent.task import Task

# "auto" asks the critic only when the task has no check command.
CriticMode = Literal["auto", "always", "never"]


class Checks:
    """Runs the checks of `task` on candidates; check logs go to `run_dir` when given."""

    def __init__(
        self,
        task: Task,
        *,
        sandbox: Sandbox,
        critic: LLM,
        critic_mode: CriticMode,
        run_dir: Path | None,
    ) -> None:
        self.task, self.sandbox, self.critic = task, sandbox, critic
        self.critic_mode, self.run_dir = critic_mode, run_dir
        self.data_crash: Feedback | None = None  # the run's first crash on an input value
        self.missing: set[str] = set()  # modules a candidate of the run could not import

    def run(
        self, candidate: Candidate, round_no: int, index: int = 0
    ) -> tuple[list[Feedback], Usage]:
        """The feedback of every stage that ran (the last is the verdict) and the critic's cost.

        `index` numbers the candidates of one round, for the name of the check log.
        """
        rule = rule_check(candidate, self.task)
        if rule is not None:
            return [rule], Usage()
        checks: list[Feedback] = []
        if self.task.check is not None:
            executed = self._execute(candidate, round_no, index)
            checks.append(executed)
            if not executed.passed:
                return checks, Usage()
        if self.critic_mode == "always" or (self.critic_mode == "auto" and not self.task.check):
            verdict, usage = self._critique(candidate, checks)
            checks.append(verdict)
            return checks, usage
        return checks, Usage()

    def _execute(self, candidate: Candidate, round_no: int, index: int) -> Feedback:
        name = f"round-{round_no}.log" if index == 0 else f"round-{round_no}-{index + 1}.log"
        log_path = self.run_dir / name if self.run_dir else None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
        verdict = execute(self.task, candidate.files, sandbox=self.sandbox, log_path=log_path)
        for against in (self._against_data_crash, self._against_missing_module, _against_bom_write):
            verdict = against(candidate, verdict)
        return verdict

    def _against_data_crash(self, candidate: Candidate, verdict: Feedback) -> Feedback:
        """The run's first crash on a value of the input is remembered; a later failing
        candidate that catches that exception without raising it again is told so. A small
        model's usual "repair" of such a crash skips the values it could not read, and the
        check then says only that a total is wrong or a key is missing (decimal_comma_01:
        "except ValueError: continue" on '18,9', then "missing key 'T-04'")."""
        crash = self.data_crash
        if verdict.kind == "runtime_error":
            if crash is None and crashed_on_data(
                verdict.error_type, verdict.key_message, self.task.workspace
            ):
                self.data_crash = verdict
            return verdict
        if verdict.passed or crash is None or not catches(candidate.files, crash.error_type or ""):
            return verdict
        if crashed_on_missing(crash.error_type, crash.key_message, self.task.workspace):
            return verdict  # leaving a missing value out may be what the task means
        # The values themselves: the verdict's own evidence is now about an output key.
        seen = (crash.input_evidence or "").split("\n")[0]
        issue = (
            f"this program catches {crash.error_type} where an earlier attempt crashed on the "
            f"input ({crash.key_message}): skipping or replacing those values makes the "
            "result wrong; read them correctly" + (f". The input has {seen}" if seen else "")
        )
        return verdict.model_copy(update={"issues": (*verdict.issues, issue)})

    def _against_missing_module(self, candidate: Candidate, verdict: Feedback) -> Feedback:
        """A module the run could not import is remembered; a later failing candidate that
        still imports it is told again. The 1.5B's repair of "No module named 'pandas'"
        wrapped the import in try/except and printed "pandas is not installed", and the
        check's verdict then said nothing of the import (booleans_02, rounds 2 and 3)."""
        name = missing_module(verdict.error_type, verdict.key_message)
        if name is not None:
            self.missing.add(name)
            return verdict
        if verdict.passed:
            return verdict
        names, own = imported(candidate.files), own_modules(candidate.files)
        still = sorted(
            m for m in self.missing - own
            if any(n == m or n.startswith(f"{m}.") for n in names)
        )  # fmt: skip
        told = [i for i in map(missing_module_issue, still) if i not in verdict.issues]
        return verdict.model_copy(update={"issues": (*verdict.issues, *told)}) if told else verdict

    def _critique(
        self, candidate: Candidate, earlier: Sequence[Feedback]
    ) -> tuple[Feedback, Usage]:
        checklist = [
            f"It does exactly what the task asks: {self.task.goal}",
            "Names, formats, units and rounding match the task statement exactly.",
            "Nothing is left unfinished (no placeholder, TODO or missing part).",
        ]
        if self.task.output:
            checklist.insert(1, f"All requested files are present: {', '.join(self.task.output)}")
        if earlier:
            checklist.append(f"The automatic check passed: {earlier[-1].summary}")
        user = prompts.render_critic(
            self.task.goal, checklist, prompts.render_files(candidate.files, candidate.text)
        )
        messages = [
            Message(role="system", content=prompts.CRITIC_SYSTEM),
            Message(role="user", content=user),
        ]
        try:
            completion = self.critic.complete(
                messages, schema=Critique, temperature=0.0, max_tokens=512
            )
        except StructuredOutputError as exc:
            return unreadable_critique(exc.raw, str(exc)), exc.usage or Usage()
        assert completion.parsed is not None
        return critique_feedback(completion.parsed), completion.usage


# "BOM" in capitals only: a 'bom' key is a bill of materials.
_BOM_WORDS = re.compile(r"(?-i:\bBOM\b)|\ufeff|\\ufeff|byte order mark", re.IGNORECASE)


def _against_bom_write(candidate: Candidate, verdict: Feedback) -> Feedback:
    """A check that meets a byte order mark, and a program that writes a file with
    encoding='utf-8-sig' (which puts one at its start): the issue names the line. Python's
    own message on such output reads "Unexpected UTF-8 BOM (decode using utf-8-sig)", advice
    for a reader, and the 1.5B answered it by changing how it read the input (bom_01)."""
    said = " ".join(filter(None, (verdict.summary, verdict.key_message)))
    if verdict.passed or not _BOM_WORDS.search(said):
        return verdict
    where = bom_writes(candidate.files)
    if not where:
        return verdict
    issue = (
        f"{', '.join(where)} writes with encoding='utf-8-sig', which puts a byte order mark "
        "at the start of the file written: write output files with encoding='utf-8' "
        "('utf-8-sig' is for reading a file that starts with one)"
    )
    return verdict.model_copy(update={"issues": (*verdict.issues, issue)})


def execute(
    task: Task,
    files: Mapping[str, str],
    *,
    sandbox: Sandbox,
    log_path: Path | None = None,
) -> Feedback:
    """The task's check command on `files` in the sandbox, as the loop judges it: classified,
    retried once after a kill by a limit, and a crash or a failed check given what the
    input shows about it (`agent.evidence.data_evidence`)."""
    check = task.check
    if check is None:
        raise ValueError(f"task {task.id} has no check command")

    def attempt() -> Feedback:
        result = sandbox.run(
            check,
            program=task.run,
            files=files,
            workspace=task.workspace,
            task_dir=task.task_dir,
            timeout_s=task.timeout_s,
            log_path=log_path,
        )
        defect = check_defect(result)
        if defect is not None:
            raise TaskCheckError(
                f"the check of task {task.id} failed in its own code, not the candidate's: "
                f"{defect}; fix the check ({task.task_dir}); no round can pass it"
            )
        return classify(result, log_path=log_path)

    feedback = attempt()
    if feedback.kind == "resource_error" and (feedback.error_type or "").startswith("SIG"):
        # A kill by a limit can be load on a shared machine: one retry before a rewrite.
        feedback = attempt()
    if feedback.kind in ("runtime_error", "check_failed"):
        evidence = data_evidence(
            feedback.key_message, task.workspace, check_failed=feedback.kind == "check_failed"
        )
        if evidence:
            feedback = feedback.model_copy(update={"input_evidence": evidence})
    return feedback
