"""``provenance/validation.json`` names the models that decided the pass-rate gate (identity
and run ids), and a lowered policy's reason — never who lowered it or when (issue 43)."""

import json

import jsonschema
import pytest

from evaluation.selectors import task_selections
from evaluation.services import selection_policy_update
from exchange.bundles.provenance import validation_documents
from hilbench_annotate.selectors import revision_current
from tests.evaluation.util import keep_by_pass_rate

from ..conftest import ROOT

pytestmark = pytest.mark.django_db

REASON = "One model is licensed for the pilot batch."


def _pass_rate(task) -> dict:
    document = validation_documents(
        [task],
        revision_numbers={task.pk: revision_current(task=task).number},
        gates={task.pk: []},
        pass_rates=task_selections(tasks=[task]),
    )[task.pk]
    schema = json.loads((ROOT / "docs" / "bundle" / "validation.schema.json").read_text())
    jsonschema.Draft202012Validator(schema["properties"]["pass_rate"]).validate(
        document["pass_rate"]
    )
    return json.loads(json.dumps(document["pass_rate"]))  # as the bundle writes it


def test_provenance_names_the_models_that_decided(sql_task, lead):
    (gpt,) = keep_by_pass_rate(sql_task, model="openai/gpt-4o", beside=())
    (claude,) = keep_by_pass_rate(sql_task, model="claude-sonnet-4", beside=())
    pass_rate = _pass_rate(sql_task)
    assert pass_rate["decision"] == "keep" and pass_rate["min_models"] == 2
    assert pass_rate["lowered"] is None
    assert pass_rate["decided_by"] == [
        {"identity": "claude-sonnet-4", "models": ["claude-sonnet-4"], "runs": [claude.pk]},
        {"identity": "gpt-4o", "models": ["openai/gpt-4o"], "runs": [gpt.pk]},
    ]
    assert f"claude-sonnet-4 (run {claude.pk}), gpt-4o (run {gpt.pk})" in pass_rate["reason"]


def test_provenance_of_one_model_says_two_are_needed(sql_task, lead):
    keep_by_pass_rate(sql_task, beside=())
    pass_rate = _pass_rate(sql_task)
    assert pass_rate["decision"] == "undecided" and pass_rate["decided_by"] == []
    assert "2 distinct models needed" in pass_rate["reason"]
    (model,) = pass_rate["identities"]
    # It counts — as one model, and two are needed.
    assert model["identity"] == "gpt-4o" and model["complete"] and model["counted"]


def test_provenance_carries_the_reason_for_fewer_models_but_not_who_or_when(sql_task, lead):
    (run,) = keep_by_pass_rate(sql_task, beside=())
    selection_policy_update(
        project=sql_task.project,
        actor=lead,
        k=3,
        full_info_min=0.67,
        baseline_max=0.34,
        min_models=1,
        min_models_reason=REASON,
    )
    pass_rate = _pass_rate(sql_task)
    assert pass_rate["decision"] == "keep" and pass_rate["min_models"] == 1
    assert pass_rate["lowered"] == {"models_needed": 1, "reason": REASON}
    assert pass_rate["decided_by"] == [
        {"identity": "gpt-4o", "models": ["gpt-4o"], "runs": [run.pk]}
    ]
    assert f"lowered to 1 by a lead: “{REASON}”" in pass_rate["reason"]
    assert lead.username not in json.dumps(pass_rate["lowered"])
