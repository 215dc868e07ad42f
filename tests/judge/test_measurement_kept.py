"""Issue 45, item 6a: *Measure the judge*'s figures are shown again on the next visit, from
what the measurement's validation run stored, with when, by whom and with which judge they
were measured — and marked stale once the task or its held-out labels changed since."""

import pytest
from django.urls import include, path, reverse

from hilbench_annotate import services as core
from judge.embedded import EmbeddedJudge
from judge.selectors import measurement_last
from judge.validation import question_add

urlpatterns = [path("", include("hilbench_annotate.urls")), path("", include("judge.urls"))]

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.judge.test_measurement_kept")]


@pytest.fixture(scope="module", autouse=True)
def _model_loaded():
    EmbeddedJudge()


@pytest.fixture(autouse=True)
def _judge(settings):
    settings.JUDGE_BACKEND = "embedded"


def test_a_measurement_is_shown_again_on_reload_and_marked_stale_once_the_task_changes(
    client, labelled, reviewer, author
):
    task = labelled
    page_url = reverse("judge-questions", args=[task.pk])
    client.force_login(reviewer)
    before = client.get(page_url)
    assert before.context["measured"] is None and 'id="measured"' not in before.content.decode()

    made = client.post(reverse("judge-measure", args=[task.pk])).context["measured"]

    # A fresh visit: the same figures, read from the stored run, with when and which judge.
    again = client.get(page_url)
    shown = again.context["measured"]
    assert (shown.recall, shown.precision, shown.positives, shown.correct, shown.matches) == (
        made.recall,
        made.precision,
        made.positives,
        made.correct,
        made.matches,
    )
    assert [m["text"] for m in shown.misses] == [m["text"] for m in made.misses]
    html = again.content.decode()
    assert 'id="measured"' in html and f"{round(made.recall * 100)}%" in html
    stored = measurement_last(task=task)
    assert stored.judge_version.startswith("embedded-4-")
    assert f"with judge <code>{stored.judge_version}</code>" in html
    assert "by reviewer" in html and "Measured <time" in html
    assert stored.stale == [] and 'badge ok">current' in html
    # The misses' suggestions come back too (the stored misses' wording).
    assert again.context["suggestions"] and "Suggested trigger questions" in html

    # Labels and questions added since, then an edit of the task: stale, saying why.
    question_add(task=task, actor=reviewer, text="Which loans are the troubled ones here?")
    assert "1 held-out question added since" in client.get(page_url).content.decode()
    task.refresh_from_db()
    blocker = task.blockers.first()
    core.trigger_question_create(
        blocker=blocker,
        actor=author,
        expected_version=task.version,
        text="Which contracts are counted as troubled?",
    )
    html = client.get(page_url).content.decode()
    assert 'badge warn">stale' in html
    assert "the task was edited since: measured on revision" in html
