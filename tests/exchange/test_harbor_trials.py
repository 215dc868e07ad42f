"""Issue 28: exported bundles run by Harbor itself, in real containers on this machine.

``harbor run`` (Harbor 0.25 in ``.venv-harbor``) with the project's Docker environment for
machines without an image registry (``harbor_agents.environments:OfflineDocker``: a task
without internet gets no network at all) builds each mode's images from the local base image
(``make containers``) and scores Harbor's ``oracle`` 1 and ``nop`` 0 in every mode — the three
modes of a task as one job, three trials at a time. In ``ask_human`` a scripted agent of the
project (``harbor_agents.scripted:AskThenOracle``) asks a registered trigger question and an
unrelated one from inside the agent's container through the ask-human sidecar, probes the
network, then solves: reward 1, the resolution verbatim and ``irrelevant question``, no route
anywhere — not off the machine, not to this host; and the app, reading the trial's ask log
(``import_results`` on Harbor's jobs folder), computes the Ask-F1 the test computes by hand.

Tasks: the demo's blocked SQL and SWE tasks (their oracle and nop runs in every mode, and a
real SWE-bench instance of pytest with planted blockers, are the reference agents' runs of
``test_harbor_runs.py``, which the app drives through the same ``harbor run``); a blocked
SQL task built on a real Spider database; and a task in the
release's own shape (no verifier, prebuilt sidecar images, its database kept elsewhere),
which the export makes runnable and which stops saying what to fetch until its database is
supplied. Every trial is listed in ``var/harbor-trials.md`` (task, mode, agent, reward,
seconds), the table ``docs/quality.md`` shows.
"""

import json
import os
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.validators.conftest import _skip, docker_or_skip

from ..conftest import ROOT
from .bundle_helpers import (
    export,
    extract,
    plant_swe,
    release_shaped_sql,
    release_shaped_swe,
    seed_demo,
    spider_blocked_sql,
    spider_database,
    sql_task,
    standin_release_image,
)

pytestmark = [pytest.mark.django_db, pytest.mark.containers]
HARBOR = ROOT / ".venv-harbor"
MODES = ("baseline", "ask_human", "full_info")
UNRELATED = "What is the capital of France?"
TRIALS: list[dict] = []  # every trial of the session, for var/harbor-trials.md


def _harbor_or_skip():
    if not (HARBOR / ".installed").is_file():
        _skip("no Harbor: `make harbor` (its own Python 3.12 venv, .venv-harbor)")
    if shutil.which("docker") is None:
        _skip("no container engine answers: the docker CLI is not installed (`make containers`)")
    docker_or_skip()


@pytest.fixture(scope="module", autouse=True)
def _trials_table():
    yield
    if not TRIALS:
        return
    from django.conf import settings

    lines = [
        "| task | mode | agent | reward | seconds |",
        "|---|---|---|---|---|",
        *(
            f"| {t['task']} | {t['mode']} | {t['agent']} | {t['reward']} | {t['seconds']:.0f} |"
            for t in TRIALS
        ),
    ]
    (Path(settings.VAR_DIR) / "harbor-trials.md").write_text("\n".join(lines) + "\n")


def _seconds(result: dict) -> float:
    start, end = result.get("started_at"), result.get("finished_at")
    if not start or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def harbor_run(path: Path, jobs: Path, agent: str, *extra: str, label: str = "") -> dict:
    """One job: a mode folder, or a task folder (its three modes, three at a time). Returns
    mode -> {reward, agent (its log folder), exception}."""
    env = {
        **os.environ,
        "DOCKER_CONFIG": str(HARBOR / "docker"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DOCKER_BUILDKIT": "0",
        "PYTHONPATH": str(ROOT),
    }
    before = set(jobs.glob("*")) if jobs.exists() else set()
    command = [
        HARBOR / "bin" / "harbor", "run", "-e", "harbor_agents.environments:OfflineDocker",
        "-p", str(path), "-a", agent, "-o", str(jobs), "--override-cpus", "2", "-n", "3",
        *extra,
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    [job] = set(jobs.glob("*")) - before
    trials = {}
    for result_file in sorted(job.glob("*/result.json")):
        result = json.loads(result_file.read_text())
        mode = Path(result["task_id"]["path"]).name
        rewards = (result.get("verifier_result") or {}).get("rewards") or {}
        exception = result.get("exception_info") or None
        trials[mode] = {
            "reward": rewards.get("reward"),
            "agent": result_file.parent / "agent",
            "exception": exception,
        }
        TRIALS.append(
            {
                "task": label or Path(result["task_id"]["path"]).parent.name,
                "mode": mode,
                "agent": agent.rsplit(":", 1)[-1],
                "reward": rewards.get("reward", "—" if not exception else "stopped"),
                "seconds": _seconds(result),
            }
        )
    assert trials, done.stdout[-4000:] + done.stderr[-2000:]
    return trials


def _oracle_and_nop(task_folder: Path, jobs: Path, label: str) -> None:
    oracle = harbor_run(task_folder, jobs, "oracle", label=label)
    nop = harbor_run(task_folder, jobs, "nop", label=label)
    assert {m: t["reward"] for m, t in oracle.items()} == dict.fromkeys(MODES, 1.0), oracle
    assert {m: t["reward"] for m, t in nop.items()} == dict.fromkeys(MODES, 0.0), nop


def _ask(folder: Path, jobs: Path, questions: list[str], label: str, probes=()) -> dict:
    extra = ["--ak", f"task_dir={folder}", "--ak", "questions=" + json.dumps(questions)]
    if probes:
        extra += ["--ak", "probes=" + json.dumps(list(probes))]
    [trial] = harbor_run(
        folder, jobs, "harbor_agents.scripted:AskThenOracle", *extra, label=label
    ).values()
    return trial


def _ask_f1_by_hand(*, asked: int, resolved: int, blockers: int) -> float:
    precision, recall = resolved / asked, resolved / blockers
    return 2 * precision * recall / (precision + recall)


def _app_ask_f1(project, lead, jobs: Path, agent: str) -> float:
    """The app's Ask-F1 of ``agent``'s passes, from Harbor's jobs folder imported."""
    from evaluation.models import EvaluationRun
    from evaluation.selectors import mode_summary, project_passes

    call_command("import_results", str(jobs), project=project.slug, username=lead.username,
                 wait=True)  # fmt: skip
    run = EvaluationRun.objects.get(project=project, model_name=agent)
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error
    rows = [r for r in project_passes(project=project) if r.run_id == run.pk]
    return mode_summary(rows=[r for r in rows if r.mode == "ask_human"])["ask_f1"]


@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_the_ask_human_sidecar_answers_in_a_real_trial_and_nothing_is_reachable(
    settings, tmp_path, domain
):
    _harbor_or_skip()
    project = seed_demo(settings, tmp_path)
    task = sql_task(project) if domain == "sql" else plant_swe(project, tmp_path)
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=[task]), tmp_path / "bundle")
    jobs = tmp_path / "jobs"
    label = f"demo {domain} ({task.source_id})"
    # Harbor's oracle and nop on these bundles in every mode: the reference agents' runs
    # of tests/exchange/test_harbor_runs.py (the app drives the same `harbor run`).
    folder = root / f"{domain}_0" / "ask_human"
    registry = json.loads(
        (folder / "environment/sidecars/ask-human/blocker_registry.json").read_text()
    )
    blocker = registry["blockers"][0]
    question = blocker["example_questions"][0]
    trial = _ask(
        folder,
        jobs,
        [question, UNRELATED],
        label,
        probes=["pypi.org:443", "1.1.1.1:53", "172.17.0.1:8000"],
    )
    assert trial["reward"] == 1.0
    answers = json.loads((trial["agent"] / "answers.json").read_text())
    assert [a["answer"] for a in answers] == [blocker["resolution"], "irrelevant question"]
    network = json.loads((trial["agent"] / "network.json").read_text())
    assert network and all(v.startswith("refused") for v in network.values()), network
    assert "Network is unreachable" in network["1.1.1.1:53"]
    assert "Network is unreachable" in network["172.17.0.1:8000"]  # not even this host

    # The app reads the trial's ask log: one of two questions resolves one blocker.
    lead = project.memberships.filter(role="lead").first().user
    expected = _ask_f1_by_hand(asked=2, resolved=1, blockers=len(registry["blockers"]))
    assert _app_ask_f1(project, lead, jobs, "hilbench-ask-then-oracle") == pytest.approx(expected)


@pytest.mark.shared_data
def test_a_blocked_task_on_a_real_spider_database_runs_in_every_mode(
    project, author, lead, tmp_path
):
    _harbor_or_skip()
    task = spider_blocked_sql(project, author, tmp_path)
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=[task]), tmp_path / "bundle")
    jobs = tmp_path / "jobs"
    label = f"Spider {task.source_id}, 1 blocker"
    _oracle_and_nop(root / "sql_0", jobs, label)
    folder = root / "sql_0" / "ask_human"
    blocker = task.blockers.get()
    trial = _ask(folder, jobs, [blocker.trigger_questions.first().text, UNRELATED], label)
    assert trial["reward"] == 1.0
    answers = json.loads((trial["agent"] / "answers.json").read_text())
    assert [a["answer"] for a in answers] == [blocker.resolution, "irrelevant question"]
    expected = _ask_f1_by_hand(asked=2, resolved=1, blockers=1)
    assert _app_ask_f1(project, lead, jobs, "hilbench-ask-then-oracle") == pytest.approx(expected)


@pytest.mark.shared_data
def test_a_release_task_runs_once_its_database_is_supplied(project, lead, tmp_path):
    """A task folder in the release's shape (sql_10's files over a real Spider database):
    imported, exported with the verifier and sidecar contexts the app adds. Without its
    database the trial stops with the bundle's sentence; with it, the generated verifier
    scores the oracle 1 and the no-op 0, and the release's own ``ask_human`` command reaches
    the app's ask-human sidecar."""
    _harbor_or_skip()
    source = release_shaped_sql(tmp_path / "release")
    call_command("import_hilbench", str(source / "sql"), project=project.slug)
    from hilbench_annotate.models import Task

    task = Task.objects.get(project=project)
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=[task]), tmp_path / "bundle")
    folder, jobs = root / "sql_10", tmp_path / "jobs"
    label = "release-shaped sql_10 on Spider concert_singer"

    [stopped] = harbor_run(folder / "full_info", jobs, "oracle", label=label).values()
    assert stopped["reward"] is None and stopped["exception"]["exception_type"] == "MissingData"
    message = stopped["exception"]["exception_message"]
    assert "public_sql_10/concert_singer.sqlite" in message
    assert "Fetch it to shared/data/database.sqlite" in message

    shutil.copyfile(spider_database("concert_singer"), folder / "shared/data/database.sqlite")
    _oracle_and_nop(folder, jobs, label)
    registry = json.loads((folder / "shared/ask-human-data/blocker_registry.json").read_text())
    blocker = registry["blockers"][0]
    trial = _ask(folder / "ask_human", jobs, [blocker["example_questions"][0], UNRELATED], label)
    assert trial["reward"] == 1.0
    answers = json.loads((trial["agent"] / "answers.json").read_text())
    assert [a["answer"] for a in answers] == [blocker["resolution"], "irrelevant question"]


@pytest.mark.shared_data
def test_a_release_swe_task_runs_its_own_tests_once_its_image_is_loaded(project, lead, tmp_path):
    """The release's SWE tasks run in a prebuilt image (its repository, run script and parser
    at /root): the project's release-shaped fixture, whose image a stand-in built here
    replaces. Without the image the trial stops saying what to load; with it, the generated
    verifier runs the task's own test command and scores the oracle 1, the no-op 0."""
    _harbor_or_skip()
    import subprocess

    source, image = release_shaped_swe(tmp_path / "release")
    subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)
    call_command("import_hilbench", str(source / "swe"), project=project.slug)
    from hilbench_annotate.models import Task

    task = Task.objects.get(project=project)
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=[task]), tmp_path / "bundle")
    folder, jobs = root / "swe_0", tmp_path / "jobs"
    label = "release-shaped swe_0 (fixture/textkit, sweap_json)"
    [stopped] = harbor_run(folder / "full_info", jobs, "oracle", label=label).values()
    assert stopped["exception"]["exception_type"] == "MissingData"
    assert f"no image {image}" in stopped["exception"]["exception_message"]
    assert "docker load" in stopped["exception"]["exception_message"]
    try:
        standin_release_image(tmp_path, image)
        _oracle_and_nop(folder, jobs, label)
    finally:
        subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)
