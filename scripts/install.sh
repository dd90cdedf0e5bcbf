#!/usr/bin/env bash
# One-step install on a fresh Debian/Ubuntu machine with Python 3.11:
#   - bubblewrap: the sandbox that runs generated code (no network, no host files);
#   - PostgreSQL server binaries: used by the store contract tests (a test starts its own
#     throw-away server; nothing runs as a service);
#   - chromium: the report test renders `lessonloop report`'s page headless;
#   - the package itself with its dev extras (torch pinned to the CPU build in pyproject).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

pip install -e ".[dev]"
