"""Forgotten standard-library imports, added before a candidate is checked (agent/imports.py)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from agent.candidate import Candidate
from agent.imports import FROM, MODULES, complete_imports, missing_imports_added
from agent.llm.scripted import ScriptedLLM
from tests.helpers import GEN, code, make_task
from tests.test_loop import agent_for


def test_a_module_used_by_attribute_is_imported_after_the_docstring_and_future_imports() -> None:
    source = (
        '"""Totals."""\nfrom __future__ import annotations\n\n'
        "rows = list(csv.reader(open('a.csv')))\njson.dump(len(rows), open('out.json', 'w'))\n"
    )
    added = missing_imports_added(source)
    assert added == (
        '"""Totals."""\nfrom __future__ import annotations\nimport csv\nimport json\n\n'
        "rows = list(csv.reader(open('a.csv')))\njson.dump(len(rows), open('out.json', 'w'))\n"
    )


def test_the_datetime_class_used_through_its_module_name_is_imported_from_the_module() -> None:
    # dates_04's second draft: `module 'datetime' has no attribute 'strptime'` once `import
    # datetime` was added by hand; the attributes are the class's, so the class is imported.
    added = missing_imports_added("d = datetime.strptime('2026-01-02', '%Y-%m-%d')\n")
    assert added.splitlines()[0] == "from datetime import datetime"
    both = missing_imports_added("a = datetime.date.today()\n")
    assert both.splitlines()[0] == "import datetime"
    # Attributes of neither the module nor the class (the program's own mix-up): nothing.
    mixed = "a = datetime.strptime('1', '%d')\nb = datetime.timedelta(days=1)\n"
    assert missing_imports_added(mixed) == mixed


def test_names_used_bare_that_mean_one_thing_are_imported_from_their_module() -> None:
    source = (
        "def top(words: List[str]) -> int:\n"
        "    counts = Counter(words)\n"
        "    return reduce(max, counts.values(), 0) + floor(sqrt(len(words)))\n"
    )
    added = missing_imports_added(source).splitlines()
    assert added[:5] == [
        "from collections import Counter",
        "from typing import List",
        "from math import floor",
        "from functools import reduce",
        "from math import sqrt",
    ]
    assert ast.parse("\n".join(added))


@pytest.mark.parametrize(
    "source",
    [
        # A list the program forgot to make, not the `numbers` module.
        "numbers.append(1)\nprint(numbers)\n",
        # Third-party or unknown: left to the check.
        "print(np.zeros(3))\n",
        # `e` in an except without `as e` is the program's bug, not math.e.
        "try:\n    x = 1 / 0\nexcept ZeroDivisionError:\n    print(e)\n",
        # A helper the program forgot to write: `count` and `merge` are not imported.
        "print(count([1, 2]), merge([1], [2]))\n",
        # Bound somewhere in the file (another function, a loop, an argument): not free.
        "def f():\n    json = 1\n    return json\ndef g():\n    return json.dumps(1)\n",
        "for datetime in range(2):\n    print(datetime.real)\n",
        # A star import could bind anything.
        "from os.path import *\nprint(Counter('ab'))\n",
        # Does not parse: the check reports the syntax error as the model wrote it.
        "def f(:\n    return json.dumps(1)\n",
        # A list the program forgot, under a module's name; a forgotten variable `date`.
        "array.append(1)\n",
        "out = {}\nout[date] = 1\n",
        # Imported already, under another name too.
        "import json as j\nimport collections\nprint(j.dumps(collections.Counter('a')))\n",
    ],
)
def test_what_is_not_certain_is_left_as_written(source: str) -> None:
    assert missing_imports_added(source) == source


def test_only_python_files_change_and_an_untouched_candidate_is_returned_as_is() -> None:
    untouched = Candidate(files={"solution.py": "import json\nprint(json.dumps(1))\n"}, text="t")
    assert complete_imports(untouched) is untouched
    mixed = Candidate(files={"a.py": "print(json.dumps(1))\n", "notes.md": "json.dumps"}, text="t")
    done = complete_imports(mixed)
    assert done.files == {"a.py": "import json\nprint(json.dumps(1))\n", "notes.md": "json.dumps"}
    assert done.text == "t"


def test_every_listed_name_is_what_its_module_exports() -> None:
    for module_name, names in FROM.items():
        module = importlib.import_module(module_name)
        for name in names.split():
            assert hasattr(module, name), f"{module_name}.{name}"
    for module_name in MODULES:
        importlib.import_module(module_name)


def test_a_draft_that_forgot_its_import_passes_in_round_one(tmp_path: Path) -> None:
    # The real sandbox runs the completed program; without the import it raises NameError.
    llm = ScriptedLLM.by_system({GEN: [code("json.dump(42, open('out.json', 'w'))")]})
    result = agent_for(llm, tmp_path).run(make_task(tmp_path))
    assert result.passed and len(result.rounds) == 1
    assert result.rounds[0].candidate.files["solution.py"].startswith("import json\n")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # Lines as the parser counts them: a form feed or U+2028 is no line end to it.
        ('"""Doc."""\n\x0c\nfrom __future__ import annotations\nprint(json.dumps(1))\n',
         '"""Doc."""\n\x0c\nfrom __future__ import annotations\nimport json\n'
         "print(json.dumps(1))\n"),
        ('"""Doc\u2028more."""\nprint(json.dumps(1))\n',
         '"""Doc\u2028more."""\nimport json\nprint(json.dumps(1))\n'),
        # A shebang and a coding cookie stay first.
        ("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nprint(json.dumps(1))\n",
         "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nimport json\nprint(json.dumps(1))\n"),
        ('"""D."""\r\nprint(json.dumps(1))\r\n',
         '"""D."""\r\nimport json\nprint(json.dumps(1))\r\n'),
    ],
)  # fmt: skip
def test_imports_go_after_the_header_lines_as_the_parser_counts_them(
    source: str, expected: str
) -> None:
    added = missing_imports_added(source)
    assert added == expected
    compile(added, "s.py", "exec")
