"""scripts/unchecked_draws.py: the unchecked draws of a stream's runs, and their tokens."""

from __future__ import annotations

from pathlib import Path

from agent.llm.base import Usage
from agent.result import PoolEntry
from scripts.unchecked_draws import count, main
from tests.retro.builders import OK, WRONG_TOTAL, candidate, record, run


def test_repeats_of_the_repaired_round_and_replies_without_files_are_counted(
    tmp_path: Path,
) -> None:
    entry = PoolEntry(origin="refine", temperature=0.0, kind="success", tokens=100, chosen=True)
    second = record(2, candidate("b"), OK).model_copy(
        update={
            "usage": Usage(prompt_tokens=250, completion_tokens=50, calls=3),
            "pool": (entry,),
            "resampled": ("refine: repeated round 1 generate", "refine_hot: no output file"),
            "steered": ("refine_hot -> refine_alt", "refine_alt: not drawn"),
        }
    )
    result = run(record(1, candidate("a"), WRONG_TOTAL), second)
    figures = count([result])
    assert figures["unchecked"] == 2 and figures["repeats_of_base_round"] == 1
    assert figures["no_files"] == 1 and figures["unchecked_tokens"] == 200
    assert figures["steered_moved"] == 1 and figures["steered_not_drawn"] == 1
    (tmp_path / "r.json").write_text(result.model_dump_json())
    assert main([str(tmp_path)]) == 0
