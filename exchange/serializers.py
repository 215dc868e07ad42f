"""Input shapes of exchange's actions, shared by the API and the pages: ``POST /api/exports/``
validates its body with ``ExportIn``, and the Export page reads its form through the same
schema (``exchange.forms.export_input``), so the two accept the same selection and refuse it
in the same words; an import's options (``ImportOptionsIn``) are read alike from the Import
page's form and from the query of ``POST /api/projects/<id>/tasks/import``. Every rule beyond
shape (the states, the domain, whether the ids are the project's tasks, which kinds take
records) lives in the services."""

from rest_framework import serializers

from exchange.models import ImportJob
from exchange.services.imports import SKIP_MISSING_DATABASES_LABEL
from hilbench_annotate.jobs import JOB_WAIT_MAX_S
from hilbench_annotate.params import MAX_ID
from hilbench_annotate.vocabulary import TaskStatus


class ExportIn(serializers.Serializer):
    project = serializers.IntegerField()
    # Ids in every id column's range: a larger one was a 500 (the database's overflow).
    tasks = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), required=False, default=list
    )
    states = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="Task states (" + ", ".join(TaskStatus.values) + "); checked by the service",
    )
    # Checked by the service ("", "sql" or "swe"); a plain string keeps the OpenAPI enums
    # of "domain" to the one the task endpoints define.
    domain = serializers.CharField(required=False, default="", allow_blank=True)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=40),
        required=False,
        default=list,
        help_text="Tasks carrying any of these tags",
    )
    draft = serializers.BooleanField(required=False, default=False)
    reveal_reviewers = serializers.BooleanField(required=False, default=False)
    allow_internet = serializers.BooleanField(
        required=False, default=False, help_text="task.toml allow_internet (default false)"
    )
    judge_endpoint = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=500,
        help_text="With judge_model: the release's LLM judge scores the ask_human of tasks kept "
        "from the release (its own sidecar calls this endpoint); empty: the embedded judge",
    )  # fmt: skip
    judge_model = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=200
    )


def export_arguments(data: dict) -> dict:
    """``bundle_export_start``'s keyword arguments (but the project) from a valid
    ``ExportIn``: the Export page and the API pass the same."""
    return {
        "selection": {k: data[k] for k in ("tasks", "states", "domain", "tags")},
        "draft": data["draft"],
        "reveal_reviewers": data["reveal_reviewers"],
        "allow_internet": data["allow_internet"],
        "llm_judge": {"endpoint": data["judge_endpoint"], "model": data["judge_model"]},
    }


class ImportOptionsIn(serializers.Serializer):
    """What an import is told beside its files (the page) or its records (the API)."""

    # allow_null: an empty value is false, as the API has always read it.
    skip_missing_databases = serializers.BooleanField(
        default=False, allow_null=True, help_text=SKIP_MISSING_DATABASES_LABEL
    )
    repo_url = serializers.CharField(
        allow_blank=True, required=False, default="", max_length=500, label="Repository URL"
    )


def import_options(data: dict) -> dict:
    """The ``options`` an import service takes, from a valid ``ImportOptionsIn``."""
    return {
        "skip_missing_databases": bool(data["skip_missing_databases"]),
        "repo_url": data["repo_url"],
    }


class RecordsImportIn(ImportOptionsIn):
    # Which kinds take records is the service's question (``RECORD_KINDS``), in its words.
    kind = serializers.CharField(allow_blank=True, required=False, default=ImportJob.Kind.BIRD)


class JobWaitIn(serializers.Serializer):
    wait = serializers.FloatField(
        min_value=0,
        max_value=JOB_WAIT_MAX_S,
        required=False,
        default=0,
        help_text="Seconds to wait for the job to finish before answering (at most "
        f"{JOB_WAIT_MAX_S:.0f}): one request instead of polling",
    )
