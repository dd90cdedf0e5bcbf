"""The child process that runs llama.cpp for `LocalLLM` (`python -m agent.llm.worker GGUF`).

llama.cpp is native code: a bad build, a bad GGUF or a sampler bug ends the process with a
signal, not an exception. Run in-process, that would kill `lessonloop run` with a bare
"Segmentation fault" and lose whatever the run had not yet written. In this child, the
same crash only closes a pipe; the parent (`agent.llm.local`) sees the signal and reports
it as a clear error.

Protocol: one JSON object per line. The child's real stdout is kept for the protocol and
fd 1 is pointed at stderr, so nothing native code prints can corrupt a reply.

    child  -> {"ready": true, "load_seconds": 0.8}
              or {"error": "load" | "import", "message": ...}
    parent -> {"messages": [...], "options": {...}, "schema": "<JSON schema>" | null}
    child  -> {"text": ..., "usage": {...}}
              or {"error": "grammar" | "request", "message": ...}

The JSON schema becomes a grammar here, not in the parent, so the parent never loads the
native library at all. A request that fails with a Python exception is answered with an
error; only a real crash ends the process.

The child exits when its stdin closes (the parent ended, whatever the reason), and ignores
SIGINT: Ctrl-C belongs to the parent, which then stops the child itself.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any, TextIO


def _protocol_stream() -> TextIO:
    """A private copy of stdout for replies; fd 1 itself now goes to stderr."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def _send(out: TextIO, payload: dict[str, Any]) -> None:
    out.write(json.dumps(payload) + "\n")
    out.flush()


# Prompt tokens evaluated per batch: the unit `_reuse_whole_batches` keeps. Small, so a
# prompt sharing a prefix with the last keeps most of it; measured on the 1.5B (2 threads,
# 10 generator prompts of the trap tasks, a throwaway probe: docs/status-log.md, twenty-sixth
# session): a fresh prompt costs the same as with llama.cpp's 512 (8-9.6 s for 230-360
# prompt tokens and 120 new).
BATCH = 64


def _reuse_whole_batches(llama: Any) -> None:
    """Let `llama` reuse its cache of the last prompt only in whole aligned batches, so a
    reply depends on its own prompt alone, not on the call before it.

    llama-cpp-python keeps the last prompt's KV cache and, when the next prompt shares a
    prefix, evaluates only the rest, starting wherever the prefix ends. The matrix products
    of a batch are not bit-identical across batch shapes, so the rest's logits differ in the
    last bits from a fresh evaluation's, and a greedy reply can turn on them: the 1.5B wrote
    two different programs for one generator prompt, with no lesson in either, in the
    twenty-sixth session's stream (currency_02 with memory and without), and the memory
    got the blame; on 10 generator prompts of the trap tasks, each asked fresh and right
    after another sharing its system prompt (or the same prompt with a lesson), 6 of 10
    greedy replies changed. Cut back to a multiple of `n_batch`, the kept cache is exactly
    what a fresh evaluation computes first (the same tokens, in the same batches), and the
    rest starts where a fresh evaluation's next batch does: 10 of 10 identical, fresh, after
    the other prompt and asked again, with a prompt that shares most of the last one still
    3 s faster than fresh.
    """
    generate = llama.generate

    def aligned(tokens: Any, *args: Any, reset: bool = True, **kwargs: Any) -> Any:
        tokens = list(tokens)
        if reset and llama.n_tokens > 0:
            same = 0
            for cached, token in zip(llama._input_ids, tokens, strict=False):
                if cached != token:
                    break
                same += 1
            keep = min(same, len(tokens) - 1) // llama.n_batch * llama.n_batch
            if keep < llama.n_tokens:
                llama._ctx.kv_cache_seq_rm(-1, keep, -1)
                llama.n_tokens = keep
        return generate(tokens, *args, reset=reset, **kwargs)

    llama.generate = aligned


def serve(args: argparse.Namespace) -> int:
    """Load the model, then answer requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = _protocol_stream()
    started = time.perf_counter()
    try:
        from llama_cpp import Llama
        from llama_cpp.llama_grammar import LlamaGrammar
    except ImportError as exc:
        _send(out, {"error": "import", "message": f"{type(exc).__name__}: {exc}"})
        return 2
    try:
        llama = Llama(
            model_path=args.model,
            n_ctx=args.n_ctx,
            n_threads=args.threads,
            n_threads_batch=args.threads,
            n_batch=BATCH,
            n_ubatch=BATCH,
            verbose=False,
        )
    except (ValueError, OSError) as exc:  # llama-cpp-python's "Failed to load model from file"
        _send(out, {"error": "load", "message": f"{type(exc).__name__}: {exc}"})
        return 2
    _reuse_whole_batches(llama)
    _send(out, {"ready": True, "load_seconds": time.perf_counter() - started})

    grammars: dict[str, LlamaGrammar] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            schema = request.get("schema")
            if schema and schema not in grammars:
                try:
                    grammars[schema] = LlamaGrammar.from_json_schema(schema, verbose=False)
                except Exception as exc:  # the converter raises all sorts
                    _send(out, {"error": "grammar", "message": f"{type(exc).__name__}: {exc}"})
                    continue
            response: Any = llama.create_chat_completion(
                messages=request["messages"],
                grammar=grammars[schema] if schema else None,
                **request["options"],
            )
        except Exception as exc:  # reported to the parent, which raises it
            # e.g. "Requested tokens (5000) exceed context window of 4096", a decode failure.
            _send(out, {"error": "request", "message": f"{type(exc).__name__}: {exc}"})
            continue
        _send(
            out,
            {
                "text": response["choices"][0]["message"].get("content") or "",
                "usage": response.get("usage") or {},
            },
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("model")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=1)
    return serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
