"""A stand-in for `agent.llm.worker` that dies the way llama.cpp does: by a signal.

    python crashing_worker.py MODE STATE_DIR MODEL [--n-ctx N --threads N]

MODE: `load` dies before it is ready; `request` answers "ready", then dies on the first
request; `once` dies on the first request of its first life only (STATE_DIR remembers),
answers every later request; `load-error` reports that the file cannot be loaded.
It speaks the real worker's protocol, so the parent's code path is the real one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path


def die() -> None:
    sys.stderr.write("ggml: fake crash in the sampler\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSEGV)


def main() -> None:
    mode, state = sys.argv[1], Path(sys.argv[2])
    if mode == "load":
        die()
    if mode == "load-error":
        print(json.dumps({"error": "load", "message": "ValueError: Failed to load model"}))
        return
    print(json.dumps({"ready": True, "load_seconds": 0.01}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        lives = state / "lives"
        if mode == "request" or (mode == "once" and not lives.exists()):
            lives.write_text("1")
            die()
        text = "echo: " + request["messages"][-1]["content"]
        usage = {"prompt_tokens": 3, "completion_tokens": 2}
        print(json.dumps({"text": text, "usage": usage}), flush=True)


if __name__ == "__main__":
    main()
