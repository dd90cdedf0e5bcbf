"""Check answer.md for release_notes: headings, section order, and which issue goes where.

Stdlib only. Usage: python check.py answer.md (in the workspace). Prints short problem lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

TITLE = "# Release 2.4.0"
SECTIONS = {"Added": {41, 45}, "Fixed": {38, 47, 49}, "Removed": {35, 50}}
LEFT_OUT = {44, 46}  # chore: and docs: entries
MAX_REPORTED = 6


def problems(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    found: list[str] = []
    headings = [line for line in lines if line.startswith("#")]
    if not headings or headings[0].strip() != TITLE:
        found.append(f"the first heading must be '{TITLE}'")
    order = [line[3:].strip() for line in lines if line.startswith("## ")]
    if order != list(SECTIONS):
        found.append(f"level-2 headings are {order}, expected {list(SECTIONS)} in that order")

    current: str | None = None
    placed: dict[int, str] = {}
    for line in lines:
        if line.startswith("## "):
            current = line[3:].strip()
            continue
        for number in map(int, re.findall(r"#(\d+)\b", line)):
            if not line.lstrip().startswith("- "):
                found.append(f"issue #{number} is not on a '- ' bullet line")
            elif len(re.findall(r"[A-Za-z]{2,}", line)) < 2:
                found.append(f"the bullet for issue #{number} lacks its description")
            if number in placed:
                found.append(f"issue #{number} is listed more than once")
            placed.setdefault(number, current or "(before any section)")
    for section, numbers in SECTIONS.items():
        for number in sorted(numbers):
            if number not in placed:
                found.append(f"issue #{number} is missing (it belongs under '## {section}')")
            elif placed[number] != section:
                found.append(f"issue #{number} is under '## {placed[number]}', not '## {section}'")
    for number in sorted(LEFT_OUT & placed.keys()):
        found.append(f"issue #{number} should be left out (not a feat/fix/remove entry)")
    return found


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else "answer.md"
    path = Path(name)
    if not path.is_file():
        print(f"{name} not found: write the release notes to {name} in the working directory")
        return 1
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        print(f"{name} is not UTF-8 text")
        return 1
    found = problems(text)
    if not found:
        print(f"{name}: release notes look right")
        return 0
    print(f"{name}: {len(found)} problem(s)")
    for line in found[:MAX_REPORTED]:
        print(f"  {line}")
    if len(found) > MAX_REPORTED:
        print(f"  ... and {len(found) - MAX_REPORTED} more")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
