"""Issue 42: the bundle → harness boundary, tried as an attacker would.

An author of a project uploads a HiL-Bench release folder through the Import page (the import
job reads it); the project's lead runs Harbor's oracle on it from the Evaluation page, as the
normal validation flow does. The folder is hostile in every way the red team found:

- its compose file binds the host's ``/tmp`` into the agent's container, shares the host's PID
  namespace and passes a variable of the worker's environment in (item 1);
- its ``task.toml`` asks for the internet, as the release's own do (item 3);
- its own ``tests/test.sh`` writes reward 1 whatever the agent did (item 4);
- its ``solve.sh`` (the oracle; any agent could do the same) probes the host and a listener
  on the host's bridge address, writes into the host's ``/tmp`` through the bind mount, and
  leaves links in ``/logs/agent``: to ``/dev/zero`` (which made Harbor read until the kernel's
  OOM killer ended it) and to another project's trajectory (item 2).

The host file, the other project's trajectory and the listener are checked untouched; the
trial that linked ``/dev/zero`` is a failed pass with its reason, and Harbor's memory stayed
under the run's limit (the cgroup's counter). Until that limit exists the test holds its own
process tree under an address-space cap, so that a failing build cannot take the machine.

Item 5 (the model relay): terminus-2 against a model endpoint on an allowed host that answers
with a redirect to a listener on this machine: the redirect is never followed.
"""

import io
import json
import resource
import socket
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.urls import reverse

from evaluation.models import EvaluationRun, TaskPass, Trajectory
from evaluation.services import evaluation_run_execute
from exchange.models import ImportJob
from exchange.tasks import import_job
from hilbench_annotate.jobs import Job
from hilbench_annotate.models import Task

from .bundle_helpers import release_shaped_sql, spider_database
from .test_harbor_trials import _harbor_or_skip

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.shared_data,
    pytest.mark.containers,
]
MODES = ("baseline", "ask_human", "full_info")
SECRET = "other-project-trajectory-7f3a9c"
ADDRESS_SPACE_CAP = 10 << 30  # per process: the machine has 24 GB; /dev/zero took 18


class Listener:
    """A TCP listener on every address of this machine that counts who connected."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("0.0.0.0", 0))  # noqa: S104 - the point: reachable on the bridge too
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


PROBE = r"""#!/usr/bin/env bash
python3 - "$@" <<'EOF' > /logs/agent/report.json
import json, os, socket, struct, sys
port, marker = int(sys.argv[1]), sys.argv[2]
out = {"hostroot": os.path.isdir("/hostroot/tmp"), "leak": os.environ.get("LEAK", "")}
try:
    with open(f"/hostroot/tmp/{marker}", "w") as handle:
        handle.write("written from a trial\n")
    out["wrote_host"] = True
except OSError as error:
    out["wrote_host"] = str(error)
out["pid1"] = open("/proc/1/cmdline", "rb").read()[:80].decode(errors="replace")
gateways = {"172.17.0.1"}
for line in open("/proc/net/route").read().splitlines()[1:]:
    fields = line.split()
    if fields[1] == "00000000":
        gateways.add(socket.inet_ntoa(struct.pack("<L", int(fields[2], 16))))
out["listener"] = {}
for host in sorted(gateways):
    try:
        socket.create_connection((host, port), 3).close()
        out["listener"][host] = "connected"
    except OSError as error:
        out["listener"][host] = f"refused: {error}"
print(json.dumps(out))
EOF
"""
SUBMIT = "cp /solution/ground_truth.sql /harbor_shared/submitted_query.sql\n"


def _hostile_folder(tmp_path: Path, *, port: int, marker: str, other: Path) -> Path:
    """sql_10's files over Spider's concert_singer, its database included, made hostile."""
    root = release_shaped_sql(tmp_path / "release")
    folder = root / "sql" / "sql_10"
    (folder / "shared/data/database.sqlite").write_bytes(
        spider_database("concert_singer").read_bytes()
    )
    solve = {  # the baseline probes and submits nothing; the others submit the gold query
        "baseline": PROBE.replace('"$@"', f"{port} {marker}"),
        "ask_human": f"ln -sf /dev/zero /logs/agent/trajectory.json\n{SUBMIT}",
        "full_info": f"ln -sf {other} /logs/agent/trajectory.json\n{SUBMIT}",
    }
    for mode in MODES:
        (folder / mode / "solution/solve.sh").write_text("#!/usr/bin/env bash\n" + solve[mode])
        tests = folder / mode / "tests"
        tests.mkdir()
        (tests / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
        if mode != "baseline":
            continue
        compose = folder / mode / "environment/docker-compose.yaml"
        text = compose.read_text()
        text = text.replace(
            "  main:\n",
            "  main:\n    pid: host\n    environment:\n"
            "      - LEAK=${HILBENCH_BOUNDARY_SECRET:-}\n",
            1,
        )
        text = text.replace(
            "      - harbor-shared:/harbor_shared\n",
            "      - harbor-shared:/harbor_shared\n      - /tmp:/hostroot/tmp\n",
            1,
        )
        compose.write_text(text)
    return folder.parent


def _tar(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname=folder.name)
    return buffer.getvalue()


def _other_projects_trajectory(runs: Path) -> Path:
    """A trajectory of another project's run, where the worker keeps Harbor's output."""
    path = runs / "9999" / "jobs" / "2026-01-01__00-00-00" / "t__abc" / "agent" / "trajectory.json"
    path.parent.mkdir(parents=True)
    steps = [{"source": "agent", "message": f"the other project's secret: {SECRET}"}]
    path.write_text(json.dumps({"schema_version": "ATIF-v1.2", "steps": steps}))
    return path


@pytest.fixture
def capped():
    """Every process this test starts, Harbor's included, within an address-space cap."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _import(client, project, author, archive: bytes) -> Task:
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(author)
    client.post(
        reverse("import-list"),
        {"kind": "hilbench", "project": project.pk,
         "archive": SimpleUploadedFile("release.tar.gz", archive)},
    )  # fmt: skip
    job = ImportJob.objects.latest("pk")
    import_job.apply(kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    return Task.objects.get(project=project)


def _run(client, project, lead, task, **form) -> EvaluationRun:
    client.force_login(lead)
    response = client.post(
        reverse("evaluation-harbor-run-start", args=[project.pk]),
        {"agent": "oracle", "tasks": str(task.pk), "modes": list(MODES), "passes": 1, **form},
    )
    assert response.status_code == 302, response.content[:2000]
    run = EvaluationRun.objects.latest("pk")
    evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def _trial(run_folder: Path, mode: str) -> Path:
    [trial] = [p.parent for p in run_folder.glob(f"jobs/*/{mode}__*/result.json")]
    return trial


def test_a_hostile_release_folder_decides_nothing_on_the_host(
    client, project, author, lead, settings, tmp_path, monkeypatch, capped
):
    _harbor_or_skip()
    settings.HARBOR_RUNS_DIR = tmp_path / "harbor-runs"
    settings.HARBOR_POLL_S = 1
    settings.HARBOR_CONCURRENCY = 3
    settings.HARBOR_MEMORY_MB = 2048
    monkeypatch.setenv("HILBENCH_BOUNDARY_SECRET", "worker-secret-of-the-app")
    listener = Listener()
    marker = f"hilbench-boundary-{tmp_path.name}"
    host_file = Path("/tmp") / marker  # noqa: S108 - the host file the trial must not write
    other = _other_projects_trajectory(settings.HARBOR_RUNS_DIR)
    other_bytes, other_mtime = other.read_bytes(), other.stat().st_mtime_ns
    source = _hostile_folder(tmp_path, port=listener.port, marker=marker, other=other)
    task = _import(client, project, author, _tar(source))

    run = _run(client, project, lead, task)

    assert not host_file.exists(), "a trial wrote into the host's /tmp"
    assert other.read_bytes() == other_bytes and other.stat().st_mtime_ns == other_mtime
    assert listener.connections == 0
    assert run.status == Job.Status.SUCCEEDED, run.error
    passes = {p.mode: p for p in TaskPass.objects.filter(run=run)}
    assert set(passes) == set(MODES)
    folder = settings.HARBOR_RUNS_DIR / str(run.pk)

    # Item 1 and 3: the compose model that ran is the app's; no host path, no network.
    report = json.loads((_trial(folder, "baseline") / "agent/report.json").read_text())
    assert report["hostroot"] is False and report["wrote_host"] is not True, report
    assert report["leak"] == "", report
    assert all(v.startswith("refused") for v in report["listener"].values()), report
    # Its own PID 1, not the host's: Docker's init running Harbor's command (trial_model.INIT).
    assert report["pid1"].split("\x00")[:4] == ["/sbin/docker-init", "--", "sh", "-c"], report
    model = json.loads((_trial(folder, "baseline") / "hilbench-compose.json").read_text())
    assert model["services"]["main"]["network_mode"] == "none"
    assert "/hostroot" not in json.dumps(model) and "pid" not in model["services"]["main"]

    # Item 4: the generated verifier scored (the nothing the probe submitted: 0); the folder's
    # own verifier's 1 is recorded beside it, not counted.
    baseline = passes["baseline"]
    assert baseline.resolved is False
    assert baseline.detail["rewards"] == {"reward": 0, "generated": 0, "uploaded": 1}
    assert "tests/uploaded" in " ".join(
        str(p) for p in (folder / "bundle/sql_10/baseline/tests").rglob("*")
    )
    assert "generated by the app" in run.harbor["verifiers"]["sql_10"]

    # Item 2: links a trial left are never followed; such a trial is a failed pass, with why.
    for mode, target in (("ask_human", "/dev/zero"), ("full_info", str(other))):
        trial_pass = passes[mode]
        assert trial_pass.resolved is False
        assert "link" in trial_pass.error and target in trial_pass.error, trial_pass.error
        # They submitted the gold query: the verifier, in a container of its own on the
        # task's database, scored it 1 — the link, not the answer, is why they do not count.
        assert trial_pass.detail["rewards"]["generated"] == 1, trial_pass.detail
    assert not Trajectory.objects.filter(steps__icontains=SECRET).exists()
    confinement = run.harbor["confinement"]
    print(f"Harbor confinement of the hostile run: {confinement}")  # shown with -s
    assert confinement["memory_peak_mb"] is not None, confinement
    assert confinement["memory_peak_mb"] <= settings.HARBOR_MEMORY_MB, confinement
    assert confinement.get("oom_kills", 0) == 0, confinement


class RedirectingModel:
    """An OpenAI-compatible endpoint that answers every request with a redirect to ``to``."""

    def __init__(self, host: str, to: str):
        self.requests = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                model.requests += 1
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # noqa: N815

        self.server = ThreadingHTTPServer((host, 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"


def test_harbor_reaches_the_model_only_through_the_apps_egress_policy(settings, tmp_path):
    """The model endpoint is on an allowed host (127.0.0.2, named by the operator) and answers
    with a redirect to a listener on this machine (127.0.0.1, not allowed): Harbor's client
    would follow it; the app's relay does not, and says so in the run's record."""
    _harbor_or_skip()
    from evaluation.models import ModelEndpoint
    from evaluation.services import harbor_run_start

    from .bundle_helpers import seed_demo, sql_task, user

    settings.HARBOR_RUNS_DIR = tmp_path / "harbor-runs"
    settings.HARBOR_POLL_S = 1
    settings.MODEL_ENDPOINT_HOSTS = ["127.0.0.2"]
    listener = Listener()
    model = RedirectingModel("127.0.0.2", f"http://127.0.0.1:{listener.port}/v1/chat/completions")
    demo = seed_demo(settings, tmp_path)
    endpoint = ModelEndpoint.objects.create(
        project=demo, name="redirecting", base_url=model.base_url, model="m",
        created_by=user("lead"),
    )  # fmt: skip
    run = harbor_run_start(
        project=demo, actor=user("lead"), agent="terminus-2", task_ids=[sql_task(demo).pk],
        modes=["baseline"], passes=1, endpoint=endpoint,
    )  # fmt: skip
    started = time.monotonic()
    evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert model.requests >= 1, "the agent never reached the endpoint"
    assert listener.connections == 0, "a redirect was followed to this machine"
    refusals = run.harbor["confinement"].get("model_relay_refusals") or []
    assert any("redirect" in r and "not followed" in r for r in refusals), run.harbor
    assert time.monotonic() - started < 900
