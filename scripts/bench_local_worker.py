"""What running the local model in a worker process costs, and how fast this llama.cpp build is.

    python scripts/bench_local_worker.py [--model local:qwen2.5-coder-1.5b] [--calls 5]
        [--tokens 64] [--out bench-results/local_worker.json]

Both paths get the same prompts at temperature 0 with the same model file and threads:
  in-process  llama_cpp.Llama.create_chat_completion called directly (what lessonloop did)
  worker      LocalLLM, which runs the model in `agent.llm.worker` (what it does now)
and the script reports the start-up (worker start + model load vs model load), the median
seconds per call, the per-call overhead (worker minus in-process) and tokens/s, plus the
CPU features the installed llama.cpp was compiled with. To compare builds, install
another build in a directory and put it first: PYTHONPATH=/tmp/native-llama python ...
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from agent.app.settings import Settings  # noqa: E402
from agent.llm.base import Message  # noqa: E402
from agent.llm.build_check import compiled_features, llama_system_info  # noqa: E402
from agent.llm.local import LocalLLM, default_threads  # noqa: E402
from agent.llm.resolve import resolve_llm  # noqa: E402
from scripts._benchlib import REPO, write_json_atomic  # noqa: E402

PROMPTS = [
    "Write a Python function that returns the n-th Fibonacci number.",
    "Write a Python function that reverses the words of a sentence.",
    "Write a Python function that sums the digits of an integer.",
    "Write a Python function that checks whether a string is a palindrome.",
    "Write a Python function that counts the vowels in a string.",
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--model", default="local")
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--out", type=Path, default=REPO / "bench-results" / "local_worker.json")
    args = p.parse_args()
    console = Console()
    settings = Settings.from_env()
    llm = resolve_llm(args.model, settings)
    if not isinstance(llm, LocalLLM):
        console.print(f"{args.model} is not a local model")
        return 2
    threads = args.threads or default_threads()
    turns = [[Message(role="user", content=PROMPTS[i % len(PROMPTS)])] for i in range(args.calls)]

    from llama_cpp import Llama

    started = time.perf_counter()
    direct = Llama(
        model_path=str(llm.model_path), n_ctx=4096, n_threads=threads,
        n_threads_batch=threads, verbose=False,
    )  # fmt: skip
    direct_load = time.perf_counter() - started
    direct_s, direct_tokens = [], 0
    for messages in turns:
        t0 = time.perf_counter()
        out = direct.create_chat_completion(
            messages=[{"role": "user", "content": messages[0].content}],
            temperature=0.0, max_tokens=args.tokens, seed=1, repeat_penalty=1.0,
        )  # fmt: skip
        direct_s.append(time.perf_counter() - t0)
        direct_tokens += out["usage"]["completion_tokens"]
    direct.close()

    worker = LocalLLM(llm.model_path, n_threads=threads)
    started = time.perf_counter()
    worker.load()
    worker_load = time.perf_counter() - started
    worker_s, worker_tokens = [], 0
    for messages in turns:
        t0 = time.perf_counter()
        answer = worker.complete(messages, temperature=0.0, max_tokens=args.tokens, seed=1)
        worker_s.append(time.perf_counter() - t0)
        worker_tokens += answer.usage.completion_tokens
    worker.close()

    features = compiled_features(llama_system_info())
    result = {
        "model": llm.model_id,
        "threads": threads,
        "calls": args.calls,
        "max_tokens": args.tokens,
        "compiled_with": sorted(k for k, v in features.items() if v),
        "in_process": {
            "load_s": direct_load,
            "median_call_s": statistics.median(direct_s),
            "tokens_per_s": direct_tokens / sum(direct_s),
        },
        "worker": {
            "start_and_load_s": worker_load,
            "median_call_s": statistics.median(worker_s),
            "tokens_per_s": worker_tokens / sum(worker_s),
        },
        "same_tokens": direct_tokens == worker_tokens,
        "overhead_per_call_s": statistics.median(
            w - d for w, d in zip(worker_s, direct_s, strict=True)
        ),
    }
    console.print(
        f"{llm.model_id}, {threads} thread(s), built with {', '.join(result['compiled_with'])}\n"
        f"in-process: load {direct_load:.2f}s, median call {statistics.median(direct_s):.2f}s, "
        f"{result['in_process']['tokens_per_s']:.1f} tok/s\n"
        f"worker:     start+load {worker_load:.2f}s, median call "
        f"{statistics.median(worker_s):.2f}s, {result['worker']['tokens_per_s']:.1f} tok/s\n"
        f"overhead per call (median of paired differences): "
        f"{result['overhead_per_call_s'] * 1000:.1f} ms; same tokens: {result['same_tokens']}"
    )
    write_json_atomic(args.out, result)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
