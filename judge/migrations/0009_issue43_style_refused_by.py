"""Issue 43: the style of a held-out question (empty for older ones: "not recorded", see
``judge.floor``) and the limit that refused an ask_human call (the caps' older refusals are
named from their logged reason)."""

from django.db import migrations, models


def name_the_caps(apps, schema_editor) -> None:
    calls = apps.get_model("judge", "AskHumanCall").objects.filter(capped=True, refused_by="")
    calls.filter(reason__startswith="Session cap").update(refused_by="session_answer_cap")
    calls.update(refused_by="run_answer_cap")


class Migration(migrations.Migration):
    dependencies = [
        ("judge", "0008_judgeembedding"),
    ]

    operations = [
        migrations.AddField(
            model_name="askhumancall",
            name="refused_by",
            field=models.CharField(blank=True, default="", max_length=30),
        ),
        migrations.AddField(
            model_name="validationquestion",
            name="style",
            field=models.CharField(
                blank=True,
                choices=[
                    ("terse", "terse, as an agent would ask (not naming the task's words)"),
                    ("task_words", "naming the task's words"),
                    ("paraphrase", "paraphrase"),
                ],
                default="",
                help_text="Chosen by its writer; empty: not recorded (written before styles "
                "were asked)",
                max_length=12,
            ),
        ),
        migrations.RunPython(name_the_caps, migrations.RunPython.noop),
    ]
