"""The pass-rate selection's decision for one task: which models count, and whether the
project's thresholds keep the task. No queries: ``selectors.task_selections`` reads the
evidence (each leaderboard row's latest passes on the current revision) and calls ``decide``.

Models are counted by identity, not by leaderboard row: a run of a registered endpoint is the
model the endpoint serves (``ModelEndpoint.model``), an imported run the model named at import,
each normalised by ``models.model_identity`` — so two endpoints (or runs, or imports) of one
served model are one model, their passes pooled. A run with no recorded identity (a generic or
empty name, a stand-in, a run whose endpoint is gone) never counts alone: all of them together
are at most one more model, and only beside an identified one. A policy asks for two distinct
models unless a lead lowered it, with a reason (``models_needed``).

Which pass@k the gate reads: the **unbiased** estimate (``metrics.pass_at_k_unbiased``) over
all of a model's passes, not the release's "any of the first k" (the leaderboard's pass@k).
The unbiased estimate is the release's pass@k averaged over every order the passes could have
run in, so with exactly k passes the two are equal; with more, it uses every pass and not
their order, so a fourth run can change a decision and which run came first cannot. The
verdict, the selection page and the project page name it "unbiased pass@k".
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from . import metrics
from .models import EvaluationRun, Mode, SelectionPolicy, model_identity

if TYPE_CHECKING:
    from .selectors import PassRow

DEFAULT_MODELS_NEEDED = 2


def run_identity(*, source: str, model_name: str, served_model: str | None) -> str | None:
    """The model a run is, for counting: its endpoint's served model, or for an imported run
    the name given at import; ``None`` when nothing recorded says which model it was."""
    if served_model is not None:
        return model_identity(served_model)
    if source == EvaluationRun.Source.IMPORTED:
        return model_identity(model_name)
    return None  # a built-in or Harbor run whose endpoint was removed


def models_needed(policy: SelectionPolicy) -> int:
    """Distinct models the policy asks for: below two only when a lead gave the reason."""
    if policy.min_models >= DEFAULT_MODELS_NEEDED or policy.min_models_reason.strip():
        return max(1, policy.min_models)
    return DEFAULT_MODELS_NEEDED


def lowering(policy: SelectionPolicy) -> dict | None:
    """Who lowered the models needed below two, when and why; ``None`` when nobody did."""
    if models_needed(policy) >= DEFAULT_MODELS_NEEDED:
        return None
    by = policy.min_models_lowered_by
    at = policy.min_models_lowered_at
    return {
        "models_needed": policy.min_models,
        "reason": policy.min_models_reason.strip(),
        "by": by.get_username() if by else None,
        "at": at.isoformat() if at else None,
    }


def _pass_at_k(passes: list[PassRow], mode: str, k: int) -> float | None:
    """The gate's figure for one model and mode: the unbiased pass@k over all its passes."""
    return metrics.pass_at_k_unbiased([r.resolved for r in passes if r.mode == mode], k)


def _runs(passes: list[PassRow]) -> list[int]:
    return sorted({r.run_id for r in passes})


def _evidence(rows: list[PassRow], k: int) -> tuple[list[dict], list[dict]]:
    """Per leaderboard row (and the identity of its runs), and per identity (the runs of no
    recorded identity pooled as one, last)."""
    by_name: dict[tuple, list[PassRow]] = defaultdict(list)
    by_identity: dict[str | None, list[PassRow]] = defaultdict(list)
    for row in rows:
        by_name[(row.model, row.identity or "")].append(row)
        by_identity[row.identity].append(row)
    models = []
    for (name, identity), passes in sorted(by_name.items()):
        entry = {"model": name, "identity": identity or None, "runs": _runs(passes)}
        for mode in (Mode.FULL_INFO, Mode.BASELINE):
            entry[mode] = _pass_at_k(passes, mode, k)
        entry["complete"] = entry[Mode.FULL_INFO] is not None and entry[Mode.BASELINE] is not None
        models.append(entry)
    identities = []
    for identity in sorted(by_identity, key=lambda i: (i is None, i or "")):
        passes = by_identity[identity]
        entry = {
            "identity": identity,
            "models": sorted({r.model for r in passes}),
            "runs": _runs(passes),
            Mode.FULL_INFO: _pass_at_k(passes, Mode.FULL_INFO, k),
            Mode.BASELINE: _pass_at_k(passes, Mode.BASELINE, k),
            "counted": False,
            "passes": {mode: [r.resolved for r in passes if r.mode == mode] for mode in Mode},
        }
        entry["complete"] = entry[Mode.FULL_INFO] is not None and entry[Mode.BASELINE] is not None
        identities.append(entry)
    return models, identities


def _named(groups: list[dict]) -> str:
    names = []
    for group in groups:
        runs = group["runs"]
        runs_text = f"run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))}"
        if group["identity"]:
            names.append(f"{group['identity']} ({runs_text})")
        else:
            names.append(f"no recorded identity ({', '.join(group['models'])}; {runs_text})")
    return ", ".join(names)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def decide(policy: SelectionPolicy, current: int | None, rows: list[PassRow]) -> dict:
    """keep / drop / undecided for one task from its baseline and full_info passes on the
    current revision (``rows``, each with its run's ``identity``), with the evidence.

    Each counted model contributes its unbiased pass@k in each mode (over all its passes, the
    leaderboard's "unbiased pass@k" column); the task is kept when the mean over the counted
    models is ≥ full_info_min for full_info and ≤ baseline_max for baseline."""
    k, needed = policy.k, models_needed(policy)
    models, identities = _evidence(rows, k)
    identified = [g for g in identities if g["complete"] and g["identity"]]
    unknown = [g for g in identities if g["complete"] and not g["identity"]]
    counted = identified + (unknown if identified else [])
    for group in counted:
        group["counted"] = True
    lowered = lowering(policy)
    result = {
        "k": k,
        "full_info_min": policy.full_info_min,
        "baseline_max": policy.baseline_max,
        "min_models": needed,
        "lowered": lowered,
        "revision_id": current,
        "models": models,
        "identities": [{key: v for key, v in g.items() if key != "passes"} for g in identities],
        "decided_by": [],
    }
    note = (
        f" (models needed lowered to {needed} by a lead: “{lowered['reason']}”)" if lowered else ""
    )
    if len(counted) < needed:
        reason = (
            f"{_plural(len(counted), 'distinct model')} with {k} passes in both baseline and "
            f"full_info on the current revision{': ' + _named(counted) if counted else ''}; "
            f"{_plural(needed, 'distinct model')} needed"
        )
        if needed >= DEFAULT_MODELS_NEEDED:
            reason += " (runs of one served model count as one)"
        if unknown and not identified:
            reason += (
                f"; a model with no recorded identity counts only beside an identified one "
                f"({_named(unknown)})"
            )
        return {**result, "decision": "undecided", "reason": reason + note}
    # The leaderboard's unbiased columns' function: a mean of unbiased estimates, over models.
    full_info = metrics.mean_pass_at_k_unbiased([g["passes"][Mode.FULL_INFO] for g in counted], k)
    baseline = metrics.mean_pass_at_k_unbiased([g["passes"][Mode.BASELINE] for g in counted], k)
    result.update(
        full_info_pass=full_info,
        baseline_pass=baseline,
        decided_by=[
            {"identity": g["identity"], "models": g["models"], "runs": g["runs"]} for g in counted
        ],
    )
    decided = f"{_plural(len(counted), 'model')}: {_named(counted)}"
    reasons = []
    if full_info < policy.full_info_min:
        reasons.append(
            f"full_info unbiased pass@{k} {full_info:.2f} < {policy.full_info_min:.2f}: "
            "models fail even with the resolutions"
        )
    if baseline > policy.baseline_max:
        reasons.append(
            f"baseline unbiased pass@{k} {baseline:.2f} > {policy.baseline_max:.2f}: "
            "models solve it without asking"
        )
    if reasons:
        reason = f"{'; '.join(reasons)}; decided by {decided}{note}"
        return {**result, "decision": "drop", "reason": reason}
    reason = (
        f"full_info unbiased pass@{k} {full_info:.2f} ≥ {policy.full_info_min:.2f} and "
        f"baseline unbiased pass@{k} {baseline:.2f} ≤ {policy.baseline_max:.2f} "
        f"over {decided}{note}"
    )
    return {**result, "decision": "keep", "reason": reason}
