"""Findings for a task draft: lint rules plus the quick environment checks.

Used three ways with the same code: live as the author types (nothing saved), stored with
each revision at save, and as the gate of "submit for review".
"""

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings

from authoring import lint
from hilbench_annotate.databases import edited_copy
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Task
from hilbench_annotate.toolkit import gitrepo, patches, sqlconsole
from hilbench_annotate.vocabulary import Domain


def edited_database_path(task: Task, edit_script: str, env=None) -> Path | None:
    """The task's database (``env``'s, by default the task's own environment's) with
    ``edit_script`` applied (a cached read-only copy), or None when there is no database.
    Raises EditScriptError when the script fails and StorageFull when the project's quota has
    no room for the copy."""
    env = env or task.sql_environment
    if env.database is None:
        return None
    return edited_copy(
        project_id=task.project_id, source=env.database.path, edit_script=edit_script or ""
    )


def _sql_findings(task: Task, draft: Mapping[str, Any], env=None) -> tuple[list[lint.Finding], Any]:
    try:
        path = edited_database_path(task, draft["environment"].get("edit_script", ""), env)
    except DomainError as exc:
        return [lint.Finding("edit_script", "environment.edit_script", str(exc), "error")], None
    if path is None:
        note = lint.Finding(
            "database_absent",
            "environment.database",
            "The task has no database file, so the gold SQL's tables and columns are not checked.",
            "warning",
        )
        return [note], None
    try:
        return [], sqlconsole.schema_columns(path)
    except sqlconsole.DatabaseUnreadable as exc:
        unreadable = lint.Finding("database_unreadable", "environment.database", str(exc), "error")
        return [unreadable], None


def _swe_findings(task: Task, draft: Mapping[str, Any]) -> list[lint.Finding]:
    env = task.swe_environment
    setup_patch = draft["environment"].get("setup_patch") or ""
    if env.repository is None:
        return [
            lint.Finding(
                "repository_absent",
                "environment.repository",
                "The task has no repository, so the setup patch cannot be checked.",
                "warning",
            )
        ]
    try:
        patch_chain_check(env, setup_patch)
    except DomainError as exc:
        return [lint.Finding("setup_patch", "environment.setup_patch", str(exc), "error")]
    return []


def patch_chain_check(env, setup_patch: str) -> list[str]:
    """Apply setup, test and gold patch in turn on the base commit; the labels checked.

    Raises PatchRefused naming the patch that fails. Only our setup patch must be free of
    whitespace errors: upstream test and gold patches are applied as they are. The
    workspace's lint and the ``swe_patches`` validator both call this.
    """
    chain = [
        (label, text)
        for label, text in (
            ("setup patch", setup_patch),
            ("test patch", env.test_patch),
            ("gold patch", env.gold_patch),
        )
        if text.strip()
    ]
    patches.check_applies(
        env.repository.path, env.base_commit, chain, whitespace_exempt={"test patch", "gold patch"}
    )
    return [label for label, _ in chain]


def setup_patch_problems(env, setup_patch: str) -> list[str]:
    """Why a setup patch reaches outside the repository (empty when it does not)."""
    symlinks = set()
    if env.repository is not None:
        symlinks = gitrepo.symlink_paths(env.repository.path, env.base_commit)
    return patches.path_problems(setup_patch, symlinks=symlinks)


@lru_cache(maxsize=256)
def _names_present(path: str, commit: str, names: frozenset[str]) -> frozenset[str]:
    """Cached: lint runs on every pause in typing, and a tree does not change."""
    return frozenset(gitrepo.names_present(Path(path), commit, names))


def repository_names(task: Task, draft: Mapping[str, Any], env=None) -> frozenset[str] | None:
    """The names the draft's resolutions use that the repository holds at the base commit
    (``env``'s, by default the task's own environment's; None without a repository, or when
    it cannot be searched: lint then falls back on the names the specification gives as
    code)."""
    env = env or task.swe_environment
    if env.repository is None or not env.base_commit:
        return None
    try:
        return _names_present(env.repository.path, env.base_commit, lint.resolution_names(draft))
    except DomainError:
        return None


def lint_inputs(task: Task, draft: Mapping[str, Any], env=None) -> dict[str, Any]:
    """What lint reads from the task besides the draft: the database's schema (SQL) or the
    repository's names (SWE), as ``lint_task`` / ``check_spec`` keyword arguments; from
    ``env`` when given (a revision's, ``selectors.environment_at``)."""
    if task.domain == Domain.SQL:
        return {"schema": _sql_findings(task, draft, env)[1]}
    return {"repository_names": repository_names(task, draft, env)}


def draft_findings(task: Task, draft: Mapping[str, Any]) -> list[lint.Finding]:
    if task.domain == Domain.SQL:
        findings, schema = _sql_findings(task, draft)
        inputs = {"schema": schema}
    else:
        findings, inputs = _swe_findings(task, draft), lint_inputs(task, draft)
    findings += lint.lint_task(
        draft,
        **inputs,
        similarity_threshold=settings.LINT_DUPLICATE_SIMILARITY,
        overlap_threshold=settings.LINT_OVERLAP_SIMILARITY,
    )
    return sorted(findings, key=lambda f: (f.field, f.rule))


def as_dicts(findings: list[lint.Finding]) -> list[dict[str, str]]:
    return [
        {
            "rule": f.rule,
            "title": f.title,
            "field": f.field,
            "where": f.where,
            "message": f.message,
            "severity": f.severity,
            "fingerprint": f.fingerprint,
        }
        for f in findings
    ]
