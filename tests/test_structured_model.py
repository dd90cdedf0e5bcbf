"""Every structured schema the project uses, through the real local model, on long inputs.

A grammar built from a schema with long length bounds blew llama.cpp's sampler stack
(SIGSEGV) during consolidation. The schemas now leave lengths to validation; this test runs
each schema with a long, realistic prompt and requires an answer or a typed output error,
never a crash of the model worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from agent import prompts as agent_prompts
from agent.app.settings import Settings
from agent.critic import Critique
from agent.errors import StructuredOutputError
from agent.llm import LLM, Message, resolve_llm
from retrospectives import prompts as retro_prompts
from retrospectives.canonical import CanonicalAnswer
from retrospectives.extract import LessonAnalysis

pytestmark = pytest.mark.model

TRACEBACK = """Traceback (most recent call last):
  File "/workspace/solution.py", line 14, in <module>
    total += float(row["amount"])
ValueError: could not convert string to float: '$1,204.50'
"""
DIFF = """--- round 1/solution.py
+++ round 2/solution.py
@@ -11,7 +11,8 @@
 with open("invoices.csv", newline="") as f:
     for row in csv.DictReader(f):
-        total += float(row["amount"])
+        amount = row["amount"].strip().replace("$", "").replace(",", "")
+        total += float(amount)
"""
LESSONS = [
    (
        f"ValueError: could not convert string to float: '${n},204.50' while summing column "
        f"{col} of a CSV export from the billing system, after {n} rows had been read",
        "Amounts in the export are formatted for people: a currency sign in front and a comma "
        "every three digits. float() accepts neither, so the first formatted amount ends the "
        "program. The header and the plain numbers before it parse, which hides the problem.",
        "Strip the currency sign and the thousands separators before converting: "
        "float(v.strip().replace('$', '').replace(',', '')); read rows with csv.DictReader so "
        "quoted fields that contain commas stay one field.",
        "A CSV or spreadsheet export holds money columns written for display.",
    )
    for n, col in ((1, "amount"), (4, "total"), (7, "price"), (2, "net"), (9, "gross"), (3, "fee"))
]


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> LLM:
    settings = Settings(
        home=tmp_path_factory.mktemp("home"), cache=Path.home() / ".lessonloop" / "cache"
    )
    return resolve_llm("local:qwen2.5-coder-0.5b", settings)


CASES: list[tuple[str, type[BaseModel], str, str, int]] = [
    (
        "critic",
        Critique,
        agent_prompts.CRITIC_SYSTEM,
        agent_prompts.render_critic(
            "Write a three-day travel plan for Lisbon with a budget per day and opening hours.",
            ["every day has a budget", "opening hours are given", "no day is left empty"],
            "\n".join(
                f"Day {d}: " + "Visit the castle, then the tram 28 ride. " * 12 for d in (1, 2, 3)
            ),
        ),
        512,
    ),
    (
        "retrospective",
        LessonAnalysis,
        retro_prompts.LESSON_SYSTEM,
        retro_prompts.render_lesson(
            goal="Sum the amount column of invoices.csv and write the total to total.txt.",
            rounds=[1, 2],
            failure=TRACEBACK * 3,
            diff=DIFF,
            fix_note="strip the currency sign and the separators",
            tried=["float(row['amount'])", "row['amount'].replace('$', '')"],
        ),
        400,
    ),
    (
        "canonical",
        CanonicalAnswer,
        retro_prompts.MERGE_SYSTEM,
        retro_prompts.render_merge("ValueError", LESSONS),
        600,
    ),
]


@pytest.mark.parametrize(
    ("name", "schema", "system", "user", "max_tokens"), CASES, ids=[c[0] for c in CASES]
)
def test_every_schema_survives_a_long_realistic_prompt(
    llm: LLM, name: str, schema: type[BaseModel], system: str, user: str, max_tokens: int
) -> None:
    assert len(user) > 1_000, "the prompt must be long enough to matter"
    messages = [Message(role="system", content=system), Message(role="user", content=user)]
    try:
        completion = llm.complete(messages, schema=schema, temperature=0.0, max_tokens=max_tokens)
    except StructuredOutputError:
        return  # a typed, recorded failure is acceptable; a crash (ModelCrashedError) is not
    assert isinstance(completion.parsed, schema)
