"""Issue 47, item 3: the judge reads a task's blockers one way in the app (the recall certified
on the task page, ask_human over the API) and in the bundle's sidecar (the exported registry
file): ``registry_from_snapshot`` is ``registry_from_json`` on the revision's blockers. Before,
the app stripped only list markers from trigger questions, the sidecar also quotes and
spacing, so 4 of the release's 2,603 triggers read differently in the two."""

import json

import pytest
from django.core.management import call_command

from hilbench_annotate.models import Task
from hilbench_annotate.selectors import revision_current
from judge.base import IRRELEVANT, RegistryBlocker, Verdict, registry_from_json, respond
from judge.services import registry_from_snapshot

pytestmark = pytest.mark.django_db


def test_an_imported_release_task_reads_as_its_registry_file(project, lead, release_examples):
    for domain in ("sql", "swe"):
        call_command("import_hilbench", str(release_examples / domain), project=project.slug)
    in_app = sorted(
        _reading(registry_from_snapshot(revision_current(task=task).snapshot))
        for task in Task.objects.filter(project=project)
    )
    from_files = sorted(
        _reading(registry_from_json(json.loads(path.read_text(encoding="utf-8"))))
        for path in release_examples.glob("*/*/**/blocker_registry.json")
    )
    assert len(from_files) == len(in_app) > 0
    assert in_app == from_files


def _reading(registry):
    return tuple((b.id, b.description, b.trigger_questions) for b in registry)


def test_a_quoted_and_spaced_trigger_reads_the_same_in_app_and_file():
    raw = {"id": "b1", "description": "The  cut-off\nyear.", "resolution": "2015"}
    triggers = ['- "Which year is the cut-off?"', "  *  Which   year?  "]
    in_app = registry_from_snapshot({"blockers": [{**raw, "trigger_questions": triggers}]})
    from_file = registry_from_json({"blockers": [{**raw, "example_questions": triggers}]})
    assert in_app == from_file
    assert '"' not in in_app[0].trigger_questions[0]
    assert in_app[0].description == "The cut-off year."


def test_one_way_from_verdict_to_answer():
    registry = [RegistryBlocker(id="b1", description="", trigger_questions=(), resolution="2015")]
    assert respond(Verdict("b1"), registry) == "2015"
    assert respond(Verdict(None), registry) == IRRELEVANT
    assert respond(Verdict(""), registry) == IRRELEVANT
