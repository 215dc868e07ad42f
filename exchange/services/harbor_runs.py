"""The worker's half of an agent run in Harbor (``evaluation.services.harbor`` queues it).

In ``HARBOR_RUNS_DIR/<run>``: the run's tasks exported as a draft bundle and unpacked
(``bundle/``), then one ``harbor run`` over a dataset of the mode folders that still need
passes (``dataset/``, links to them; ``-k`` attempts, ``-n HARBOR_CONCURRENCY`` at once, in
``HARBOR_ENVIRONMENT``), its jobs under ``jobs/``. While Harbor works, every trial that has
finished is imported as a pass (``evaluation.harbor_jobs.read_trial``: its reward, its
ask-human log judged by the app, its trajectory), and the run's progress and heartbeat are
updated; a cancel stops Harbor (it tears its containers down) and ends the run.

A worker that dies leaves the folder: the run, taken over, imports the trials that finished
meanwhile, keeps every pass stored (one per trial: the trial's name is in its ``detail``),
and asks Harbor only for the passes still missing. Harbor runs under a guard
(``exchange/harbor_guard.py``) that stops it and removes the run's containers when the worker
dies or the run is cancelled, so neither outlives the worker.
"""

from __future__ import annotations

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

from evaluation.agents import AGENTS
from evaluation.harbor_jobs import read_trial, trial_results
from evaluation.models import EvaluationRun, TaskPass
from evaluation.services.common import evaluation_run_finish, task_resolver
from evaluation.services.results_import import imported_pass_store
from hilbench_annotate.errors import DomainError
from hilbench_annotate.jobs import Job, job_fail, job_finish, job_heartbeat
from hilbench_annotate.models import Task
from hilbench_annotate.toolkit.archives import extract_archive

from .exports import bundle_export_create, bundle_export_execute

STOP_GRACE_S = 60
GUARD = Path(__file__).resolve().parent.parent / "harbor_guard.py"


class Cancelled(Exception):
    pass


def run_folder(run: EvaluationRun) -> Path:
    return Path(settings.HARBOR_RUNS_DIR) / str(run.pk)


def _export(run: EvaluationRun, folder: Path) -> dict[str, int]:
    """The run's tasks as a draft bundle, unpacked once; folder name -> task id."""
    mapping = folder / "folders.json"
    if mapping.is_file():
        return json.loads(mapping.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    job = bundle_export_create(
        project=run.project, actor=run.created_by, selection={"tasks": run.task_ids}, draft=True
    )
    job = bundle_export_execute(job_id=job.pk, out=folder / "bundle.tar.gz")
    if job is None or job.status != Job.Status.SUCCEEDED:
        raise DomainError(f"The export of the run's tasks failed: {getattr(job, 'error', '')}")
    extract_archive(folder / "bundle.tar.gz", folder / "bundle")
    folders = {entry["folder"]: entry["task"] for entry in job.report["exported"]}
    mapping.write_text(json.dumps(folders))
    return folders


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


def _command(run: EvaluationRun, dataset: Path, attempts: int, jobs: Path):
    agent = AGENTS[run.agent]
    command = [
        settings.HARBOR_BIN, "run", "-y", "-q", "-e", settings.HARBOR_ENVIRONMENT,
        "-p", str(dataset), "-a", agent.harbor, "-o", str(jobs),
        "-k", str(attempts), "-n", str(max(1, settings.HARBOR_CONCURRENCY)),
        *shlex.split(settings.HARBOR_EXTRA_ARGS),
    ]  # fmt: skip
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DOCKER_BUILDKIT": os.environ.get("DOCKER_BUILDKIT", "0"),
        "PYTHONPATH": str(settings.BASE_DIR),  # harbor_agents/
    }
    docker_config = Path(settings.HARBOR_BIN).resolve().parent.parent / "docker"
    if docker_config.is_dir():
        env.setdefault("DOCKER_CONFIG", str(docker_config))  # Compose v2 as a CLI plugin
    if agent.needs_model:
        endpoint = run.endpoint
        command += ["-m", f"openai/{endpoint.model}", "--base-url", endpoint.base_url]
        if endpoint.api_key_env:
            command += ["--api-key-name", endpoint.api_key_env]
        else:
            env["HILBENCH_NO_KEY"] = "none"  # a local server that wants no key
            command += ["--api-key-name", "HILBENCH_NO_KEY"]
    return command, env


def _stored(run: EvaluationRun) -> tuple[set[str], dict[tuple[int, str], int]]:
    """The trials already stored as passes, and the passes per (task, mode)."""
    trials, counts = set(), {}
    for task_id, mode, detail in TaskPass.objects.filter(run=run).values_list(
        "task_id", "mode", "detail"
    ):
        trials.add((detail or {}).get("trial"))
        counts[(task_id, mode)] = counts.get((task_id, mode), 0) + 1
    return trials, counts


def _collect(run: EvaluationRun, jobs: Path, resolve) -> None:
    """Import every finished trial under ``jobs`` not stored yet, within the run's passes."""
    start = time.perf_counter()
    trials, counts = _stored(run)
    skipped = dict(run.harbor.get("skipped") or {})
    tasks = {t.pk: t for t in Task.objects.filter(pk__in=run.task_ids).select_related("project")}
    for path in trial_results(jobs):
        name = path.parent.name
        if name in trials or name in skipped:
            continue
        try:
            trial = read_trial(path, resolve)
        except (ValueError, OSError) as error:
            skipped[name] = str(error)
            continue
        if trial.record is None:
            skipped[name] = trial.skipped
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
        return bool(json.loads(path.read_text()).get("finished_at"))
    except (OSError, ValueError):
        return False


def _wait(run: EvaluationRun, process: subprocess.Popen, jobs: Path, resolve) -> None:
    """Import trials as they finish until Harbor ends; stop it when the run is cancelled."""
    while True:
        ended = process.poll() is not None
        if any(_finished(p) for p in trial_results(jobs)):
            _collect(run, jobs, resolve)
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
        wanted = [
            (name, mode, run.passes - counts.get((task_id, mode), 0))
            for name, task_id in sorted(folders.items())
            for mode in run.modes
        ]
        wanted = [w for w in wanted if w[2] > 0]
        if wanted:
            dataset = _dataset(folder, [(name, mode) for name, mode, _ in wanted])
            attempts = max(n for _, _, n in wanted)
            command, env = _command(run, dataset, attempts, jobs)
            started = time.perf_counter()
            with (folder / "harbor.log").open("ab") as log:
                process = subprocess.Popen(
                    _guarded(command, folder),
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                try:
                    _wait(run, process, jobs, resolve)
                finally:
                    if process.poll() is None:
                        _stop(process)
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
    except DomainError as error:
        job_fail(EvaluationRun, run.pk, str(error))
        return
    run.refresh_from_db()
    if run.done < run.total:
        skipped = run.harbor.get("skipped") or {}
        reasons = "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:5])
        job_fail(
            EvaluationRun,
            run.pk,
            f"{run.done} of {run.total} trials gave a reward ({reasons or 'see the logs'}); "
            f"Harbor's output is in {folder}.",
        )
        return
    evaluation_run_finish(run)
