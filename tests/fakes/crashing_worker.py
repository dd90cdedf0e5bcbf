"""A stand-in for `agent.llm.worker` that dies the way llama.cpp does: by a signal.

    python crashing_worker.py MODE STATE_DIR MODEL [--n-ctx N --threads N]

MODE: `load` dies before it is ready; `request` answers "ready", then dies on the first
request; `once` dies on the first request of its first life only (STATE_DIR remembers),
answers every later request; `load-error` reports that the file cannot be loaded;
`import-error` that llama_cpp is missing; `garbled` writes a non-JSON line to its first
request (first life only); `no-grammar` refuses every schema and answers `{"a": 1}`;
`hang` never answers a request.
It speaks the real worker's protocol, so the parent's code path is the real one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def die() -> None:
    sys.stderr.write("ggml: fake crash in the sampler\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSEGV)


def main() -> None:
    mode, state = sys.argv[1], Path(sys.argv[2])
    if mode == "load":
        die()
    if mode in ("load-error", "import-error"):
        kind = mode.split("-")[0]
        print(json.dumps({"error": kind, "message": "Failed to load model / no llama_cpp"}))
        return
    print(json.dumps({"ready": True, "load_seconds": 0.01}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        lives = state / "lives"
        first_life = not lives.exists()
        lives.write_text("1")
        if mode == "request" or (mode == "once" and first_life):
            die()
        if mode == "hang":
            time.sleep(3600)
        if mode == "garbled" and first_life:
            print("Segfault handler: not JSON", flush=True)
            continue
        if mode == "no-grammar":
            reply = {"error": "grammar"} if request["schema"] else {"text": '{"a": 1}'}
            print(json.dumps(reply), flush=True)
            continue
        text = "echo: " + request["messages"][-1]["content"]
        usage = {"prompt_tokens": 3, "completion_tokens": 2}
        print(json.dumps({"text": text, "usage": usage}), flush=True)


if __name__ == "__main__":
    main()
