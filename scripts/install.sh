#!/usr/bin/env bash
# One-step install on a fresh Debian/Ubuntu machine with Python 3.11:
#   - bubblewrap: the sandbox that runs generated code (no network, no host files);
#   - PostgreSQL server binaries: used by the store contract tests (a test starts its own
#     throw-away server; nothing runs as a service);
#   - chromium: the report test renders `lessonloop report`'s page headless; chromium-driver:
#     the console's browser test drives it through Selenium (no browser download);
#   - the package itself with its dev extras (torch pinned to the CPU build in pyproject),
#     llama-cpp-python compiled for any x86-64 CPU with AVX2 (below).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

# llama-cpp-python compiles llama.cpp from source (pinned in pyproject.toml). By default
# the compiler targets the build machine's own CPU (-march=native): on a CPU with AMX that
# build crashed in the first decode, and a native build would crash on an older CPU too.
# So: no native tuning, no AVX-512, no AMX; AVX2/FMA/F16C/BMI2, which every x86-64 machine
# of the last decade has (x86-64-v3). Measured in the README: the portable build is as fast
# here as the native one, because Q4_K matmul on 2 cores is bound by memory bandwidth.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

pip install -e ".[dev]"

# pip reuses a wheel it compiled earlier, whatever CMAKE_ARGS said then: if the installed
# build is not the portable one (a native wheel from an older install), rebuild it once.
if ! python -m agent.llm.build_check; then
    echo "llama-cpp-python is not the portable build; recompiling it (a few minutes)" >&2
    pip install --force-reinstall --no-deps --no-cache-dir "$(python -m agent.llm.build_check --requirement)"
    python -m agent.llm.build_check
fi
