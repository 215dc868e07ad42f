"""The check groups a validation run can include, per domain.

Each group is a function ``(task, snapshot, workdir) -> list[CheckResult]`` that checks the
snapshot it is handed — the run's revision — and nothing of the task's current state: the
environment it reads is ``environment_at(task, snapshot)``. The structural groups are
registered here; other apps add theirs with ``register_group`` in their
``AppConfig.ready`` (the judge's recall: ``judge/gates.py``).
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from authoring.checks import lint_inputs, patch_chain_check
from hilbench_annotate.databases import edited_copy
from hilbench_annotate.errors import DomainError
from hilbench_annotate.selectors import environment_at
from hilbench_annotate.toolkit.gitrepo import run_git

from .leakage import check_leakage, forbidden_texts, sanitize
from .results import ERROR, FAILED, PASSED, SKIPPED, CheckResult
from .sandbox import limits_from_settings
from .spec import check_spec
from .sql import check_sql_task
from .swe import check_swe_tests


def _spec(task, snapshot, workdir: Path):
    waivers = dict(task.lint_waivers.values_list("fingerprint", "reason"))
    env = environment_at(task=task, snapshot=snapshot)
    return check_spec(snapshot, waivers, **lint_inputs(task, snapshot, env))


def _swe_patches(task, snapshot, workdir: Path):
    env = environment_at(task=task, snapshot=snapshot)
    if env.repository is None:
        return [
            CheckResult("patches_apply", SKIPPED, "The task has no repository to apply patches to.")
        ]
    try:
        labels = patch_chain_check(env, env.setup_patch)
    except DomainError as exc:
        return [CheckResult("patches_apply", FAILED, str(exc))]
    return [
        CheckResult(
            "patches_apply",
            PASSED,
            "The setup patch applies cleanly on the base commit; "
            "test and gold patches apply on top.",
            {"patches": labels},
        )
    ]


def _swe_tests(task, snapshot, workdir: Path):
    return check_swe_tests(
        environment_at(task=task, snapshot=snapshot), limits=limits_from_settings()
    )


def _history_leakage(task, snapshot, workdir: Path):
    env = environment_at(task=task, snapshot=snapshot)
    if env.repository is None:
        return [CheckResult("history_leakage", SKIPPED, "The task has no repository.")]
    shipped = sanitize(
        mirror=env.repository.path,
        base_commit=env.base_commit,
        setup_patch=env.setup_patch,
        dest=workdir / "shipped",
    )
    texts = forbidden_texts(
        gold_patch=env.gold_patch,
        setup_patch=env.setup_patch,
        resolutions=[(b["id"], b["resolution"]) for b in snapshot.get("blockers", [])],
    )
    dated = run_git(
        Path(env.repository.path),
        ["show", "-s", "--format=%ct", "--end-of-options", f"{env.base_commit}^{{commit}}"],
        check=False,
    )
    base_date = int(dated.stdout.decode().strip()) if dated.returncode == 0 else None
    return check_leakage(repo=shipped, base_commit=None, forbidden=texts, base_date=base_date)


def _sql_ground_truth(task, snapshot, workdir: Path):
    def copy(source: Path, script: str, timeout_s: float) -> Path:
        return edited_copy(
            project_id=task.project_id, source=source, edit_script=script, timeout_s=timeout_s
        )

    env = environment_at(task=task, snapshot=snapshot)
    return check_sql_task(env, timeout_s=settings.SQL_CHECK_TIMEOUT_S, copy=copy)


CheckGroup = Callable[..., list[CheckResult]]


@dataclass(frozen=True)
class Group:
    run: CheckGroup
    domain: str | None  # None: both domains
    # Structural groups are what "run structural checks" runs and the "structural" gate
    # requires; others (the judge's recall needs labelled questions first) run when asked.
    structural: bool


GROUPS: dict[str, Group] = {}


def register_group(
    name: str, run: CheckGroup, *, domain: str | None = None, structural: bool = True
) -> None:
    GROUPS[name] = Group(run=run, domain=domain, structural=structural)


register_group("spec", _spec)
register_group("sql_ground_truth", _sql_ground_truth, domain="sql")
register_group("swe_patches", _swe_patches, domain="swe")
register_group("swe_tests", _swe_tests, domain="swe")
register_group("history_leakage", _history_leakage, domain="swe")


def groups_for(domain: str, *, structural_only: bool = True) -> list[str]:
    return [
        name
        for name, group in GROUPS.items()
        if group.domain in (None, domain) and (group.structural or not structural_only)
    ]


def run_group(name: str, task, snapshot, workdir: Path) -> list[CheckResult]:
    """Run one group; an unexpected exception is an ERROR result, never a crashed run."""
    try:
        return GROUPS[name].run(task, snapshot, workdir)
    except Exception as exc:  # noqa: BLE001 - reported on the run, with its type
        return [CheckResult(name, ERROR, f"The check crashed: {type(exc).__name__}: {exc}")]


__all__ = ["FAILED", "GROUPS", "PASSED", "CheckResult", "groups_for", "register_group", "run_group"]
