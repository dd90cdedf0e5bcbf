"""Another agent's loop using lessonloop's memory over MCP: recall first, record what it
fixed, report how each run ended.

    python examples/assistant_loop.py [STORE]      (default: a fresh temporary store)

The "assistant" is a toy that sums money columns; it knows nothing about currency strings
until a lesson tells it. Task A fails, finds the fix, records it; task B recalls the lesson
and passes on its first try; the lesson's lift shows it. Exit code 0 when that happened.
Any MCP client (Claude Desktop, Cursor, an agent framework) does the same with these tools.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SCOPE = "invoices"
TASKS = {
    "A": ["$1,299.99", "12.50", "$3,000"],
    "B": ["$45.10", "$2,500.00"],
}


def solve(amounts: list[str], lessons: str) -> float:
    """The toy assistant: plain float(), unless a lesson says to strip the currency sign."""
    if "strip the currency sign" in lessons:
        amounts = [a.replace("$", "").replace(",", "") for a in amounts]
    return sum(float(a) for a in amounts)


async def tool(session: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"{name}: {result.content}")
    return result.structured_content


async def attempt(session: ClientSession, label: str) -> tuple[bool, str | None]:
    """One task as a run: recall, try, on failure fix and record, report. (first try ok?, id)"""
    run = (await tool(session, "start_run", scope=SCOPE, goal=f"sum invoice amounts {label}"))[
        "run_id"
    ]
    goal = f"sum the amount column of invoices: float() on values such as {TASKS[label][0]!r}"
    recalled = await tool(session, "recall_lessons", text=goal, scope=SCOPE, run_id=run)
    try:
        solve(TASKS[label], recalled["block"])
        first_try = True
    except ValueError as exc:
        first_try = False
        # The assistant's own reflection found the fix; once verified, it records the lesson.
        fix = "strip the currency sign and thousands separators before float()"
        solve(TASKS[label], fix)
        answer = await tool(
            session,
            "record_lesson",
            scope=SCOPE,
            error_type="ValueError",
            symptom=f"float() fails on money amounts such as {TASKS[label][0]!r}",
            root_cause="amounts carry a currency sign and thousands separators",
            fix=fix,
            evidence=str(exc),
            run_id=run,
        )
        print(f"task {label}: {exc}; lesson {answer['action']}: {answer['lesson_id']}")
    await tool(session, "report_outcome", run_id=run, lesson_ids=[], passed=True)
    used = recalled["lesson_ids"][0] if recalled["lesson_ids"] else None
    print(f"task {label}: passed ({'first try' if first_try else 'after a fix'}), used {used}")
    return first_try, used


async def main(store: str) -> int:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "mcp", "--memory", store],
        env=dict(os.environ),
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        a_first, _ = await attempt(session, "A")
        b_first, used = await attempt(session, "B")
        if used is None:
            print("task B recalled no lesson")
            return 1
        lift = (await tool(session, "get_lesson", lesson_id=used))["lift"]
        print(f"lesson {used}: given to {lift['runs']} run(s), {lift['passed']} passed")
    return 0 if (not a_first and b_first and lift["passed"] == 1) else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else tmp))
