"""The sidecars of an exported bundle, run as their Dockerfiles run them: the demo's blocked SQL
task is exported and extracted, and each sidecar starts from its extracted folder with the
working directory, environment and command its Dockerfile declares — the folder standing in
for what ``COPY`` put in the image, a directory standing in for each volume the mode's compose
file mounts on the service — and nothing else but HOST and PORT (loopback, a free port). It is
called with the bundle's own client, ``environment/mcp.py``.

No Docker engine here: that the images build and the containers start is not shown, only that
what the Dockerfiles and the compose file say is enough for the servers to find their data and
to write where the verifier and the harness read.
"""

import json
import shlex
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path, PurePosixPath

import pytest
import yaml
from django.db import transaction

from exchange.bundles import layout
from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services

from .bundle_helpers import export, extract, seed_demo, sql_task, user

pytestmark = pytest.mark.django_db

DOCUMENTATION = [
    "Amounts in the bank's statements are in Czech koruna (CZK).",
    "A district is one of the 77 administrative regions of the Czech Republic.",
]


@pytest.fixture
def task_folder(settings, tmp_path) -> Path:
    """``sql_0`` of a bundle holding the demo's blocked SQL task (three blockers), with a
    little business documentation so that business-info has something to find."""
    project = seed_demo(settings, tmp_path)
    task = sql_task(project)
    with transaction.atomic():
        services.task_touch_environment(
            task=task,
            actor=user("author"),
            expected_version=task.version,
            changes={"business_info": DOCUMENTATION},
        )
    bundle = export(project, tmp_path / "bundle.tar.gz", tasks=[task])
    return extract(bundle, tmp_path / "bundle") / "sql_0"


class Container:
    """What a sidecar's Dockerfile and its compose service declare, with container paths
    mapped onto this machine: each ``COPY`` destination to the folder it copies, each
    volume of the service to a directory (one per named volume, shared like the volume)."""

    def __init__(self, mode: Path, service: str, volumes: Path):
        compose = yaml.safe_load((mode / "environment" / "docker-compose.yaml").read_text())
        spec = compose["services"][service]
        self.folder = (mode / "environment" / spec["build"]["context"]).resolve()
        self.env: dict[str, str] = {}
        self.mapping: dict[str, Path] = {}
        workdir = "/"
        for line in (self.folder / "Dockerfile").read_text().splitlines():
            instruction, _, rest = line.partition(" ")
            if instruction == "WORKDIR":
                workdir = rest
            elif instruction == "ENV":
                key, _, value = rest.partition("=")
                self.env[key] = value
            elif instruction == "COPY" and rest.split()[0] == ".":
                self.mapping[rest.split()[1].rstrip("/")] = self.folder
            elif instruction == "CMD":
                self.command = json.loads(rest)
        for volume in spec.get("volumes", []):
            name, target = volume.split(":")[:2]
            self.mapping[target] = volumes / name
            (volumes / name).mkdir(parents=True, exist_ok=True)
        self.workdir = self.path(workdir)

    def path(self, container_path: str) -> Path:
        """Where a path of the container is here (under the longest mapped prefix)."""
        pure = PurePosixPath(container_path)
        for prefix in sorted(self.mapping, key=len, reverse=True):
            if pure == PurePosixPath(prefix) or PurePosixPath(prefix) in pure.parents:
                return self.mapping[prefix] / pure.relative_to(prefix)
        raise AssertionError(f"{container_path} is neither copied into the image nor a volume")

    def launch(self, port: int):
        """The Dockerfile's CMD in its WORKDIR with its ENV (paths mapped), HOST and PORT."""
        env = {k: str(self.path(v)) if v.startswith("/") else v for k, v in self.env.items()}
        env.update(PATH="/usr/bin:/bin", HOST="127.0.0.1", PORT=str(port))
        program, *args = self.command
        assert program == "python"
        return subprocess.Popen(
            [sys.executable, *(str(self.path(a)) for a in args)],
            cwd=self.workdir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self):
        port = _free_port()
        process = self.launch(port)
        _wait_for(port, process)
        return process, f"http://127.0.0.1:{port}/mcp"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode()) from None
            time.sleep(0.2)
    process.kill()
    raise AssertionError("the sidecar did not start")


def _stop(process) -> None:
    process.terminate()
    process.wait(timeout=10)


def _call(mode: Path, url: str, tool: str, **arguments) -> tuple[int, str]:
    client = mode / "environment" / "mcp.py"
    done = subprocess.run(
        [sys.executable, str(client), url, tool, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.returncode, done.stdout.strip()


def _agent_urls(mode: Path) -> dict[str, str]:
    """Tool -> the address the agent's command calls (setup_tools.py, as the image runs it)."""
    text = (mode / "environment" / "setup_tools.py").read_text()
    line = next(line for line in text.splitlines() if line.startswith("TOOLS = "))
    return {tool: url for _command, url, tool, _keys in json.loads(line.removeprefix("TOOLS = "))}


def _listens_at(container: Container) -> str:
    return f"http://127.0.0.1:{container.env['PORT']}/mcp"


def _artifacts(mode: Path) -> list[dict]:
    return tomllib.loads((mode / "task.toml").read_text())["artifacts"]


def _writable_in_image(container: Container, directory: str) -> bool:
    """The sidecar runs as uid 1000: a directory it writes must be one its Dockerfile makes
    world-writable (a named volume takes that mode when first mounted)."""
    return (
        f"mkdir -p {directory} && chmod 1777 {directory}"
        in (container.folder / "Dockerfile").read_text()
    )


def test_ask_human_answers_from_the_shipped_registry(task_folder, tmp_path):
    mode = task_folder / "ask_human"
    sidecar = Container(mode, "ask-human", tmp_path / "volumes")
    assert _agent_urls(mode)["ask_human"] == _listens_at(sidecar)
    blocker = DEMO_BLOCKERS[0]
    process, url = sidecar.start()
    try:
        code, answer = _call(mode, url, "ask_human", question=blocker["trigger_questions"][0])
        assert (code, answer) == (0, blocker["resolution"])
        code, answer = _call(
            mode, url, "ask_human", question="What is the capital city of Portugal?"
        )
        assert (code, answer) == (0, "irrelevant question")
    finally:
        _stop(process)
    # The metrics reach the shared volume, where the task's artifacts collect them.
    output = sidecar.env["OUTPUT_DIR"]
    assert _writable_in_image(sidecar, output)
    metrics_file = f"{output}/ask_human_metrics.json"
    assert {"source": metrics_file, "service": "ask-human"} in _artifacts(mode)
    metrics = json.loads(sidecar.path(metrics_file).read_text())
    assert metrics["total_questions"] == 2
    assert metrics["blockers_resolved_list"] == [blocker["key"]]


def test_sql_tools_query_the_shipped_database_and_the_verifier_grades_the_submission(
    task_folder, tmp_path
):
    mode = task_folder / "baseline"
    sidecar = Container(mode, "sql-tools", tmp_path / "volumes")
    urls = _agent_urls(mode)
    assert urls["execute_sql"] == urls["submit_sql"] == _listens_at(sidecar)
    gold = (mode / "solution" / "ground_truth.sql").read_text()
    with sqlite3.connect(task_folder / layout.SQL_DATABASE) as db:
        (count,) = db.execute("SELECT COUNT(*) FROM loan").fetchone()
    process, url = sidecar.start()
    try:
        code, rows = _call(mode, url, "execute_sql", query="SELECT COUNT(*) FROM loan")
        assert (code, rows.splitlines()) == (0, ["COUNT(*)", str(count)])
        assert _call(mode, url, "submit_sql", query=gold) == (0, "Submitted.")
    finally:
        _stop(process)

    # task.toml collects the submission from sql-tools at the path it wrote it to.
    source = sidecar.env["SUBMISSION_FILE"]
    assert {"source": source, "service": "sql-tools"} in _artifacts(mode)
    assert _writable_in_image(sidecar, str(PurePosixPath(source).parent))
    assert sidecar.path(source).read_text() == gold
    # The verifier's container: tests/ copied to /tests, the artifact put back at its source
    # path, /logs/verifier mounted; test.sh's command, run with those paths mapped.
    verifier = {"/tests": mode / "tests", source: sidecar.path(source)}
    verifier["/logs/verifier"] = tmp_path / "verifier"
    verifier["/logs/verifier"].mkdir()
    command = next(
        shlex.split(line)
        for line in (mode / "tests" / "test.sh").read_text().splitlines()
        if line.startswith("python3 ")
    )
    assert source in command

    def mapped(argument: str) -> str:
        for prefix, here in verifier.items():
            if argument == prefix or argument.startswith(prefix + "/"):
                return str(here) + argument[len(prefix) :]
        return argument

    subprocess.run([sys.executable, *map(mapped, command[1:])], check=True, timeout=60)
    assert (tmp_path / "verifier" / "reward.txt").read_text().strip() == "1"


def test_business_info_searches_the_shipped_documentation(task_folder, tmp_path):
    mode = task_folder / "full_info"
    sidecar = Container(mode, "business-info", tmp_path / "volumes")
    assert _agent_urls(mode)["get_business_info"] == _listens_at(sidecar)
    process, url = sidecar.start()
    try:
        code, found = _call(
            mode,
            url,
            "get_business_info",
            database_name="retail_bank",
            search_string="administrative regions",
        )
    finally:
        _stop(process)
    assert code == 0 and found.splitlines()[0] == f"- {DOCUMENTATION[1]}"


def test_the_agent_s_client_waits_for_a_sidecar_that_is_not_listening_yet(task_folder, tmp_path):
    # The agent's container starts first: the sidecars join its network namespace.
    mode = task_folder / "full_info"
    sidecar = Container(mode, "business-info", tmp_path / "volumes")
    port = _free_port()
    started = {}

    def late_start():
        time.sleep(3)
        started["process"] = sidecar.launch(port)

    thread = threading.Thread(target=late_start)
    thread.start()
    try:
        code, found = _call(
            mode,
            f"http://127.0.0.1:{port}/mcp",
            "get_business_info",
            database_name="retail_bank",
            search_string="koruna",
        )
    finally:
        thread.join()
        _stop(started["process"])
    assert code == 0 and found == f"- {DOCUMENTATION[0]}"


def test_every_container_of_a_mode_runs_dockers_init_as_pid_1(task_folder):
    """A plain Harbor reads this compose file: with Docker's init as PID 1 a stop's SIGTERM
    ends each container at once (their own PID 1 ignores it, and every stop waited 10 s)."""
    for mode in ("baseline", "ask_human", "full_info"):
        compose = yaml.safe_load(
            (task_folder / mode / "environment" / "docker-compose.yaml").read_text()
        )
        assert {
            name: spec.get("init") for name, spec in compose["services"].items()
        } == dict.fromkeys(compose["services"], True), mode
