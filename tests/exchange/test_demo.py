import pytest
from django.core.management import call_command
from django.urls import reverse

from exchange.management.commands.seed_demo import DEMO_USERS
from hilbench_annotate.models import Task


@pytest.mark.django_db
def test_seed_demo_makes_tasks_and_every_demo_user_can_log_in(client, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo", force=True)
    call_command("seed_demo", force=True)  # idempotent: make run may run it every time

    assert Task.objects.filter(project__slug="demo", domain="sql").count() == 6
    assert Task.objects.filter(project__slug="demo", domain="swe").count() == 1
    blocked = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    assert blocked.blockers.count() == 3
    # The demo's blocked task is a good example: lint finds no error in it.
    from authoring.checks import draft_findings
    from hilbench_annotate.services import task_snapshot

    errors = [f for f in draft_findings(blocked, task_snapshot(blocked)) if f.severity == "error"]
    assert errors == []
    # …and it ships labelled judge-validation questions, each settled by two labellers.
    from judge.labels import gold_label
    from judge.validation import labelling_progress

    questions = list(blocked.validation_questions.prefetch_related("labels"))
    assert len(questions) == 12
    assert {gold_label(q)[0] for q in questions} == {"agreed"}
    # Enough of them to measure the judge (three per blocker, ten in all).
    assert labelling_progress(blocked)["shortfall"] == []
    users = {name: password for name, (_roles, password) in DEMO_USERS.items() if password}
    users |= {"admin": "admin-demo", "outsider": "outsider-demo"}
    for username, password in users.items():
        response = client.post(reverse("login"), {"username": username, "password": password})
        assert response.status_code == 302, username
        assert client.get(reverse("task-list")).status_code == 200
        client.post(reverse("logout"))
        assert client.get(reverse("task-list")).status_code == 302
    # The harness is a machine user: no password at all, so no web session (API tokens only).
    from django.contrib.auth import get_user_model

    harness = get_user_model().objects.get(username="harness")
    assert DEMO_USERS["harness"][1] is None
    assert not harness.has_usable_password()
    response = client.post(reverse("login"), {"username": "harness", "password": "harness-demo"})
    assert response.status_code == 200 and "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_seed_demo_takes_the_password_of_a_harness_seeded_before(settings, tmp_path):
    from django.contrib.auth import get_user_model

    settings.VAR_DIR = tmp_path
    get_user_model().objects.create_user(username="harness", password="harness-demo")

    call_command("seed_demo", force=True)

    assert not get_user_model().objects.get(username="harness").has_usable_password()


@pytest.mark.django_db
def test_seed_demo_refuses_with_debug_off(settings):
    settings.DEBUG = False
    with pytest.raises(Exception, match="DEBUG off"):
        call_command("seed_demo")


def test_wrong_password_is_refused(client, db):
    response = client.post(reverse("login"), {"username": "author", "password": "nope"})
    assert response.status_code == 200
    assert "enter a correct username and password" in response.content.decode()
