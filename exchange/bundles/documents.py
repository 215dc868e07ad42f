"""The JSON documents of a task authored in the app, as values: ``TaskFiles`` serialises them.

The blocker registry, ``annotate/task.json``, ``shared/metadata.json`` (SQL and SWE), the
business information, the SWE verifier's tests and the ask-human judge's settings.
"""

from hilbench_annotate.envspec import eval_script, harness_parser, spec_as_written
from hilbench_annotate.models import Task
from hilbench_annotate.vocabulary import Domain
from judge.services import project_calibration, task_context

from . import layout
from .layout import APPLIED_EDIT_SCRIPT


def registry(snapshot: dict, domain: str) -> dict:
    blockers = []
    for b in snapshot["blockers"]:
        entry = {
            "id": b["id"],
            "type": b["type"],
            "description": b["description"],
            "resolution": b["resolution"],
            "example_questions": list(b["trigger_questions"]),
        }
        if domain == Domain.SQL:
            entry["subtype"] = b["subtype"] or None
        blockers.append(entry)
    return {"blockers": blockers}


def annotate(task: Task, snapshot: dict) -> dict:
    env = snapshot.get("environment", {})
    source_metadata = {k: v for k, v in task.source_metadata.items() if k != APPLIED_EDIT_SCRIPT}
    document = {
        "format_version": layout.FORMAT_VERSION,
        # The release's own files follow, kept byte for byte (bundles/release.py).
        "release_files": task.release_files.exists(),
        "source": task.source,
        "source_id": task.source_id,
        "title": task.title,
        "original_spec": snapshot["original_spec"],
        "blocked_spec": snapshot["blocked_spec"],
        "source_metadata": source_metadata,
        "blockers": [
            {"id": b["id"], "surfaces_in": b["surfaces_in"], "criteria": b["criteria"]}
            for b in snapshot["blockers"]
        ],
    }
    if task.domain == Domain.SQL:
        document["environment"] = {
            "original_sql": env.get("original_sql", ""),
            "difficulty": env.get("difficulty", ""),
            # The shipped database already carries these edits.
            "applied_edit_script": env.get("edit_script")
            or task.source_metadata.get(APPLIED_EDIT_SCRIPT, ""),
        }
    else:
        document["environment"] = {
            "setup_patch": env.get("setup_patch", ""),
            "environment_spec": spec_as_written(env.get("environment_spec") or {}),
        }
    return document


def judge_settings_for(project) -> dict:
    """The embedded judge's settings the ask-human sidecar uses: the project's calibration."""
    calibration = project_calibration(project)
    if calibration is None:
        return {}
    return {"version": calibration.version, "thresholds": calibration.thresholds}


def with_context(judge_settings: dict, snapshot: dict) -> dict:
    """The sidecar's judge settings for one task: the project's, and the task's own text,
    which the judge reads to decide relevance (``judge.services.task_context``)."""
    return {**judge_settings, "context": task_context(snapshot)}


def business_info(env) -> dict:
    """``shared/data/business_info.json`` of a SQL task."""
    return {"database_name": env.db_id, "business_info": env.business_info}


def sql_metadata(*, env, snapshot: dict, folder: str, index: int, ids: dict, data_sha: str) -> dict:
    """``shared/metadata.json`` of a SQL task authored in the app, in the release's fields."""
    return {
        "csv_index": index,
        "dataset_name": folder,
        "hf_task_id": None,
        **ids,
        "database_name": env.db_id,
        "num_blockers": len(snapshot["blockers"]),
        "database_sha256": data_sha or None,
    }


_SWE_STATS = {
    "missing parameters": "missing_parameter",
    "ambiguous requirements": "ambiguous_requirement",
    "contradictory requirements": "contradictory_requirement",
}


def _patched_files(patch: str) -> list[str]:
    """Paths a unified diff touches, in order (``diff --git a/X b/X`` headers)."""
    paths: list[str] = []
    for line in patch.splitlines():
        if line.startswith("diff --git ") and " b/" in line:
            path = line.rsplit(" b/", 1)[1]
            if path not in paths:
                paths.append(path)
    return paths


def swe_metadata(
    task: Task, snapshot: dict, folder: str, spec: dict, ids: dict, base: str, head: str | None
) -> dict:
    """``shared/metadata.json`` of a SWE task authored in the app, in the release's fields."""
    env = task.swe_environment
    stats = {"total": len(snapshot["blockers"]), **{v: 0 for v in _SWE_STATS.values()}}
    for b in snapshot["blockers"]:
        if b["type"] in _SWE_STATS:
            stats[_SWE_STATS[b["type"]]] += 1
    return {
        "instance_id": task.source_metadata.get("instance_id") or task.source_id,
        "dataset_name": folder,
        "test_files": _patched_files(env.test_patch),
        # The release runs prebuilt images; ours are built from environment/, with the run
        # script and parser (when the task has them) where the release keeps them.
        "image_archive": None,
        "run_script_path": "/root/run_script.sh" if spec.get("run_script") else None,
        "parser_script_path": "/root/parser.py" if spec.get("parser_script") else None,
        "repo_name": "app",
        "repo_name_source": env.repo_name,
        # The commit the shipped repository is at (the setup patch applied): the one the
        # release's evaluator resets to. annotate/ keeps the tree before it.
        "base_commit": base,
        # The release's naming: the hil CLI runs a hilbench-swe:* image as it is (repository
        # at /app, dependencies installed); build_images.sh of ``hil_workspace`` builds it.
        "image_name": f"hilbench-swe:{ids['task_attempt_id']}",
        "log_parser": harness_parser(spec.get("log_parser") or "pytest"),
        "language": spec.get("language") or task.source_metadata.get("repo_language") or "unknown",
        "blocker_stats": stats,
        "swe_bench_metadata": {"FAIL_TO_PASS": env.fail_to_pass, "PASS_TO_PASS": env.pass_to_pass},
        "test_cmd": env.test_command,
        "test_patch": env.test_patch,
        **ids,
        "repository_archive": layout.SWE_REPOSITORY.removeprefix("shared/") if head else None,
        "repository_head": head,
    }


def swe_tests(env, spec: dict) -> dict:
    """What a SWE mode's verifier runs (``tests/tests.json`` with its test patch's path)."""
    return {
        "fail_to_pass": env.fail_to_pass,
        "pass_to_pass": env.pass_to_pass,
        "test_command": eval_script(spec, env.test_command),
        "log_parser": spec.get("log_parser") or "pytest",
    }
