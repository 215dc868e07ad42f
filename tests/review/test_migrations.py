"""Data migrations of the review app, run on rows as an older version left them."""

import importlib

import pytest
from django.apps import apps

from hilbench_annotate.models import TaskEvent
from review.models import ReviewLayer
from review.pipeline import DEFAULT_LAYERS
from review.services import pipeline_ensure

from ..factories import ProjectFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("review.migrations.0002_final_sign_off_judge_recall")


def _pipeline(project, layers: list[tuple[str, list[str]]]) -> None:
    ReviewLayer.objects.filter(project=project).delete()  # the default one, made with it
    for position, (name, gates) in enumerate(layers, start=1):
        ReviewLayer.objects.create(
            project=project, position=position, name=name, role="lead", gates=gates
        )


def test_new_projects_final_sign_off_has_the_gate_the_migration_adds():
    # The migration's premise: the default pipeline's last layer requires judge_recall.
    assert DEFAULT_LAYERS[-1]["name"] == "Final sign-off"
    assert migration.GATE in DEFAULT_LAYERS[-1]["gates"]


def test_existing_final_sign_offs_get_judge_recall_once(project):
    # As projects made before the gate was in the default pipeline stored theirs.
    old = [
        (layer["name"], [g for g in layer["gates"] if g != "judge_recall"])
        for layer in DEFAULT_LAYERS
    ]
    _pipeline(project, old)
    # A lead's own pipeline: its last layer is the sign-off, whatever its name.
    custom = ProjectFactory(slug="custom")
    _pipeline(custom, [("Check", ["lint_clean"]), ("Ship it", [])])
    # One that has it already is left alone.
    done = ProjectFactory(slug="done")
    _pipeline(done, [("Review", []), ("Final sign-off", ["judge_recall", "pass_rate"])])
    # One whose pipeline was never made (0003 makes it: the last test).
    fresh = ProjectFactory(slug="fresh")
    ReviewLayer.objects.filter(project=fresh).delete()

    assert migration.final_sign_off_judge_recall(apps, None) == 2

    layers = ReviewLayer.objects.filter(project=project).order_by("position")
    assert [layer.gates for layer in layers] == [
        [g for g in layer["gates"] if g != "judge_recall"] + (["judge_recall"] if i == 5 else [])
        for i, layer in enumerate(DEFAULT_LAYERS)
    ]
    assert layers.last().gates == ["lint_clean", "structural", "pass_rate", "judge_recall"]
    assert [layer.gates for layer in ReviewLayer.objects.filter(project=custom)] == [
        ["lint_clean"],
        ["judge_recall"],
    ]
    assert ReviewLayer.objects.get(project=done, position=2).gates == ["judge_recall", "pass_rate"]
    assert not ReviewLayer.objects.filter(project=fresh).exists()
    assert "judge_recall" in pipeline_ensure(fresh)[-1].gates
    events = TaskEvent.objects.filter(kind="pipeline_changed")
    assert sorted((e.project_id, e.data["layer"]) for e in events) == sorted(
        [(project.pk, "Final sign-off"), (custom.pk, "Ship it")]
    )
    # Run again (a second database, a re-applied migration): nothing more to do.
    assert migration.final_sign_off_judge_recall(apps, None) == 0


def test_projects_without_a_pipeline_get_the_default_one_once(project):
    """0003: a pipeline is made with its project; older projects without one get it."""
    made_with = importlib.import_module("review.migrations.0003_pipelines_with_their_projects")
    assert [layer.name for layer in ReviewLayer.objects.filter(project=project)] == [
        layer["name"] for layer in DEFAULT_LAYERS
    ]  # made with the project
    ReviewLayer.objects.filter(project=project).delete()  # as an older version left it
    custom = ProjectFactory(slug="custom")
    _pipeline(custom, [("Check", ["lint_clean"])])
    assert made_with.pipelines_for_every_project(apps, None) == 1
    assert ReviewLayer.objects.filter(project=project).count() == len(DEFAULT_LAYERS)
    assert list(ReviewLayer.objects.filter(project=custom).values_list("name", flat=True)) == [
        "Check"
    ]
    assert made_with.pipelines_for_every_project(apps, None) == 0
