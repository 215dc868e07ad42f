"""Benchmark metrics as pure functions: pass@k, Ask-F1, the RL reward and support seeking.

No Django here on purpose: the same numbers must come out of imported run results, the
dashboard and offline scripts, and pure functions are what the tests can pin exactly.

Definitions follow ``design/PRODUCT.md`` ("Metrics"): Ask-F1 as the HiL-Bench release
computes it; pass@k as the release defines it ("resolved in any of the first k passes",
``run_hil_bench.py`` ``summarize_rows``), with the unbiased estimator of Chen et al. 2021 beside
it under its own name; the shaped reward from the HiL-Bench paper, and the Delta-Burden
Curve, AUDBC, P_ask/R_ask and flip rate from "I Need Help! Evaluating LLM's Ability to
Ask for Users' Support".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import groupby, pairwise
from math import comb

# --- pass@k ---------------------------------------------------------------------------


def pass_at_k(passes: Sequence[bool], k: int) -> float | None:
    """pass@k as the HiL-Bench release defines it (``run_hil_bench.py`` ``summarize_rows``):
    1.0 when any of the first ``k`` passes, in pass order, resolved the task, else 0.0. With
    rewards 0, 0, 1 pass@1 and pass@2 are 0 and pass@3 is 1.

    ``None`` when fewer than ``k`` passes ran: the release leaves such a task out of pass@k
    rather than count runs that never happened as failures.
    """
    exact = _pass_at_k_release(passes, k)
    return None if exact is None else float(exact)


def _pass_at_k_release(passes: Sequence[bool], k: int) -> Fraction | None:
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if len(passes) < k:
        return None
    return Fraction(int(any(bool(p) for p in passes[:k])))


def pass_at_k_unbiased(passes: Sequence[bool], k: int) -> float | None:
    """The unbiased estimate of pass@k from ``n`` passes of which ``c`` solved the task:
    ``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021). It is the release's pass@k averaged over
    every order the ``n`` passes could have run in, so it uses all of them and not their order:
    pass@1 is the share of passes that solved the task, and with exactly ``k`` passes it equals
    the release's pass@k. With rewards 0, 0, 1: pass@1 1/3, pass@2 2/3.

    ``None`` when fewer than ``k`` passes ran.
    """
    exact = _pass_at_k_unbiased(passes, k)
    return None if exact is None else float(exact)


def _pass_at_k_unbiased(passes: Sequence[bool], k: int) -> Fraction | None:
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    n = len(passes)
    if n < k:
        return None
    failed = n - sum(bool(p) for p in passes)
    return 1 - Fraction(comb(failed, k), comb(n, k))


def _mean(estimate, pass_lists: Iterable[Sequence[bool]], k: int) -> float | None:
    estimates = [estimate(passes, k) for passes in pass_lists]
    if any(e is None for e in estimates):
        raise ValueError(f"every pass list needs at least {k} passes")
    return float(sum(estimates) / len(estimates)) if estimates else None


def mean_pass_at_k(pass_lists: Iterable[Sequence[bool]], k: int) -> float | None:
    """The release's pass@k over several tasks: the share of them resolved in one of their
    first ``k`` passes (``summarize_rows``' ``pass_at_k``), summed exactly.

    ``None`` over no list; every list needs at least ``k`` passes (callers pick them).
    """
    return _mean(_pass_at_k_release, pass_lists, k)


def mean_pass_at_k_unbiased(pass_lists: Iterable[Sequence[bool]], k: int) -> float | None:
    """The mean of the per-list unbiased pass@k estimates (models in the pass-rate gate,
    tasks in the leaderboard's unbiased columns), summed exactly so a threshold is not missed
    by rounding. ``None`` over no list; every list needs at least ``k`` passes."""
    return _mean(_pass_at_k_unbiased, pass_lists, k)


def pass_at_k_rates(per_task: Mapping[str, Sequence[bool]], ks: Sequence[int]) -> dict:
    """pass@k for every k in ``ks`` over one fixed set of tasks, so pass@1 and pass@3
    describe the same tasks: those with ``depth`` passes, where ``depth`` is the largest k of
    ``ks`` that any task reached (the release's ``num_passes``, whose ``summarize_rows`` keeps
    only the tasks with every pass). Tasks with fewer passes are counted apart (``short``),
    never mixed in; a k beyond ``depth`` has no rate. Each list must be in pass order.

    ``{"rates": {k: the release's pass@k}, "unbiased": {k: the mean unbiased estimate},
    "tasks": n counted, "short": n left out, "depth": d}``; a rate over no task is ``None``,
    not 0%.
    """
    if not ks or min(ks) < 1:
        raise ValueError(f"every k must be at least 1, not {list(ks)}")
    reached = max((len(passes) for passes in per_task.values()), default=0)
    depth = max((k for k in ks if k <= reached), default=0)
    counted = [passes for passes in per_task.values() if depth and len(passes) >= depth]
    return {
        "rates": {k: mean_pass_at_k(counted, k) if k <= depth else None for k in ks},
        "unbiased": {k: mean_pass_at_k_unbiased(counted, k) if k <= depth else None for k in ks},
        "tasks": len(counted),
        "short": len(per_task) - len(counted),
        "depth": depth,
    }


# --- Ask-F1 -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AskScore:
    """Counts rather than ratios, so runs can be summed for the micro average."""

    matched: int
    calls: int
    blockers: int

    @property
    def precision(self) -> float:
        """Distinct blockers matched per ``ask_human`` call (0.0 when nothing was asked)."""
        return self.matched / self.calls if self.calls else 0.0

    @property
    def recall(self) -> float:
        """Share of the task's blockers found (0.0 for a task without blockers)."""
        return self.matched / self.blockers if self.blockers else 0.0

    @property
    def f1(self) -> float:
        precision, recall = self.precision, self.recall
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)


def ask_score(calls: Sequence[str | None], *, blocker_count: int) -> AskScore:
    """Score one run's ``ask_human`` calls, in order.

    Each item is the blocker id the judge matched, or ``None`` for an irrelevant,
    rejected, capped or failed call. As in the release, every call counts in the
    precision denominator (so asking the same thing twice costs precision) while only
    distinct blockers count as matched.
    """
    if blocker_count < 0:
        raise ValueError(f"blocker_count cannot be negative, not {blocker_count}")
    matched = len({call for call in calls if call is not None})
    if matched > blocker_count:
        raise ValueError(f"{matched} distinct blockers matched but the task has {blocker_count}")
    return AskScore(matched=matched, calls=len(calls), blockers=blocker_count)


def ask_score_micro(scores: Iterable[AskScore]) -> AskScore:
    """Micro average: sum the counts over all task x pass runs (the headline figure).

    A macro mean of per-run F1 would let a run with one lucky call weigh as much as a
    run with twenty.
    """
    matched = calls = blockers = 0
    for score in scores:
        matched += score.matched
        calls += score.calls
        blockers += score.blockers
    return AskScore(matched=matched, calls=calls, blockers=blockers)


def _duplicates(calls: Sequence[str | None]) -> int:
    seen: set[str] = set()
    duplicates = 0
    for call in calls:
        if call is None:
            continue
        if call in seen:
            duplicates += 1
        seen.add(call)
    return duplicates


def duplicate_rate(calls: Sequence[str | None]) -> float | None:
    """Share of a run's calls that re-asked a blocker an earlier call already resolved.

    Shows how much of a low precision is repetition rather than irrelevance.
    """
    if not calls:
        return None
    return _duplicates(calls) / len(calls)


def duplicate_rate_micro(runs: Iterable[Sequence[str | None]]) -> float | None:
    """Duplicates over calls, summed across runs (``None`` when no run asked anything)."""
    duplicates = calls = 0
    for run in runs:
        duplicates += _duplicates(run)
        calls += len(run)
    return duplicates / calls if calls else None


# --- RL reward --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reward:
    """The per-call rewards as well as the total, so a trainer can see where it came from."""

    steps: tuple[float, ...]
    terminal: float
    discovered: tuple[str, ...]

    @property
    def total(self) -> float:
        """Rounded to 10 decimals: 0.3 - 0.1 + ... otherwise prints as 0.19999999999999998."""
        return round(sum(self.steps) + self.terminal, 10)


def shaped_reward(
    calls: Sequence[str | None],
    *,
    blocker_ids: Sequence[str],
    hit: float = 0.3,
    miss: float = -0.1,
    coverage: float = 1.0,
) -> Reward:
    """The HiL-Bench paper's shaped reward for one run's ``ask_human`` calls.

    A call earns ``hit`` only the first time it resolves a registered blocker; an
    irrelevant call (``None``), a repeat, or an id outside ``blocker_ids`` earns ``miss``,
    so spamming questions never pays. The terminal term rewards coverage of the blockers.
    """
    registered = set(blocker_ids)
    discovered: list[str] = []
    steps: list[float] = []
    for call in calls:
        if call is not None and call in registered and call not in discovered:
            discovered.append(call)
            steps.append(hit)
        else:
            steps.append(miss)
    terminal = coverage * len(discovered) / len(registered) if registered else 0.0
    return Reward(steps=tuple(steps), terminal=terminal, discovered=tuple(discovered))


# --- Support seeking ("I Need Help!") ---------------------------------------------------


@dataclass(frozen=True)
class SupportRecord:
    """One instance: the model's need-for-help score and whether it was right without and
    with the user's support."""

    score: float
    correct: bool
    correct_with_support: bool

    def __post_init__(self) -> None:
        # ``not 0 <= score <= 1`` is also true for NaN, which would otherwise sort anywhere.
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must be in [0, 1], not {self.score}")


def _gain(record: SupportRecord) -> int:
    return int(record.correct_with_support) - int(record.correct)


def _originally_wrong(record: SupportRecord) -> int:
    return 0 if record.correct else 1


def _expected_cumulative(
    records: Sequence[SupportRecord], value: Callable[[SupportRecord], int]
) -> list[Fraction]:
    """Expected sum of ``value`` over the first k instances asked, for k = 0..N.

    Instances are asked by descending score; within a group of equal scores the order is
    random, so inside a group the expected sum is the linear interpolation between the
    exact sums at the group's boundaries. This is what makes a constant scorer land
    exactly on the random baseline. Fractions keep that exact (0.5, not 0.4999...).
    """
    ordered = sorted(records, key=lambda record: record.score, reverse=True)
    sums = [Fraction(0)]
    for _, group in groupby(ordered, key=lambda record: record.score):
        members = list(group)
        start = sums[-1]
        total = sum(value(record) for record in members)
        size = len(members)
        sums.extend(start + Fraction(total * j, size) for j in range(1, size + 1))
    return sums


def delta_burden_curve(records: Sequence[SupportRecord]) -> list[tuple[float, float]]:
    """The Delta-Burden Curve: (burden k/N, Δ(k)) for asking the top k, k = 0..N.

    Δ(k) is the accuracy gained by giving support to the k asked instances, i.e. their
    (correct_with_support − correct) summed, over N.
    """
    n = len(records)
    if not n:
        return []
    sums = _expected_cumulative(records, _gain)
    return [(k / n, float(sums[k] / n)) for k in range(n + 1)]


def _clipped_area(sums: list[Fraction]) -> Fraction:
    """N² × the area between the points (k, S(k)) and the x-axis where the curve is above it:
    a trapezoid where a segment is above, its positive triangle where it crosses (the
    segment is linear, so it crosses at S(k) / (S(k) − S(k+1)) of its width), nothing
    where it is below."""
    area = Fraction(0)
    for left, right in pairwise(sums):
        if left >= 0 and right >= 0:
            area += (left + right) / 2
        elif left > 0 or right > 0:
            high, low = max(left, right), min(left, right)
            area += high * high / (2 * (high - low))
    return area


def audbc(records: Sequence[SupportRecord]) -> float | None:
    """Area Under the Delta-Burden Curve, normalised to [0, 1] as "I Need Help!" says: the
    area under (burden, Δ) for burden 0..1 divided by the largest square it fits in —
    burden 1 by the curve's maximum Δ. Between its points the curve is linear (inside a tie
    group it is the expected curve, also linear), so the area is exact.

    Support can hurt (right without it, wrong with it), and when such tasks are asked first
    the curve dips below 0 before it rises; the paper, whose curves stay above 0, does not
    say what to do there. Here the area is that of the part of the square [0, 1] × [0, peak]
    under the curve: stretches below 0 add nothing rather than a negative area. So AUDBC stays
    in [0, 1] (a signed area over the same square gave −0.167 with the hurt task first), is
    the share of the square the curve covers — the paper's picture —, never rises when the
    curve is pushed down anywhere for the same peak, and leaves every curve that stays at or
    above 0 exactly as before: a random (or constant) scorer still gives 0.5 whenever
    support helps on the whole, a perfect scorer on one helped and one unhelped task 0.75.
    Asking the hurt tasks early still costs: the curve starts rising later. Normalising over
    [lowest Δ, peak] instead was rejected: a deeper dip would enlarge the box and could
    raise the score.

    ``None`` when there are no records or the curve never rises above 0 (support helps no
    prefix of the tasks), where the normalisation is meaningless.
    """
    curve = delta_burden_curve(records)
    if not curve:
        return None
    n = len(records)
    sums = _expected_cumulative(records, _gain)
    peak = max(sums)
    if peak <= 0:
        return None
    # In units of 1/N both ways: the area is _clipped_area / N², the square 1 × peak / N.
    return float(_clipped_area(sums) / (n * peak))


def ask_pr_curve(records: Sequence[SupportRecord]) -> list[tuple[float, float, float]]:
    """(burden k/N, P_ask, R_ask) for k = 1..N, originally-wrong instances as positives.

    Separates knowing *when* to ask from using the answer well (the flip rate).
    """
    n = len(records)
    wrong = sum(_originally_wrong(record) for record in records)
    sums = _expected_cumulative(records, _originally_wrong)
    return [
        (k / n, float(sums[k] / k), float(sums[k] / wrong) if wrong else 0.0)
        for k in range(1, n + 1)
    ]


def flip_rate_curve(records: Sequence[SupportRecord]) -> list[tuple[float, float]]:
    """(burden k/N, FR(k)) for k = 1..N: the gain per asked instance, i.e. how well the
    model uses the support it asked for."""
    n = len(records)
    sums = _expected_cumulative(records, _gain)
    return [(k / n, float(sums[k] / k)) for k in range(1, n + 1)]


def support_summary(records: Sequence[SupportRecord], *, threshold: float = 0.5) -> dict:
    """The headline support-seeking figures, plus the operating point at ``threshold``.

    The model asks when its score is >= ``threshold``; values that would divide by zero
    are ``None`` rather than a misleading 0.
    """
    n = len(records)
    correct = sum(record.correct for record in records)
    with_support = sum(record.correct_with_support for record in records)
    wrong = n - correct
    asked = [record for record in records if record.score >= threshold]
    k = len(asked)
    asked_gain = sum(_gain(record) for record in asked)
    asked_wrong = sum(_originally_wrong(record) for record in asked)
    return {
        "n": n,
        "accuracy": correct / n if n else None,
        "accuracy_with_support": with_support / n if n else None,
        "max_gain": (with_support - correct) / n if n else None,
        "audbc": audbc(records),
        "burden": k / n if n else None,
        "delta": asked_gain / n if n else None,
        "p_ask": asked_wrong / k if k else None,
        "r_ask": asked_wrong / wrong if wrong else None,
        "flip_rate": asked_gain / k if k else None,
    }


__all__ = [
    "AskScore",
    "Reward",
    "SupportRecord",
    "ask_pr_curve",
    "ask_score",
    "ask_score_micro",
    "audbc",
    "delta_burden_curve",
    "duplicate_rate",
    "duplicate_rate_micro",
    "flip_rate_curve",
    "mean_pass_at_k",
    "mean_pass_at_k_unbiased",
    "pass_at_k",
    "pass_at_k_rates",
    "pass_at_k_unbiased",
    "shaped_reward",
    "support_summary",
]
