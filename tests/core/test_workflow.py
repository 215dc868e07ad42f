"""The workflow table on its own: no database, no Django."""

import pytest

from hilbench_annotate import workflow
from hilbench_annotate.workflow import TransitionRefused

ALLOWED = [
    (action, source, target)
    for action, moves in workflow.TRANSITIONS.items()
    for source, target in moves.items()
]


@pytest.mark.parametrize(("action", "source", "target"), ALLOWED)
def test_every_allowed_transition_gives_its_target(action, source, target):
    assert workflow.next_state(source, action) == target


def test_the_table_has_the_transitions_the_workflow_needs():
    assert set(ALLOWED) == {
        ("submit", "draft", "in_review"),
        ("submit", "changes_requested", "in_review"),
        ("approve", "in_review", "in_review"),
        ("request_changes", "in_review", "changes_requested"),
        ("reject", "in_review", "rejected"),
        ("export", "approved", "exported"),
        ("reopen", "rejected", "draft"),
        ("withdraw", "in_review", "in_review"),
        ("withdraw", "changes_requested", "in_review"),
        ("withdraw", "approved", "in_review"),
        ("withdraw", "rejected", "in_review"),
    }


# One refused action per state, and what the refusal must say.
REFUSED = [
    ("draft", "approve", "cannot approve a task that is draft; only from in_review"),
    ("in_review", "submit", "cannot submit a task that is in_review"),
    (
        "changes_requested",
        "reject",
        "cannot reject a task that is changes_requested; only from in_review",
    ),
    ("approved", "request_changes", "cannot request changes a task that is approved"),
    ("rejected", "export", "cannot export a task that is rejected; only from approved"),
    ("exported", "reopen", "cannot reopen a task that is exported; only from rejected"),
]


def test_refusals_cover_every_state():
    assert {state for state, _, _ in REFUSED} == set(workflow.STATES)


@pytest.mark.parametrize(("state", "action", "message"), REFUSED)
def test_a_refused_action_raises_with_a_message(state, action, message):
    with pytest.raises(TransitionRefused) as refused:
        workflow.next_state(state, action)
    assert message in str(refused.value)


@pytest.mark.parametrize("state", workflow.STATES)
def test_every_action_not_offered_from_a_state_is_refused(state):
    offered = workflow.actions_from(state)
    for action in set(workflow.TRANSITIONS) - set(offered):
        with pytest.raises(TransitionRefused, match=state):
            workflow.next_state(state, action)
    for action in offered:
        workflow.next_state(state, action)


def test_an_unknown_action_is_refused_by_name():
    with pytest.raises(TransitionRefused, match="unknown action 'publish'"):
        workflow.next_state("draft", "publish")


def test_submit_from_draft_and_from_changes_requested_only():
    assert workflow.actions_from("draft") == ["submit"]
    assert workflow.actions_from("changes_requested") == ["submit", "withdraw"]
    assert workflow.actions_from("in_review") == [
        "approve",
        "reject",
        "request_changes",
        "withdraw",
    ]
    assert workflow.actions_from("exported") == []


def test_only_draft_and_changes_requested_are_editable():
    assert {"draft", "changes_requested"} == workflow.EDITABLE


@pytest.mark.parametrize(
    ("layer", "count", "expected"),
    [
        (1, 6, ("in_review", 2)),  # first
        (3, 6, ("in_review", 4)),  # middle
        (5, 6, ("in_review", 6)),  # last but one
        (6, 6, ("approved", None)),  # last
        (1, 1, ("approved", None)),  # a one-layer pipeline
    ],
)
def test_approve_target(layer, count, expected):
    assert workflow.approve_target(layer, count) == expected


@pytest.mark.parametrize(("layer", "count"), [(0, 6), (7, 6), (-1, 6), (1, 0)])
def test_approve_target_refuses_a_layer_outside_the_pipeline(layer, count):
    with pytest.raises(TransitionRefused, match=f"layer {layer} is not in a {count}-layer"):
        workflow.approve_target(layer, count)


def test_submit_layer_starts_at_one_or_returns_to_the_asking_layer():
    assert workflow.submit_layer(None) == 1
    assert workflow.submit_layer(3) == 3
    assert workflow.submit_layer(6) == 6
