"""The task workflow as data: which action moves a task from which state to which.

No Django imports on purpose: the table is checked by pure unit tests, and one service
(``review.services.task_transition``) applies it with a conditional update.
"""

DRAFT = "draft"
IN_REVIEW = "in_review"
CHANGES_REQUESTED = "changes_requested"
APPROVED = "approved"
REJECTED = "rejected"
EXPORTED = "exported"

STATES = (DRAFT, IN_REVIEW, CHANGES_REQUESTED, APPROVED, REJECTED, EXPORTED)

# action -> {from_state: to_state}. "approve" moves to the next layer (staying in review)
# until the last one; ``approve_target`` says which.
TRANSITIONS: dict[str, dict[str, str]] = {
    "submit": {DRAFT: IN_REVIEW, CHANGES_REQUESTED: IN_REVIEW},
    "approve": {IN_REVIEW: IN_REVIEW},
    "request_changes": {IN_REVIEW: CHANGES_REQUESTED},
    "reject": {IN_REVIEW: REJECTED},
    "export": {APPROVED: EXPORTED},
    "reopen": {REJECTED: DRAFT},
    # A reviewer takes back their decision made by mistake: the task returns to the layer
    # that decided (``review_withdraw`` says when nothing depends on the decision yet).
    "withdraw": {
        IN_REVIEW: IN_REVIEW,
        CHANGES_REQUESTED: IN_REVIEW,
        APPROVED: IN_REVIEW,
        REJECTED: IN_REVIEW,
    },
}

# States in which the author may edit the task.
EDITABLE = frozenset({DRAFT, CHANGES_REQUESTED})
# Decisions a reviewer can make at a layer.
DECISIONS = ("approve", "request_changes", "reject")


class TransitionRefused(Exception):
    pass


def next_state(state: str, action: str) -> str:
    """The state ``action`` leads to from ``state``, or TransitionRefused saying why not."""
    if action not in TRANSITIONS:
        raise TransitionRefused(f"unknown action {action!r}")
    moves = TRANSITIONS[action]
    if state not in moves:
        allowed = ", ".join(sorted(moves)) or "no state"
        readable = action.replace("_", " ")
        raise TransitionRefused(f"cannot {readable} a task that is {state}; only from {allowed}")
    return moves[state]


def approve_target(layer: int, layer_count: int) -> tuple[str, int | None]:
    """Approving at ``layer`` (1-based) of ``layer_count``: the next layer, or approved."""
    if not 1 <= layer <= layer_count:
        raise TransitionRefused(f"layer {layer} is not in a {layer_count}-layer pipeline")
    if layer < layer_count:
        return IN_REVIEW, layer + 1
    return APPROVED, None


def submit_layer(returns_to: int | None) -> int:
    """A (re)submitted task starts at layer 1, or returns to the layer that asked for changes."""
    return returns_to or 1


def actions_from(state: str) -> list[str]:
    return sorted(action for action, moves in TRANSITIONS.items() if state in moves)
