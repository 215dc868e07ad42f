"""The compose model of a trial (``harbor_agents/trial_model.py``): made from the project's
template, never from the task folder's own ``docker-compose.yaml``.

Task folders are built here in ``tmp_path`` in the three shapes Harbor is handed: a mode
folder the app wrote (sidecar build contexts in ``environment/sidecars/``), a folder kept from
the release (``shared/sidecars``, ``shared/data``, ``shared/ask-human-data``) and a release
SWE folder whose agent image is prebuilt.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harbor_agents import trial_model
from harbor_agents.trial_model import TrialModelError, compose_model, facts

SIDECARS = ("sql-tools", "business-info", "ask-human")
MODES = ("baseline", "ask_human", "full_info")

HOSTILE_COMPOSE = """\
services:
  main:
    privileged: true
    pid: host
    network_mode: host
    cap_add: [SYS_ADMIN]
    volumes:
      - /:/hostroot
      - /var/run/docker.sock:/var/run/docker.sock
    environment:
      - LEAK=${SECRET}
    build:
      context: /
      network: host
  sql-tools:
    image: attacker/sql-tools:latest
    privileged: true
"""
# Strings of the hostile compose that must not reach the model (JSON-quoted where the bare
# word is also one of the template's own: "pids_limit", "extra_hosts").
HOSTILE_STRINGS = (
    "/hostroot",
    "privileged",
    '"pid"',
    '"host"',
    "${SECRET}",
    "SECRET",
    "SYS_ADMIN",
    "docker.sock",
    "attacker",
    "LEAK",
)


def _write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def app_folder(root: Path) -> Path:
    """``sql_0/ask_human/environment`` as the app writes it: each sidecar's build context
    inside the environment folder."""
    env = root / "sql_0" / "ask_human" / "environment"
    _write(env / "Dockerfile", "FROM hilbench-env:abc\n")
    for name in SIDECARS:
        _write(env / "sidecars" / name / "Dockerfile", f"FROM python:3.11-slim\n# {name}\n")
        _write(env / "sidecars" / name / "server.py", f"print('{name}')\n")
    return env


def release_folder(root: Path, name: str = "sql_10", *, compose: str = "services: {}\n") -> Path:
    """A SQL task kept from the release, with the contexts the app's export adds."""
    task = root / name
    for mode in MODES:
        _write(task / mode / "environment" / "Dockerfile", "FROM python:3.11-slim\n")
        _write(task / mode / "environment" / "docker-compose.yaml", compose)
        _write(task / mode / "task.toml", '[metadata]\ntask_type = "sql"\n')
    _write(task / "shared" / "data" / "financial.sqlite", "not really a database")
    _write(task / "shared" / "ask-human-data" / "blocker_registry.json", '{"blockers": []}')
    for sidecar in SIDECARS:
        _write(task / "shared" / "sidecars" / sidecar / "Dockerfile", "FROM python:3.11-slim\n")
        _write(task / "shared" / "sidecars" / sidecar / "app.py", f"# {sidecar}\n")
    return task


def swe_folder(root: Path) -> Path:
    task = root / "swe_0"
    for mode in MODES:
        _write(task / mode / "environment" / "Dockerfile", "FROM hilbench-swe:abc123\nRUN true\n")
        _write(task / mode / "task.toml", '[metadata]\ntask_type = "swe"\n')
    _write(task / "shared" / "sidecars" / "ask-human" / "Dockerfile", "FROM python:3.11-slim\n")
    _write(task / "shared" / "ask-human-data" / "blocker_registry.json", '{"blockers": []}')
    return task


def _bind(volume: str) -> tuple[Path, str, str]:
    source, target, flags = volume.split(":")
    return Path(source), target, flags


# --- the app's own folders ------------------------------------------------------------------


def test_app_folder_sidecars_share_the_agents_network_namespace_and_nothing_else(tmp_path):
    env = app_folder(tmp_path)
    found = facts(env)
    assert found.layout == "app"
    assert found.mode == "ask_human"
    assert set(found.sidecars) == set(SIDECARS)

    model = compose_model(found, internet=False)
    main = model["services"]["main"]
    assert main["network_mode"] == "none"
    assert "extra_hosts" not in main
    assert set(model["services"]) == {"main", *SIDECARS}
    for name in SIDECARS:
        service = model["services"][name]
        assert service["network_mode"] == "service:main"
        assert service["environment"]["HOST"] == "127.0.0.1"
        assert service["build"] == {
            "context": str(env / "sidecars" / name),
            "labels": dict([trial_model.BUILT_BY]),  # an image the app built says so
        }
        assert service["image"].startswith(f"hilbench-sidecar/{name}:")
    for name, service in model["services"].items():
        assert "no-new-privileges:true" in service["security_opt"], name
        assert service["pids_limit"] > 0, name
        # Docker's init as PID 1: a stop's SIGTERM ends the container, no 10 s grace wait.
        assert service["init"] is True, name


def test_internet_is_the_runs_decision_and_sidecars_stay_on_loopback(tmp_path):
    env = app_folder(tmp_path)
    model = compose_model(facts(env), internet=True)
    assert "network_mode" not in model["services"]["main"]
    for name in SIDECARS:
        assert model["services"][name]["network_mode"] == "service:main"


def test_a_verifiers_tests_folder_is_plain_and_never_online(tmp_path):
    task = release_folder(tmp_path)
    tests = task / "baseline" / "tests"
    _write(tests / "test.sh", "echo 1 > /logs/verifier/reward.txt\n")
    _write(tests / "docker-compose.yaml", HOSTILE_COMPOSE)

    found = facts(tests)
    assert found.layout == "plain"
    assert found.sidecars == {}
    model = compose_model(found, internet=True)
    data = (task / "shared" / "data").resolve()
    # The release task's data, read-only: the generated verifier runs the submitted query on
    # /data/database.sqlite. Nothing else, and no network whatever the run allowed.
    assert model == {
        "services": {
            "main": {
                "pids_limit": trial_model.PIDS_LIMIT,
                "security_opt": ["no-new-privileges:true"],
                "init": True,
                "network_mode": "none",
                "volumes": [f"{data}:/data:ro"],
            }
        }
    }


def test_an_app_written_tasks_verifier_gets_no_data(tmp_path):
    """An app-written task's verifier carries its database in its own image."""
    environment = app_folder(tmp_path)
    (environment.parent.parent / "shared" / "data").mkdir(parents=True)
    found = facts(environment.parent / "tests")
    assert found.data == {}
    assert "volumes" not in compose_model(found, internet=False)["services"]["main"]


# --- folders kept from the release ----------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "sidecars"),
    [
        ("baseline", ["sql-tools", "business-info"]),
        ("ask_human", ["sql-tools", "business-info", "ask-human"]),
        ("full_info", ["sql-tools", "business-info"]),
    ],
)
def test_release_sidecars_listen_on_their_own_loopback_address(tmp_path, mode, sidecars):
    task = release_folder(tmp_path)
    found = facts(task / mode / "environment")
    assert (found.layout, found.domain, found.mode) == ("release", "sql", mode)
    assert list(found.sidecars) == sidecars

    model = compose_model(found, internet=False)
    main = model["services"]["main"]
    assert main["network_mode"] == "none"
    assert main["extra_hosts"] == [f"{n}:{trial_model.RELEASE_HOSTS[n]}" for n in sidecars]
    assert set(model["services"]) == {"main", *sidecars}
    hosts = set()
    for name in sidecars:
        service = model["services"][name]
        assert service["network_mode"] == "service:main"
        host = service["environment"]["HOST"]
        assert host.startswith("127.") and host != "127.0.0.1"
        hosts.add(host)
        assert service["environment"]["PORT"] == "8000"
        assert service["build"]["context"] == str(task / "shared" / "sidecars" / name)
        assert "no-new-privileges:true" in service["security_opt"]
        assert service["mem_limit"] == trial_model.SIDECAR_MEMORY
    assert len(hosts) == len(sidecars)


def test_release_data_is_bound_read_only_from_inside_the_task_folder(tmp_path):
    task = release_folder(tmp_path)
    model = compose_model(facts(task / "ask_human" / "environment"), internet=False)
    services = model["services"]
    root = task.resolve()

    binds = {}
    for name, service in services.items():
        for volume in service.get("volumes", []):
            if volume.startswith("/"):
                source, target, flags = _bind(volume)
                binds.setdefault(target, set()).add(name)
                assert source.is_absolute()
                assert source.is_relative_to(root), volume
                assert flags == "ro", volume
                assert source == root / {"/data": "shared/data"}.get(
                    target, "shared/ask-human-data"
                )
    assert binds == {
        "/data": {"main", "sql-tools", "business-info"},
        "/ask-human-data": {"ask-human"},
    }
    assert services["sql-tools"]["environment"]["DATA_DIR"] == "/data"
    assert services["ask-human"]["environment"]["BLOCKER_REGISTRY_PATH"] == (
        "/ask-human-data/blocker_registry.json"
    )


@pytest.mark.parametrize("layout", ["release", "app"])
def test_nothing_of_the_folders_own_compose_reaches_the_model(tmp_path, layout):
    if layout == "release":
        env = release_folder(tmp_path, compose=HOSTILE_COMPOSE) / "ask_human" / "environment"
    else:
        env = app_folder(tmp_path)
        _write(env / "docker-compose.yaml", HOSTILE_COMPOSE)
    for internet in (False, True):
        text = json.dumps(compose_model(facts(env), internet=internet))
        for hostile in HOSTILE_STRINGS:
            assert hostile not in text, (layout, internet, hostile)


def test_write_compose_model_writes_the_template_and_refuses_a_dot_env(tmp_path):
    env = release_folder(tmp_path, compose=HOSTILE_COMPOSE) / "baseline" / "environment"
    target = tmp_path / "out" / "compose.json"
    found = trial_model.write_compose_model(env, target, internet=False)
    assert json.loads(target.read_text()) == compose_model(found, internet=False)

    _write(env / ".env", "SECRET=from-the-folder\n")
    target.unlink()
    with pytest.raises(TrialModelError, match=r"\.env"):
        trial_model.write_compose_model(env, target, internet=False)
    assert not target.exists()


# --- what a folder may not smuggle in -------------------------------------------------------


def test_a_link_inside_shared_data_is_refused_by_name(tmp_path):
    task = release_folder(tmp_path)
    (task / "shared" / "data" / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(TrialModelError, match="passwd"):
        facts(task / "baseline" / "environment")


def test_a_dangling_link_inside_shared_data_is_refused(tmp_path):
    task = release_folder(tmp_path)
    (task / "shared" / "data" / "sub").mkdir()
    (task / "shared" / "data" / "sub" / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(TrialModelError, match="gone"):
        facts(task / "baseline" / "environment")


def test_a_fifo_inside_the_ask_human_data_is_refused(tmp_path):
    task = release_folder(tmp_path)
    os.mkfifo(task / "shared" / "ask-human-data" / "pipe")
    with pytest.raises(TrialModelError, match="pipe"):
        facts(task / "ask_human" / "environment")


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_shared_data_that_is_itself_a_link_is_refused_by_name(tmp_path, where):
    task = release_folder(tmp_path)
    data = task / "shared" / "data"
    for child in data.iterdir():
        child.unlink()
    data.rmdir()
    if where == "outside":
        outside = tmp_path / "elsewhere"
        _write(outside / "financial.sqlite", "x")
        data.symlink_to(outside, target_is_directory=True)
    else:
        data.symlink_to(task / "baseline", target_is_directory=True)
    with pytest.raises(TrialModelError, match="shared/data"):
        facts(task / "baseline" / "environment")


def test_shared_as_a_link_out_of_the_task_is_refused(tmp_path):
    task = release_folder(tmp_path)
    moved = tmp_path / "moved-shared"
    (task / "shared").rename(moved)
    (task / "shared").symlink_to(moved, target_is_directory=True)
    with pytest.raises(TrialModelError, match="leaves the task folder"):
        facts(task / "baseline" / "environment")


def test_a_sidecar_context_linked_within_the_task_is_refused(tmp_path):
    task = release_folder(tmp_path)
    context = task / "shared" / "sidecars" / "sql-tools"
    (context / "Dockerfile").unlink()
    (context / "app.py").unlink()
    context.rmdir()
    context.symlink_to(task / "shared" / "sidecars" / "business-info")
    with pytest.raises(TrialModelError, match="sql-tools is a link"):
        facts(task / "baseline" / "environment")


def test_a_missing_sidecar_context_says_which_and_what_to_do(tmp_path):
    task = release_folder(tmp_path)
    context = task / "shared" / "sidecars" / "business-info"
    for child in context.iterdir():
        child.unlink()
    context.rmdir()
    with pytest.raises(TrialModelError) as refused:
        facts(task / "full_info" / "environment")
    message = str(refused.value)
    assert "sql_10/shared/sidecars/business-info is missing" in message
    assert "export the task again" in message


# --- SWE ------------------------------------------------------------------------------------


def test_swe_release_modes_get_only_the_ask_human_sidecar_in_ask_human(tmp_path):
    task = swe_folder(tmp_path)
    baseline = facts(task / "baseline" / "environment")
    assert (baseline.layout, baseline.domain, baseline.sidecars) == ("release", "swe", {})
    model = compose_model(baseline, internet=False)
    assert set(model["services"]) == {"main"}
    assert "extra_hosts" not in model["services"]["main"]

    ask = facts(task / "ask_human" / "environment")
    assert list(ask.sidecars) == ["ask-human"]
    model = compose_model(ask, internet=False)
    assert set(model["services"]) == {"main", "ask-human"}
    assert model["services"]["main"]["extra_hosts"] == ["ask-human:127.0.0.4"]
    # No /data in an SWE task: nothing of the task is bound into the agent's container.
    assert not [v for v in model["services"]["main"]["volumes"] if v.startswith("/")]


def test_swe_release_image_reads_the_from_line(tmp_path):
    task = swe_folder(tmp_path)
    env = task / "baseline" / "environment"
    assert trial_model.swe_release_image(env) == "hilbench-swe:abc123"

    _write(env / "Dockerfile", "FROM python:3.11-slim\n")
    assert trial_model.swe_release_image(env) is None

    (env / "Dockerfile").unlink()
    assert trial_model.swe_release_image(env) is None

    elsewhere = _write(tmp_path / "other" / "Dockerfile", "FROM hilbench-swe:linked\n")
    (env / "Dockerfile").symlink_to(elsewhere)
    assert trial_model.swe_release_image(env) is None


# --- the sidecar's image tag ----------------------------------------------------------------


def test_a_sidecars_image_tag_follows_its_contexts_bytes(tmp_path):
    task = release_folder(tmp_path)
    env = task / "ask_human" / "environment"

    def tags() -> dict[str, str]:
        model = compose_model(facts(env), internet=False)
        return {name: model["services"][name]["image"] for name in SIDECARS}

    first = tags()
    assert tags() == first  # stable while nothing changed
    for name, image in first.items():
        repository, tag = image.split(":")
        assert repository == f"hilbench-sidecar/{name}"
        assert len(tag) == 16 and int(tag, 16) >= 0

    (task / "shared" / "sidecars" / "sql-tools" / "app.py").write_text("# sql-tools, edited\n")
    second = tags()
    assert second["sql-tools"] != first["sql-tools"]
    assert {k: v for k, v in second.items() if k != "sql-tools"} == {
        k: v for k, v in first.items() if k != "sql-tools"
    }

    _write(task / "shared" / "sidecars" / "ask-human" / "extra" / "new.txt", "added")
    assert tags()["ask-human"] != second["ask-human"]


def test_a_sidecars_image_tag_does_not_depend_on_where_the_task_lies(tmp_path):
    one = compose_model(
        facts(release_folder(tmp_path / "a") / "baseline" / "environment"), internet=False
    )
    two = compose_model(
        facts(release_folder(tmp_path / "b") / "baseline" / "environment"), internet=False
    )
    for name in ("sql-tools", "business-info"):
        assert one["services"][name]["image"] == two["services"][name]["image"]


# --- the module itself ----------------------------------------------------------------------


def test_the_module_runs_on_the_standard_library_alone(tmp_path):
    """Harbor's process imports it: loaded by file, without site-packages (``-S``) and in
    isolated mode, it still builds a model."""
    env = release_folder(tmp_path) / "ask_human" / "environment"
    source = str(Path(trial_model.__file__))
    script = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('trial_model', {source!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "sys.modules['trial_model'] = module\n"
        "spec.loader.exec_module(module)\n"
        f"facts = module.facts({str(env)!r})\n"
        "print(json.dumps(module.compose_model(facts, internet=False)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == compose_model(facts(env), internet=False)
