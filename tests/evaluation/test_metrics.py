"""evaluation.metrics: every figure hand-computed on small inputs chosen so that a plausible
wrong formula (counting duplicates, macro instead of micro, ignoring ties) gives another number.
"""

import itertools
import math
import random

import pytest

from evaluation.metrics import (
    AskScore,
    Reward,
    SupportRecord,
    ask_pr_curve,
    ask_score,
    ask_score_micro,
    audbc,
    delta_burden_curve,
    duplicate_rate,
    duplicate_rate_micro,
    flip_rate_curve,
    mean_pass_at_k,
    mean_pass_at_k_unbiased,
    pass_at_k,
    pass_at_k_rates,
    pass_at_k_unbiased,
    shaped_reward,
    support_summary,
)

# --- pass@k -----------------------------------------------------------------------------


def test_pass_at_k_is_the_releases_any_of_the_first_k():
    # Issue 44: the release's summarize_rows counts a task solved at k when one of its first k
    # passes, in pass order, resolved it. Rewards 0, 0, 1: pass@1 0, pass@2 0, pass@3 1.
    assert [pass_at_k([False, False, True], k) for k in (1, 2, 3)] == [0.0, 0.0, 1.0]
    assert [pass_at_k([True, False, False], k) for k in (1, 2, 3)] == [1.0, 1.0, 1.0]
    # More passes than k: the first k count, the later ones do not.
    assert pass_at_k([False, False, False, True, True], 3) == 0.0
    assert pass_at_k([False, False, False, True, True], 4) == 1.0


def test_pass_at_k_unbiased_is_the_estimator_beside_it():
    # Issue 25's worked examples: 1 - C(n - c, k) / C(n, k) (Chen et al. 2021).
    assert pass_at_k_unbiased([False, True, False], 1) == pytest.approx(1 / 3)
    assert pass_at_k_unbiased([False, True, False], 2) == pytest.approx(2 / 3)
    assert pass_at_k_unbiased([False, False, True], 2) == pytest.approx(2 / 3)
    # n = 5, c = 2: 1 - C(3, 3) / C(5, 3) = 1 - 1/10.
    assert pass_at_k_unbiased([False, False, False, True, True], 3) == pytest.approx(0.9)


def test_the_unbiased_estimate_is_the_releases_figure_over_every_order():
    passes = [False, False, False, True, True]
    for k in (1, 2, 3, 4, 5):
        orders = set(itertools.permutations(passes))
        over_orders = sum(pass_at_k(list(o), k) for o in orders) / len(orders)
        assert pass_at_k_unbiased(passes, k) == pytest.approx(over_orders)
        assert pass_at_k_unbiased(passes, k) == pytest.approx(pass_at_k_unbiased(passes[::-1], k))
    # With exactly k passes the two are the same figure.
    for passes in itertools.product([False, True], repeat=3):
        assert pass_at_k(list(passes), 3) == pass_at_k_unbiased(list(passes), 3)


def test_unbiased_pass_at_1_is_the_mean_over_passes():
    rng = random.Random(25)
    for n in range(1, 9):
        passes = [rng.random() < 0.4 for _ in range(n)]
        assert pass_at_k_unbiased(passes, 1) == pytest.approx(sum(passes) / n)


def test_pass_at_k_edge_cases():
    for estimate in (pass_at_k, pass_at_k_unbiased):
        assert estimate([True] * 4, 1) == 1.0 and estimate([True] * 4, 4) == 1.0
        assert estimate([False] * 4, 1) == 0.0 and estimate([False] * 4, 4) == 0.0
        # k = n: whether any of the n passes solved it.
        assert estimate([False, False, True], 3) == 1.0
        assert isinstance(estimate([True], 1), float)
    # Fewer failures than k: every draw of k holds a solve.
    assert pass_at_k_unbiased([True, False, True, False], 3) == 1.0


def test_pass_at_k_is_none_with_fewer_than_k_passes():
    for estimate in (pass_at_k, pass_at_k_unbiased):
        assert estimate([True, True], 3) is None
        assert estimate([], 1) is None


def test_mean_pass_at_k_is_the_share_of_tasks_and_the_unbiased_mean_beside_it():
    tasks = [[False, True, False], [True, False, False]]
    assert mean_pass_at_k(tasks, 1) == pytest.approx(0.5)
    assert mean_pass_at_k(tasks, 2) == pytest.approx(1.0)
    # Issue 25: the unbiased estimates average to 1/3 and 2/3.
    assert mean_pass_at_k_unbiased(tasks, 1) == pytest.approx(1 / 3)
    assert mean_pass_at_k_unbiased(tasks, 2) == pytest.approx(2 / 3)
    assert mean_pass_at_k([], 1) is None and mean_pass_at_k_unbiased([], 1) is None
    # Summed exactly: three estimates of 0.1 average to 0.1 (floats give 0.10000000000000002,
    # which a baseline_max of 0.1 would refuse).
    one_in_ten = [True] + [False] * 9
    assert mean_pass_at_k_unbiased([one_in_ten] * 3, 1) == 0.1
    assert mean_pass_at_k_unbiased([[True, False, False], [False, True, True]], 1) == 0.5
    for mean in (mean_pass_at_k, mean_pass_at_k_unbiased):
        with pytest.raises(ValueError):
            mean([[True, True], [True]], 2)


def test_pass_at_k_rejects_k_below_one():
    with pytest.raises(ValueError):
        pass_at_k([True], 0)
    with pytest.raises(ValueError):
        pass_at_k_unbiased([True], 0)
    with pytest.raises(ValueError):
        pass_at_k_rates({"a": [True]}, [0, 1])


def test_pass_at_k_is_over_one_fixed_set_of_tasks():
    per_task = {"a": [False, True, True], "b": [False, False, False], "c": [True]}
    rates = pass_at_k_rates(per_task, [1, 2, 3])
    # Every k over a and b (the tasks with three passes); c, with one pass, apart.
    # a: first pass failed, second solved: pass@1 0, pass@2 and pass@3 1; b: 0 throughout.
    assert rates["rates"] == pytest.approx({1: 0.0, 2: 0.5, 3: 0.5})
    # Unbiased: a (2 of 3 solved) pass@1 2/3, pass@2 and pass@3 1.
    assert rates["unbiased"] == pytest.approx({1: 1 / 3, 2: 0.5, 3: 0.5})
    assert (rates["tasks"], rates["short"], rates["depth"]) == (2, 1, 3)
    # Nobody ran a fourth pass: the set is the tasks with one, pass@4 has no rate;
    # pass@1 is the share of a, b and c solved at their first pass (c only).
    deeper = pass_at_k_rates(per_task, [1, 4])
    assert deeper["rates"] == {1: pytest.approx(1 / 3), 4: None}
    assert deeper["unbiased"] == {1: pytest.approx(5 / 9), 4: None}
    assert (deeper["tasks"], deeper["short"], deeper["depth"]) == (3, 0, 1)
    # One pass per task: pass@1 over every task.
    single = pass_at_k_rates({"a": [True], "b": [False]}, [1, 2, 3])
    assert single == {
        "rates": {1: 0.5, 2: None, 3: None},
        "unbiased": {1: 0.5, 2: None, 3: None},
        "tasks": 2,
        "short": 0,
        "depth": 1,
    }
    assert pass_at_k_rates({}, [1])["rates"] == {1: None}


# --- Ask-F1 -----------------------------------------------------------------------------


def test_ask_score_counts_every_call_but_only_distinct_matches():
    score = ask_score(["b1", None, "b1", "b2"], blocker_count=3)
    assert score == AskScore(matched=2, calls=4, blockers=3)
    # Counting the duplicate as a match would give 3/4; ignoring it as a call, 2/3.
    assert score.precision == pytest.approx(0.5)
    assert score.recall == pytest.approx(2 / 3)
    assert score.f1 == pytest.approx(4 / 7)


def test_ask_score_zero_denominators_give_zero():
    empty = ask_score([], blocker_count=3)
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    no_blockers = AskScore(matched=0, calls=2, blockers=0)
    assert (no_blockers.precision, no_blockers.recall, no_blockers.f1) == (0.0, 0.0, 0.0)
    all_misses = ask_score([None, None], blocker_count=2)
    assert (all_misses.calls, all_misses.f1) == (2, 0.0)


def test_ask_score_rejects_impossible_counts():
    with pytest.raises(ValueError):
        ask_score(["b1", "b2"], blocker_count=1)
    with pytest.raises(ValueError):
        ask_score([], blocker_count=-1)


def test_ask_score_is_frozen():
    with pytest.raises(AttributeError):
        AskScore(matched=1, calls=1, blockers=1).matched = 2


def test_ask_score_micro_sums_counts_instead_of_averaging_ratios():
    runs = [AskScore(matched=1, calls=1, blockers=2), AskScore(matched=1, calls=4, blockers=4)]
    micro = ask_score_micro(runs)
    assert micro == AskScore(matched=2, calls=5, blockers=6)
    assert micro.precision == pytest.approx(0.4)  # macro: (1 + 0.25) / 2 = 0.625
    assert micro.recall == pytest.approx(1 / 3)  # macro: (0.5 + 0.25) / 2 = 0.375
    assert micro.f1 == pytest.approx(4 / 11)
    assert ask_score_micro(iter(runs)) == micro  # any iterable, consumed once
    assert ask_score_micro([]) == AskScore(matched=0, calls=0, blockers=0)


def test_duplicate_rate_counts_repeats_of_matched_blockers_only():
    # Third and fourth calls repeat b1; None calls are never duplicates.
    assert duplicate_rate(["b1", None, "b1", "b1", "b2"]) == pytest.approx(0.4)
    assert duplicate_rate([None, None]) == 0.0
    assert duplicate_rate([]) is None


def test_duplicate_rate_micro_sums_over_runs():
    runs = [["a", "a"], ["b", None, None, None]]
    assert duplicate_rate_micro(runs) == pytest.approx(1 / 6)  # macro would be 0.25
    # The same blocker in two runs is not a duplicate: each run starts afresh.
    assert duplicate_rate_micro([["a"], ["a"]]) == 0.0
    assert duplicate_rate_micro([[], []]) is None
    assert duplicate_rate_micro([]) is None


# --- RL reward --------------------------------------------------------------------------


def test_shaped_reward_penalises_irrelevant_duplicate_and_unknown_calls():
    reward = shaped_reward(["b1", None, "b1", "zzz", "b2"], blocker_ids=["b1", "b2", "b3"])
    assert reward.steps == pytest.approx((0.3, -0.1, -0.1, -0.1, 0.3))
    assert reward.terminal == pytest.approx(2 / 3)
    assert reward.discovered == ("b1", "b2")
    assert reward.total == 0.9666666667


def test_shaped_reward_discovered_in_first_matched_order_with_custom_weights():
    reward = shaped_reward(
        ["b3", "b1", "b3"], blocker_ids=["b1", "b2", "b3"], hit=1.0, miss=-0.5, coverage=3.0
    )
    assert reward.discovered == ("b3", "b1")
    assert reward.steps == (1.0, 1.0, -0.5)
    assert reward.terminal == pytest.approx(2.0)
    assert reward.total == pytest.approx(3.5)


def test_shaped_reward_total_is_rounded_and_no_blockers_means_no_terminal():
    # -0.1 * 3 + 0.3 is 5.55e-17 in floats; the total says 0.
    reward = shaped_reward(["x", "x", "x", "b1"], blocker_ids=["b1"], coverage=0.0)
    assert sum(reward.steps) != 0
    assert reward.total == 0.0
    nothing = shaped_reward(["b1", None], blocker_ids=[])
    assert nothing == Reward(steps=(-0.1, -0.1), terminal=0.0, discovered=())
    assert shaped_reward([], blocker_ids=["b1"]) == Reward(steps=(), terminal=0.0, discovered=())


# --- Support seeking --------------------------------------------------------------------


def flat(points):
    """pytest.approx compares flat sequences only; the point count still has to match."""
    return [value for point in points for value in point]


def rec(score, correct, with_support):
    return SupportRecord(score=score, correct=correct, correct_with_support=with_support)


# Gains (with support − without): A +1, B 0, C +1, D 0. B and C tie at 0.5.
TIED = [rec(0.5, True, True), rec(0.2, False, False), rec(0.8, False, True), rec(0.5, False, True)]


@pytest.mark.parametrize("score", [-0.01, 1.01, math.nan, math.inf])
def test_support_record_rejects_scores_outside_unit_interval(score):
    with pytest.raises(ValueError):
        rec(score, True, True)


def test_support_record_accepts_the_bounds():
    assert rec(0.0, True, False).score == 0.0
    assert rec(1, False, True).score == 1


def test_delta_burden_curve_lists_every_point():
    records = [
        rec(0.4, False, False),  # 0
        rec(0.9, False, True),  # +1
        rec(0.1, True, False),  # -1
        rec(0.6, True, True),  # 0
    ]
    assert flat(delta_burden_curve(records)) == pytest.approx(
        flat([(0.0, 0.0), (0.25, 0.25), (0.5, 0.25), (0.75, 0.25), (1.0, 0.0)])
    )


def test_delta_burden_curve_interpolates_inside_a_tie_group():
    # A first; then B and C in random order: 1 + 0.5 expected after one of them.
    assert flat(delta_burden_curve(TIED)) == pytest.approx(
        flat([(0.0, 0.0), (0.25, 0.25), (0.5, 0.375), (0.75, 0.5), (1.0, 0.5)])
    )


def test_empty_records_give_empty_curves_and_no_audbc():
    assert delta_burden_curve([]) == []
    assert ask_pr_curve([]) == []
    assert flip_rate_curve([]) == []
    assert audbc([]) is None


def test_audbc_is_the_area_under_the_curve_over_its_bounding_square():
    """The issue's case: a perfect scorer on 2 tasks, one helped by support. The curve runs
    (0, 0), (0.5, 0.5), (1, 0.5): area 0.125 + 0.25 = 0.375, square 1 × 0.5 -> 0.75 (the
    mean-of-points formula gave 0.667)."""
    perfect = [rec(0.9, False, True), rec(0.1, True, True)]
    assert audbc(perfect) == pytest.approx(0.75)
    assert delta_burden_curve(perfect) == [(0.0, 0.0), (0.5, 0.5), (1.0, 0.5)]


def test_audbc_stays_in_the_unit_interval_when_support_hurts_some_tasks():
    # Three helped (+1), then two hurt (-1), asked in that order: S(k) = 0 1 2 3 2 1.
    # Area: (0/2 + 1 + 2 + 3 + 2 + 1/2) / 25 = 8.5 / 25; square: 1 × 3/5 -> 8.5 / 15.
    # Dividing by the final gain (1/5) instead of the maximum gave 1.5.
    records = [rec(0.9 - i / 10, False, True) for i in range(3)]
    records += [rec(0.2, True, False), rec(0.1, True, False)]
    assert audbc(records) == pytest.approx(8.5 / 15)
    assert 0 <= audbc(records) <= 1


def test_audbc_with_the_hurt_task_asked_first_counts_only_the_curve_above_zero():
    """The audit's case: a task support hurts is asked first, then two it helps.
    S(k) = 0, -1, 0, 1 (N = 3): the curve runs (0, 0), (1/3, -1/3), (2/3, 0), (1, 1/3).
    Above 0 only on the last segment: a triangle 1/3 × 1/3 / 2 = 1/18; the square is
    1 × 1/3, so AUDBC = (1/18) / (1/3) = 1/6. The signed area, -1/18 - 1/18 + 1/18 = -1/18,
    gave -1/6 = -0.167. Asking the hurt task last instead: S = 0, 1, 2, 1, area
    (0 + 1)/2 + (1 + 2)/2 + (2 + 1)/2 = 3.5 ninths, square 2/3 -> 3.5 / 6 = 7/12."""
    hurt_first = [rec(0.9, True, False), rec(0.5, False, True), rec(0.1, False, True)]
    assert flat(delta_burden_curve(hurt_first)) == pytest.approx(
        flat([(0.0, 0.0), (1 / 3, -1 / 3), (2 / 3, 0.0), (1.0, 1 / 3)])
    )
    assert audbc(hurt_first) == pytest.approx(1 / 6)
    hurt_last = [rec(0.9, False, True), rec(0.5, False, True), rec(0.1, True, False)]
    assert audbc(hurt_last) == pytest.approx(7 / 12)


def test_audbc_clips_a_segment_that_crosses_zero_where_it_crosses():
    """A hurt task first (0.9), then a tie of three (0.5): two helped, one unchanged. The
    tie's expected sums step by 2/3: S = 0, -1, -1/3, 1/3, 1 (N = 4), so Δ = 0, -1/4, -1/12,
    1/12, 1/4 at burden 0, 1/4, 1/2, 3/4, 1. The third segment crosses 0 at its middle
    (burden 5/8): its part above is a triangle 1/8 × 1/12 / 2 = 1/192; the last segment a
    trapezoid 1/4 × (1/12 + 1/4) / 2 = 8/192. Area 9/192 = 3/64 over the square 1 × 1/4:
    AUDBC = 3/16. (The signed area, -1/32 - 1/24 + 0 + 1/24 = -1/32, gave -1/8.)"""
    records = [rec(0.9, True, False)]
    records += [rec(0.5, False, True), rec(0.5, False, True), rec(0.5, True, True)]
    assert flat(delta_burden_curve(records)) == pytest.approx(
        flat([(0.0, 0.0), (0.25, -0.25), (0.5, -1 / 12), (0.75, 1 / 12), (1.0, 0.25)])
    )
    assert audbc(records) == pytest.approx(3 / 16)


def test_audbc_of_a_tie_is_the_mean_of_its_orderings():
    # Orders A,B,C,D and A,C,B,D: S = 0 1 1 2 2 and 0 1 2 2 2 -> 5/8 and 6/8.
    assert audbc(TIED) == pytest.approx(0.6875)


def test_audbc_is_none_when_the_curve_never_rises():
    harmful = [rec(0.9, True, False), rec(0.1, True, True)]
    assert audbc(harmful) is None
    assert audbc([rec(0.3, True, True)]) is None
    # Helped then hurt: the curve rises to 1/2 and comes back; the area counts.
    assert audbc([rec(0.9, False, True), rec(0.1, True, False)]) == pytest.approx(0.5)


def test_audbc_of_a_constant_scorer_is_exactly_one_half():
    records = [rec(0.7, c, s) for c, s in [(False, True)] * 3 + [(True, False), (True, True)]]
    records += [rec(0.7, False, False), rec(0.7, False, True)]
    assert audbc(records) == 0.5
    rng = random.Random(7)
    many = [rec(0.5, rng.random() < 0.3, rng.random() < 0.6) for _ in range(301)]
    assert audbc(many) == 0.5


def test_audbc_rewards_an_oracle_and_punishes_an_anti_oracle():
    flippers = [(False, True), (False, True)]
    others = [(True, True), (False, False)]
    oracle = [rec(0.9, *o) for o in flippers] + [rec(0.1, *o) for o in others]
    anti = [rec(0.1, *o) for o in flippers] + [rec(0.9, *o) for o in others]
    # Oracle: S(k) = 0, 1, 2, 2, 2 -> (7 - 1) / (4 * 2); anti: 0, 0, 0, 1, 2 -> (3 - 1) / 8.
    assert audbc(oracle) == pytest.approx(0.75)
    assert audbc(anti) == pytest.approx(0.25)
    assert audbc(oracle) > 0.5 > audbc(anti)


def test_audbc_of_a_random_scorer_is_near_one_half():
    rng = random.Random(20240601)
    records = [rec(rng.random(), rng.random() < 0.3, rng.random() < 0.5) for _ in range(2000)]
    assert audbc(records) == pytest.approx(0.5, abs=0.05)


def test_ask_pr_curve_treats_originally_wrong_as_positives():
    # Wrong originally: A (0.8), C (0.5, tied with B), D (0.2); B was right.
    assert flat(ask_pr_curve(TIED)) == pytest.approx(
        flat([(0.25, 1.0, 1 / 3), (0.5, 0.75, 0.5), (0.75, 2 / 3, 2 / 3), (1.0, 0.75, 1.0)])
    )


def test_ask_pr_recall_is_zero_when_nothing_was_wrong():
    assert flat(ask_pr_curve([rec(0.9, True, True), rec(0.1, True, False)])) == pytest.approx(
        flat([(0.5, 0.0, 0.0), (1.0, 0.0, 0.0)])
    )


def test_flip_rate_curve_is_gain_per_asked_instance():
    assert flat(flip_rate_curve(TIED)) == pytest.approx(
        flat([(0.25, 1.0), (0.5, 0.75), (0.75, 2 / 3), (1.0, 0.5)])
    )
    # A harmed instance asked first gives a negative rate.
    assert flat(flip_rate_curve([rec(0.9, True, False), rec(0.1, False, True)])) == pytest.approx(
        flat([(0.5, -1.0), (1.0, 0.0)])
    )


def test_support_summary_at_the_threshold():
    summary = support_summary(TIED)  # asks A, B and C (score >= 0.5)
    assert summary == pytest.approx(
        {
            "n": 4,
            "accuracy": 0.25,
            "accuracy_with_support": 0.75,
            "max_gain": 0.5,
            "audbc": 0.6875,
            "burden": 0.75,
            "delta": 0.5,
            "p_ask": 2 / 3,
            "r_ask": 2 / 3,
            "flip_rate": 2 / 3,
        }
    )
    strict = support_summary(TIED, threshold=0.6)  # asks A only
    assert (strict["burden"], strict["delta"], strict["p_ask"]) == pytest.approx((0.25, 0.25, 1))
    assert strict["r_ask"] == pytest.approx(1 / 3)
    assert strict["flip_rate"] == pytest.approx(1.0)


def test_support_summary_undefined_values_are_none():
    nobody_asked = support_summary(TIED, threshold=0.9)
    assert (nobody_asked["burden"], nobody_asked["delta"], nobody_asked["r_ask"]) == (0, 0, 0)
    assert nobody_asked["p_ask"] is None
    assert nobody_asked["flip_rate"] is None
    all_right = support_summary([rec(0.9, True, True)])
    assert all_right["r_ask"] is None
    assert all_right["audbc"] is None
    assert support_summary([]) == {
        "n": 0,
        "accuracy": None,
        "accuracy_with_support": None,
        "max_gain": None,
        "audbc": None,
        "burden": None,
        "delta": None,
        "p_ask": None,
        "r_ask": None,
        "flip_rate": None,
    }
