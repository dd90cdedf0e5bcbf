"""Hidden tests for fizzbuzz_plus: import solution.fizzbuzz from the working directory.

Stdlib only; prints the first failing case in one or two lines.
"""

from __future__ import annotations

import os
import sys
import traceback

CASES = (0, 1, 3, 5, 7, 15, 21, 35, 70, 105, 110)


def expected(n: int) -> list[str]:
    out = []
    for number in range(1, n + 1):
        word = "".join(w for d, w in ((3, "Fizz"), (5, "Buzz"), (7, "Bazz")) if number % d == 0)
        out.append(word or str(number))
    return out


def _last_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def main() -> int:
    sys.path.insert(0, os.getcwd())
    try:
        import solution  # type: ignore[import-not-found]
    except ModuleNotFoundError as exc:
        if exc.name == "solution":
            print("solution.py not found in the working directory")
            return 1
        print(f"importing solution.py failed: {_last_line(exc)}")
        return 1
    except (Exception, SystemExit) as exc:  # the candidate's failure is feedback, not our bug
        print(f"importing solution.py failed: {_last_line(exc)}")
        return 1
    fizzbuzz = getattr(solution, "fizzbuzz", None)
    if not callable(fizzbuzz):
        print("solution.py defines no function fizzbuzz(n)")
        return 1
    for n in CASES:
        want = expected(n)
        try:
            got = fizzbuzz(n)
        except Exception as exc:  # noqa: BLE001 - a crash in the candidate is the feedback
            print(f"fizzbuzz({n}) raised {_last_line(exc)}")
            return 1
        if not isinstance(got, list):
            print(f"fizzbuzz({n}) returned {type(got).__name__}, expected a list of strings")
            return 1
        if len(got) != len(want):
            print(f"fizzbuzz({n}) returned {len(got)} items, expected {n}")
            return 1
        for index, (w, g) in enumerate(zip(want, got, strict=True)):
            if g != w:
                print(f"fizzbuzz({n})[{index}] (the number {index + 1}): expected {w!r}, got {g!r}")
                return 1
    print(f"all {len(CASES)} hidden cases pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
