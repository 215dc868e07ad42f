"""What Harbor 0.25 would make of an exported task, from Harbor's own code
(``scripts/harbor_model.py``, run with Harbor's Python): its task loader, its trial network
plan and the compose files its Docker environment merges, and where its artifact handler puts
the agent's work for the separate verifier. With ``allow_internet = false`` Harbor puts every
service without networking of its own into its egress proxy's namespace; there the agent must
still reach each sidecar at the address its commands and task.toml name (and under the public
policy too), and test.sh must read the submission where Harbor puts it. Needs
``.venv-harbor`` (``make harbor-check`` sets it up) and the ``docker`` command-line client (no
engine: ``docker compose config`` only reads files).
"""

import os
import shutil
import subprocess

import pytest

from ..conftest import ROOT
from .bundle_helpers import export, extract, plant_swe, seed_demo, sql_task

pytestmark = pytest.mark.django_db
HARBOR = ROOT / ".venv-harbor"
MODES = ("baseline", "ask_human", "full_info")


# Worded as the skip summary groups them (tests/skipsummary.py): Harbor's venv, or Docker.
@pytest.mark.skipif(
    not (HARBOR / ".installed").is_file(),
    reason="no Harbor in .venv-harbor (`make harbor`): Harbor's checks run this",
)
@pytest.mark.skipif(
    shutil.which("docker") is None,
    reason="no container engine answers (no docker client): Harbor's checks need it",
)
def test_the_agent_reaches_every_sidecar_in_the_network_harbor_makes(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    tasks = [sql_task(project), plant_swe(project, tmp_path)]
    root = extract(export(project, tmp_path / "b.tar.gz", tasks=tasks), tmp_path / "bundle")
    folders = [f"{task}/{mode}" for task in ("sql_0", "swe_0") for mode in MODES]
    done = subprocess.run(
        [HARBOR / "bin" / "python", ROOT / "scripts" / "harbor_model.py", *folders],
        cwd=root,
        env={**os.environ, "DOCKER_CONFIG": str(HARBOR / "docker")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    # Each folder under the task's own policy (no internet) and the public one.
    assert len(lines) == 2 * len(folders)
    assert "sql_0/ask_human [no-network]: 3 address(es) reach their sidecars" in lines
    assert "swe_0/ask_human [no-network]: 1 address(es) reach their sidecars" in lines
