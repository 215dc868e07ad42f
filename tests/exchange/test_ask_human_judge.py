"""Issue 44, item 8: which judge scores a task's ask_human is said, and the app never builds
over an image it did not build.

A release task names the release's ask-human sidecar (``hil-bench-harbor/ask-human``), which
calls an LLM judge; by default the export puts the app's sidecar (the embedded judge) in its
place, and the manifest and ``provenance/validation.json`` say so. When the lead gives an
endpoint and a model, the release's own sidecar judges, configured with the variables the
release's compose file reads. Every image the app builds carries its label; an image under the
same tag without it is left alone (``shared/sidecars/build.sh``; the project's Harbor
environment builds under a tag of its own).
"""

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command

from exchange.bundles import layout
from exchange.bundles.judge_choice import llm_judge_clean
from exchange.bundles.release_runtime import JUDGE, SIDECAR_DIR, build_script
from harbor_agents.trial_model import BUILT_BY, TrialModelError, facts
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task

from ..conftest import FIXTURES, ROOT, shared_path
from .bundle_helpers import extract, members, seed_demo, sql_task

pytestmark = pytest.mark.django_db
ENDPOINT, MODEL = "http://127.0.0.1:8808/v1", "casperhansen/llama-3.3-70b-instruct-awq"


def _export(project, out: Path, tasks, **options) -> Path:
    call_command("export_bundle", project=project.slug, out=str(out),
                 tasks=[t.pk for t in tasks], draft=True, **options)  # fmt: skip
    return out


def _tasks(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    call_command("import_hilbench", str(FIXTURES / "hilbench" / "sql"), project=project.slug)
    release = Task.objects.get(project=project, source_metadata__folder="sql_0")
    return project, [sql_task(project), release]


def _said(files: dict) -> dict[str, dict]:
    manifest = json.loads(files[layout.MANIFEST])
    return {
        e["folder"]: {
            "line": e["ask_human_judge"],
            "provenance": json.loads(files[f"{e['folder']}/{layout.VALIDATION}"])[
                "ask_human_judge"
            ],
            "release": e["source"] == "hilbench",
        }
        for e in manifest["tasks"]
    }


def test_the_manifest_and_provenance_say_the_app_s_embedded_judge_scores(settings, tmp_path):
    project, tasks = _tasks(settings, tmp_path)
    files = members(_export(project, tmp_path / "b.tar.gz", tasks))
    said = _said(files)
    assert len(said) == 2
    for folder, what in said.items():
        assert what["provenance"]["judge"] == "embedded"
        assert what["line"] == what["provenance"]["said"]
        assert what["line"].startswith("the app's embedded judge")
        sidecar = what["provenance"]["sidecar"]
        assert f"{folder}/{sidecar}/Dockerfile" in files
        if what["release"]:
            assert "in place of the release's LLM judge" in what["line"]
            assert sidecar == f"{SIDECAR_DIR}/ask-human"
        else:
            assert sidecar == "ask_human/environment/sidecars/ask-human"
    assert "release_llm_judge" not in json.loads(files[layout.MANIFEST])


def test_a_lead_gives_a_release_task_s_ask_human_to_the_release_s_llm_judge(settings, tmp_path):
    project, tasks = _tasks(settings, tmp_path)
    out = _export(project, tmp_path / "b.tar.gz", tasks, judge_endpoint=ENDPOINT,
                  judge_model=MODEL)  # fmt: skip
    files = members(out)
    said = _said(files)
    [release] = [f for f, w in said.items() if w["release"]]
    [app] = [f for f, w in said.items() if not w["release"]]
    # The app's own task keeps its embedded judge: its sidecar is the app's.
    assert said[app]["provenance"]["judge"] == "embedded"
    judge = said[release]["provenance"]
    environment = {
        "ASK_HUMAN_BACKEND": "vllm",
        "ASK_HUMAN_MODEL": MODEL,
        "VLLM_BASE_URL": "http://127.0.0.1:8808",  # the release's server adds /v1/chat/…
        "VLLM_MODEL": MODEL,
    }
    assert judge == {
        "judge": "release_llm",
        "sidecar": "hil-bench-harbor/ask-human:latest",
        "model": MODEL,
        "environment": environment,
        "said": said[release]["line"],
    }
    assert "the release's LLM judge" in said[release]["line"] and MODEL in said[release]["line"]
    settings_file = json.loads(files[f"{release}/{JUDGE}"])
    assert settings_file == {"judge": "release_llm", "model": MODEL, "environment": environment}
    assert json.loads(files[layout.MANIFEST])["release_llm_judge"] == settings_file
    # No sidecar of the app's for ask-human: the release's own runs; the others still build.
    assert not [n for n in files if n.startswith(f"{release}/{SIDECAR_DIR}/ask-human/")]
    build = files[f"{release}/{SIDECAR_DIR}/build.sh"].decode()
    assert "ask-human" not in build.split("set -e", 1)[1] and "sql-tools" in build
    # The project's Harbor environment cannot run it offline, and says why.
    root = extract(out, tmp_path / "bundle")
    with pytest.raises(TrialModelError, match="release's LLM judge"):
        facts(root / release / "ask_human" / "environment")
    assert facts(root / release / "baseline" / "environment").layout == "release"


@pytest.mark.shared_data
def test_the_variables_are_the_ones_the_release_reads():
    """``configured as the release configures it``: each variable is one the release's own
    compose file passes to its ask-human sidecar, and its server reads."""
    compose = shared_path("examples/hilbench/sql/sql_0/ask_human/environment/docker-compose.yaml")
    server = shared_path(
        "examples/hilbench/harness-reference/harbor_swe/shared/mcp-servers/ask-human/server.py"
    )
    passed = set(re.findall(r"- (\w+)=\$\{\1:-", compose.read_text()))
    read = set(re.findall(r"os\.getenv\(\"(\w+)\"", server.read_text()))
    names = set(llm_judge_clean(ENDPOINT, MODEL).environment())
    assert names <= passed & read, names - (passed & read)
    assert 'backend == "vllm"' in server.read_text()


@pytest.mark.parametrize(
    "endpoint,model",
    [(ENDPOINT, ""), ("", MODEL), ("ftp://host/v1", MODEL), ("http://u:p@host/v1", MODEL),
     (ENDPOINT, "two words")],
)  # fmt: skip
def test_an_incomplete_or_odd_judge_is_refused(endpoint, model):
    with pytest.raises(DomainError):
        llm_judge_clean(endpoint, model)
    assert llm_judge_clean("", "") is None


def test_the_app_s_sidecar_builds_carry_its_label(tmp_path):
    from harbor_agents.trial_model import compose_model

    task = tmp_path / "sql_0"
    context = task / "ask_human" / "environment" / "sidecars" / "ask-human"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM python:3.11-slim\n")
    model = compose_model(facts(task / "ask_human" / "environment"), internet=False)
    assert model["services"]["ask-human"]["build"]["labels"] == dict([BUILT_BY])


# --- with a container engine: what is on the machine decides the tag -------------------------


def _docker_or_skip():
    from tests.validators.conftest import docker_or_skip

    docker_or_skip()


def _docker(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300)


def _image_id(tag: str) -> str:
    return _docker("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()


def _label(tag: str) -> str:
    found = _docker("image", "inspect", "--format", "{{ json .Config.Labels }}", tag)
    return (json.loads(found.stdout or "null") or {}).get(BUILT_BY[0], "")


@pytest.fixture
def scratch_tags():
    made: list[str] = []
    yield made
    for tag in made:
        _docker("image", "rm", "-f", tag)


@pytest.mark.containers
def test_build_sh_never_builds_over_an_image_the_app_did_not_build(tmp_path, scratch_tags):
    _docker_or_skip()
    name = f"hilbench-test-{uuid.uuid4().hex[:8]}"
    release, own = f"hil-bench-harbor/{name}:latest", f"hilbench-sidecar/{name}:release"
    scratch_tags += [release, own]
    (tmp_path / name).mkdir()
    (tmp_path / name / "Dockerfile").write_text(f"FROM python:3.11-slim\nLABEL test={name}\n")
    (tmp_path / "build.sh").write_bytes(build_script([name]))
    run = ["sh", str(tmp_path / "build.sh")]

    # Free: built under the app's own tag, labelled, and given the release's name.
    done = subprocess.run(run, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _label(release) == BUILT_BY[1] and _image_id(release) == _image_id(own)
    # An image of the release's own under that name (no label): left alone, and said.
    _docker("image", "rm", release)
    assert _docker("tag", "python:3.11-slim", release).returncode == 0
    foreign = _image_id(release)
    done = subprocess.run(run, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _image_id(release) == foreign and _label(release) == ""
    assert f"{release} is not the app's: left alone" in done.stderr


@pytest.mark.containers
def test_the_offline_environment_moves_its_build_off_a_tag_it_does_not_own(tmp_path, scratch_tags):
    _docker_or_skip()
    harbor = ROOT / ".venv-harbor" / "bin" / "python"
    if not harbor.is_file():
        pytest.skip("no Harbor: `make harbor`")
    image = f"hilbench-sidecar/hilbench-test-{uuid.uuid4().hex[:8]}:abc"
    scratch_tags += [image, f"{image}-1"]
    assert _docker("tag", "python:3.11-slim", image).returncode == 0
    model = tmp_path / "model.json"
    service = {"image": image, "build": {"context": "x", "labels": dict([BUILT_BY])}}
    model.write_text(json.dumps({"services": {"main": {}, "ask-human": service}}))
    script = (
        "import asyncio, sys; from harbor_agents.environments import own_images; "
        "print(asyncio.run(own_images(__import__('pathlib').Path(sys.argv[1]))))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(harbor), "-c", script, str(model)], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr([image])
    assert json.loads(model.read_text())["services"]["ask-human"]["image"] == f"{image}-1"
    # An image the app built under that tag is its own: kept.
    _docker("image", "rm", image)
    _docker("image", "rm", f"{image}-1")
    labelled = tmp_path / "labelled"
    labelled.mkdir()
    (labelled / "Dockerfile").write_text("FROM python:3.11-slim\n")
    built = _docker("build", "-q", "--label", "=".join(BUILT_BY), "-t", image, str(labelled))
    assert built.returncode == 0, built.stderr
    model.write_text(json.dumps({"services": {"ask-human": service}}))
    done = subprocess.run([str(harbor), "-c", script, str(model)], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert done.stdout.strip() == "[]"
    assert json.loads(model.read_text())["services"]["ask-human"]["image"] == image
    shutil.rmtree(labelled)


def test_the_export_page_and_api_take_the_release_s_llm_judge(client, project, lead, author):
    from rest_framework.test import APIClient

    from tests.factories import TaskFactory

    TaskFactory(project=project, author=author)
    api = APIClient()
    api.force_authenticate(lead)
    url = "/api/exports/"
    refused = api.post(url, {"project": project.pk, "judge_endpoint": ENDPOINT}, format="json")
    assert refused.status_code == 400 and "both an endpoint and a model" in refused.content.decode()
    started = api.post(
        url,
        {"project": project.pk, "draft": True, "judge_endpoint": ENDPOINT, "judge_model": MODEL},
        format="json",
    )
    assert started.status_code == 202, started.content
    assert started.json()["llm_judge"] == {"endpoint": ENDPOINT, "model": MODEL}
    client.force_login(lead)
    page = client.get(f"/exports/{started.json()['id']}/").content.decode()
    assert "<strong>the release's LLM judge</strong>: its own sidecar calls" in page
    assert MODEL in page
    form = client.get("/exports/").content.decode()
    assert 'name="judge_endpoint"' in form and 'name="judge_model"' in form


def test_the_run_page_says_which_judge_scores_ask_human(client, project, lead, settings):
    from evaluation.models import EvaluationRun

    run = EvaluationRun.objects.create(
        project=project, source="harbor", model_name="oracle", agent="oracle",
        modes=["baseline", "ask_human"], created_by=lead,
    )  # fmt: skip
    client.force_login(lead)
    html = client.get(f"/evaluation/runs/{run.pk}/").content.decode()
    said = html.split('id="run-judge"')[1].split("</p>")[0]
    assert "answers the agent with the app's embedded judge" in said
    assert "ASK_HUMAN_MODEL" in said  # the release's judge, named and not run
    assert "are the app&#x27;s embedded judge's reading" in said
    settings.JUDGE_BACKEND = "llm"
    html = client.get(f"/evaluation/runs/{run.pk}/").content.decode()
    assert "HILBENCH_JUDGE=llm" in html.split('id="run-judge"')[1].split("</p>")[0]
    run.modes = ["baseline"]
    run.save()
    assert 'id="run-judge"' not in client.get(f"/evaluation/runs/{run.pk}/").content.decode()
