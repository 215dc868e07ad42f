"""What the bundle tests share: the demo project with a blocked SQL and a blocked SWE task,
an export through the command's code path, and reading a bundle back."""

import io
import tarfile
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction

from hilbench_annotate import services
from hilbench_annotate.models import Membership, Project, Task
from hilbench_annotate.vocabulary import Role, TaskSource
from tests.validators.gitutil import git

SWE_BLOCKERS = [
    {
        "key": "tie_rounding_rule",
        "type": "missing parameters",
        "description": "The requirements say amounts are rounded but not which rule breaks a "
        "tie of exactly half a minor unit.",
        "resolution": "Ties round half-up, away from zero, with decimal.ROUND_HALF_UP, "
        "whatever the active decimal context says.",
        "trigger_questions": [
            "Which rounding rule applies when an amount is exactly half a cent?",
            "Should ties round half-up or half-to-even?",
            "How are half-cent amounts meant to be rounded?",
        ],
    },
    {
        "key": "zero_decimal_currencies",
        "type": "ambiguous requirements",
        "description": "It is unclear whether currencies without minor units round to whole "
        "units with the same tie rule.",
        "resolution": "JPY rounds to whole yen with the same half-up rule: 2.5 becomes 3.",
        "trigger_questions": [
            "Do yen amounts follow the same tie rule as dollars?",
            "How should 2.5 JPY be rounded?",
            "Which rounding applies to currencies that have no minor unit?",
        ],
    },
    {
        "key": "invoice_rounding_scope",
        "type": "contradictory requirements",
        "description": "The statement and the README disagree on whether invoice subtotals "
        "are rounded before tax.",
        "resolution": "Subtotal, discount, tax and total are each rounded half-up to the "
        "currency's minor unit, the subtotal before tax is computed.",
        "trigger_questions": [
            "Is the subtotal rounded before tax is computed?",
            "Which invoice amounts must be rounded, and in what order?",
            "Are discount and tax rounded separately from the total?",
        ],
    },
]


DEMO_USERS = {
    "author": Role.AUTHOR,
    "author2": Role.AUTHOR,
    "reviewer": Role.REVIEWER,
    "auditor": Role.AUDITOR,
    "lead": Role.LEAD,
}


def seed_demo(settings, tmp_path) -> Project:
    """The demo project as ``seed_demo`` makes it, limited to what a bundle reads: the six
    SQL questions and the SWE instance, the blocked SQL task with its three blockers and an
    edited description, golden outputs. (Not the command itself: other apps add their own
    demo rows to it, which this module's tests need not know about.)"""
    from exchange.demo import build_all
    from exchange.demo.blocked_task import BLOCKED_QUESTION, DEMO_BLOCKERS
    from exchange.importers import import_bird, import_swebench
    from hilbench_annotate.toolkit.compare import golden_output_csv
    from hilbench_annotate.toolkit.sqlconsole import run_select

    paths = build_all(tmp_path / "demo-data")
    project = Project.objects.create(name="Demo benchmark", slug="demo")
    users = {}
    for name, role in DEMO_USERS.items():
        users[name] = get_user_model().objects.create_user(username=name, password="pw")
        Membership.objects.create(project=project, user=users[name], role=role)
    sql = paths["sql"]
    import_bird(
        project=project,
        questions=sql["questions"],
        databases=sql["databases"],
        actor=users["author"],
    )
    import_swebench(
        project=project,
        instances=paths["swe"]["instances"],
        repo=str(paths["swe"]["repo"]),
        actor=users["author2"],
    )
    for task in Task.objects.filter(project=project, domain="sql").select_related(
        "sql_environment__database"
    ):
        env = task.sql_environment
        result = run_select(env.database.path, env.gold_sql, row_cap=100_000)
        with transaction.atomic():
            services.task_touch_environment(
                task=task,
                actor=users["author"],
                expected_version=task.version,
                changes={"golden_output": golden_output_csv(result.columns, result.rows)},
            )
    task = sql_task(project)
    with transaction.atomic():
        services.task_update(
            task=task,
            actor=users["author"],
            expected_version=task.version,
            blocked_spec={"question": BLOCKED_QUESTION, "evidence": ""},
        )
        for blocker in DEMO_BLOCKERS:
            services.blocker_create(
                task=task, actor=users["author"], expected_version=task.version, **blocker
            )
        descriptions = dict(task.sql_environment.descriptions)
        descriptions["transaction_log"] = descriptions["transaction_log"].replace(
            "LN: loan payment; ", ""
        )
        services.task_touch_environment(
            task=task,
            actor=users["author"],
            expected_version=task.version,
            changes={"descriptions": descriptions},
        )
    return project


def user(name: str):
    return get_user_model().objects.get(username=name)


def lead_of(project_id: int):
    """The project's first lead: who starts checks on any of its tasks (a lead may change
    every task of the project)."""
    lead = Membership.objects.filter(project_id=project_id, role=Role.LEAD).order_by("pk").first()
    assert lead is not None, f"project {project_id} has no lead to start its checks"
    return lead.user


def sql_task(project) -> Task:
    """The demo's blocked SQL task (three blockers, an edited description)."""
    return Task.objects.get(project=project, source=TaskSource.BIRD, source_id="retail_bank/4")


def setup_patch_for(repo: Path, base_commit: str, tmp_path: Path) -> str:
    """A real setup patch on the demo repository: the README stops naming the tie rule."""
    scratch = tmp_path / "setup-clone"
    git(tmp_path, "clone", "-q", str(repo), str(scratch))
    git(scratch, "checkout", "-q", base_commit)
    readme = scratch / "README.md"
    text = readme.read_text()
    hidden = "Amounts are rounded half-up to the\ncurrency's smallest unit.\n"
    assert hidden in text
    readme.write_text(text.replace(" " + hidden, "\n"))
    return git(scratch, "diff", "--no-color", "--no-ext-diff")


def plant_swe(project, tmp_path: Path) -> Task:
    """The demo's SWE task with three blockers and a setup patch, as an author would leave it."""
    task = Task.objects.get(project=project, domain="swe")
    author = user("author2")
    env = task.swe_environment
    patch = setup_patch_for(env.repository.path, env.base_commit, tmp_path)
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        for blocker in SWE_BLOCKERS:
            services.blocker_create(
                task=task, actor=author, expected_version=task.version, **blocker
            )
        services.task_touch_environment(
            task=task, actor=author, expected_version=task.version, changes={"setup_patch": patch}
        )
        services.task_update(
            task=task,
            actor=author,
            expected_version=task.version,
            blocked_spec={
                **task.blocked_spec,
                "problem_statement": task.blocked_spec["problem_statement"].replace(
                    "round-half-to-even", "a different rule"
                ),
            },
        )
    return Task.objects.get(pk=task.pk)


def export(project, out: Path, *, tasks=(), draft=True, **options) -> Path:
    call_command(
        "export_bundle",
        project=project.slug,
        out=str(out),
        tasks=[t.pk for t in tasks],
        draft=draft,
        **options,
    )
    return out


def members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tf:
        # A file the bundle carries twice is a hard link to its first copy.
        return {m.name: tf.extractfile(m).read() for m in tf if m.isfile() or m.islnk()}


def manifest_files(manifest: dict) -> dict[str, str]:
    """Path -> sha256 of every file the manifest lists (it names each content once)."""
    return {name: sha for sha, names in manifest["contents"].items() for name in names}


def manifest_relist(manifest: dict, name: str, sha: str) -> None:
    """The manifest saying that ``name`` holds the content ``sha`` (a test's forgery)."""
    contents = manifest["contents"]
    for other, names in list(contents.items()):
        if name in names:
            names.remove(name)
            if not names:
                del contents[other]
    contents.setdefault(sha, []).append(name)


def extract(bundle: Path, dest: Path) -> Path:
    with tarfile.open(bundle) as tf:
        tf.extractall(dest, filter="data")
    return dest


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def judge_validated(task) -> None:
    """The demo's labelled held-out questions settled on ``task`` and the judge's recall
    recorded on its current revision (an export gate)."""
    from exchange.demo.blocked_task import DEMO_VALIDATION_QUESTIONS
    from tests.judge.util import settle_held_out
    from validators.services import validation_run_inline

    settle_held_out(task, DEMO_VALIDATION_QUESTIONS)
    run = validation_run_inline(task=task, actor=lead_of(task.project_id), checks=["judge_recall"])
    assert run.status == "passed", list(run.results.values_list("message", flat=True))


def approve_validated(task, *, model: str = "gpt-4o") -> None:
    """``task`` as a final sign-off leaves it: structural checks and the judge's recall
    passed on its current revision, approved, kept by the pass-rate selection (``model`` and
    claude-sonnet-4, two distinct models)."""
    from django.db import transaction

    from review.models import ReviewDecision
    from tests.evaluation.util import keep_by_pass_rate
    from validators.services import validation_run_execute, validation_run_start

    with transaction.atomic():
        run = validation_run_start(task=task, actor=lead_of(task.project_id))
    validation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "passed", [(r.check_name, r.message) for r in run.results.all()]
    judge_validated(task)
    Task.objects.filter(pk=task.pk).update(status="approved")
    ReviewDecision.objects.create(
        task=task,
        layer=6,
        layer_name="Final sign-off",
        reviewer=user("lead"),
        revision=task.revisions.order_by("-number").first(),
        outcome="approve",
    )
    keep_by_pass_rate(task, model=model)


def release_shaped_sql(dest: Path, *, db_id: str = "concert_singer", record: int = 2) -> Path:
    """A task folder in the release's shape (``sql_10`` of ../shared/examples/hilbench, its
    files as the release ships them: no database, no verifier, prebuilt sidecar images) made
    over a real Spider database of ../shared/data: the question, ground truth, golden output
    and database name are Spider's. Returns ``dest`` (holding ``sql/sql_10``); the database
    to supply is ``spider_database(db_id)``."""
    import csv
    import json
    import shutil
    import sqlite3

    from tests.conftest import shared_path

    template = shared_path("examples", "hilbench", "sql", "sql_10")
    folder = dest / "sql" / "sql_10"
    shutil.copytree(template, folder)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    spider = shared_path("data", "spider-bird")
    chosen = [r for r in json.loads((spider / "dev.json").read_text()) if r["db_id"] == db_id]
    question, gold = chosen[record]["question"], chosen[record]["SQL"]
    old_question = "What are the names of the cards that are legal in the pre-modern format"
    with sqlite3.connect(spider_database(db_id)) as db:
        cursor = db.execute(gold)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([d[0] for d in cursor.description])
        writer.writerows(cursor.fetchall())
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        relative = path.relative_to(folder).as_posix()
        if relative.endswith("ground_truth.sql"):
            path.write_text(gold + "\n")
        elif relative == "shared/golden_output.csv":
            path.write_text(out.getvalue())
        elif relative.endswith(("instruction.md", "task.toml", ".json")):
            text = path.read_text().replace("card_games", db_id)
            if relative.endswith("instruction.md"):
                start = text.index(old_question)
                text = text[:start] + question + text[text.index("\n", start) :]
            path.write_text(text)
    return dest


def spider_database(db_id: str) -> Path:
    from tests.conftest import shared_path

    return shared_path("data", "spider-bird", "dev_databases", db_id, f"{db_id}.sqlite")


SPIDER_BLOCKER = {
    "key": "focus_country",
    "type": "question",
    "subtype": "unclear_value",
    "description": "The question asks about singers from 'our focus country' without naming it.",
    "resolution": "The focus country is France: only singers whose country is 'France' count.",
    "trigger_questions": [
        "Which country is the focus country?",
        "What country should the singers be from?",
        "Which country does 'our focus country' refer to?",
    ],
}


def spider_blocked_sql(project, actor, tmp_path: Path) -> Task:
    """A blocked SQL task built on a real Spider database of ../shared/data (concert_singer,
    Spider dev question 4): imported with ``import_bird``, its golden output the gold SQL's
    result, the country taken out of the question and registered as a blocker."""
    import json

    from exchange.importers import import_bird
    from tests.conftest import shared_path

    spider = shared_path("data", "spider-bird")
    [record] = [r for r in json.loads((spider / "dev.json").read_text()) if r["question_id"] == 4]
    questions = tmp_path / "spider-question.json"
    questions.write_text(json.dumps([record]))
    # Imported by the actor who then edits it: the edit services check who may edit.
    import_bird(
        project=project, questions=questions, databases=spider / "dev_databases", actor=actor
    )
    task = Task.objects.get(project=project, source_id=f"{record['db_id']}/4")
    from hilbench_annotate.toolkit.compare import golden_output_csv
    from hilbench_annotate.toolkit.sqlconsole import run_select

    result = run_select(task.sql_environment.database.path, record["SQL"], row_cap=10_000)
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        services.task_touch_environment(  # as the workspace's "Run gold SQL" saves it
            task=task,
            actor=actor,
            expected_version=task.version,
            changes={"golden_output": golden_output_csv(result.columns, result.rows)},
        )
        services.task_update(
            task=task,
            actor=actor,
            expected_version=task.version,
            blocked_spec={
                "question": "What is the average, minimum, and maximum age of all singers "
                "from our focus country?",
                "evidence": "",
            },
        )
        services.blocker_create(
            task=task, actor=actor, expected_version=task.version, **SPIDER_BLOCKER
        )
    return task


# The release's run script and parser, as its images keep them at /root (sweap_json).
RUN_SCRIPT = "#!/bin/bash\ncd /app\npython -m pytest -rA -p no:cacheprovider tests\n"
PARSER = """import json, re, sys
stdout = open(sys.argv[1]).read()
tests = [{"name": name, "status": status}
         for status, name in re.findall(r"^(PASSED|FAILED|ERROR|SKIPPED) (\\S+)", stdout, re.M)]
json.dump({"tests": tests}, open(sys.argv[3], "w"))
"""
RELEASE_TEST_CMD = (
    "bash /root/run_script.sh > /tmp/stdout.log 2> /tmp/stderr.log; python /root/parser.py "
    "/tmp/stdout.log /tmp/stderr.log /tmp/output.json; python -c \"print('SWEAP_JSON_START'); "
    "print(open('/tmp/output.json').read()); print('SWEAP_JSON_END')\""
)


def release_shaped_swe(dest: Path) -> tuple[Path, str]:
    """The project's release-shaped SWE fixture (``swe_0``: fixture/textkit, its image
    ``hilbench-swe:…`` prebuilt by the release, no verifier) with the release's own test
    command; returns ``dest`` (holding ``swe/swe_0``) and the image it names. The image is
    ``standin_release_image``'s to build."""
    import json
    import shutil

    from tests.conftest import FIXTURES

    folder = dest / "swe" / "swe_0"
    shutil.copytree(FIXTURES / "hilbench" / "swe" / "swe_0", folder)
    metadata = folder / "shared" / "metadata.json"
    document = json.loads(metadata.read_text())
    document["test_cmd"] = RELEASE_TEST_CMD
    metadata.write_text(json.dumps(document, indent=2))
    return dest, document["image_name"]


def standin_release_image(work: Path, tag: str) -> None:
    """What the release's prebuilt image holds, built here: the task's repository (the
    project's fixture/textkit, at the instance's base commit) at /app as one commit, pytest,
    and the run script and parser at /root."""
    import json
    import subprocess
    import tarfile

    from tests.conftest import FIXTURES

    # The repository the fixture's task is about (fixture/textkit), at its base commit.
    swebench = FIXTURES / "swebench"
    [base] = [
        json.loads(line)["base_commit"]
        for line in (swebench / "instances.jsonl").open()
        if json.loads(line)["instance_id"] == "fixture__textkit-2"
    ]
    context = work / "standin-image"
    (context / "app").mkdir(parents=True)
    clone = work / "textkit-clone"
    git(work, "clone", "-q", str(swebench / "textkit.bundle"), str(clone))
    archive = work / "textkit.tar"
    git(clone, "archive", "-o", str(archive), base)
    with tarfile.open(archive) as tar:
        tar.extractall(context / "app", filter="data")
    (context / "run_script.sh").write_text(RUN_SCRIPT)
    (context / "parser.py").write_text(PARSER)
    (context / "Dockerfile").write_text(
        "FROM python:3.11-slim\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends git "
        "&& rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir pytest==8.3.4\n"
        "COPY app /app\n"
        "RUN cd /app && git init -q && git add -A "
        "&& git -c user.email=release@example.org -c user.name=release commit -qm base\n"
        "COPY run_script.sh parser.py /root/\n"
    )
    subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)],
        check=True, capture_output=True, env={**__import__("os").environ, "DOCKER_BUILDKIT": "0"},
    )  # fmt: skip


def plant_pytest_7432(project, author, tmp_path: Path) -> Task:
    """pytest-dev__pytest-7432 of ../shared/data/swe-bench imported, a blocker planted."""
    import json

    from exchange.importers import import_swebench
    from tests.conftest import shared_path

    data = shared_path("data", "swe-bench")
    records = [json.loads(line) for line in (data / "pytest-instances.jsonl").open()]
    chosen = tmp_path / "instance.jsonl"
    chosen.write_text(
        "".join(json.dumps(r) + "\n" for r in records if r["instance_id"].endswith("-7432"))
    )
    # Imported by the author who plants the blocker: the edit services check who may edit.
    import_swebench(
        project=project,
        instances=chosen,
        repo=str(data / "pytest-dev__pytest.bundle"),
        actor=author,
    )
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
    return task
