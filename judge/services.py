"""ask_human: judge a question against a task revision's registry, cached and logged."""

import contextlib
import functools
import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from hilbench_annotate.access import require_role
from hilbench_annotate.errors import DomainError, LimitReached
from hilbench_annotate.models import Revision, Task
from hilbench_annotate.selectors import revision_current
from hilbench_annotate.spec import render_swe_statement
from hilbench_annotate.vocabulary import Role

from . import limits
from .access import require_ask_human_caller
from .base import (
    IRRELEVANT,
    JudgeError,
    RegistryBlocker,
    Verdict,
    registry_from_json,
    respond,
    version_fit,
)
from .embedded import EmbeddedJudge, load_weights, weights_version
from .embedstore import stored_encode
from .encoder import get_encoder
from .ensemble import EnsembleJudge
from .llm import PROMPT_VERSION, LLMJudge
from .models import AskHumanCall, AskHumanRun, JudgeCacheEntry, JudgeCalibration

_SPACE = re.compile(r"\s+")


def registry_from_snapshot(snapshot: dict) -> list[RegistryBlocker]:
    """The revision's blockers as the judge reads them: read as a registry file is, by
    ``registry_from_json``, so the recall certified here and the bundle's judge (which reads
    the exported registry) clean every trigger question and description the same way."""
    return registry_from_json(snapshot.get("blockers") or [])


def task_context(snapshot: dict) -> str:
    """The task's own text as the judge reads it to decide relevance (never a resolution):
    SQL, the blocked question and the business information; SWE, the blocked problem
    statement, requirements and interface."""
    spec = snapshot.get("blocked_spec") or {}
    if snapshot.get("domain") == "sql":
        business = (snapshot.get("environment") or {}).get("business_info") or []
        parts = [spec.get("question", ""), *(s for s in business if isinstance(s, str))]
        return "\n".join(p for p in parts if p)
    return render_swe_statement(spec) if spec else ""


def registry_hash(registry: list[RegistryBlocker], context: str = "") -> str:
    """What the judges read of a task: ids, descriptions, types and trigger questions of its
    blockers, and its text; and the resolutions, which the answer is (a new resolution is a
    new cached answer, though the verdict would be the same)."""
    payload = [
        [b.id, b.description, list(b.trigger_questions), b.resolution, b.type] for b in registry
    ]
    payload.append(context)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def normalise(question: str) -> str:
    return _SPACE.sub(" ", question.strip()).lower()


_judges: dict[tuple, object] = {}
_judges_lock = threading.Lock()


def _embedded(calibration: JudgeCalibration | None) -> EmbeddedJudge:
    """One embedded judge per calibration per process: its registry cache outlives a call."""
    key = ("embedded", calibration.version if calibration else "")
    judge = _judges.get(key)
    if judge is None:
        with _judges_lock:
            judge = _judges.get(key)
            if judge is None:
                judge = _judges[key] = (
                    EmbeddedJudge(
                        thresholds=calibration.thresholds,
                        version=calibration.version,
                        index_embed=stored_encode,
                    )
                    if calibration
                    else EmbeddedJudge(index_embed=stored_encode)
                )
    return judge


# A project's calibration, read again at most every few seconds per process: every ask_human
# call asks for its judge. A new calibration is seen at once by the process that made it
# (``calibration_forget``) and within CALIBRATION_TTL_S by the others.
CALIBRATION_TTL_S = 5.0
_calibrations: dict[int, tuple[float, JudgeCalibration | None]] = {}


def calibration_forget(project_id: int) -> None:
    _calibrations.pop(project_id, None)


def project_calibration(project) -> JudgeCalibration | None:
    """The project's latest calibration, if it was made for the shipped judge's weights."""
    if project is None:
        return None
    known = _calibrations.get(project.pk)
    if known is not None and known[0] > time.monotonic():
        return known[1]
    calibration = JudgeCalibration.objects.filter(project=project).first()
    if calibration is None or not calibration.version.startswith(_shipped_version() + "/"):
        calibration = None
    _calibrations[project.pk] = (time.monotonic() + CALIBRATION_TTL_S, calibration)
    return calibration


@functools.cache
def _shipped_version() -> str:
    """The shipped weights' judge version, read from the file alone (the model not built)."""
    return weights_version(load_weights())


def judge_version(project) -> str:
    """``get_judge(project=project).version`` without loading a model where it can: the
    embedded judge's is its project's calibration's or its weights file's. An export names
    it in every validation.json; building the judge there imported numpy into each Celery
    process that exported (15 MB of its own) for one string."""
    if settings.JUDGE_BACKEND == "embedded":
        calibration = project_calibration(project)
        return calibration.version if calibration else _shipped_version()
    return get_judge(project=project).version


def _llm() -> LLMJudge:
    if not settings.JUDGE_LLM_BASE_URL:
        raise JudgeError("JUDGE_LLM_BASE_URL is not set, so the LLM judge has no endpoint.")
    long_version = f"{PROMPT_VERSION}:{settings.JUDGE_LLM_MODEL}"
    return LLMJudge(
        base_url=settings.JUDGE_LLM_BASE_URL,
        model=settings.JUDGE_LLM_MODEL,
        api_key_env="JUDGE_LLM_API_KEY",
        timeout_s=settings.JUDGE_LLM_TIMEOUT_S,
        # The cache key: a new model or prompt never reuses another's verdicts.
        version=version_fit(long_version),
        long_version=long_version,
    )


def get_judge(name: str | None = None, *, project=None):
    """The configured judge: ``embedded`` (default), ``llm`` (an OpenAI-compatible endpoint)
    or ``ensemble`` (embedded first, the LLM when the embedded verdict is close to its
    threshold). The embedded judge uses the project's calibrated thresholds, if any."""
    name = name or settings.JUDGE_BACKEND
    if name == "embedded":
        return _embedded(project_calibration(project))
    if name == "llm":
        return _llm()
    if name == "ensemble":
        return EnsembleJudge(
            _embedded(project_calibration(project)), _llm(), band=settings.JUDGE_ENSEMBLE_BAND
        )
    raise JudgeError(f"Unknown judge {name!r}; use embedded, llm or ensemble.")


def judge_preload() -> str:
    """Load the configured judge's model now, in a process about to serve (a warm-up in
    ``hilbench_annotate.warmup``): the encoder, the shipped weights, and one encoding so
    onnxruntime has set itself up. The LLM judge has nothing to load."""
    if settings.JUDGE_BACKEND == "llm":
        return "the LLM judge loads nothing"
    try:
        judge = _embedded(None)
        get_encoder().encode(["Which value should the report use?"])
    except JudgeError as exc:
        return f"not loaded, the first judged question will say why: {exc}"
    return f"judge {judge.version}"


def judge_index_prepare(*, revision_id: int) -> str:
    """Build the judge's index of a saved revision's registry and task text in this process,
    and keep its embeddings (``judge.embedstore``) so every other process builds it from one
    query: the task's first question then pays no encoding. Best effort — a revision gone,
    a judge without an index (the LLM) or a model that cannot load only says why."""
    revision = Revision.objects.filter(pk=revision_id).select_related("task__project").first()
    if revision is None:
        return "no such revision"
    registry = registry_from_snapshot(revision.snapshot)
    try:
        judge = get_judge(project=revision.task.project)
        embedded = getattr(judge, "embedded", judge)
        if not hasattr(embedded, "prepare"):
            return f"{judge.version} keeps no index"
        embedded.prepare(
            registry, domain=revision.task.domain, context=task_context(revision.snapshot)
        )
    except JudgeError as exc:
        return f"not prepared: {exc}"
    return f"prepared {len(registry)} blockers of revision {revision.number}"


def verdict_key(*, judge, question: str, digest: str) -> dict:
    """What a verdict is kept under: the judge's version, the hash of what it read of the
    task (``registry_hash``) and the question, normalised."""
    return {
        "judge_version": judge.version,
        "registry_hash": digest,
        "question": normalise(question),
    }


def verdict_lookup(key: dict) -> Verdict | None:
    hit = JudgeCacheEntry.objects.filter(**key).values_list("blocker_key", "reason")[:1]
    return next((Verdict(blocker_id=b, reason=r) for b, r in hit), None)


def verdict_store(key: dict, verdict: Verdict) -> Verdict:
    """Keep ``verdict`` (in a savepoint of the caller's transaction, if any); when a
    concurrent call stored one first, theirs is the verdict."""
    try:
        with transaction.atomic():
            JudgeCacheEntry.objects.create(
                **key, blocker_key=verdict.blocker_id, reason=verdict.reason[:2000]
            )
    except IntegrityError:
        hit = JudgeCacheEntry.objects.get(**key)
        return Verdict(blocker_id=hit.blocker_key, reason=hit.reason)
    return verdict


def judge_cached(
    *,
    judge,
    registry: list[RegistryBlocker],
    question: str,
    domain: str | None = None,
    context: str = "",
) -> Verdict:
    """Deterministic: the same judge version, registry, task text and question give the same
    verdict (``domain``: the task's; the registry's blocker types say it otherwise;
    ``context``: the task's text, ``task_context``)."""
    key = verdict_key(judge=judge, question=question, digest=registry_hash(registry, context))
    hit = verdict_lookup(key)
    if hit is not None:
        return hit
    # JudgeError: never cached
    return verdict_store(key, judge.judge(question, registry, domain=domain, context=context))


class Verdicts:
    """``judge_cached`` for many questions at once: ``prefetch`` reads the kept verdicts of
    many (registry hash, normalised question) pairs in one query (one per
    ``PREFETCH_PARAMS`` hashes and questions); ``get`` answers from them, judges what was
    looked up and not found without asking the database again, and ``keep`` stores those
    fresh verdicts in one insert. A pair not prefetched is ``judge_cached`` as before.

    Unlike ``judge_cached``, a fresh verdict is what ``get`` answers even when a concurrent
    call kept another one first (theirs stays kept): the same for a deterministic judge, and
    for the LLM judge the next read answers theirs."""

    PREFETCH_PARAMS = 900

    def __init__(self, judge):
        self.judge = judge
        self._known: dict[tuple[str, str], Verdict] = {}
        self._missing: set[tuple[str, str]] = set()  # looked up, not kept
        self._fresh: dict[tuple[str, str], Verdict] = {}

    def prefetch(self, asks) -> None:
        """Read the kept verdicts of ``asks`` ((registry hash, question) pairs; the question
        as asked or normalised), a slice of ``PREFETCH_PARAMS`` hashes and questions at a
        time (in the order given: one task's pairs share theirs)."""
        pending = list(dict.fromkeys((d, normalise(q)) for d, q in asks))
        pending = [key for key in pending if key not in self._known and key not in self._missing]
        while pending:
            digests: set[str] = set()
            questions: set[str] = set()
            taken = 0
            for digest, question in pending:
                grown = len(digests) + len(questions)
                grown += (digest not in digests) + (question not in questions)
                if taken and grown > self.PREFETCH_PARAMS:
                    break
                digests.add(digest)
                questions.add(question)
                taken += 1
            for digest, question, blocker_key, reason in JudgeCacheEntry.objects.filter(
                judge_version=self.judge.version, registry_hash__in=digests, question__in=questions
            ).values_list("registry_hash", "question", "blocker_key", "reason"):
                self._known[(digest, question)] = Verdict(blocker_id=blocker_key, reason=reason)
            self._missing.update(key for key in pending[:taken] if key not in self._known)
            pending = pending[taken:]

    def prepare(self, inputs: dict[str, tuple]) -> None:
        """Build at once the judge's indexes of those of ``inputs`` (registry hash ->
        (registry, domain, task text)) a prefetched pair of was not found for
        (``EmbeddedJudge.prepare_many``: one read of the embedding store for all, not one
        per registry the judge is asked about)."""
        embedded = getattr(self.judge, "embedded", self.judge)  # the ensemble's embedded half
        needed = {digest for digest, _ in self._missing} & set(inputs)
        if needed and hasattr(embedded, "prepare_many"):
            # A judge that cannot build them fails each question as it would have (JudgeError).
            with contextlib.suppress(JudgeError):
                embedded.prepare_many([inputs[digest] for digest in sorted(needed)])

    def get(
        self,
        *,
        registry: list[RegistryBlocker],
        question: str,
        domain: str | None = None,
        context: str = "",
        digest: str = "",
    ) -> Verdict:
        """As ``judge_cached`` (``digest``: ``registry_hash(registry, context)``, if known)."""
        key = (digest or registry_hash(registry, context), normalise(question))
        verdict = self._known.get(key)
        if verdict is not None:
            return verdict
        if key in self._missing:
            # JudgeError: never kept
            verdict = self._fresh[key] = self.judge.judge(
                question, registry, domain=domain, context=context
            )
        else:
            verdict = judge_cached(
                judge=self.judge,
                registry=registry,
                question=question,
                domain=domain,
                context=context,
            )
        self._known[key] = verdict
        return verdict

    def keep(self) -> None:
        """Store the fresh verdicts, in one insert in a savepoint of the caller's transaction,
        if any (one a concurrent call stored first stays)."""
        if not self._fresh:
            return
        rows = [
            JudgeCacheEntry(
                judge_version=self.judge.version,
                registry_hash=digest,
                question=question,
                blocker_key=verdict.blocker_id,
                reason=verdict.reason[:2000],
            )
            for (digest, question), verdict in self._fresh.items()
        ]
        self._fresh = {}
        with transaction.atomic():
            JudgeCacheEntry.objects.bulk_create(rows, ignore_conflicts=True)


@dataclass(frozen=True)
class JudgeInput:
    """What the judge reads of one revision: its registry, the task's text, their hash."""

    registry: list[RegistryBlocker]
    context: str
    digest: str


# Revisions never change: what the judge reads of one is kept per process (an agent asks
# several questions of one revision; its snapshot was read and parsed for each).
_revision_inputs: OrderedDict[int, JudgeInput] = OrderedDict()
_REVISION_INPUTS_SIZE = 1024


def forget_process_caches() -> None:
    """Drop what this process keeps by row id (revisions' judge inputs, projects'
    calibrations): ids are never reused in a database, but a test database starts again at 1."""
    with _judges_lock:
        _revision_inputs.clear()
        _calibrations.clear()


def revision_judge_input(revision_id: int) -> JudgeInput:
    known = _revision_inputs.get(revision_id)
    if known is not None:
        return known
    snapshot = Revision.objects.values_list("snapshot", flat=True).get(pk=revision_id)
    registry, context = registry_from_snapshot(snapshot), task_context(snapshot)
    known = JudgeInput(registry, context, registry_hash(registry, context))
    with _judges_lock:
        _revision_inputs[revision_id] = known
        while len(_revision_inputs) > _REVISION_INPUTS_SIZE:
            _revision_inputs.popitem(last=False)
    return known


@transaction.atomic
def ask_human_run_start(*, task: Task, actor, label: str = "", session: str = "") -> AskHumanRun:
    """``session``: the harness session of an API caller (``limits.harness_session``);
    empty for runs the app starts itself, which no rate limit or session cap counts."""
    require_role(actor, task.project, Role.HARNESS, Role.LEAD, action="start ask_human runs")
    revision = revision_current(task=task)
    if revision is None:
        raise DomainError("The task has no revision to evaluate.")
    if session:
        limits.caller_lock(actor.pk)
        limits.rate_per_token_check(session)
        limits.run_rate_per_task_check(user=actor, task=task)
        refusal = limits.session_cap_refusal(session=session, task_id=task.pk)
        if refusal:
            raise LimitReached(refusal, limit=limits.SESSION_ANSWER_CAP)
    judge = get_judge(project=task.project)
    # The index of the revision, in this process, before the agent's first question (built
    # from the embeddings its save kept: judge_index_prepare).
    task_input = revision_judge_input(revision.pk)
    embedded = getattr(judge, "embedded", judge)  # the ensemble's embedded half
    if hasattr(embedded, "prepare"):
        embedded.prepare(task_input.registry, domain=task.domain, context=task_input.context)
    return AskHumanRun.objects.create(
        task=task,
        revision=revision,
        created_by=actor,
        judge_version=judge.version,
        answer_cap=settings.ASK_HUMAN_ANSWER_CAP,
        label=label[:200],
        session=session,
    )


_ANSWERED = (
    "SELECT COALESCE(SUM(CASE WHEN c.run_id = %s THEN 1 ELSE 0 END), 0), COUNT(*), "
    "COALESCE(SUM(CASE WHEN c.run_id = %s AND c.blocker_key = %s THEN 1 ELSE 0 END), 0) "
    "FROM judge_askhumancall c JOIN judge_askhumanrun r ON r.id = c.run_id "
    "WHERE c.blocker_key IS NOT NULL AND "
)
_ANSWERED_IN_SESSION = _ANSWERED + "r.session = %s AND r.task_id = %s"
_ANSWERED_IN_RUN = _ANSWERED + "c.run_id = %s"


def _answered(run: AskHumanRun, blocker_key: str | None = None) -> dict[str, int]:
    """Answers so far: the run's (``run``), its session's about the task (``session``; the
    run's own without a session) and the run's about ``blocker_key`` (``same``).

    One query, in SQL: it runs twice on every question (before the judge, and again under
    the caller's lock), and building it with the ORM cost more than running it."""
    if run.session:
        sql, params = _ANSWERED_IN_SESSION, [run.session, run.task_id]
    else:
        sql, params = _ANSWERED_IN_RUN, [run.pk]
    with connection.cursor() as cursor:
        cursor.execute(sql, [run.pk, run.pk, blocker_key or "", *params])
        mine, session, same = cursor.fetchone()
    return {"run": mine, "session": session, "same": same}


def _cap_reached(run: AskHumanRun, answered: dict[str, int]) -> tuple[str, str] | None:
    """(limit, reason) when the run may get no more answers: its own cap (silent, as in the
    release: the agent reads "irrelevant question"), or its session's cap for the task."""
    if run.answer_cap and answered["run"] >= run.answer_cap:
        return "run_answer_cap", f"answer cap of {run.answer_cap} reached"
    refusal = limits.session_cap_refusal(
        session=run.session, task_id=run.task_id, answered=answered["session"]
    )
    return (limits.SESSION_ANSWER_CAP, refusal) if refusal else None


def _capped(run: AskHumanRun, question: str, client_time: str, cap: tuple[str, str]):
    """Log a question the caps refused (it counts as a call, as in Ask-F1); the session
    cap is then raised so the caller reads which limit it hit."""
    limit, reason = cap
    call = AskHumanCall.objects.create(
        run=run,
        question=question,
        response=IRRELEVANT,
        capped=True,
        refused_by=limit,
        reason=reason,
        client_time=client_time[:40],
    )
    if limit == limits.SESSION_ANSWER_CAP:
        raise LimitReached(reason, limit=limit)
    return call


def _rate_check(run: AskHumanRun, question: str, client_time: str) -> None:
    """The session's request rate; a question it refuses is logged as a call of the run
    (``refused_by`` names the rate limit; it matched nothing, so Ask-F1 counts it as the release
    counts an irrelevant question — the release has no rate limit, so there it would have
    been asked), then the refusal is raised: the caller reads 429 and when to retry."""
    try:
        limits.rate_per_token_check(run.session)
    except LimitReached as refusal:
        AskHumanCall.objects.create(
            run=run,
            question=question,
            refused_by=refusal.limit,
            reason=str(refusal)[:2000],
            client_time=client_time[:40],
        )
        raise


def ask_human(*, run: AskHumanRun, actor, question: str, client_time: str = "") -> AskHumanCall:
    """Answer one agent question and log it. A judge failure is logged and raised, never
    turned into "irrelevant question"; so is a question refused by the session cap."""
    require_ask_human_caller(actor, run)
    question = (question or "").strip()
    if not question:
        raise DomainError("The question is empty.")
    if len(question) > 4000:
        raise DomainError("The question is longer than 4,000 characters.")
    _rate_check(run, question, client_time)
    task_input = revision_judge_input(run.revision_id)
    cap = _cap_reached(run, _answered(run))
    if cap:
        return _capped(run, question, client_time, cap)
    judge = get_judge(project=run.task.project)
    if judge.version != run.judge_version:
        raise DomainError(
            f"The run was started with judge {run.judge_version}, the app now has {judge.version}."
        )
    key = verdict_key(judge=judge, question=question, digest=task_input.digest)
    verdict = verdict_lookup(key)
    fresh = verdict is None
    if fresh:
        try:
            verdict = judge.judge(
                question, task_input.registry, domain=run.task.domain, context=task_input.context
            )
        except JudgeError as exc:
            AskHumanCall.objects.create(
                run=run, question=question, error=str(exc), client_time=client_time[:40]
            )
            raise
    with transaction.atomic():
        # The judge ran unlocked; its verdict is kept, and whether an answer still fits under
        # the caps decided, in one transaction under the caller's lock, so simultaneous
        # questions cannot all take the last answer.
        limits.caller_lock(run.created_by_id)
        if fresh:
            verdict = verdict_store(key, verdict)
        response = respond(verdict, task_input.registry)
        answered = _answered(run, verdict.blocker_id) if verdict.blocker_id else None
        cap = _cap_reached(run, answered) if answered else None
        if cap is None:
            duplicate = bool(answered and answered["same"])
            return AskHumanCall.objects.create(
                run=run,
                question=question,
                blocker_key=verdict.blocker_id,
                response=response,
                duplicate=duplicate,
                reason=verdict.reason[:2000],
                client_time=client_time[:40],
            )
    return _capped(run, question, client_time, cap)  # logged outside the block it raises from


def ask_human_reject(*, run: AskHumanRun, question: str, reason: str) -> AskHumanCall:
    """Log an ask_human call that could not be judged (unreadable, empty, too long): it
    counts as a call that matched nothing, as in the release's Ask-F1."""
    return AskHumanCall.objects.create(
        run=run, question=(question or "")[:4000], error=f"rejected: {reason}"[:2000]
    )
