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

# action -> {from_state: to_state}
TRANSITIONS: dict[str, dict[str, str]] = {
    "submit": {DRAFT: IN_REVIEW, CHANGES_REQUESTED: IN_REVIEW},
    "request_changes": {IN_REVIEW: CHANGES_REQUESTED},
    "approve": {IN_REVIEW: APPROVED},
    "reject": {IN_REVIEW: REJECTED},
    "export": {APPROVED: EXPORTED},
    "reopen": {REJECTED: DRAFT},
}

# States in which the author may edit the task.
EDITABLE = frozenset({DRAFT, CHANGES_REQUESTED})


class TransitionRefused(Exception):
    pass


def next_state(state: str, action: str) -> str:
    """The state ``action`` leads to from ``state``, or TransitionRefused saying why not."""
    if action not in TRANSITIONS:
        raise TransitionRefused(f"unknown action {action!r}")
    moves = TRANSITIONS[action]
    if state not in moves:
        allowed = ", ".join(sorted(moves)) or "no state"
        raise TransitionRefused(
            f"cannot {action.replace('_', ' ')} a task that is {state}; only from {allowed}"
        )
    return moves[state]


def actions_from(state: str) -> list[str]:
    return sorted(action for action, moves in TRANSITIONS.items() if state in moves)
