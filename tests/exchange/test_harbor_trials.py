"""Issue 28: exported bundles run by Harbor itself, in real containers on this machine.

``harbor run`` (Harbor 0.25 in ``.venv-harbor``) with the project's Docker environment for
machines without an image registry (``harbor_agents.environments:OfflineDocker``: a task
without internet gets no network at all) builds each mode's images from the local base image
(``make containers``) and scores Harbor's ``oracle`` 1 and ``nop`` 0 in every mode. In
``ask_human`` a scripted agent of the project (``harbor_agents.scripted:AskThenOracle``) asks a
registered trigger question and an unrelated one from inside the agent's container through
the ask-human sidecar, probes the network, then solves: reward 1, the resolution verbatim and
``irrelevant question``, no route anywhere — not off the machine, not to this host.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.validators.conftest import docker_or_skip

from ..conftest import ROOT
from .bundle_helpers import export, extract, plant_swe, seed_demo, sql_task

pytestmark = pytest.mark.django_db
HARBOR = ROOT / ".venv-harbor"
MODES = ("baseline", "ask_human", "full_info")
UNRELATED = "What is the capital of France?"


def _harbor_or_skip():
    if not (HARBOR / ".installed").is_file() or shutil.which("docker") is None:
        pytest.skip("no container engine answers with Harbor: `make harbor` and `make containers`")
    docker_or_skip()


def harbor_run(folder: Path, jobs: Path, agent: str, *extra: str) -> dict:
    """One trial; its reward and the agent's log folder."""
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
        "-p", str(folder), "-a", agent, "-o", str(jobs), "--override-cpus", "2", *extra,
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    [job] = set(jobs.glob("*")) - before
    rewards = list(job.glob("*/verifier/reward.txt"))
    assert rewards, done.stdout[-4000:] + done.stderr[-2000:]
    [trial] = [r.parent.parent for r in rewards]
    return {"reward": float(rewards[0].read_text().strip()), "agent": trial / "agent"}


@pytest.mark.parametrize("domain", ["sql", "swe"])
def test_the_demo_bundles_score_oracle_1_and_nop_0_in_every_mode(settings, tmp_path, domain):
    _harbor_or_skip()
    project = seed_demo(settings, tmp_path)
    task = sql_task(project) if domain == "sql" else plant_swe(project, tmp_path)
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=[task]), tmp_path / "bundle")
    jobs = tmp_path / "jobs"
    folder = f"{domain}_0"
    for mode in MODES:
        assert harbor_run(root / folder / mode, jobs, "oracle")["reward"] == 1.0, mode
        assert harbor_run(root / folder / mode, jobs, "nop")["reward"] == 0.0, mode

    folder = root / folder / "ask_human"
    registry = json.loads(
        (folder / "environment/sidecars/ask-human/blocker_registry.json").read_text()
    )
    blocker = registry["blockers"][0]
    question = blocker["example_questions"][0]
    trial = harbor_run(
        folder,
        jobs,
        "harbor_agents.scripted:AskThenOracle",
        "--ak", f"task_dir={folder}",
        "--ak", "questions=" + json.dumps([question, UNRELATED]),
        "--ak", 'probes=["pypi.org:443", "1.1.1.1:53", "172.17.0.1:8000"]',
    )  # fmt: skip
    assert trial["reward"] == 1.0
    answers = json.loads((trial["agent"] / "answers.json").read_text())
    assert [a["answer"] for a in answers] == [blocker["resolution"], "irrelevant question"]
    network = json.loads((trial["agent"] / "network.json").read_text())
    assert network and all(v.startswith("refused") for v in network.values()), network
    assert "Network is unreachable" in network["1.1.1.1:53"]
    assert "Network is unreachable" in network["172.17.0.1:8000"]  # not even this host


@pytest.mark.shared_data
def test_a_real_swebench_instance_made_a_hil_task_runs_in_every_mode(
    project, author, lead, tmp_path
):
    """pytest-dev__pytest-7432 of ../shared/data/swe-bench, blockers planted by the test, its
    image built from the local python:3.9-slim (SWE-bench's pin; `make containers`)."""
    _harbor_or_skip()
    from django.db import transaction

    from exchange.importers import import_swebench
    from hilbench_annotate import services
    from hilbench_annotate.models import Task
    from tests.conftest import shared_path

    data = shared_path("data", "swe-bench")
    records = [json.loads(line) for line in (data / "pytest-instances.jsonl").open()]
    chosen = tmp_path / "instance.jsonl"
    chosen.write_text(
        "".join(json.dumps(r) + "\n" for r in records if r["instance_id"].endswith("-7432"))
    )
    import_swebench(project=project, instances=chosen, repo=str(data / "pytest-dev__pytest.bundle"))
    task = Task.objects.get(project=project, source_id="pytest-dev__pytest-7432")
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        services.blocker_create(
            task=task,
            actor=author,
            expected_version=task.version,
            key="skip_location_with_runxfail",
            type="missing parameters",
            description="The report does not say which location a skipped test should show "
            "when --runxfail is given.",
            resolution="The skip is reported at the test's own location, as without "
            "--runxfail; --runxfail only changes how xfail is handled.",
            trigger_questions=[
                "Which location should a skip report show when --runxfail is used?",
                "Should --runxfail change where skipped tests are reported?",
                "What location does a skipped test report under --runxfail?",
            ],
        )
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=[task]), tmp_path / "bundle")
    jobs = tmp_path / "jobs"
    for mode in MODES:
        assert harbor_run(root / "swe_0" / mode, jobs, "oracle")["reward"] == 1.0, mode
        assert harbor_run(root / "swe_0" / mode, jobs, "nop")["reward"] == 0.0, mode
