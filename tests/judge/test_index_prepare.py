"""A task's judge index is built when its registry is saved, not on its first question."""

import pytest

from exchange.demo.blocked_task import DEMO_BLOCKERS
from hilbench_annotate import services as core
from hilbench_annotate.celery import app as celery_app
from judge import embedstore
from judge.embedded import EmbeddedJudge
from judge.features import sentences
from judge.models import JudgeEmbedding
from judge.services import get_judge, registry_from_snapshot, task_context

from ..factories import TaskFactory

pytestmark = pytest.mark.django_db


class _NoModel:
    def encode(self, texts):
        raise AssertionError(f"the model ran for {texts[:2]}…: the store should have them")


def test_saving_the_registry_keeps_every_embedding_its_index_needs(
    project, author, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.JUDGE_PREPARE_ON_SAVE = True
    get_judge().forget_indexes()  # another test of this process may have built them
    task = TaskFactory(project=project, author=author)
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True  # the worker's job, run here
    try:
        with django_capture_on_commit_callbacks(execute=True):
            for blocker in DEMO_BLOCKERS:
                task.refresh_from_db()
                core.blocker_create(
                    task=task, actor=author, expected_version=task.version, **blocker
                )
    finally:
        celery_app.conf.task_always_eager = eager
    snapshot = task.revisions.order_by("-number").first().snapshot
    registry, context = registry_from_snapshot(snapshot), task_context(snapshot)
    texts = [q for b in registry for q in b.trigger_questions]
    texts += [b.description for b in registry] + sentences(context)
    stored = JudgeEmbedding.objects.count()
    assert stored >= len(set(texts))

    # Another process (a web worker) builds the index from the store: no model run.
    monkeypatch.setattr(embedstore, "get_encoder", lambda: _NoModel())
    EmbeddedJudge(index_embed=embedstore.stored_encode).prepare(
        registry, domain=task.domain, context=context
    )
    assert JudgeEmbedding.objects.count() == stored


def test_saving_sends_no_work_when_turned_off(project, author, django_capture_on_commit_callbacks):
    task = TaskFactory(project=project, author=author)
    with django_capture_on_commit_callbacks(execute=True):
        core.blocker_create(
            task=task, actor=author, expected_version=task.version, **DEMO_BLOCKERS[0]
        )
    assert not JudgeEmbedding.objects.exists()
