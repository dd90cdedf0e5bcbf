"""Is the installed llama.cpp the portable build? (`python -m agent.llm.build_check`)

scripts/install.sh compiles llama-cpp-python without native tuning, AVX-512 or AMX, so
the same build runs on any x86-64 CPU with AVX2. pip may still hand back a wheel it
compiled earlier with other flags; this check reads the features llama.cpp reports it
was compiled with and exits 1 when any of them is one a portable build must not use.
`--requirement` prints the pinned requirement from our own metadata, for the rebuild.
"""

from __future__ import annotations

import re
import sys
from importlib.metadata import PackageNotFoundError, requires

# Compiled-in CPU features that tie a build to newer CPUs than the one it may run on.
NON_PORTABLE = ("AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8", "AMX_BF16")


def compiled_features(system_info: str) -> dict[str, bool]:
    """`"AVX2 = 1 | AMX_INT8 = 0 | ..."` -> {"AVX2": True, "AMX_INT8": False, ...}."""
    return {name: value == "1" for name, value in re.findall(r"(\w+) = (\d)", system_info)}


def non_portable(system_info: str) -> list[str]:
    """The features in `system_info` that a portable build must not have compiled in."""
    features = compiled_features(system_info)
    return [name for name in NON_PORTABLE if features.get(name)]


def llama_system_info() -> str:
    """What the installed llama.cpp says it was compiled with."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def pinned_requirement() -> str:
    """The llama-cpp-python requirement lessonloop declares (e.g. 'llama-cpp-python==0.3.36')."""
    try:
        declared = requires("lessonloop") or []
    except PackageNotFoundError:
        declared = []
    for requirement in declared:
        if requirement.replace("_", "-").startswith("llama-cpp-python"):
            return requirement.split(";")[0].strip()
    return "llama-cpp-python"


def main(argv: list[str]) -> int:
    if "--requirement" in argv:
        print(pinned_requirement())
        return 0
    bad = non_portable(llama_system_info())
    if bad:
        print(f"llama.cpp was compiled with {', '.join(bad)}: not portable", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
