"""What an export writes: the release's layout and field names, only validated tasks unless
it is a draft, provenance with pseudonymised reviewers, a SWE repository that leaks nothing."""

import json
import subprocess
import tarfile
import tomllib

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from exchange.bundles import layout
from exchange.bundles.repository import repository_unpack
from exchange.models import ExportJob
from hilbench_annotate.models import Task
from review.models import ReviewLayer
from validators.leakage import check_leakage, forbidden_texts
from validators.services import validation_run_execute, validation_run_start

from ..conftest import shared_path
from .bundle_helpers import (
    approve_validated,
    export,
    extract,
    lead_of,
    manifest_files,
    members,
    seed_demo,
    sql_task,
)

pytestmark = pytest.mark.django_db

# Release files that describe where the release keeps its data and images (Hugging Face
# buckets, prebuilt Docker images); our bundle carries the data itself instead.
RELEASE_ONLY = {
    "shared/data_archive.json",
    "shared/artifacts_manifest.json",
    "shared/image_ref.txt",
    "shared/image_refs.json",
    "shared/image_archive.json",
}


def _release_files(folder) -> set[str]:
    return {
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
    } - RELEASE_ONLY


def _keys(value, prefix=""):
    """Every key path of a TOML/JSON document (lists of tables by their position)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{prefix}{key}"
            yield from _keys(item, f"{prefix}{key}.")
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for item in value:
            yield from _keys(item, f"{prefix}[].")


@pytest.fixture
def bundle(demo_sql_swe_bundle, tmp_path):
    """The demo's SQL and planted SWE task exported (tests/exchange/conftest.py), unpacked,
    with what the SWE task held."""
    return extract(demo_sql_swe_bundle.path, tmp_path / "bundle"), demo_sql_swe_bundle.swe


@pytest.mark.parametrize("domain,release_task", [("sql", "sql_0"), ("swe", "swe_0")])
def test_exported_folders_have_the_release_layout_and_field_names(
    bundle, domain, release_task, release_examples
):
    root, _swe = bundle
    release = release_examples / domain / release_task
    ours = root / f"{domain}_0"
    our_files = {p.relative_to(ours).as_posix() for p in ours.rglob("*") if p.is_file()}
    assert _release_files(release) <= our_files
    for mode in ("baseline", "ask_human", "full_info"):
        assert {f"{mode}/environment/Dockerfile", f"{mode}/environment/docker-compose.yaml"} <= (
            our_files
        )
    if domain == "sql":
        assert {
            "shared/data/database.sqlite",
            "shared/data/database_description/loan.csv",
        } <= our_files
    else:
        assert "shared/repository.fast-export" in our_files

    def load(folder, name):
        return json.loads((folder / name).read_text())

    assert set(load(release, "shared/metadata.json")) <= set(load(ours, "shared/metadata.json"))
    release_blockers = load(release, layout.REGISTRY)["blockers"]
    our_blockers = load(ours, layout.REGISTRY)["blockers"]
    assert {frozenset(b) for b in our_blockers} == {frozenset(release_blockers[0])}
    if domain == "sql":
        assert set(load(release, "shared/data/business_info.json")) == set(
            load(ours, "shared/data/business_info.json")
        )
    for mode in ("baseline", "ask_human", "full_info"):
        theirs = tomllib.loads((release / mode / "task.toml").read_text())
        mine = tomllib.loads((ours / mode / "task.toml").read_text())
        # We build the environment from environment/ rather than pull a prebuilt image, and
        # grade in a separate verifier that receives the agent's work as an artifact.
        added = {"verifier.environment_mode", "artifacts.[].source", "artifacts.[].service"}
        added |= {"verifier.collect", "verifier.collect.[].command"} if domain == "swe" else set()
        assert set(_keys(theirs)) - {"environment.docker_image"} == set(_keys(mine)) - added
        assert mine["environment"]["allow_internet"] is False
        assert mine["metadata"]["mode"] == mode and mine["metadata"]["task_type"] == domain
        servers = [s["name"] for s in mine["environment"].get("mcp_servers", [])]
        assert servers == [s["name"] for s in theirs["environment"].get("mcp_servers", [])]
        headings = [
            line
            for line in (ours / mode / "instruction.md").read_text().splitlines()
            if line.startswith(("# ", "## "))
        ]
        release_headings = [
            line
            for line in (release / mode / "instruction.md").read_text().splitlines()
            if line.startswith(("# ", "## "))
        ]
        if domain == "sql":
            assert headings == release_headings
        else:
            assert headings[0] == release_headings[0] == "# PROBLEM STATEMENT"
            assert ("## BLOCKER DETAILS" in headings) == (mode == "full_info")


def _apt_packages(dockerfile) -> set[str]:
    """What a Dockerfile's RUN lines install with apt-get (options and their values aside)."""
    packages = set()
    for line in dockerfile.read_text().splitlines():
        for command in line.removeprefix("RUN ").split("&&"):
            words = command.split()
            if words[:2] == ["apt-get", "install"]:
                values = {w for i, w in enumerate(words) if i and words[i - 1] == "-o"}
                packages |= {w for w in words[2:] if not w.startswith("-") and w not in values}
    return packages


def _agent_packages(root) -> dict[tuple[str, str], set[str]]:
    return {
        (domain, mode): _apt_packages(root / f"{domain}_0" / mode / "environment" / "Dockerfile")
        for domain in ("sql", "swe")
        for mode in ("baseline", "ask_human", "full_info")
    }


def test_the_agent_s_image_has_tmux_and_curl(bundle):
    # terminus-2 drives the agent through tmux and installs it at run time when it is
    # missing, which fails with no network.
    root, _swe = bundle
    for (domain, mode), packages in _agent_packages(root).items():
        wanted = {"curl", "tmux"} | ({"sqlite3"} if domain == "sql" else set())
        assert wanted <= packages, (domain, mode)


@pytest.mark.shared_data
def test_the_sql_agent_s_image_has_what_the_release_s_installs(bundle):
    release = _apt_packages(
        shared_path("examples", "hilbench", "sql", "sql_0", "baseline", "environment", "Dockerfile")
    )
    assert {"curl", "tmux", "sqlite3"} <= release
    root, _swe = bundle
    for (domain, mode), packages in _agent_packages(root).items():
        if domain == "sql":
            assert release <= packages, mode


def test_swe_repository_in_the_bundle_passes_the_leakage_check(bundle, tmp_path):
    root, swe = bundle
    head = repository_unpack(
        stream=root / "swe_0" / layout.SWE_REPOSITORY, dest=tmp_path / "shipped"
    )
    metadata = json.loads((root / "swe_0" / layout.METADATA).read_text())
    assert head == metadata["repository_head"]
    texts = forbidden_texts(
        gold_patch=swe.gold_patch, setup_patch=swe.setup_patch, resolutions=swe.resolutions
    )
    assert any(label == "text the setup patch removed" for label, _ in texts)
    results = check_leakage(repo=tmp_path / "shipped", forbidden=texts)
    assert [(r.name, r.outcome) for r in results if r.outcome != "passed"] == []
    # The work tree is the base tree with the setup patch applied.
    assert "Amounts are rounded half-up" not in (tmp_path / "shipped" / "README.md").read_text()


def _validate(task):
    with transaction.atomic():
        run = validation_run_start(task=task, actor=lead_of(task.project_id))
    validation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "passed", [(r.check_name, r.message) for r in run.results.all()]


def test_only_validated_tasks_are_exported_and_move_to_exported(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    sql = sql_task(project)
    swe = Task.objects.get(project=project, domain="swe")
    approve_validated(sql)
    out = export(project, tmp_path / "validated.tar.gz", tasks=[sql, swe], draft=False)
    files = members(out)
    manifest = json.loads(files[layout.MANIFEST])
    assert manifest["draft"] is False
    assert [t["folder"] for t in manifest["tasks"]] == ["sql_0"]
    assert not any(name.startswith("swe_") for name in files)
    job = ExportJob.objects.get()
    assert [s["task"] for s in job.report["skipped"]] == [swe.pk]
    assert "status is draft" in job.report["skipped"][0]["reason"]
    assert Task.objects.get(pk=sql.pk).status == "exported"

    validation = json.loads(files["sql_0/" + layout.VALIDATION])
    assert {c["group"] for c in validation["checks"]} == {
        "spec",
        "sql_ground_truth",
        "judge_recall",
    }
    assert all(c["revision"] == validation["revision"] for c in validation["checks"])
    assert validation["judge"]["version"]
    # The pass-rate evidence the final gate reads: two distinct models solved it 3/3 with
    # full information and 0/3 without, and provenance names them (identity and runs).
    assert validation["pass_rate"]["decision"] == "keep"
    figures = [
        (m["model"], m["full_info"], m["baseline"]) for m in validation["pass_rate"]["models"]
    ]
    assert figures == [("claude-sonnet-4", 1.0, 0.0), ("gpt-4o", 1.0, 0.0)]
    decided = validation["pass_rate"]["decided_by"]
    assert [m["identity"] for m in decided] == ["claude-sonnet-4", "gpt-4o"]
    assert all(m["runs"] for m in decided)
    assert all(g["green"] for g in validation["gates"])
    review = json.loads(files["sql_0/" + layout.REVIEW])
    assert [d["reviewer"] for d in review["decisions"]] == ["reviewer-1"]
    # The lead decided a layer too: not named (the layers' roles say "lead", the decisions
    # nobody's name).
    assert "lead" not in json.dumps(review["decisions"])

    # Exported tasks stay exportable; the lead may opt in to names.
    named = export(
        project, tmp_path / "named.tar.gz", tasks=[sql], draft=False, reveal_reviewers=True
    )
    review = json.loads(members(named)["sql_0/" + layout.REVIEW])
    assert [d["reviewer"] for d in review["decisions"]] == ["lead"]


def test_a_task_whose_judge_recall_turns_red_is_left_out_with_the_reason(settings, tmp_path):
    from exchange.demo.blocked_task import DEMO_BLOCKERS
    from tests.judge.util import settle_held_out
    from validators.services import validation_run_inline

    project = seed_demo(settings, tmp_path)
    sql = sql_task(project)
    approve_validated(sql)
    export(project, tmp_path / "green.tar.gz", tasks=[sql], draft=False)  # exported: status
    # A pipeline that names no judge_recall gate: the export requires it all the same.
    for layer in ReviewLayer.objects.filter(project=project):
        layer.gates = [g for g in layer.gates if g != "judge_recall"]
        layer.save(update_fields=["gates"])
    # Three more labelled held-out questions the judge misses, measured on the same revision:
    # recall falls below the floor and only that gate turns red.
    troubled, _, year = (b["key"] for b in DEMO_BLOCKERS)
    settle_held_out(
        sql,
        [
            (troubled, "Are defaulted contracts the ones we care about, status-wise?"),
            (year, "Is the audit cycle aligned with a particular twelve-month window?"),
            (year, "Which twelve-month window is the audit cycle?"),
        ],
    )
    judged = validation_run_inline(task=sql, actor=lead_of(project.pk), checks=["judge_recall"])
    assert judged.status == "failed"

    with pytest.raises(CommandError, match="No selected task is validated"):
        export(project, tmp_path / "red.tar.gz", tasks=[sql], draft=False)
    job = ExportJob.objects.order_by("-pk").first()
    named = f"task {sql.pk} ({sql.title[:80]}): "  # its id and title, then why
    (line,) = [line for line in job.error.splitlines() if line.startswith(named)]
    # The reason names the red gate, and only it (the gate's message starts with its check).
    assert line.startswith(f"{named}judge_recall: Judge recall 67% on 12")
    assert "the floor is 85%" in line
    assert not any(f"{gate}:" in line for gate in ("lint_clean", "structural", "pass_rate"))
    assert not (tmp_path / "red.tar.gz").exists()
    # A draft bundle still carries it, its gates as they stand.
    draft = members(export(project, tmp_path / "draft.tar.gz", tasks=[sql], draft=True))
    gates = json.loads(draft["sql_0/" + layout.VALIDATION])["gates"]
    assert [g["gate"] for g in gates if not g["green"]] == ["judge_recall"]


def test_an_export_with_no_validated_task_fails_and_writes_nothing(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    with pytest.raises(CommandError, match="No selected task is validated"):
        export(project, tmp_path / "none.tar.gz", tasks=[sql_task(project)], draft=False)
    assert not (tmp_path / "none.tar.gz").exists()
    assert not list(tmp_path.glob("none.tar.gz*"))


def test_the_same_tasks_export_to_the_same_bytes_but_for_the_manifest(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    first = members(export(project, tmp_path / "a.tar.gz", tasks=[sql_task(project)]))
    second = members(export(project, tmp_path / "b.tar.gz", tasks=[sql_task(project)]))
    first.pop(layout.MANIFEST), second.pop(layout.MANIFEST)
    assert first == second


def test_export_command_refuses_a_non_lead(settings, tmp_path):
    project = seed_demo(settings, tmp_path)
    with pytest.raises(CommandError, match="not a lead"):
        call_command(
            "export_bundle", project=project.slug, out=str(tmp_path / "x.tar.gz"), as_user="author"
        )


def test_the_shipped_repository_holds_the_base_commit_metadata_names(bundle, tmp_path):
    """The release's evaluator resets the repository to metadata.json's base_commit: it must
    be a commit of the shipped repository (the setup patch applied), and the only one."""
    root, _swe = bundle
    metadata = json.loads((root / "swe_0" / "shared" / "metadata.json").read_text())
    repo = tmp_path / "shipped"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with (root / "swe_0" / "shared" / "repository.fast-export").open("rb") as stream:
        subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], stdin=stream, check=True)
    exists = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"{metadata['base_commit']}^{{commit}}"]
    )
    assert exists.returncode == 0
    commits = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--all"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert commits == [metadata["base_commit"]]


def test_a_file_carried_twice_is_stored_once_as_hard_links(demo_bundle, tmp_path):
    """The database is in shared/, in every mode's sql-tools sidecar and verifier: one copy
    in the bundle (``_shared/sql_0/<sha256>``), every name of it a hard link to that copy, which tar
    and our importer restore."""
    out = demo_bundle
    with tarfile.open(out) as tf:
        databases = [m for m in tf if m.name.endswith("database.sqlite")]
        stored = {m.name: m for m in tf if m.isfile()}
    assert not [m for m in databases if m.isfile()]
    links = {m.name: m.linkname for m in databases if m.islnk()}
    assert len(links) == 7 and len(set(links.values())) == 1
    [regular] = set(links.values())
    assert regular.startswith("_shared/") and regular in stored
    subprocess.run(["tar", "-xzf", str(out), "-C", str(tmp_path)], check=True)
    copies = {(tmp_path / name).read_bytes() for name in [regular, *links]}
    assert len(copies) == 1 and next(iter(copies))[:16] == b"SQLite format 3\x00"
    manifest = manifest_files(json.loads(members(out)[layout.MANIFEST]))
    assert {manifest[name] for name in [regular, *links]} == {regular.rsplit("/", 1)[1]}


def test_shell_scripts_keep_their_exec_bit(demo_bundle):
    """solve.sh and test.sh are 0755 in the bundle, as in the release (they lost it)."""
    with tarfile.open(demo_bundle) as archive:
        modes = {m.name: m.mode for m in archive if m.isfile()}
    scripts = [n for n in modes if n.endswith(".sh")]
    assert "sql_0/ask_human/solution/solve.sh" in scripts
    assert all(modes[n] == 0o755 for n in scripts), {n: oct(modes[n]) for n in scripts}
    assert modes["sql_0/ask_human/instruction.md"] == 0o644
