"""Registries smaller than any the judge was fitted on (the calibration data holds 3 to 5
blockers a task): a one-blocker task's own trigger question must still be matched. The
information-gap features (5ec8135) failed here — a one-blocker registry's centre is the
blocker itself — so a registry of fewer than ``SMALL_REGISTRY`` blockers is scored by the
model without them (``judge.model.Model.small``)."""

from dataclasses import replace

import numpy as np
import pytest

from judge import probes
from judge.base import RegistryBlocker
from judge.embedded import EmbeddedJudge, load_weights
from judge.features import FEATURES, PLAIN_FEATURES, SMALL_REGISTRY
from judge.model import Model
from judge.training import load_tasks
from tests.conftest import shared_path

# The weights before the information-gap features (33b87adade) on the calibration data's 362
# blockers (bench/judge_small.py); the weights shipped since must match at least as many.
# (The information-gap model alone, 3c73f9597d: 267, 254 and 343.)
BEFORE = {"kept": 346, "left_out": 346, "two_left_out": 342}


def _model(value: float, offset: dict | None = None, small=None, columns=None) -> Model:
    width = len(columns) if columns is not None else len(FEATURES)
    coef = np.zeros(width)
    return Model(
        np.zeros(width),
        np.ones(width),
        coef,
        value,
        {"sql": 0.0, "swe": 1.0},
        columns=columns,
        small=small,
        offset=offset or {},
    )


def test_a_small_registry_is_scored_by_the_small_model_shifted_to_the_main_threshold():
    plain = tuple(FEATURES.index(name) for name in PLAIN_FEATURES)
    small = _model(5.0, offset={"sql": -2.0, "swe": -3.0}, columns=plain)
    model = _model(1.0, small=small)
    swe = FEATURES.index("domain_swe")
    for count in range(1, 6):
        rows = np.zeros((count, len(FEATURES)))
        expected = 1.0 if count >= SMALL_REGISTRY else 3.0
        assert list(model.logits(rows)) == [expected] * count
        rows[:, swe] = 1.0
        assert list(model.logits(rows)) == [1.0 if count >= SMALL_REGISTRY else 2.0] * count
    again = Model.from_json(model.as_json())
    assert again.as_json() == model.as_json() and again.small.columns == plain


def test_the_shipped_weights_carry_the_small_model_and_the_weights_before_still_load():
    weights = load_weights()
    assert weights["features"] == list(FEATURES)
    assert weights["small"]["features"] == list(PLAIN_FEATURES)
    assert set(weights["small"]["offset"]) == set(weights["thresholds"])
    before = {**weights["small"], "offset": {}}  # a plain model alone, as 33b87adade was
    assert Model.from_json(before).small is None


@pytest.mark.shared_data
def test_the_calibration_data_holds_no_registry_below_the_small_model_s_limit():
    """The limit is the data's: if smaller registries join the calibration data, the main
    model is fitted on them and the limit should move."""
    tasks = load_tasks(shared_path("examples", "hilbench-calibration"))
    assert min(len(t.registry) for t in tasks) == SMALL_REGISTRY


@pytest.mark.slow
@pytest.mark.shared_data
def test_one_and_two_blocker_registries_match_as_well_as_before(kept_judge):
    tasks = load_tasks(shared_path("examples", "hilbench-calibration"))
    figures = probes.small_registries(kept_judge, tasks)
    assert figures["blockers"] == 362
    for name, before in BEFORE.items():
        assert figures[name] >= before, figures
    # Another task's question is not answered by a lone blocker (33b87adade: 5 of 362).
    assert figures["other_answered"] <= 0.03 * figures["blockers"], figures


def test_the_one_blocker_spider_task_of_the_harbor_trial_answers_its_trigger(kept_judge):
    """The CI's Harbor trial (tests/exchange/test_harbor_trials.py, a Spider task with one
    blocker, tests/exchange/bundle_helpers.py's SPIDER_BLOCKER): the blocker's own trigger
    questions are matched, kept or left out, and the trial's unrelated one is not."""
    blocker = RegistryBlocker(
        "focus_country",
        "The question asks about singers from 'our focus country' without naming it.",
        (
            "Which country is the focus country?",
            "What country should the singers be from?",
            "Which country does 'our focus country' refer to?",
        ),
        "The focus country is France: only singers whose country is 'France' count.",
        "question",
    )
    context = "What is the average, minimum, and maximum age of all singers from our focus country?"
    judge: EmbeddedJudge = kept_judge
    for n, question in enumerate(blocker.trigger_questions):
        left = replace(
            blocker,
            trigger_questions=blocker.trigger_questions[:n] + blocker.trigger_questions[n + 1 :],
        )
        for registry in ([blocker], [left]):
            verdict = judge.judge(question, registry, domain="sql", context=context)
            assert verdict.blocker_id == "focus_country", (question, verdict.reason)
    unrelated = judge.judge(
        "What is the capital of France?", [blocker], domain="sql", context=context
    )
    assert unrelated.blocker_id is None
