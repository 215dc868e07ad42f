"""Celery tasks: fetch by id, call a service. Results live in our models."""

from celery import Task, shared_task


class _MarkFailed(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from evaluation.services import evaluation_run_fail

        evaluation_run_fail(run_id=kwargs["run_id"], error=f"The run crashed: {exc!r}")


@shared_task(name="evaluation.run", base=_MarkFailed, acks_late=True)
def evaluation_run_job(*, run_id: int) -> None:
    # Idempotent: the service claims the run with a conditional update, and skips passes
    # already stored.
    from evaluation.services import evaluation_run_execute

    evaluation_run_execute(run_id=run_id)


class _MarkStudyFailed(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from evaluation.services import support_study_fail

        support_study_fail(study_id=kwargs["study_id"], error=f"The study crashed: {exc!r}")


@shared_task(name="evaluation.support", base=_MarkStudyFailed, acks_late=True)
def support_study_job(*, study_id: int) -> None:
    from evaluation.services import support_study_execute

    support_study_execute(study_id=study_id)


class _MarkLabellingFailed(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from evaluation.services import labelling_run_fail

        labelling_run_fail(run_id=kwargs["run_id"], error=f"The labelling run crashed: {exc!r}")


@shared_task(name="evaluation.label", base=_MarkLabellingFailed, acks_late=True)
def labelling_run_job(*, run_id: int) -> None:
    from evaluation.services import labelling_run_execute

    labelling_run_execute(run_id=run_id)
