"""Celery tasks: fetch by id, call a service. Results live in our models."""

from celery import Task, shared_task


def _marks_failed(model: str, id_kwarg: str, what: str) -> type[Task]:
    """A task base whose crash marks the job's row failed, so nothing stays "running"."""

    class MarkFailed(Task):
        def on_failure(self, exc, task_id, args, kwargs, einfo):
            from django.apps import apps

            from evaluation.services.runs import job_fail

            job_fail(apps.get_model(model), kwargs[id_kwarg], f"The {what} crashed: {exc!r}")

    return MarkFailed


# Idempotent: each service claims its row with a conditional update and skips what a
# previous delivery stored.
@shared_task(
    name="evaluation.run",
    base=_marks_failed("evaluation.EvaluationRun", "run_id", "run"),
    acks_late=True,
)
def evaluation_run_job(*, run_id: int) -> None:
    from evaluation.services import evaluation_run_execute

    evaluation_run_execute(run_id=run_id)


@shared_task(
    name="evaluation.support",
    base=_marks_failed("evaluation.SupportStudy", "study_id", "study"),
    acks_late=True,
)
def support_study_job(*, study_id: int) -> None:
    from evaluation.services import support_study_execute

    support_study_execute(study_id=study_id)


@shared_task(
    name="evaluation.label",
    base=_marks_failed("evaluation.LabellingRun", "run_id", "labelling run"),
    acks_late=True,
)
def labelling_run_job(*, run_id: int) -> None:
    from evaluation.services import labelling_run_execute

    labelling_run_execute(run_id=run_id)
