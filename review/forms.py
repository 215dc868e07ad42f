"""What the review pages' forms post, read through the API's input schema of the same action
(``review.serializers``): a page and the API accept the same input and refuse it for the
same reasons, so they cannot drift. A page's refusal is a ``DomainError`` (400), which the
view shows next to its form as it does a service's refusal."""

from hilbench_annotate.errors import DomainError
from review.serializers import DecisionIn, PipelineIn


def form_input(schema, data) -> dict:
    """``data`` (a page's ``request.POST``, or a dict built from it) validated by ``schema``,
    the serializer the API's endpoint of the same action validates its body with."""
    serializer = schema(data=data)
    if serializer.is_valid():
        return dict(serializer.validated_data)
    raise DomainError(
        " ".join(
            _said(_label(serializer, field), errors) for field, errors in serializer.errors.items()
        )
    )


def _label(serializer, field: str) -> str:
    """The field's label (its name, "Lock minutes", unless the schema gives one)."""
    if field in serializer.fields and serializer.fields[field].label:
        return str(serializer.fields[field].label)
    return field.replace("_", " ").capitalize()


def _said(label: str, errors) -> str:
    """A field's refusal in one line, its label first ("Revision: A valid integer is
    required."), unless the words already name it ("The lock time is a whole number of
    minutes."). A list of rows (``many=True``; its errors keyed by the row's index) names the
    row from 1: "Layer 2, name: …"."""
    if isinstance(errors, dict):
        return " ".join(_said(_inner(label, key), sub) for key, sub in errors.items())
    text = " ".join(str(m) for m in errors) if isinstance(errors, list) else str(errors)
    if label == "Non field errors" or label.lower() in text.lower():
        return text
    return f"{label}: {text}"


def _inner(label: str, key) -> str:
    """The label of a nested error: a row of a list ("Layers", 1 → "Layer 2"), a key of a
    dict ("Blocker comments, b1"), or the whole ("non_field_errors")."""
    if key == "non_field_errors":
        return label
    if isinstance(key, int):
        return f"{label[:-1] if label.endswith('s') else label} {key + 1}"
    return f"{label}, {key}"


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


# --- the pipeline editor -------------------------------------------------------------------


def pipeline_typed(post) -> dict:
    """The pipeline form as posted, kept as typed (removals still ticked, the lock time as
    written): a refused save shows it again. The empty "add a layer" row is left out."""
    layers = []
    for i in post.getlist("layer"):
        name = post.get(f"layer-{i}-name", "")
        checklist = post.get(f"layer-{i}-checklist", "")
        if not name.strip() and not checklist.strip():
            continue
        layers.append(
            {
                "name": name,
                "role": post.get(f"layer-{i}-role", ""),
                "self_check": bool(post.get(f"layer-{i}-self_check")),
                "checklist": checklist.splitlines(),
                # Gate names hold no spaces: commas, spaces and lines all separate them.
                "gates": post.get(f"layer-{i}-gates", "").replace(",", " ").split(),
                "delete": bool(post.get(f"layer-{i}-delete")),
            }
        )
    return {
        "layers": layers,
        "lock_minutes": post.get("lock_minutes", ""),
        "reject_reasons": post.get("reject_reasons", "").splitlines(),
    }


def pipeline_input(typed: dict) -> dict:
    """The typed pipeline in the body ``PUT /api/projects/<id>/pipeline/`` takes (the layers
    not ticked for removal), validated by the same ``PipelineIn``. An emptied lock time is the
    default hour, as the page has always read it."""
    return form_input(
        PipelineIn,
        {
            "layers": [
                {key: row[key] for key in ("name", "role", "self_check", "checklist", "gates")}
                for row in typed["layers"]
                if not row["delete"]
            ],
            "lock_minutes": typed["lock_minutes"] or 60,
            "reject_reasons": typed["reject_reasons"],
        },
    )
