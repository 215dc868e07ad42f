"""A release folder's own verifier (``<mode>/tests/``): shown beside the generated one on the
task page, accepted only by an auditor or a lead who is not the task's author, for exactly
the bytes they saw (``exchange/services/verifiers.py``, ``exchange/selectors.py``,
``templates/exchange/_verifier_panel.html``); and what a run writes over the folder for it
(``exchange/bundles/trial_files.py``), whose ``test.sh`` wrapper is run here in a real
container.

The task is the release's ``sql_0`` copied into ``tmp_path`` with a ``baseline/tests/test.sh``
of its own that says reward 1 whatever the agent did, imported by the project's author.
"""

import json
import os
import shutil
import subprocess
import tomllib

import pytest
from django.urls import reverse

from exchange.bundles import release
from exchange.bundles.trial_files import trial_files, wrapper
from exchange.importers import import_hilbench
from exchange.models import ReleaseFile, VerifierAcceptance
from hilbench_annotate.instructions import MODES
from hilbench_annotate.models import Task
from hilbench_annotate.services.tasks import task_snapshot
from tests.conftest import shared_path
from tests.validators.conftest import docker_or_skip

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]

OWN_TEST = b"echo 1 > /logs/verifier/reward.txt\n"
OWN_PATH = "baseline/tests/test.sh"
DIFF_LINE = "+echo 1 &gt; /logs/verifier/reward.txt"  # as the panel escapes it
FOLDER_SECRET = "HILBENCH_TEST_FOLDER_SECRET"
IMAGE = "python:3.11-slim"


def _release_copy(tmp_path):
    """``upload/sql_0``: the release's folder with a verifier of its own, and a task.toml
    that asks for variables of the machine's environment."""
    upload = tmp_path / "upload"
    folder = upload / "sql_0"
    shutil.copytree(shared_path("examples", "hilbench", "sql", "sql_0"), folder)
    (folder / "baseline" / "tests").mkdir()
    (folder / "baseline" / "tests" / "test.sh").write_bytes(OWN_TEST)
    toml = folder / "baseline" / "task.toml"
    text = toml.read_text()
    assert "[environment.env]\n" in text and "[verifier.env]\n" in text
    text = text.replace(
        "[environment.env]\n", f'[environment.env]\nLEAK = "${{{FOLDER_SECRET}}}"\n'
    ).replace("[verifier.env]\n", f'[verifier.env]\nTOKEN = "${{{FOLDER_SECRET}}}"\n')
    toml.write_text(text)
    return upload


@pytest.fixture
def task(project, author, tmp_path) -> Task:
    import_hilbench(project=project, root=_release_copy(tmp_path), actor=author)
    return Task.objects.get(project=project, source_metadata__folder="sql_0")


def _page(client, user, task) -> str:
    client.force_login(user)
    response = client.get(reverse("task-detail", args=[task.pk]))
    assert response.status_code == 200
    return response.content.decode()


def _post(client, user, name, task):
    client.force_login(user)
    return client.post(reverse(name, args=[task.pk]))


def _panel(page: str) -> str:
    start = page.index('id="uploaded-verifier"')
    return page[start : page.index("</section>", start)]


# --- the panel and who may accept -----------------------------------------------------------


def test_the_import_keeps_the_own_verifier_and_its_author(task, author):
    assert task.author == author
    own = ReleaseFile.objects.get(task=task, path=OWN_PATH)
    assert bytes(own.content) == OWN_TEST


def test_the_panel_shows_the_uploaded_test_against_the_generated_one(client, task, auditor):
    panel = _panel(_page(client, auditor, task))
    assert "not accepted" in panel
    assert DIFF_LINE in panel
    assert "<strong>baseline</strong>" in panel
    assert "<strong>ask_human</strong>" not in panel  # only the mode that carries tests/
    assert reverse("verifier-accept", args=[task.pk]) in panel


def test_the_tasks_author_cannot_accept(client, task, author):
    assert _post(client, author, "verifier-accept", task).status_code == 403
    assert not VerifierAcceptance.objects.exists()
    assert reverse("verifier-accept", args=[task.pk]) not in _page(client, author, task)


def test_a_lead_who_authored_the_task_cannot_accept(client, project, lead, tmp_path):
    import_hilbench(project=project, root=_release_copy(tmp_path), actor=lead)
    task = Task.objects.get(project=project)
    assert task.author == lead
    response = _post(client, lead, "verifier-accept", task)
    assert response.status_code == 403
    assert not VerifierAcceptance.objects.exists()
    panel = _panel(_page(client, lead, task))
    assert "not accepted" in panel
    assert reverse("verifier-accept", args=[task.pk]) not in panel


def test_a_reviewer_cannot_accept_nor_withdraw(client, task, reviewer, auditor):
    assert _post(client, reviewer, "verifier-accept", task).status_code == 403
    assert not VerifierAcceptance.objects.exists()
    assert _post(client, auditor, "verifier-accept", task).status_code == 302
    assert _post(client, reviewer, "verifier-withdraw", task).status_code == 403
    assert VerifierAcceptance.objects.count() == 1


def test_an_outsider_does_not_find_the_task(client, task, outsider):
    assert _post(client, outsider, "verifier-accept", task).status_code == 404
    assert _post(client, outsider, "verifier-withdraw", task).status_code == 404
    client.force_login(outsider)
    assert client.get(reverse("task-detail", args=[task.pk])).status_code == 404
    assert not VerifierAcceptance.objects.exists()


def test_an_auditor_accepts_for_the_files_as_they_are_and_withdraws(client, task, auditor):
    response = _post(client, auditor, "verifier-accept", task)
    assert response.status_code == 302
    assert response.url == reverse("task-detail", args=[task.pk])
    acceptance = VerifierAcceptance.objects.get(task=task)
    assert acceptance.accepted_by == auditor
    panel = _panel(_page(client, auditor, task))
    assert "not accepted" not in panel
    assert '<span class="badge ok">accepted</span> by auditor' in panel
    assert reverse("verifier-withdraw", args=[task.pk]) in panel

    # An edit of the uploaded file is a verifier nobody accepted.
    ReleaseFile.objects.filter(task=task, path=OWN_PATH).update(
        content=b"echo 1 > /logs/verifier/reward.txt  # and more\n"
    )
    panel = _panel(_page(client, auditor, task))
    assert "not accepted" in panel
    assert reverse("verifier-accept", args=[task.pk]) in panel
    assert _post(client, auditor, "verifier-accept", task).status_code == 302
    assert VerifierAcceptance.objects.filter(task=task).count() == 2
    assert "not accepted" not in _panel(_page(client, auditor, task))

    assert _post(client, auditor, "verifier-withdraw", task).status_code == 302
    assert not VerifierAcceptance.objects.filter(task=task).exists()
    assert "not accepted" in _panel(_page(client, auditor, task))


def test_a_lead_may_accept_a_task_they_did_not_author(client, task, lead):
    assert _post(client, lead, "verifier-accept", task).status_code == 302
    assert VerifierAcceptance.objects.get(task=task).accepted_by == lead


def test_a_task_without_its_own_tests_has_no_panel_and_nothing_to_accept(
    client, project, author, auditor, tmp_path
):
    upload = tmp_path / "plain"
    shutil.copytree(shared_path("examples", "hilbench", "sql", "sql_0"), upload / "sql_0")
    import_hilbench(project=project, root=upload, actor=author)
    task = Task.objects.get(project=project)
    assert 'id="uploaded-verifier"' not in _page(client, auditor, task)
    assert _post(client, auditor, "verifier-accept", task).status_code == 302
    assert not VerifierAcceptance.objects.exists()


# --- what a run writes over the folder ------------------------------------------------------


def _trial_files(task, *, allow_internet=False, accepted=False) -> dict[str, bytes]:
    snapshot = task_snapshot(task)
    return trial_files(
        snapshot,
        release.export_files(task, snapshot),
        folder="sql_0",
        allow_internet=allow_internet,
        accepted=accepted,
    )


def _score_line(script: bytes) -> str:
    """The wrapper's last line: the reward it writes, and what it records beside."""
    return script.decode().rstrip("\n").splitlines()[-1]


def test_each_mode_gets_the_wrapper_the_generated_verifier_and_the_uploaded_one(task):
    out = _trial_files(task)
    for mode in MODES:
        assert out[f"{mode}/tests/test.sh"] == wrapper(accepted=False)
        assert out[f"{mode}/tests/generated.sh"].startswith(b"#!/usr/bin/env bash")
        assert f"{mode}/task.toml" in out
    assert out["baseline/tests/uploaded/test.sh"] == OWN_TEST
    assert [p for p in out if "/uploaded/" in p] == ["baseline/tests/uploaded/test.sh"]
    assert _score_line(out["baseline/tests/test.sh"]) == 'write "$generated" "$extra"'


def test_accepted_the_wrapper_scores_with_the_uploaded_reward(task):
    out = _trial_files(task, accepted=True)
    assert _score_line(out["baseline/tests/test.sh"]) == 'write "${uploaded:-0}" "$extra"'


@pytest.mark.parametrize("allow_internet", [False, True])
def test_task_toml_is_the_apps_with_the_runs_network_decision(task, allow_internet):
    out = _trial_files(task, allow_internet=allow_internet)
    for mode in MODES:
        config = tomllib.loads(out[f"{mode}/task.toml"].decode())
        assert config["environment"]["allow_internet"] is allow_internet
        assert not config["environment"].get("env")
        assert not config["verifier"].get("env")
    assert not [p for p, content in out.items() if FOLDER_SECRET.encode() in content]
    # The folder's own task.toml did ask for it (the import kept it byte for byte).
    kept = ReleaseFile.objects.get(task=task, path="baseline/task.toml")
    assert FOLDER_SECRET.encode() in bytes(kept.content)


# --- the wrapper, run -----------------------------------------------------------------------


def _run_wrapper(tmp_path, *, accepted: bool, generated: str, uploaded: str | None) -> dict:
    """Run the wrapper in a throwaway container (no network) with ``/tests`` and
    ``/logs/verifier`` from ``tmp_path``; the rewards it leaves, as Harbor would read them
    (``reward.json`` first, else ``reward.txt``)."""
    tests = tmp_path / "tests"
    logs = tmp_path / "verifier"
    for folder in (tests, logs):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir()
    (tests / "test.sh").write_bytes(wrapper(accepted=accepted))
    (tests / "generated.sh").write_text(generated)
    if uploaded is not None:
        (tests / "uploaded").mkdir()
        (tests / "uploaded" / "test.sh").write_text(uploaded)
    for path in (tests, logs):
        path.chmod(0o777)
    # The container's PID 1 is an outer shell, as in a trial (Harbor execs the verifier in
    # a running container): the wrapper is not PID 1.
    command = [
        "docker", "run", "--rm", "--network", "none",
        "--user", f"{os.getuid()}:{os.getgid()}",
        "-v", f"{tests}:/tests:ro", "-v", f"{logs}:/logs/verifier",
        IMAGE, "bash", "-c", "bash /tests/test.sh; true",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if (logs / "reward.json").is_file():
        return json.loads((logs / "reward.json").read_text())
    if (logs / "reward.txt").is_file():
        return {"reward": float((logs / "reward.txt").read_text()), "from": "reward.txt"}
    return {}


@pytest.fixture
def docker():
    docker_or_skip(IMAGE)


ZERO = "echo 0 > /logs/verifier/reward.txt\n"
ONE = "echo 1 > /logs/verifier/reward.txt\n"


@pytest.mark.containers
@pytest.mark.usefixtures("docker")
def test_the_wrapper_scores_with_the_generated_verifier_until_accepted(tmp_path):
    assert _run_wrapper(tmp_path, accepted=False, generated=ZERO, uploaded=ONE) == {
        "reward": 0,
        "generated": 0,
        "uploaded": 1,
    }
    assert _run_wrapper(tmp_path, accepted=True, generated=ZERO, uploaded=ONE) == {
        "reward": 1,
        "generated": 0,
        "uploaded": 1,
    }


@pytest.mark.containers
@pytest.mark.usefixtures("docker")
def test_the_wrapper_without_an_uploaded_verifier(tmp_path):
    assert _run_wrapper(tmp_path, accepted=False, generated=ONE, uploaded=None) == {
        "reward": 1,
        "generated": 1,
    }
    # A generated verifier that writes no reward (no database, say) scores 0.
    assert _run_wrapper(tmp_path, accepted=False, generated="exit 1\n", uploaded=None) == {
        "reward": 0,
        "generated": 0,
    }


@pytest.mark.containers
@pytest.mark.usefixtures("docker")
@pytest.mark.parametrize(
    "garbage",
    [
        "echo '1; rm -rf /' > /logs/verifier/reward.txt\n",
        "echo '$(id)' > /logs/verifier/reward.txt\n",
        "echo '1, \"reward\": 1' > /logs/verifier/reward.txt\n",
        "ln -s /etc/hostname /logs/verifier/reward.txt\n",
    ],
)
@pytest.mark.parametrize("accepted", [False, True])
def test_an_uploaded_reward_that_is_not_a_number_is_left_out(tmp_path, garbage, accepted):
    rewards = _run_wrapper(tmp_path, accepted=accepted, generated=ZERO, uploaded=garbage)
    assert rewards == {"reward": 0, "generated": 0, "uploaded_no_reward": 1}


@pytest.mark.containers
@pytest.mark.usefixtures("docker")
def test_an_uploaded_verifier_cannot_overwrite_the_generated_reward(tmp_path):
    """Not accepted, it runs unprivileged after the generated reward was written: it cannot
    write reward.json (the folder is root's), so its attempt is no reward of its own."""
    uploaded = "echo '{\"reward\": 1}' > /logs/verifier/reward.json\n"
    assert _run_wrapper(tmp_path, accepted=False, generated=ZERO, uploaded=uploaded) == {
        "reward": 0,
        "generated": 0,
        "uploaded_no_reward": 1,
    }


@pytest.mark.containers
@pytest.mark.usefixtures("docker")
def test_an_unaccepted_verifier_cannot_score_by_killing_the_wrapper(tmp_path):
    uploaded = "echo 1 > /logs/verifier/reward.txt\nkill -9 -1\n"
    rewards = _run_wrapper(tmp_path, accepted=False, generated=ZERO, uploaded=uploaded)
    assert rewards.get("reward") == 0, rewards
