"""judge.training's cross-validation partitions: what the halvings can vary, and the
leave-one-group-out folds that vary the test set for real."""

import hashlib

import numpy as np
import pytest

from judge.base import RegistryBlocker
from judge.training import (
    CalibrationTask,
    Featurizer,
    cross_validate_groups,
    distinct_partitions,
    group_folds,
    load_tasks,
)

from ..conftest import shared_path

TOPICS = {
    "sql": ["discount rate", "fiscal quarter", "premium member", "late shipment", "top region"],
    "swe": ["retry limit", "cache expiry", "log level", "timeout unit", "config path"],
}


def _task(domain: str, group: str, number: int) -> CalibrationTask:
    # Two blockers per task, each with three example questions in its own words.
    blockers = []
    for b in range(2):
        topic = TOPICS[domain][(number + b) % len(TOPICS[domain])]
        word = f"{group}{number}{b}"
        blockers.append(
            RegistryBlocker(
                id=f"{topic.replace(' ', '_')}_{word}",
                description=f"The spec never says what the {topic} of {word} is.",
                trigger_questions=(
                    f"What is the {topic} for {word}?",
                    f"Which {topic} applies to {word}?",
                    f"How should the {topic} of {word} be set?",
                ),
                resolution=f"The {topic} of {word} is 7.",
                type="missing parameters" if domain == "swe" else "question",
            )
        )
    return CalibrationTask(f"{domain}/{group}_{number}", domain, group, tuple(blockers))


def _embed(texts: list[str]) -> np.ndarray:
    """Normalised rows from each text's words: texts sharing words are close, as MiniLM's
    would be, without loading the encoder."""
    rows = np.zeros((len(texts), 384))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            rows[i, int(hashlib.sha256(word.encode()).hexdigest(), 16) % 384] += 1.0
        rows[i] /= max(float(np.linalg.norm(rows[i])), 1e-12)
    return rows


TASKS = [
    _task(domain, group, number)
    for domain, groups in (("sql", ("alpha", "beta", "gamma")), ("swe", ("delta", "eps", "zeta")))
    for group in groups
    for number in range(2)
]


def test_each_group_is_left_out_once_and_judged_by_a_judge_fitted_without_it():
    folds = group_folds(TASKS)
    assert [(domain, group) for domain, group, _, _ in folds] == [
        ("sql", "alpha"),
        ("sql", "beta"),
        ("sql", "gamma"),
        ("swe", "delta"),
        ("swe", "eps"),
        ("swe", "zeta"),
    ]
    for _, group, fit_on, test_on in folds:
        assert {t.group for t in test_on} == {group} and len(test_on) == 2
        assert group not in {t.group for t in fit_on} and len(fit_on) == len(TASKS) - 2
    tested = [t.name for *_, test_on in folds for t in test_on]
    assert sorted(tested) == sorted(t.name for t in TASKS)  # every task once


def test_leave_one_group_out_pools_every_group_and_names_the_lowest():
    result = cross_validate_groups(TASKS, Featurizer(_embed))
    assert set(result["groups"]) == {"alpha", "beta", "gamma", "delta", "eps", "zeta"}
    # Every example question is a positive exactly once, in its own group's fold.
    questions = sum(len(b.trigger_questions) for t in TASKS for b in t.registry)
    assert result["all"]["positives"] == questions == 72
    assert sum(g["positives"] for g in result["groups"].values()) == questions
    for domain in ("sql", "swe"):
        recalls = [g["recall"] for g in result["groups"].values() if g["domain"] == domain]
        assert result["min_group"][domain]["recall"] == min(recalls)
    assert result["recall_distribution"]["tasks"] == len(TASKS)


def test_halvings_keep_groups_whole_so_few_seeds_differ():
    # One domain, two groups of equal size: every seed gives the same halving.
    two_groups = [t for t in TASKS if t.group in ("alpha", "beta")]
    assert distinct_partitions(two_groups, range(5)) == [[0, 1, 2, 3, 4]]
    # Two such domains: only which side each domain's groups pair up on can differ.
    paired = [t for t in TASKS if t.group not in ("gamma", "zeta")]
    assert len(distinct_partitions(paired, range(20))) == 2


@pytest.mark.shared_data
def test_the_calibration_data_has_two_distinct_halvings_in_five_seeds():
    """What docs/quality.md says of the shipped cross-validation: seeds 0-4 give two
    partitions, which differ only in where two 5-task SQL databases go; the SWE halves
    (ansible + flipt, 24 tasks, against protonmail + navidrome, 25) are the same in all."""
    from judge.training import split

    tasks = load_tasks(shared_path("examples", "hilbench-calibration"))
    assert len(tasks) == 98
    assert distinct_partitions(tasks, range(5)) == [[0, 3], [1, 2, 4]]
    swe_halves = {
        tuple(sorted({t.group for t in half if t.domain == "swe"}))
        for seed in range(5)
        for half in split(tasks, seed)
    }
    assert swe_halves == {
        ("ansible/ansible", "flipt-io/flipt"),
        ("navidrome/navidrome", "protonmail/webclients"),
    }
    assert len(group_folds(tasks)) == 12  # 8 databases, 4 repositories


def _scored(seed: int, n: int = 600) -> list:
    """Two domains of answered items: right ones score higher, SWE's overlap more."""
    from judge.thresholds import Scored

    rng = np.random.default_rng(seed)
    out = []
    for domain, right_mean in (("sql", 3.0), ("swe", 1.5)):
        for _ in range(n):
            right = rng.random() < 0.7
            logit = float(rng.normal(right_mean if right else -1.5, 1.5))
            out.append(Scored(domain, "b" if right else "x", "b", logit))
    return out


def _precision(scored, thresholds, domain=None) -> float:
    chosen = [
        s
        for s in scored
        if s.logit >= thresholds[s.domain] and (domain is None or s.domain == domain)
    ]
    return sum(s.best == s.label for s in chosen) / len(chosen)


def test_thresholds_chosen_together_hold_the_pooled_target_and_each_domains_floor():
    from judge.thresholds import choose_threshold, choose_thresholds

    scored = _scored(0)
    together = choose_thresholds(scored, 0.97, floor=0.95)
    assert _precision(_scored(1), together) >= 0.96  # on a fresh draw too
    assert min(_precision(scored, together, d) for d in ("sql", "swe")) >= 0.94
    # Chosen together they answer at least as many right as each domain on its own.
    apart = {
        d: choose_threshold([s for s in scored if s.domain == d], 0.97) for d in ("sql", "swe")
    }
    right = lambda th: sum(s.best == s.label and s.logit >= th[s.domain] for s in scored)  # noqa: E731
    assert right(together) >= right(apart) * 0.98


def test_smoothed_thresholds_move_less_with_the_draw_than_raw_ones():
    """The reason for the smoothing: on the raw right/wrong sequence the lowest logit that
    reaches the target jumps with each draw of the same distribution."""
    from judge.thresholds import choose_threshold, choose_thresholds

    smooth = [choose_thresholds(_scored(seed), 0.97)["swe"] for seed in range(8)]
    raw = [
        choose_threshold([s for s in _scored(seed) if s.domain == "swe"], 0.97) for seed in range(8)
    ]
    assert np.std(smooth) < np.std(raw)
