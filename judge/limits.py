"""Limits on harness callers of ask_human: rate limits per API token and per task, and a cap
on answered questions per task across the runs of one harness session.

A harness session is what the caller authenticates with: one API token (``token:<id>``; a
harness makes a token for each evaluation session) or, for a signed-in caller without a
token, that person (``user:<id>``). Runs the app starts itself (the built-in runner,
imported results) belong to no session: their evaluation run bounds their passes.

Everything is counted from the run and call rows in the database, never a per-process
cache, so every web process (several gunicorn workers on PostgreSQL) sees the same counts.
The question rate is checked before the judge runs, without a lock: simultaneous requests
may pass it by a few. Run starts and the caps are checked under the caller's row lock
(:func:`caller_lock`), right before the row is written, so they hold exactly.
"""

import math
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from hilbench_annotate.errors import LimitReached

from .models import AskHumanCall, AskHumanRun

RATE_PER_TOKEN = "rate_per_token"  # noqa: S105 - a limit's name
RUN_RATE_PER_TASK = "run_rate_per_task"
SESSION_ANSWER_CAP = "session_answer_cap"


def harness_session(user, token) -> str:
    """The session a request's runs belong to (``token``: DRF's ``request.auth``, an
    ``ApiToken`` for token authentication, None for a signed-in browser session)."""
    token_id = getattr(token, "pk", None)
    return f"token:{token_id}" if token_id is not None else f"user:{user.pk}"


def _who(session: str) -> str:
    return "API token" if session.startswith("token:") else "caller"


def caller_lock(user_id: int) -> None:
    """Serialise the limit checks of one caller across processes. Precondition: inside a
    transaction (the lock is held until it ends). On SQLite the transaction itself holds the
    database's write lock (``transaction_mode`` IMMEDIATE) and there is no row lock to take."""
    if connection.vendor == "sqlite":
        return
    list(get_user_model().objects.select_for_update().filter(pk=user_id).values_list("pk"))


def _retry_after(times: list[datetime], limit: int, seconds: int, now: datetime) -> int:
    """Seconds until fewer than ``limit`` of ``times`` (ascending) lie in the window."""
    leaves_last = times[len(times) - limit]
    return max(1, math.ceil((leaves_last + timedelta(seconds=seconds) - now).total_seconds()))


# Runs started and questions asked in a session since a time: checked on every question, in
# SQL (building it with the ORM cost more than running it). A question the rate limit
# refused is logged as a call of its run (``services._rate_check``) but is no request
# served: it does not count here, so a caller who waits the Retry-After it was told is
# answered.
_REQUESTS_SINCE = (
    "SELECT (SELECT COUNT(*) FROM judge_askhumanrun WHERE session = %s AND created_at > %s)"
    " + (SELECT COUNT(*) FROM judge_askhumancall c JOIN judge_askhumanrun r ON r.id = c.run_id"
    " WHERE r.session = %s AND c.created_at > %s AND c.refused_by <> %s)"
)


def _requests_since(session: str, since: datetime) -> int:
    at = connection.ops.adapt_datetimefield_value(since)
    with connection.cursor() as cursor:
        cursor.execute(_REQUESTS_SINCE, [session, at, session, at, RATE_PER_TOKEN])
        return cursor.fetchone()[0]


def rate_per_token_check(session: str) -> None:
    """Runs started plus questions asked in this session within the window."""
    if not session or settings.ASK_HUMAN_RATE_PER_TOKEN is None:
        return
    limit, seconds = settings.ASK_HUMAN_RATE_PER_TOKEN
    now = timezone.now()
    since = now - timedelta(seconds=seconds)
    if _requests_since(session, since) < limit:
        return
    runs = AskHumanRun.objects.filter(session=session, created_at__gt=since)
    calls = AskHumanCall.objects.filter(run__session=session, created_at__gt=since).exclude(
        refused_by=RATE_PER_TOKEN
    )
    times = sorted(
        [*runs.values_list("created_at", flat=True), *calls.values_list("created_at", flat=True)]
    )
    wait = _retry_after(times, limit, seconds, now)
    raise LimitReached(
        f"Rate limit reached: at most {limit} ask_human requests (runs started and questions) "
        f"per {seconds} s for one {_who(session)}. Retry in {wait} s.",
        limit=RATE_PER_TOKEN,
        retry_after=wait,
    )


def run_rate_per_task_check(*, user, task) -> None:
    """New runs of ``task`` by ``user`` within the window, whichever token started them."""
    if settings.ASK_HUMAN_RUN_RATE_PER_TASK is None:
        return
    limit, seconds = settings.ASK_HUMAN_RUN_RATE_PER_TASK
    now = timezone.now()
    runs = AskHumanRun.objects.filter(
        created_by=user, task=task, created_at__gt=now - timedelta(seconds=seconds)
    ).exclude(session="")
    if runs.count() < limit:
        return
    wait = _retry_after(sorted(runs.values_list("created_at", flat=True)), limit, seconds, now)
    raise LimitReached(
        f"Rate limit reached: at most {limit} new ask_human runs of task {task.pk} per "
        f"{seconds} s. Retry in {wait} s.",
        limit=RUN_RATE_PER_TASK,
        retry_after=wait,
    )


def session_answers(*, session: str, task_id: int) -> int:
    """Questions answered with a resolution across the session's runs of the task."""
    return (
        AskHumanCall.objects.filter(run__session=session, run__task_id=task_id)
        .exclude(blocker_key=None)
        .count()
    )


def session_cap_refusal(*, session: str, task_id: int, answered: int | None = None) -> str | None:
    """Why the session gets no more answers about the task, or None (``answered``: the
    session's answers about the task when the caller counted them already)."""
    cap = settings.ASK_HUMAN_SESSION_ANSWER_CAP
    if not session or not cap:
        return None
    if answered is None:
        answered = session_answers(session=session, task_id=task_id)
    if answered < cap:
        return None
    return (
        f"Session cap reached: this {_who(session)}'s runs of task {task_id} have had "
        f"{answered} answered questions, the most one harness session gets for a task "
        f"(at most {cap}, however many runs it starts). No more answers for this task."
    )
