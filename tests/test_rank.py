"""agent/rank.py and agent/stopping.py: which round a run follows, and when it stops."""

from __future__ import annotations

from agent.feedback import Feedback
from agent.rank import best_round, next_base
from agent.stopping import UNREADABLE_CRITIC, decide_stop, stop_after
from tests.retro.builders import VALUE_ERROR, WRONG_TOTAL, candidate, record

CLOSE = WRONG_TOTAL.model_copy(update={"credit": 0.8})
FAR = WRONG_TOTAL.model_copy(update={"credit": 0.1})
UNREADABLE = Feedback(
    kind="critic_rejected", stage="critic", summary="?", key_message=UNREADABLE_CRITIC
)
REJECTED = Feedback(kind="critic_rejected", stage="critic", summary="no", issues=("too short",))


def test_the_next_round_repairs_the_best_round_so_far_the_latest_on_a_tie() -> None:
    one, two = record(1, candidate("a"), CLOSE), record(2, candidate("b"), FAR)
    assert next_base([one, two]) is one  # round 2 did worse: not followed
    three = record(3, candidate("c"), CLOSE)
    assert next_base([one, two, three]) is three  # a tie: the latest
    assert best_round([one, two, three]) is one  # the run's best: the earliest on a tie
    crash = record(2, candidate("d"), VALUE_ERROR)
    assert next_base([record(1, candidate("e"), VALUE_ERROR), crash]) is crash


def stop(last: Feedback, repaired: Feedback | None, upcoming: Feedback | None = None,
         rounds: int = 2, found_new: bool = False) -> str | None:  # fmt: skip
    return decide_stop(
        last,
        rounds=rounds,
        repaired=repaired,
        upcoming=upcoming,
        max_rounds=3,
        score_threshold=8,
        has_external_check=False,
        found_new=found_new,
    )


def test_a_stall_is_a_repair_that_failed_as_what_it_repaired() -> None:
    assert stop(CLOSE, CLOSE) == "stall"
    assert stop(CLOSE, CLOSE, found_new=True) is None
    assert stop(CLOSE, VALUE_ERROR) is None
    assert stop(CLOSE, None) is None  # a generation repaired nothing
    assert stop(CLOSE, CLOSE, rounds=3) == "max_rounds"


def test_an_unreadable_round_does_not_stop_a_run_that_goes_back_to_an_actionable_one() -> None:
    assert stop(UNREADABLE, REJECTED) == "no_actionable_issue"  # it would repair this one
    assert stop(UNREADABLE, REJECTED, upcoming=REJECTED) is None  # it repairs round 1 again


def test_a_run_that_keeps_going_back_stalls_when_a_repair_fails_as_an_earlier_one() -> None:
    one = record(1, candidate("a"), CLOSE)
    two = record(2, candidate("b"), FAR)
    # Round 3 repairs round 1 again and fails as round 2 did: the search shows nothing new.
    three = record(3, candidate("c"), FAR).model_copy(update={"repairs": 1})
    config = {"max_rounds": 5, "score_threshold": 8.0, "has_external_check": True}
    assert stop_after([one, two, three], found_new=False, **config) == "stall"
    assert stop_after([one, two, three], found_new=True, **config) is None
    # A go-back that failed in a new way goes on.
    other = record(3, candidate("d"), VALUE_ERROR).model_copy(update={"repairs": 1})
    assert stop_after([one, two, other], found_new=False, **config) is None
