"""A task's modes build their images one after another (``harbor_agents.environments``
``_BuildLocks``): Harbor serialises the builds of one mode folder's name only, so the three
modes of a task, started together, each built the same layers at once and none reused the
others' (a SWE-bench task with nothing cached: three builds of its dependencies, 120-140 s
each on two cores). The environments are made by Harbor's own Python from an exported bundle,
as a ``harbor run`` makes them; nothing is built here."""

import json
import subprocess
import tarfile

import pytest

from .test_harbor_trials import HARBOR, _harbor_or_skip

pytestmark = [pytest.mark.containers, pytest.mark.django_db]

LOCKS = """
import asyncio, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths
from harbor_agents.environments import OfflineDocker

locks = {}
for folder in sorted(Path(sys.argv[2]).glob("*_*/*/environment")):
    name = f"{folder.parent.parent.name}__{folder.parent.name}"
    environment = OfflineDocker(
        folder, environment_name=name, session_id=name,
        trial_paths=TrialPaths(Path(tempfile.mkdtemp())), task_env_config=EnvironmentConfig(),
    )
    lock = environment._image_build_locks.setdefault(environment.environment_name, asyncio.Lock())
    locks[name] = id(lock)
print(json.dumps(locks))
"""


def test_a_tasks_modes_share_one_build_lock_and_tasks_build_side_by_side(
    demo_sql_swe_bundle, tmp_path
):
    _harbor_or_skip()
    from django.conf import settings

    with tarfile.open(demo_sql_swe_bundle.path) as bundle:
        bundle.extractall(tmp_path / "bundle", filter="data")
    root = tmp_path / "bundle"
    done = subprocess.run(
        [str(HARBOR / "bin" / "python"), "-c", LOCKS, str(settings.BASE_DIR), str(root)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    locks = json.loads(done.stdout.strip().splitlines()[-1])
    modes = ("ask_human", "baseline", "full_info")
    by_task = {task: {locks[f"{task}__{mode}"] for mode in modes} for task in ("sql_0", "swe_0")}
    assert len(locks) == 6, locks
    assert all(len(ids) == 1 for ids in by_task.values()), by_task  # one lock per task
    assert by_task["sql_0"] != by_task["swe_0"]  # two tasks still build side by side
