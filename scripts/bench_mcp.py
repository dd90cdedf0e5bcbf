"""What `lessonloop mcp` costs an assistant: start-up, and record / recall / get round trips
over stdio.

    python scripts/bench_mcp.py [--embedder minilm|hash] [--lessons 200] [--recalls 50]
        [--out bench-results/mcp.json]

The server is a real `python -m agent mcp` subprocess on a fresh SQLite + chromadb store,
driven by the SDK's stdio client. Lessons are synthetic (library / error / cause triples with
random words), so the write path creates most of them and folds the rest. `get_lesson` (one
SQL read and the lift query) bounds what the transport and the SDK's dispatch add per call:
on a shared machine, timing the same recalls in-process a minute later is noisier than that.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from rich.console import Console  # noqa: E402

from scripts._benchlib import REPO, write_json_atomic  # noqa: E402

LIBS = ["pandas", "csv", "json", "requests", "sqlite3", "datetime", "numpy", "yaml", "re", "os"]
ERRORS = ["ValueError", "KeyError", "TypeError", "UnicodeDecodeError", "AttributeError"]
CAUSES = [
    "a currency sign and thousands separators in the amounts",
    "a UTF-8 byte order mark before the first header",
    "dates with a time zone offset",
    "decimal commas instead of decimal points",
    "a trailing newline in every value",
    "empty cells written as N/A",
    "a semicolon delimiter",
    "percent signs in the rates",
]


WORDS = [
    "invoice",
    "ledger",
    "shipment",
    "payroll",
    "sensor",
    "telemetry",
    "survey",
    "inventory",
    "booking",
    "refund",
    "customer",
    "vendor",
    "warehouse",
    "branch",
    "region",
    "meter",
    "tariff",
    "policy",
    "claim",
    "patient",
    "order",
    "column",
    "header",
    "footer",
    "row",
    "cell",
    "field",
    "record",
    "batch",
    "file",
    "stream",
    "feed",
    "report",
    "sheet",
]


def lesson(i: int) -> dict[str, str]:
    lib, err, cause = LIBS[i % len(LIBS)], ERRORS[i % len(ERRORS)], CAUSES[i % len(CAUSES)]
    what = " ".join(random.Random(i).sample(WORDS, 4))  # distinct texts: few folds
    return {
        "error_type": err,
        "symptom": f"{lib} raises {err} on the {what} export",
        "root_cause": f"the {what} export has {cause}",
        "fix": f"normalise {cause} in the {what} data before {lib} parses it",
    }


def query(i: int) -> str:
    return f"{ERRORS[i % len(ERRORS)]} in {LIBS[(i * 3) % len(LIBS)]}: {CAUSES[(i * 5) % 8]}"


def pcts(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
        "n": len(ms),
    }


async def over_mcp(store: Path, embedder: str, lessons: int, recalls: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LESSONLOOP_")}
    env |= {"LESSONLOOP_EMBEDDER": embedder, "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agent", "mcp", "--memory", str(store)], env=env
    )
    started = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            startup = time.perf_counter() - started
            actions: dict[str, int] = {}
            record_s = []
            for i in range(lessons):
                t = time.perf_counter()
                result = await session.call_tool("record_lesson", {"scope": "bench", **lesson(i)})
                record_s.append(time.perf_counter() - t)
                action = (result.structured_content or {}).get("action", "error")
                actions[action] = actions.get(action, 0) + 1
            recall_s, hits, ids = [], 0, []
            for i in range(recalls):
                t = time.perf_counter()
                result = await session.call_tool(
                    "recall_lessons", {"text": query(i), "scope": "bench"}
                )
                recall_s.append(time.perf_counter() - t)
                found = (result.structured_content or {}).get("lesson_ids") or []
                hits += bool(found)
                ids += found
            get_s = []
            for lesson_id in (ids * recalls)[:recalls]:
                t = time.perf_counter()
                await session.call_tool("get_lesson", {"lesson_id": lesson_id})
                get_s.append(time.perf_counter() - t)
    return {
        "startup_s": round(startup, 2),
        "record": pcts(record_s),
        "record_actions": actions,
        "recall": pcts(recall_s),
        "recalls_with_lessons": hits,
        "get_lesson": pcts(get_s) if get_s else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--lessons", type=int, default=200)
    p.add_argument("--recalls", type=int, default=50)
    p.add_argument("--out", type=Path, default=REPO / "bench-results" / "mcp.json")
    args = p.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        mcp = anyio.run(over_mcp, store, args.embedder, args.lessons, args.recalls)
    result = {"embedder": args.embedder, "lessons": args.lessons, **mcp}
    get = mcp["get_lesson"] or {"p50_ms": "-", "p95_ms": "-"}
    console.print(
        f"embedder {args.embedder}: server start-up {mcp['startup_s']} s; "
        f"record_lesson p50 {mcp['record']['p50_ms']} ms p95 {mcp['record']['p95_ms']} ms "
        f"({mcp['record_actions']}); recall_lessons over stdio p50 {mcp['recall']['p50_ms']} ms "
        f"p95 {mcp['recall']['p95_ms']} ms ({mcp['recalls_with_lessons']}/{args.recalls} with "
        f"lessons); get_lesson p50 {get['p50_ms']} ms p95 {get['p95_ms']} ms"
    )
    write_json_atomic(args.out, result)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
