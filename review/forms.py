"""What the review pages' forms post, read through the API's input schema of the same action
(``review.serializers``): a page and the API accept the same input and refuse it for the
same reasons, so they cannot drift. A page's refusal is a ``DomainError`` (400), which the
view shows next to its form as it does a service's refusal."""

from hilbench_annotate.forminput import form_input
from review.serializers import DecisionIn, PipelineIn

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
