"""Issue 24, item 5, for the other recursive parsers: JSON or TOML nested past what Python's
parsers follow is malformed input — a 400, a refused import naming the file, a skipped log
line — never a RecursionError."""

import json
import shutil

import pytest
from django.urls import reverse

from exchange.importers.bundle import import_bundle
from exchange.importers.hilbench import import_hilbench
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Task
from tests.conftest import shared_path
from tests.factories import TaskFactory
from validators.logparsers import parse_log

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000


def test_a_deep_json_body_is_a_400_on_the_api(client, author, project):
    task = TaskFactory(project=project, author=author)
    client.force_login(author)
    url = reverse("api-blocker-list", args=[task.pk])
    response = client.post(url, DEEP, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nests too deep" in response.json()["detail"]


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["ask-human-data/blocker_registry.json", "task.toml"])
def test_a_release_folder_with_a_deep_file_is_refused_by_name(tmp_path, project, author, name):
    source = next(p for p in sorted(shared_path("examples", "hilbench", "sql").iterdir()))
    folder = shutil.copytree(source, tmp_path / source.name)
    if name == "task.toml":
        (folder / "baseline" / "task.toml").write_text("a = " + DEEP)
    else:
        (folder / "shared" / name).write_text(DEEP)
    with pytest.raises(ImportRefused) as refused:
        import_hilbench(project=project, root=tmp_path, actor=author)
    assert "unreadable file" in refused.value.render(limit=2000)
    assert not Task.objects.exists()


def test_a_bundle_whose_manifest_nests_too_deep_is_refused(tmp_path, project):
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "manifest.json").write_text(DEEP)
    with pytest.raises(ImportRefused, match="manifest.json is not valid JSON"):
        import_bundle(project=project, path=tmp_path / "bundle")


@pytest.mark.parametrize("parser", ["go_test", "jest", "mocha", "sweap_json"])
def test_deep_json_in_test_output_is_skipped(parser):
    deep_object = '{"a": ' + DEEP
    log = "\n".join([DEEP, deep_object, json.dumps({"Action": "pass", "Test": "TestX"})])
    if parser == "sweap_json":
        log = "SWEAP_JSON_START\n" + DEEP + "\nSWEAP_JSON_END"
    assert isinstance(parse_log(parser, log), dict)
