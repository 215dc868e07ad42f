"""Existing projects' final sign-off requires ``judge_recall``, as the default pipeline of new
projects does (``review/pipeline.py``). Projects made before it was added there keep their
stored layers, so without this their last layer can approve a task whose judge recall is below
the floor. The final sign-off is the last layer by position, whatever its name: approving there
approves the task (``workflow.approve_target``). Projects whose pipeline is not made yet get
the default when first needed. Each changed project gets a ``pipeline_changed`` event.

Not reversed: which layers lacked the gate before is not kept.
"""

from django.db import migrations

GATE = "judge_recall"


def final_sign_off_judge_recall(apps, schema_editor) -> int:
    """Add the gate to each project's last layer that lacks it; the number of layers changed."""
    ReviewLayer = apps.get_model("review", "ReviewLayer")
    TaskEvent = apps.get_model("hilbench_annotate", "TaskEvent")
    last: dict[int, object] = {}
    for layer in ReviewLayer.objects.order_by("project_id", "position"):
        last[layer.project_id] = layer
    changed = 0
    for layer in last.values():
        if GATE in layer.gates:
            continue
        layer.gates = [*layer.gates, GATE]
        layer.save(update_fields=["gates"])
        TaskEvent.objects.create(
            project_id=layer.project_id,
            task=None,
            actor=None,
            kind="pipeline_changed",
            data={"layer": layer.name, "gate_added": GATE, "by": "migration"},
        )
        changed += 1
    return changed


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0001_initial"),
        ("hilbench_annotate", "0009_issue19_repository_project"),
    ]

    operations = [
        migrations.RunPython(final_sign_off_judge_recall, migrations.RunPython.noop),
    ]
