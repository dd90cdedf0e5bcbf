"""A candidate answer (output files and/or text) and how it is read out of a model reply."""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

# A fenced block, optionally preceded (within a few lines) by a line naming a file.
_FENCE = re.compile(r"```[ \t]*([\w.+-]*)[^\n]*\n(.*?)```", re.DOTALL)
# What follows a block, up to the next fence line: a program whose opening fence is missing.
_STRAY = re.compile(r"[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_FILENAME = re.compile(r"([\w./-]+\.[A-Za-z0-9]{1,8})")
_LANG_BY_SUFFIX = {".py": {"python", "py", "python3"}, ".json": {"json"}, ".md": {"md", "markdown"}}
# Lone UTF-16 surrogates: a JSON "\ud800" escape decodes to one, and no file can hold it.
_SURROGATE = re.compile("[\ud800-\udfff]")


class Candidate(BaseModel):
    """What the generator or refiner produced: files to write, plus the full reply text."""

    model_config = ConfigDict(frozen=True)

    files: dict[str, str]
    text: str
    # The refiner's own account of the change ("Fix: ..."), kept as a fix already tried.
    fix_note: str | None = None

    def digest(self) -> str:
        """Identity of the content, to notice a refiner that returned the same thing again."""
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + _normalise(self.files[name]).encode() + b"\0")
        if not self.files:
            h.update(_normalise(self.text).encode())
        return h.hexdigest()


def _normalise(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


def changed_lines(before: Candidate, after: Candidate) -> int:
    """How many code lines a change from `before` to `after` removes and adds, all files
    together: the size of the diff a lesson shows. Indentation and blank lines do not count
    (a block moved into a function is the same code)."""
    total = 0
    for name in sorted(set(before.files) | set(after.files)):
        old, new = (_code_lines(c.files.get(name, "")) for c in (before, after))
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        same = sum(block.size for block in matcher.get_matching_blocks())
        total += len(old) + len(new) - 2 * same
    return total


def _code_lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip()]


def parse_candidate(text: str, outputs: Sequence[str]) -> Candidate:
    """Map fenced code blocks of a reply onto the task's output files.

    A block is assigned to the file named on the line before it (or in its info string);
    otherwise unnamed blocks fill the remaining outputs in order, preferring blocks whose
    language matches the file suffix. With no output files the reply itself is the answer.
    """
    # Unencodable text becomes U+FFFD here, so the files can be written and the check
    # reports it (a syntax error), instead of the loop failing on an encode.
    text = _SURROGATE.sub("\ufffd", text)
    fix_note = _extract_fix_note(text)
    if not outputs:
        return Candidate(files={}, text=answer_part(text), fix_note=fix_note)
    named: dict[str, str] = {}
    unnamed: list[tuple[str, str]] = []
    for match in _FENCE.finditer(text):
        lang = match.group(1).lower()
        body = _or_stray(lang, match.group(2), text, match.end())
        preceding = text[max(0, match.start() - 200) : match.start()].splitlines()[-2:]
        header = " ".join(preceding) + " " + text[match.start() : match.start() + 80].split("\n")[0]
        target = next((o for o in outputs if _mentions(header, o)), None)
        if target is not None and target not in named:
            named[target] = body
        else:
            unnamed.append((lang, body))
    for out in outputs:
        if out in named or not unnamed:
            continue
        suffix = "." + out.rsplit(".", 1)[-1] if "." in out else ""
        langs = _LANG_BY_SUFFIX.get(suffix, set())
        pick = next((i for i, (lang, _) in enumerate(unnamed) if lang in langs), 0)
        named[out] = unnamed.pop(pick)[1]
    if len(outputs) == 1 and outputs[0] not in named and outputs[0].endswith((".md", ".txt")):
        # A prose answer may come without fences.
        named[outputs[0]] = text.strip()
    return Candidate(files=named, text=text, fix_note=fix_note)


def _or_stray(lang: str, body: str, text: str, end: int) -> str:
    """`body`, or the program after it when it is Python of comments only and one stray fence
    closes that program (the reply has an odd number of fence lines).

    A reply that fences a comment ("# Repair attempt") and then the program, closed by one
    stray fence, pairs the fences wrongly: the block is the comment, the program falls outside.
    """
    if lang not in ("", *_LANG_BY_SUFFIX[".py"]) or _statements(body) != 0:
        return body
    if len(_FENCE_LINE.findall(text)) % 2 == 0:
        return body
    stray = _STRAY.match(text, end)
    return stray.group(1) if stray and (_statements(stray.group(1)) or 0) > 0 else body


def _statements(code: str) -> int | None:
    """How many top-level statements `code` holds as Python; None when it does not parse."""
    try:
        return len(ast.parse(code).body)
    except (SyntaxError, ValueError):
        return None


def answer_part(text: str) -> str:
    """The answer of a refiner reply: what follows its "ANSWER:" line, or all of it."""
    match = re.search(r"^\s*ANSWER\s*:\s*", text, re.MULTILINE)
    return (text[match.end() :] if match else text).strip()


def _mentions(header: str, filename: str) -> bool:
    return any(m == filename or m.endswith("/" + filename) for m in _FILENAME.findall(header))


def _extract_fix_note(text: str) -> str | None:
    match = re.search(r"^\W*fix\W*[:：]\s*(.+)$", text, re.IGNORECASE | re.MULTILINE)
    return match.group(1).strip()[:300] if match else None
