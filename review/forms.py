"""What the review pages' forms post, read through the API's input schema of the same action
(``review.serializers``): a page and the API accept the same input and refuse it for the
same reasons, so they cannot drift. A page's refusal is a ``DomainError`` (400), which the
view shows next to its form as it does a service's refusal."""

from hilbench_annotate.errors import DomainError
from review.serializers import DecisionIn


def form_input(schema, data) -> dict:
    """``data`` (a page's ``request.POST``, or a dict built from it) validated by ``schema``,
    the serializer the API's endpoint of the same action validates its body with."""
    serializer = schema(data=data)
    if serializer.is_valid():
        return dict(serializer.validated_data)
    raise DomainError(" ".join(_said(field, errors) for field, errors in serializer.errors.items()))


def _said(field: str, errors) -> str:
    messages = errors if isinstance(errors, list) else [errors]
    text = " ".join(str(m) for m in messages)
    return (
        text if field == "non_field_errors" else f"{field.replace('_', ' ').capitalize()}: {text}"
    )


# --- the review page's decision ------------------------------------------------------------


def decision_typed(post, *, checklist: list[str], blocker_keys: list[str]) -> dict:
    """The decision form as posted, kept as typed: a refused decision shows it again."""
    return {
        "outcome": post.get("outcome", ""),
        "revision": post.get("revision", ""),
        "summary": post.get("summary", ""),
        "reject_reason": post.get("reject_reason", ""),
        "checklist": [_typed_answer(post, i, item) for i, item in enumerate(checklist)],
        "comments": {key: post.get(f"blocker-comment-{key}", "") for key in blocker_keys},
    }


def _typed_answer(post, i: int, item: str) -> dict:
    """One checklist answer as the form sent it. A row asked per blocker (the self-check's
    quality criteria) passes when every blocker is ticked; the note names those that are not."""
    if post.get(f"check-{i}-per-blocker"):
        keys = [k for k in post.get(f"check-{i}-per-blocker").split(",") if k]
        ticked = set(post.getlist(f"check-{i}-blocker"))
        missing = [k for k in keys if k not in ticked]
        note = post.get(f"check-{i}-note", "").strip()
        if missing:
            note = f"Not for {', '.join(missing)}." + (f" {note}" if note else "")
        return {"item": item, "passed": not missing, "note": note, "ticked": sorted(ticked)}
    return {
        "item": item,
        "passed": {"pass": True, "fail": False}.get(post.get(f"check-{i}")),
        "note": post.get(f"check-{i}-note", ""),
    }


def decision_input(typed: dict) -> dict:
    """The typed decision in the body ``POST /api/tasks/<id>/decisions`` takes, validated by
    the same ``DecisionIn``."""
    return form_input(
        DecisionIn,
        {
            "outcome": typed["outcome"],
            "revision": typed["revision"],
            "summary": typed["summary"],
            "reject_reason": typed["reject_reason"],
            "checklist": [
                {"item": a["item"], "passed": a["passed"], "note": a["note"]}
                for a in typed["checklist"]
            ],
            "blocker_comments": typed["comments"],
        },
    )
