"""Choosing the embedded judge's thresholds: the lowest logit at which precision reaches a
target, per domain or for both domains together. Used by training (on out-of-fold logits)
and by a project's calibration (on its settled held-out questions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# Each domain's floor on the smoothed out-of-fold curve. SWE's is above the per-domain target
# (0.95): on a repository the judge was not fitted on, SWE precision fell about a point below
# its out-of-fold figure (other tasks of one repository ask about the same code), SQL's did
# not (docs/quality.md, "Leave one group out").
DOMAIN_PRECISION_FLOOR = {"sql": 0.95, "swe": 0.965}


@dataclass(frozen=True)
class Scored:
    domain: str
    label: str | None
    best: str | None
    logit: float
    task: str = ""


def choose_threshold(scored: list[Scored], target: float) -> float:
    """The lowest logit at which precision on ``scored`` reaches ``target``."""
    import numpy as np

    candidates = sorted(
        {s.logit for s in scored if s.best is not None and np.isfinite(s.logit)}, reverse=True
    )
    if not candidates:
        return float("inf")
    matched = sorted(
        ((s.logit, s.best == s.label) for s in scored if s.best is not None), reverse=True
    )
    best = candidates[0] + 1e-6
    correct = 0
    for predicted, (logit, right) in enumerate(matched, start=1):
        correct += right
        if correct / predicted >= target:
            best = logit
    return float(best)


def platt(scored: list[Scored]) -> tuple[float, float]:
    """``(a, b)`` of P(the answer is right | logit) = sigmoid(a * logit + b), fitted (Newton)
    on the answered items of ``scored``."""
    import numpy as np

    answered = [s for s in scored if s.best is not None and np.isfinite(s.logit)]
    x = np.array([s.logit for s in answered])
    y = np.array([1.0 if s.best == s.label else 0.0 for s in answered])
    a, b = 1.0, 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(a * x + b)))
        gradient = np.array([((p - y) * x).sum(), (p - y).sum()])
        w = p * (1 - p)
        hessian = np.array([[(w * x * x).sum(), (w * x).sum()], [(w * x).sum(), w.sum()]])
        step = np.linalg.solve(hessian + 1e-6 * np.eye(2), gradient)
        a, b = a - step[0], b - step[1]
        if float(np.abs(step).max()) < 1e-9:
            break
    return float(a), float(b)


def _expected_curve(scored: list[Scored]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per answered item, by descending logit: the logit, how many items score at least it,
    and how many of those are expected right (each item's Platt probability: a smooth
    precision curve, where the items' own right/wrong would jump with every draw)."""
    import numpy as np

    answered = sorted(
        (s.logit for s in scored if s.best is not None and np.isfinite(s.logit)), reverse=True
    )
    if not answered:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    a, b = platt(scored)
    logits = np.array(answered)
    right = np.cumsum(1.0 / (1.0 + np.exp(-(a * logits + b))))
    return logits, np.arange(1, len(logits) + 1, dtype=float), right


CURVE_POINTS = 600  # candidate thresholds per domain: every item's logit up to this many


def _thinned(logits, predicted, right):
    """At most ``CURVE_POINTS`` evenly spaced points of a curve (its first and last kept):
    the pair search is quadratic in them, and a finer step moves no threshold by much."""
    import numpy as np

    if len(logits) <= CURVE_POINTS:
        return logits, predicted, right
    keep = np.unique(np.linspace(0, len(logits) - 1, CURVE_POINTS).round().astype(int))
    return logits[keep], predicted[keep], right[keep]


def choose_thresholds(
    scored: list[Scored], target: float, floor: float | dict[str, float] = DOMAIN_PRECISION_FLOOR
) -> dict[str, float]:
    """Per-domain thresholds chosen together on ``scored`` (out-of-fold logits): of the pairs
    whose pooled expected precision is at least ``target`` and each domain's at least its
    ``floor`` (one for both, or per domain), the one expected to answer the most items right.
    Precision is expected from a Platt fit per domain (``_expected_curve``): choosing on the
    raw right/wrong sequence moved the thresholds (and recall by 4 points) with every seed.
    Where no pair qualifies (one domain, or none), each domain its own ``choose_threshold``."""
    import numpy as np

    domains = sorted({s.domain for s in scored})
    if len(domains) != 2:
        return {d: choose_threshold([s for s in scored if s.domain == d], target) for d in domains}
    (l1, p1, c1), (l2, p2, c2) = (
        _thinned(*_expected_curve([s for s in scored if s.domain == d])) for d in domains
    )
    # Each domain may also answer nothing (threshold above its best logit).
    l1, p1, c1 = np.r_[np.inf, l1], np.r_[0, p1], np.r_[0, c1]
    l2, p2, c2 = np.r_[np.inf, l2], np.r_[0, p2], np.r_[0, c2]
    floors = floor if isinstance(floor, dict) else dict.fromkeys(domains, floor)
    ok1 = (p1 == 0) | (c1 >= floors.get(domains[0], 0.0) * p1)
    ok2 = (p2 == 0) | (c2 >= floors.get(domains[1], 0.0) * p2)
    predicted = p1[:, None] + p2[None, :]
    correct = c1[:, None] + c2[None, :]
    allowed = ok1[:, None] & ok2[None, :] & (correct >= target * np.maximum(predicted, 1))
    if not allowed.any():
        return {d: choose_threshold([s for s in scored if s.domain == d], target) for d in domains}
    gain = np.where(allowed, correct, -1)
    i, j = np.unravel_index(int(np.argmax(gain)), gain.shape)
    pick = {domains[0]: l1[i], domains[1]: l2[j]}
    best = {
        d: max((s.logit for s in scored if s.domain == d and s.best), default=0.0) for d in domains
    }
    return {d: float(v if np.isfinite(v) else best[d] + 1e-6) for d, v in pick.items()}
