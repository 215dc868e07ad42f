"""The three modes' texts are byte-for-byte the release's, rendered from our own data."""

import json
import re

import pytest
from django.core.management import call_command

from hilbench_annotate.instructions import MODES, task_instructions
from hilbench_annotate.models import Task
from hilbench_annotate.services import task_snapshot


@pytest.mark.django_db
@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_imported_release_tasks_render_the_release_instruction_texts(
    project, domain, release_examples
):
    root = release_examples / domain
    call_command("import_hilbench", str(root), project=project.slug)
    tasks = Task.objects.filter(project=project)
    assert tasks.count() == len([p for p in root.iterdir() if p.is_dir()]) > 0
    for task in tasks:
        folder = root / task.source_metadata["folder"]
        rendered = task_instructions(task_snapshot(task))
        for mode in MODES:
            assert rendered[mode] == (folder / mode / "instruction.md").read_text(), (folder, mode)


def test_full_info_carries_every_resolution_and_baseline_none():
    registry = [
        {"description": "Which year is the boom year?", "resolution": "The boom year is 1997. "},
        {"description": "Which code marks servicing?", "resolution": "k_symbol = 'LN'"},
    ]
    snapshot = {
        "domain": "sql",
        "blocked_spec": {"question": "How many loans in the boom year?", "evidence": ""},
        "environment": {"db_id": "retail_bank"},
        "blockers": registry,
    }
    texts = task_instructions(snapshot)
    assert all(b["resolution"].strip() in texts["full_info"] for b in registry)
    assert not any(b["resolution"].strip() in texts["baseline"] for b in registry)
    assert "ask_human" in texts["ask_human"] and "ask_human" not in texts["baseline"]
    assert re.search(r"`retail_bank` database", texts["baseline"])
    json.dumps(texts)  # plain strings, ready to export
