"""The timeline's words: each recorded event said as a person would, never its code.

Events are stored with a machine ``kind`` and a small ``data`` dict (see the services that
record them); this is the one place that turns them into a sentence. An unknown kind (a new
event nobody worded yet) still reads as words: its code with spaces.
"""

from collections.abc import Callable, Mapping
from typing import Any

from hilbench_annotate.toolkit.wording import plain_list
from hilbench_annotate.vocabulary import TaskSource, TaskStatus

ACTIONS = {
    "submit": "submitted it for review",
    "approve": "approved it",
    "request_changes": "asked for changes",
    "reject": "rejected it",
    "export": "exported it",
    "reopen": "reopened it",
    "withdraw": "withdrew their decision",
}
OUTCOMES = {"approve": "approved", "request_changes": "asked for changes", "reject": "rejected"}
RUN_OUTCOMES = {"passed": "passed", "failed": "failed", "crashed": "crashed"}


def _words(code: Any) -> str:
    return str(code or "").replace("_", " ")


def _status(code: str) -> str:
    try:
        return TaskStatus(code).label.lower()
    except ValueError:
        return _words(code)


class _Layers:
    """Layer numbers as "layer 3 (Registry audit)" when the pipeline names them."""

    def __init__(self, names: Mapping[int, str]):
        self.names = names

    def __call__(self, position: Any) -> str:
        name = self.names.get(position) if isinstance(position, int) else None
        return f"layer {position} ({name})" if name else f"layer {position}"


def _status_changed(d: Mapping[str, Any], layer: _Layers) -> str:
    def state(status: str, position: Any) -> str:
        return _status(status) + (f" at {layer(position)}" if position else "")

    verb = ACTIONS.get(d.get("action"), _words(d.get("action")))
    if d.get("action") == "withdraw":
        outcome = OUTCOMES.get(d.get("outcome"), _words(d.get("outcome")))
        verb += f" ({outcome} on revision {d.get('revision')}, made by mistake)"
    moved = f"{state(d.get('source', ''), d.get('source_layer'))} → "
    moved += state(d.get("target", ""), d.get("target_layer"))
    reason = f" — {d['reason']}" if d.get("reason") else ""
    return f"{verb}: {moved}{reason}"


def _imported(d: Mapping[str, Any], layer: _Layers) -> str:
    try:
        source = TaskSource(d.get("source")).label
    except ValueError:
        source = _words(d.get("source"))
    return f"imported the task from {source} ({d.get('source_id')})"


def _tags(d: Mapping[str, Any], layer: _Layers) -> str:
    after = d.get("after") or []
    return f"set the tags to {plain_list(after, quote=False)}" if after else "removed every tag"


def _validation_finished(d: Mapping[str, Any], layer: _Layers) -> str:
    outcome = RUN_OUTCOMES.get(d.get("status"), _words(d.get("status")))
    return f"the structural checks {outcome}"


def _validation_queued(d: Mapping[str, Any], layer: _Layers) -> str:
    return f"started the structural checks on revision {d.get('revision')}"


# The reasons of a task's revision 1 that tell its making (``creation_text``). Tasks made
# before revision 1 told it also have an event of that kind, a restating one.
CREATION_KINDS = frozenset({"created", "imported"})
# Events that only restate a revision or a comment, which have timeline lines of their own.
RESTATING_EVENTS = CREATION_KINDS | {
    "workspace_saved",
    "registry_edited",
    "task_edited",
    "environment_edited",
    "comment_added",
}

WORDING: dict[str, Callable[[Mapping[str, Any], _Layers], str]] = {
    "status_changed": _status_changed,
    "created": lambda d, layer: "created the task",
    "imported": _imported,
    "tags_set": _tags,
    "lint_waived": lambda d, layer: f"waived a lint finding: “{d.get('reason', '')}”",
    "lint_waiver_withdrawn": lambda d, layer: "withdrew a lint waiver",
    "thread_resolved": lambda d, layer: "marked a thread resolved",
    "thread_reopened": lambda d, layer: "reopened a thread",
    "review_taken": lambda d, layer: f"took the task at {layer(d.get('layer'))}",
    "review_assigned": lambda d, layer: f"assigned {layer(d.get('layer'))} to {d.get('reviewer')}",
    "review_released": lambda d, layer: f"gave the task back at {layer(d.get('layer'))}",
    "validation_queued": _validation_queued,
    "validation_finished": _validation_finished,
    # Which labels is left out: the other labeller must not read one here before giving theirs.
    "judge_label_changed": lambda d, layer: "changed their label of a held-out judge question",
    "judge_label_withdrawn": lambda d, layer: "withdrew their label of a held-out judge question",
    "revision_restored": lambda d, layer: (
        f"restored revision {d.get('restored')} as revision {d.get('revision')}"
    ),
    "failure_labelled": lambda d, layer: (
        f"labelled a failed run: {_words(d.get('dimension'))} ({_words(d.get('mode'))})"
    ),
}


def creation_text(task, revision) -> str | None:
    """What revision 1 did, in the words of the event that once told it ("imported the task
    from BIRD (library/7)"), or None for any other revision."""
    if revision.number != 1 or revision.reason not in CREATION_KINDS:
        return None
    return WORDING[revision.reason]({"source": task.source, "source_id": task.source_id}, None)


def event_text(kind: str, data: Mapping[str, Any], layer_names: Mapping[int, str]) -> str:
    """What happened, as the timeline says it after the actor's name."""
    wording = WORDING.get(kind)
    layer = _Layers(layer_names)
    return wording(data or {}, layer) if wording else _words(kind)
