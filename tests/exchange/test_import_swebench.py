import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exchange.importers import import_swebench
from hilbench_annotate.errors import ImportRefused
from hilbench_annotate.models import Repository, Task

from ..conftest import FIXTURES
from ..validators.gitutil import git, has_commit

pytestmark = pytest.mark.django_db


def _instances(demo_data):
    return json.loads(demo_data["swe"]["instances"].read_text())


def test_swebench_instance_imports_and_mirrors_the_repository(project, demo_data):
    record = _instances(demo_data)[0]
    call_command(
        "import_swebench",
        instances=demo_data["swe"]["instances"],
        repo=str(demo_data["swe"]["repo"]),
        project=project.slug,
    )

    task = Task.objects.get(project=project)
    env = task.swe_environment
    assert task.source_id == record["instance_id"]
    assert env.base_commit == record["base_commit"]
    assert env.gold_patch == record["patch"] and env.test_patch == record["test_patch"]
    assert env.fail_to_pass == record["FAIL_TO_PASS"]
    assert env.pass_to_pass == record["PASS_TO_PASS"]
    assert task.original_spec["requirements"] == record["requirements"]
    assert git(env.repository.path, "rev-parse", "--is-bare-repository").strip() == "true"
    assert has_commit(env.repository.path, record["base_commit"])


def test_pro_lower_case_fields_and_json_encoded_lists(project, demo_data, tmp_path):
    record = _instances(demo_data)[0]
    pro = {k: v for k, v in record.items() if k not in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    pro["fail_to_pass"] = json.dumps(record["FAIL_TO_PASS"])  # SWE-bench stores strings
    pro["pass_to_pass"] = record["PASS_TO_PASS"]
    path = tmp_path / "pro.jsonl"
    path.write_text(json.dumps(pro) + "\n")

    import_swebench(project=project, instances=path, repo=str(demo_data["swe"]["repo"]))

    env = Task.objects.get().swe_environment
    assert env.fail_to_pass == record["FAIL_TO_PASS"]
    assert env.pass_to_pass == record["PASS_TO_PASS"]


def test_reimport_adds_nothing(project, demo_data):
    kwargs = dict(
        project=project, instances=demo_data["swe"]["instances"], repo=str(demo_data["swe"]["repo"])
    )
    import_swebench(**kwargs)
    report = import_swebench(**kwargs)
    assert report.created == [] and len(report.unchanged) == 1
    assert Task.objects.count() == 1 and Repository.objects.count() == 1


def test_unknown_base_commit_and_bad_records_import_nothing(project, demo_data, tmp_path):
    good = _instances(demo_data)[0]
    missing_commit = {**good, "instance_id": "demo__invoicing-2", "base_commit": "f" * 40}
    path = tmp_path / "i.json"
    path.write_text(json.dumps([good, missing_commit]))

    with pytest.raises(ImportRefused) as err:
        import_swebench(project=project, instances=path, repo=str(demo_data["swe"]["repo"]))
    assert err.value.problems == [
        (1, f"base_commit {'f' * 40} is not in {demo_data['swe']['repo']}")
    ]

    no_tests = {**good, "instance_id": "x", "FAIL_TO_PASS": []}
    not_object = ["just", "a", "list"]
    path.write_text(json.dumps([good, no_tests, not_object]))
    with pytest.raises(CommandError) as cmd_err:
        call_command(
            "import_swebench",
            instances=path,
            repo=str(demo_data["swe"]["repo"]),
            project=project.slug,
        )
    assert "record 1: FAIL_TO_PASS is empty" in str(cmd_err.value)
    assert "record 2: expected an object, got list" in str(cmd_err.value)
    assert Task.objects.count() == 0


def test_repository_that_is_not_git_is_refused(project, demo_data, tmp_path):
    with pytest.raises(ImportRefused) as err:
        import_swebench(
            project=project, instances=demo_data["swe"]["instances"], repo=str(tmp_path)
        )
    assert "neither a local git repository, a git bundle nor an https/ssh URL" in str(err.value)
    with pytest.raises(ImportRefused):
        import_swebench(
            project=project,
            instances=demo_data["swe"]["instances"],
            repo="ext::sh -c touch% /tmp/pwned",
        )
    assert Task.objects.count() == 0


def test_swebench_and_pro_records_import_from_a_git_bundle(project):
    """fixtures/swebench: a SWE-bench record (upper-case lists) and a SWE-Bench Pro record
    (lower-case JSON strings, requirements, interface) on one repository, given as the git
    bundle a dataset ships."""
    instances = FIXTURES / "swebench" / "instances.jsonl"
    bundle = FIXTURES / "swebench" / "textkit.bundle"
    swebench, pro = (json.loads(line) for line in instances.read_text().splitlines())

    report = import_swebench(project=project, instances=instances, repo=str(bundle))

    assert report.created == [swebench["instance_id"], pro["instance_id"]]
    # The repository is not one SWE-bench specifies (and a Pro record names no version).
    assert report.notes == [
        f"SWE-bench has no environment for fixture/textkit {version}: fill the task's "
        f"Environment tab before running its tests ({record['instance_id']})"
        for version, record in (("0.1", swebench), ("(no version)", pro))
    ]
    first = Task.objects.get(source_id=swebench["instance_id"]).swe_environment
    assert first.fail_to_pass == swebench["FAIL_TO_PASS"]
    assert first.pass_to_pass == swebench["PASS_TO_PASS"]
    assert first.test_command == "python -m pytest -rA tests/test_wrap.py"
    second = Task.objects.get(source_id=pro["instance_id"])
    assert second.swe_environment.fail_to_pass == json.loads(pro["fail_to_pass"])
    assert second.swe_environment.pass_to_pass == json.loads(pro["pass_to_pass"])
    assert second.original_spec["requirements"] == pro["requirements"]
    assert second.original_spec["interface"] == pro["interface"]
    assert second.source_metadata["repo_language"] == "python"
    assert first.repository == second.swe_environment.repository
    for record in (swebench, pro):
        assert has_commit(first.repository.path, record["base_commit"])
