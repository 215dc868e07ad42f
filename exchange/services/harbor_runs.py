"""The worker's half of an agent run in Harbor (``evaluation.services.harbor`` queues it).

In ``HARBOR_RUNS_DIR/<run>``: the run's tasks exported as a draft bundle and unpacked
(``bundle/``), then one ``harbor run`` over a dataset of the mode folders that still need
passes (``dataset/``, links to them; ``-k`` attempts, ``-n HARBOR_CONCURRENCY`` at once, in
``HARBOR_ENVIRONMENT``) — one per number of tries still missing, after a takeover — its jobs
under ``jobs/``. While Harbor works, every trial that has
finished is imported as a pass (``evaluation.harbor_jobs.read_trial``: its reward, its
ask-human log judged by the app, its trajectory), and the run's progress and heartbeat are
updated; a cancel stops Harbor (it tears its containers down) and ends the run.

A trial the release leaves out (``evaluation.tries``: its agent's process failed, or its
environment, verifier or Harbor did) is stored with why (``ExcludedTry``); it used its try,
so the run ends once every try was made, and succeeds when at least one pass was scored.
A worker that dies leaves the folder: the run, taken over, imports the trials that finished
meanwhile, keeps every pass and left-out try stored (one per trial: the trial's name is in
its ``detail``), and asks Harbor only for the tries still missing — what the first worker
would have asked, never a second draw of a try it left out. Harbor runs under a guard
(``exchange/harbor_guard.py``) that stops it and removes the run's containers when the worker
dies or the run is cancelled, so neither outlives the worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.http import Http404

from evaluation.agents import AGENTS
from evaluation.harbor_jobs import MAX_RESULT_BYTES, UNREADABLE, read_trial, trial_results
from evaluation.models import EvaluationRun, ExcludedTry, TaskPass
from evaluation.services.common import evaluation_run_finish, task_resolver
from evaluation.services.results_import import excluded_try_store, imported_pass_store
from exchange.selectors import export_entries
from harbor_agents.fetch import task_fetch_sentence
from hilbench_annotate.errors import DomainError, Refused
from hilbench_annotate.jobs import Job, job_fail, job_finish, job_heartbeat
from hilbench_annotate.model_relay import ModelRelay
from hilbench_annotate.models import Task
from hilbench_annotate.toolkit.archives import extract_archive
from hilbench_annotate.toolkit.jsontext import json_loads
from hilbench_annotate.toolkit.safefiles import read_regular
from validators.sandbox.confine import (
    HostLimits,
    confined_command,
    host_cgroup,
    host_preexec,
    memory_peak,
)

from .exports import bundle_export_create, bundle_export_execute
from .trial_prep import release_trial_files

STOP_GRACE_S = 60
PRIVATE_TMP = "/tmp"  # noqa: S108 - Harbor's own tmpfs inside its confinement, no one else's
GUARD = Path(__file__).resolve().parent.parent / "harbor_guard.py"


class Cancelled(Exception):
    pass


def run_folder(run: EvaluationRun) -> Path:
    return Path(settings.HARBOR_RUNS_DIR) / str(run.pk)


def _export(run: EvaluationRun, folder: Path) -> dict[str, int]:
    """The run's tasks as a draft bundle, unpacked once; folder name -> task id."""
    mapping = folder / "folders.json"
    if mapping.is_file():
        return json_loads(mapping.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    job = bundle_export_create(
        project=run.project, actor=run.created_by, selection={"tasks": run.task_ids},
        draft=True, allow_internet=run.allow_internet, harbor_run=run,
    )  # fmt: skip
    job = bundle_export_execute(job_id=job.pk, out=folder / "bundle.tar.gz")
    if job is None or job.status != Job.Status.SUCCEEDED:
        raise DomainError(f"The export of the run's tasks failed: {getattr(job, 'error', '')}")
    extract_archive(folder / "bundle.tar.gz", folder / "bundle")
    folders = {entry["folder"]: entry["task"] for entry in export_entries(job=job)}
    verifiers, refused = release_trial_files(run, folder / "bundle", folders)
    # A task the app cannot run as it decides is left out, saying why; the others run.
    skipped = {**(run.harbor.get("skipped") or {})}
    skipped.update({f"{name} (every mode)": why for name, why in refused.items()})
    # A task the export left out (a part of it raised: its lint, its files …) is named and
    # makes no trial, so the run's total counts the tasks it runs, not those it could not.
    left_out = job.report.get("skipped") or []
    skipped.update(
        {f"task {s['task']} ({s['title'][:80]}, every mode)": s["reason"] for s in left_out}
    )
    kept = len(set(run.task_ids) - {s["task"] for s in left_out})
    run.total = kept * len(run.modes) * run.passes
    fetch = data_to_fetch(folder / "bundle", folders)
    run.harbor = {
        **run.harbor, "verifiers": verifiers, "skipped": skipped, "fetch": fetch,
        "left_out": left_out,  # the run's page names them (``evaluation/run.html``)
    }  # fmt: skip
    EvaluationRun.objects.filter(pk=run.pk).update(harbor=run.harbor, total=run.total)
    folders = {name: task for name, task in folders.items() if name not in refused}
    mapping.write_text(json.dumps(folders))
    return folders


def data_to_fetch(bundle: Path, folders: dict[str, int]) -> dict[str, dict]:
    """Per exported folder whose data the bundle does not carry (a release task's database
    or prebuilt image): its task and what to fetch and where, in the words a trial without
    it stops with (``harbor_agents.fetch``, as ``harbor run`` on the bundle says)."""
    needed = {}
    for name, task_id in sorted(folders.items()):
        sentence = task_fetch_sentence(bundle / name)
        if sentence is not None:
            needed[name] = {"task": task_id, "what": sentence}
    return needed


def _stop_reason(path: Path, trial) -> str:
    """Why a trial gave no reward: for a trial Harbor stopped for want of its data, the
    message it stopped with (what to fetch and where); else what ``read_trial`` said."""
    if not trial.skipped.startswith("stopped by MissingData"):
        return trial.skipped
    try:
        result = json_loads(read_regular(path.parent, path.name, max_bytes=MAX_RESULT_BYTES))
        message = str((result.get("exception_info") or {}).get("exception_message") or "")
    except UNREADABLE:
        return trial.skipped
    return f"stopped by MissingData: {message[:1200]}" if message else trial.skipped


def _shortfall(run: EvaluationRun, folder: Path) -> str:
    """Why a run has fewer passes than trials: first what its release tasks need fetched,
    when a trial stopped for want of it, then the first trials' reasons."""
    skipped = run.harbor.get("skipped") or {}
    reasons = "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:5])
    lines = [f"{run.done} of {run.total} trials gave a reward."]
    if any(str(why).startswith("stopped by MissingData") for why in skipped.values()):
        lines += [
            f"{name} (task {need['task']}) needs data the bundle does not carry: {need['what']}"
            for name, need in (run.harbor.get("fetch") or {}).items()
        ]
    lines.append(f"{reasons or 'See the logs'}; Harbor's output is in {folder}.")
    return "\n".join(lines)


def _dataset(folder: Path, wanted: list[tuple[str, str]]) -> Path:
    """One Harbor dataset of every mode folder that still needs passes: ``dataset/`` holds a
    link per mode folder (``sql_0__baseline`` -> ``bundle/sql_0/baseline``), so one
    ``harbor run`` spreads all the run's trials over its concurrency."""
    dataset = folder / "dataset"
    if dataset.exists():
        for link in dataset.iterdir():
            link.unlink()
    dataset.mkdir(exist_ok=True)
    for name, mode in wanted:
        (dataset / f"{name}__{mode}").symlink_to(folder / "bundle" / name / mode)
    return dataset


def _harbor_env(run: EvaluationRun) -> dict[str, str]:
    """Harbor's whole environment: nothing of the worker's but what Harbor needs (no secret
    of the app's reaches it, nor a variable a task's compose or task.toml could name), and the
    app's decisions for the trials (``harbor_agents.environments``)."""
    bin_dir = str(Path(settings.HARBOR_BIN).parent)
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": PRIVATE_TMP,
        "TMPDIR": PRIVATE_TMP,
        "LANG": "C.UTF-8",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DOCKER_BUILDKIT": "0",
        "PYTHONPATH": str(settings.BASE_DIR),  # harbor_agents/ (the only folder of it shown)
        "HILBENCH_TRIAL_INTERNET": "1" if run.allow_internet else "0",
        "HILBENCH_TRIAL_MAX_CPUS": str(settings.HARBOR_TRIAL_MAX_CPUS),
        "HILBENCH_TRIAL_MAX_MEMORY_MB": str(settings.HARBOR_TRIAL_MAX_MEMORY_MB),
        "HILBENCH_NO_KEY": "none",  # the model relay adds the endpoint's key itself
    }
    if os.environ.get("DOCKER_HOST", "").startswith("unix://"):
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    docker_config = _harbor_home() / "docker"
    if docker_config.is_dir():
        env["DOCKER_CONFIG"] = str(docker_config)  # Compose v2 as a CLI plugin
    return env


def _harbor_home() -> Path:
    """Harbor's virtual environment (its ``bin/harbor``'s parent's parent)."""
    return Path(settings.HARBOR_BIN).resolve().parent.parent


def _command(run: EvaluationRun, dataset: Path, attempts: int, jobs: Path, relay=None):
    """``harbor run`` over ``dataset`` and its environment; with ``relay`` (a model agent),
    the model is reached through the app's loopback relay, never dialled by Harbor itself."""
    agent = AGENTS[run.agent]
    command = [
        settings.HARBOR_BIN, "run", "-y", "-q", "-e", settings.HARBOR_ENVIRONMENT,
        "-p", str(dataset), "-a", agent.harbor, "-o", str(jobs),
        "-k", str(attempts), "-n", str(max(1, settings.HARBOR_CONCURRENCY)),
        *shlex.split(settings.HARBOR_EXTRA_ARGS),
    ]  # fmt: skip
    for value in agent.harbor_kwargs:
        command += ["--ak", value]
    if agent.needs_model:
        command += ["-m", f"openai/{run.endpoint.model}", "--base-url", relay.base_url]
        command += ["--api-key-name", "HILBENCH_NO_KEY"]
    return command, _harbor_env(run)


def _readable() -> list[Path]:
    """What Harbor's process may read besides its run folder: its interpreter's prefix, its
    virtual environment and the project's ``harbor_agents/``."""
    home = _harbor_home()
    readable = [home, Path(settings.BASE_DIR) / "harbor_agents"]
    config = home / "pyvenv.cfg"
    if config.is_file():
        for line in config.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                readable.append(Path(value.strip()).resolve().parent)
    return readable


def _stored(run: EvaluationRun) -> tuple[set[str], dict[tuple[int, str], int]]:
    """The trials already stored as passes, and the passes per (task, mode)."""
    trials, counts = set(), {}
    for task_id, mode, detail in TaskPass.objects.filter(run=run).values_list(
        "task_id", "mode", "detail"
    ):
        trials.add((detail or {}).get("trial"))
        counts[(task_id, mode)] = counts.get((task_id, mode), 0) + 1
    return trials, counts


def _collect(run: EvaluationRun, jobs: Path, resolve, *, running: bool = False) -> None:
    """Import every finished trial under ``jobs`` not stored yet, within the run's passes.

    While Harbor ``running``, a trial whose ``result.json`` does not yet read as finished is
    left for the next look: Harbor may be writing it (an empty or half-written file), and a
    trial read then would be set aside for good although it ends with a reward. Once Harbor
    has ended, what cannot be read is named among the run's skipped trials."""
    start = time.perf_counter()
    trials, counts = _stored(run)
    skipped = dict(run.harbor.get("skipped") or {})
    tasks = {t.pk: t for t in Task.objects.filter(pk__in=run.task_ids).select_related("project")}
    for path in trial_results(jobs):
        name = path.parent.name
        if name in trials or name in skipped or (running and not _finished(path)):
            continue
        try:
            trial = read_trial(path, resolve)
        except UNREADABLE as error:
            skipped[name] = str(error)
            continue
        if trial.record is None:
            skipped[name] = _stop_reason(path, trial)
            if trial.excluded is not None:
                excluded_try_store(run=run, exclusion=trial.excluded)
            continue
        record = trial.record
        key = (record.task_id, record.mode)
        if counts.get(key, 0) >= run.passes or record.mode not in run.modes:
            skipped[name] = "more passes than the run asked for"
            continue
        counts[key] = record.index = counts.get(key, 0) + 1
        with transaction.atomic():
            imported_pass_store(run, tasks[record.task_id], record)
    timing = dict(run.harbor.get("timing") or {})
    timing["import_s"] = round(timing.get("import_s", 0) + time.perf_counter() - start, 3)
    run.harbor = {**run.harbor, "skipped": skipped, "timing": timing}
    EvaluationRun.objects.filter(pk=run.pk).update(harbor=run.harbor)


def _finished(path: Path) -> bool:
    try:
        result = json_loads(read_regular(path.parent, path.name, max_bytes=MAX_RESULT_BYTES))
        return isinstance(result, dict) and bool(result.get("finished_at"))
    except (OSError, ValueError):
        return False


def _wait(run: EvaluationRun, process: subprocess.Popen, jobs: Path, resolve) -> None:
    """Import trials as they finish until Harbor ends; stop it when the run is cancelled."""
    while True:
        ended = process.poll() is not None
        if any(_finished(p) for p in trial_results(jobs)):
            _collect(run, jobs, resolve, running=not ended)
        job_heartbeat(EvaluationRun, run.pk)
        if ended:
            return
        if EvaluationRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
            _stop(process)
            _collect(run, jobs, resolve)
            raise Cancelled
        time.sleep(settings.HARBOR_POLL_S)


def _guarded(command: list[str], folder: Path) -> list[str]:
    """``command`` run under ``exchange/harbor_guard.py``: Harbor stops, and the run's
    containers go, when the worker dies or the run is cancelled (SIGINT to the guard)."""
    return [
        sys.executable, "-I", str(GUARD), "--folder", str(folder),
        "--grace", str(STOP_GRACE_S), "--parent", str(os.getpid()), "--", *command,
    ]  # fmt: skip


def _stop(process: subprocess.Popen) -> None:
    """SIGINT to the guard: it stops Harbor (which tears its trials down), SIGKILLs it after
    STOP_GRACE_S and removes what is left of the run's containers."""
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=STOP_GRACE_S + 180)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def _relay(run: EvaluationRun):
    """The model relay of a run whose agent calls a model; a no-op context otherwise."""
    if not AGENTS[run.agent].needs_model:
        return contextlib.nullcontext(None)
    endpoint = run.endpoint
    return ModelRelay(
        base_url=endpoint.base_url,
        api_key_env=endpoint.api_key_env or None,
        allowed_hosts=tuple(settings.MODEL_ENDPOINT_HOSTS),
    )


def _run_harbor(run, folder: Path, dataset: Path, attempts: int, jobs: Path, resolve) -> None:
    """One ``harbor run``: confined to the run's folder (``validators.sandbox.confine``), its
    process tree in a cgroup of ``HARBOR_MEMORY_MB``, under the guard; the model, if any,
    through the relay. What confined it, its memory peak and the relay's refusals go to the
    run's record."""
    limits = HostLimits(
        memory_mb=settings.HARBOR_MEMORY_MB,
        cpu_s=settings.HARBOR_CPU_S,
        file_mb=settings.HARBOR_FILE_MB,
    )
    cgroup, where = host_cgroup(limits)
    confinement = {
        "sandbox": f"bubblewrap, {where}"
        if cgroup
        else f"bubblewrap, each process's address space (no cgroup: {where})",
        "memory_mb": limits.memory_mb,
    }
    try:
        with _relay(run) as relay, (folder / "harbor.log").open("ab") as log:
            command, env = _command(run, dataset, attempts, jobs, relay)
            confined = confined_command(command, writable=folder, readable=_readable(), env=env)
            process = subprocess.Popen(
                _guarded(confined, folder),
                env={k: env[k] for k in ("PATH", "LANG", "DOCKER_HOST") if k in env},
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=host_preexec(limits, cgroup),  # noqa: PLW1509 - system calls only
            )
            try:
                _wait(run, process, jobs, resolve)
            finally:
                if process.poll() is None:
                    _stop(process)
            if relay is not None and relay.refusals:
                confinement["model_relay_refusals"] = relay.refusals[:20]
    finally:
        peak = memory_peak(cgroup)
        confinement["memory_peak_mb"] = None if peak is None else round(peak / (1 << 20))
        if cgroup is not None:
            confinement["oom_kills"] = cgroup.counters()["oom_kills"]
            cgroup.remove()
        run.harbor = {**run.harbor, "confinement": confinement}
        EvaluationRun.objects.filter(pk=run.pk).update(harbor=run.harbor)


def harbor_run_execute(run: EvaluationRun) -> None:
    """Export, run Harbor task by task, import the trials; a claimed run (``job_claim``)."""
    if run.agent not in AGENTS:
        job_fail(EvaluationRun, run.pk, f"Unknown agent {run.agent!r}.")
        return
    if AGENTS[run.agent].needs_model and run.endpoint is None:
        job_fail(EvaluationRun, run.pk, "The run's endpoint was deleted.")
        return
    folder = run_folder(run)
    jobs = folder / "jobs"
    resolve = task_resolver(run.project)
    try:
        start = time.perf_counter()
        folders = _export(run, folder)
        timing = dict(run.harbor.get("timing") or {})
        timing["export_s"] = round(timing.get("export_s", 0) + time.perf_counter() - start, 3)
        run.harbor = {
            **run.harbor,
            "environment": settings.HARBOR_ENVIRONMENT,
            "concurrency": settings.HARBOR_CONCURRENCY,
            "timing": timing,
        }
        EvaluationRun.objects.filter(pk=run.pk).update(harbor=run.harbor)
        _collect(run, jobs, resolve)  # what finished before a worker died
        _, counts = _stored(run)
        for key in ExcludedTry.objects.filter(run=run).values_list("task_id", "mode"):
            counts[key] = counts.get(key, 0) + 1  # a try left out was made all the same
        wanted = [
            (name, mode, run.passes - counts.get((task_id, mode), 0))
            for name, task_id in sorted(folders.items())
            for mode in run.modes
        ]
        # Harbor's ``-k`` is one number for every task of a ``harbor run``: one run per number
        # of tries still missing, so a pair missing one try is asked for one, not for as many
        # as the pair missing most (a taken-over run made 17 trials for 12 passes so).
        for attempts in sorted({n for *_, n in wanted if n > 0}, reverse=True):
            dataset = _dataset(folder, [(name, mode) for name, mode, n in wanted if n == attempts])
            started = time.perf_counter()
            _run_harbor(run, folder, dataset, attempts, jobs, resolve)
            timing = {**run.harbor.get("timing", {})}
            timing["harbor_s"] = round(timing.get("harbor_s", 0) + time.perf_counter() - started, 3)
            run.harbor = {**run.harbor, "timing": timing}
            EvaluationRun.objects.filter(pk=run.pk).update(harbor=run.harbor)
    except Cancelled:
        job_finish(
            EvaluationRun,
            run.pk,
            status=Job.Status.FAILED,
            error="Cancelled: the trials were stopped; the finished ones are kept.",
        )
        return
    except Refused as error:
        # AccessDenied: the export is made as the run's lead, who may have left the role since.
        job_fail(EvaluationRun, run.pk, str(error))
        return
    except Http404:  # …or the project
        job_fail(EvaluationRun, run.pk, f"{run.created_by} no longer reads {run.project.name}.")
        return
    run.refresh_from_db()
    left_out = ExcludedTry.objects.filter(run=run).count()
    if run.done == 0 or run.done + left_out < run.total:
        job_fail(EvaluationRun, run.pk, _shortfall(run, folder))
        return
    evaluation_run_finish(run)
