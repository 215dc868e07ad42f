"""Oracle and no-op runs of an exported task, the harness's way, in the app's sandbox.

Harbor's oracle runs ``solution/solve.sh`` and then the verifier (``tests/test.sh``), which
must write reward 1; with the environment left as it is (no-op) the reward must be 0. Here
both run in the local sandbox on the files the bundle is about to carry (the ``baseline``
mode's solution and tests): SQL with the machine's Python and the task's database; SWE in
the task's built environment on the shipped repository. The results go into
``provenance/validation.json``; without an oracle reward of 1 only a draft can be exported.
Results are cached by the hash of everything a run reads.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.jsontext import json_loads
from validators.environments import environment_use
from validators.sandbox import (
    Mount,
    SandboxError,
    apply_patches,
    checkout,
    get_sandbox,
    limits_from_settings,
    note_refused_overlay,
    overlay_generated,
    read_run_file,
    run_folder,
    sandbox_root,
)

from .modes import AGENT_PATCH, SUBMISSION
from .release_runtime import GENERATED
from .tarstream import file_sha256_cached

MODE = "baseline"  # every mode shares the solution and the verifier
SANDBOX_HOME = "/tmp"  # noqa: S108 - a path inside the sandbox
RELEASE_IMAGE = (
    "the task's environment is the release's own prebuilt image (shared/image_archive.json), "
    "which the app does not hold; Harbor runs it where the image is loaded"
)
RELEASE_DATA = (
    "the task's database is kept outside the release (shared/FETCH.md says where) and the app "
    "holds no copy to run its verifier on"
)
RELEASE_REASONS = (RELEASE_IMAGE, RELEASE_DATA)
DATABASE = "shared/data/database.sqlite"  # a release task's, mounted at /data by its compose
_READ = (f"{MODE}/solution/", f"{MODE}/tests/")
_NAMED = frozenset({GENERATED, DATABASE})


def _content(value) -> bytes:
    return value.read_bytes() if isinstance(value, Path) else value


def _sha(value) -> str:
    if isinstance(value, Path):
        return file_sha256_cached(value)
    return hashlib.sha256(value).hexdigest()


def _digest(entries: dict[str, Any], extra: str, shas: dict[str, str]) -> str:
    """What a run reads: each file's name and sha256 (from ``shas`` where the caller has
    them, keyed like ``entries``), and ``extra``."""
    digest = hashlib.sha256(extra.encode())
    for name in sorted(entries):
        sha = shas.get(name) or _sha(entries[name])
        digest.update(name.encode() + b"\0" + sha.encode() + b"\0")
    return digest.hexdigest()


def _materialise(entries: dict[str, Any], prefix: str, dest: Path) -> None:
    for name, value in entries.items():
        if name.startswith(prefix):
            target = dest / name[len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(value, Path):
                shutil.copyfile(value, target)
            else:
                target.write_bytes(value)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def _writable(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o777)  # the sandbox user writes its reward / submission here
    return folder


def _reward(verifier: Path, output: str) -> dict[str, Any]:
    """The reward the verifier wrote. Read as a run's file (``read_run_file``): the folder is
    the sandbox's to write, so ``reward.txt`` may be a link to a host file or a pipe."""
    reward, grade = read_run_file(verifier / "reward.txt"), read_run_file(verifier / "grade.json")
    try:
        value = int(reward.decode().strip())
        reason = json_loads(grade).get("reason", "")
    except (ValueError, TypeError, AttributeError):  # missing (None), not a number, not JSON
        value = None
    if value is None:
        return {"reward": None, "reason": "the verifier wrote no reward", "log": output[-2000:]}
    return {"reward": value, "reason": str(reason)}


def _plain_file(path: Path) -> bool:
    """A regular file, not a link the run planted (the folder was writable to it)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


# Results read or made by this process: a result never changes for its key (an export of
# thousands of tasks that share their ground truth reads the file once). Forgotten past
# _SEEN_MAX, so a long-lived worker does not grow with every task it ever exported.
_SEEN: dict[str, dict[str, Any]] = {}
_SEEN_MAX = 50_000


def _cached(key: str, compute) -> dict[str, Any]:
    """The result kept for ``key``, or ``compute()``'s, kept when every run scored.

    One process at a time computes a key: the pool processes of an export start on the same
    tasks at once, and tasks that share their ground truth and database share the key, so
    each process ran it (0.4 s of CPU for an SQL task; a SWE task's runs take minutes). The
    others wait for the lock, then read the result; a process that waited while the holder's
    runs did not score takes that outcome rather than running them again (it is not kept:
    the next ask runs them, a sandbox mended meanwhile is used at once). The lock files live
    in a folder only the worker's user may enter (``_oracle_lock``)."""
    if key in _SEEN:
        return _SEEN[key]
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    cache = sandbox_root() / "oracle"
    cache.mkdir(exist_ok=True, mode=0o755)
    path = cache / f"{key}.json"
    known = _read_json(path)
    if known is not None:
        _SEEN[key] = known
        return known
    locks = cache.parent / ORACLE_LOCKS
    unscored = locks / f"{key}.unscored"
    fd, waited_from = _oracle_lock(locks, key)
    try:
        known = _read_json(path)  # made by the process that held the lock
        if known is not None:
            _SEEN[key] = known
            return known
        if waited_from is not None:
            failed = _read_json(unscored, since=waited_from)
            if failed is not None:
                return failed
        result = compute()
        if all(run.get("reward") is not None for run in result.values()):
            _write_whole(path, result)
            unscored.unlink(missing_ok=True)
            _SEEN[key] = result
        else:
            _write_whole(unscored, result)
        return result
    finally:
        os.close(fd)  # releases the lock


ORACLE_LOCKS = "oracle-locks"


def _oracle_lock(locks: Path, key: str) -> tuple[int, float | None]:
    """An fd holding the key's lock in ``locks``, and when this process began to wait for it
    (None if it did not wait). As ``validators.environments``' locks: outside every folder a
    sandbox sees, the folder 0700 and the file 0600, so no other user can take one."""
    locks.mkdir(exist_ok=True, mode=0o700)
    fd = os.open(locks / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd, None
        except BlockingIOError:
            waited_from = time.time()
            fcntl.flock(fd, fcntl.LOCK_EX)  # a signal's exception here closes it too
            return fd, waited_from
    except BaseException:
        os.close(fd)
        raise


def _read_json(path: Path, *, since: float | None = None) -> dict[str, Any] | None:
    """The result in ``path`` (written ``since`` then or later, if given), or None: none, or
    not readable as one (then it is made again and replaced)."""
    try:
        if since is not None and path.stat().st_mtime < since:
            return None
        result = json_loads(path.read_text())
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def _write_whole(path: Path, result: dict[str, Any]) -> None:
    """Written to a file of its own, then renamed: a reader never sees half of it."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    partial.write_text(json.dumps(result))
    os.replace(partial, path)


def oracle_runs(
    task, entries: dict[str, Any], shas: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``{"oracle": {reward, reason}, "noop": {reward, reason}}`` for the task's files
    (``TaskFiles.entries``, keys ``<folder>/<path>``; ``shas``: their sha256 where the
    caller has them), or a reason when none can run."""
    # Only what the run reads or the checks below name: a task carries about a hundred files.
    files: dict[str, Any] = {}
    known: dict[str, str] = {}
    for name, value in entries.items():
        within = name.partition("/")[2]
        if within.startswith(_READ) or within in _NAMED:
            files[within] = value
            if shas and name in shas:
                known[within] = shas[name]
    released = GENERATED in files  # a release task: its verifier is one the export added
    if released and task.domain == "swe":
        return {"not_run": RELEASE_IMAGE}
    if released and DATABASE not in files:
        return {"not_run": RELEASE_DATA}
    if f"{MODE}/tests/test.sh" not in files:
        return {"not_run": "the task has no verifier (tests/test.sh)"}
    ours = {n: v for n, v in files.items() if n.startswith(_READ)}
    if released:
        ours[DATABASE] = files[DATABASE]
    extra = task.domain
    if task.domain == "swe":
        env = task.swe_environment
        key = [env.base_commit, env.setup_patch, env.environment_spec]
        extra += json.dumps(key, sort_keys=True)
    try:
        return _cached(_digest(ours, extra, known), lambda: _run(task, ours))
    except (DomainError, SandboxError) as exc:
        return {"not_run": f"the oracle could not run: {exc}"}


def _run(task, files: dict[str, Any]) -> dict[str, Any]:
    if task.domain == "sql":
        return {"oracle": _sql(files, solve=True), "noop": _sql(files, solve=False)}
    return {"oracle": _swe(task, files, solve=True), "noop": _swe(task, files, solve=False)}


def oracle_verdict(runs: dict[str, Any]) -> str | None:
    """Why the task cannot be exported as validated, or None: the oracle must score 1 and
    the no-op 0 (a release task whose image or database the app does not hold is not run)."""
    if "not_run" in runs:
        return None if runs["not_run"] in RELEASE_REASONS else runs["not_run"]
    oracle, noop = runs["oracle"], runs["noop"]
    if oracle.get("reward") != 1:
        return f"the oracle run scores {oracle.get('reward')}, not 1: {oracle.get('reason')}"
    if noop.get("reward") != 0:
        return f"the no-op run scores {noop.get('reward')}, not 0: {noop.get('reason')}"
    return None


def _sql(files: dict[str, Any], *, solve: bool) -> dict[str, Any]:
    with run_folder() as work:
        _materialise(files, f"{MODE}/solution/", work / "solution")
        _materialise(files, f"{MODE}/tests/", work / "tests")
        shared, verifier = _writable(work / "shared"), _writable(work / "verifier")
        data = []
        if DATABASE in files:  # a release task's verifier reads /data/database.sqlite
            _materialise({DATABASE: files[DATABASE]}, "shared/data/", work / "data")
            data = [Mount(work / "data", "/data")]
        mounts = [
            *data,
            Mount(work / "solution", "/solution"),
            Mount(work / "tests", "/tests"),
            # The agent's side writes the submission there, and Harbor puts the artifact
            # back at the same path in the verifier's container.
            Mount(shared, str(Path(SUBMISSION).parent), writable=True),
            Mount(verifier, "/logs/verifier", writable=True),
        ]
        command = ("bash /solution/solve.sh && " if solve else "") + "bash /tests/test.sh"
        result = get_sandbox().run(command=command, limits=limits_from_settings(), mounts=mounts)
        return _reward(verifier, result.output)


def _swe(task, files: dict[str, Any], *, solve: bool) -> dict[str, Any]:
    """As Harbor runs it with a separate verifier: in the agent's container ``solve.sh``
    (oracle) or nothing (no-op), then the mode's collect command turns the changes into a
    patch; the verifier, on a fresh copy of the shipped tree, receives it as an artifact."""
    env = task.swe_environment
    if env.repository is None:
        return {"reward": None, "reason": "the task has no repository"}
    with environment_use(env) as (built, failed):
        if built is None:
            return {"reward": None, "reason": f"its environment did not build (build {failed.pk})"}
        return _swe_runs(env, built, files, solve=solve)


def _swe_runs(env, built, files: dict[str, Any], *, solve: bool) -> dict[str, Any]:
    with run_folder() as work:
        _materialise(files, f"{MODE}/solution/", work / "solution")
        _materialise(files, f"{MODE}/tests/", work / "tests")
        artifacts = _writable(work / "artifacts")
        if solve:
            agent = _in_shipped_tree(
                env, built, work, "agent",
                _AGENT.format(patch="/artifacts/agent.patch"),
                [Mount(work / "solution", "/solution"),
                 Mount(artifacts, "/artifacts", writable=True)],
            )  # fmt: skip
            if not _plain_file(artifacts / "agent.patch"):
                return {"reward": None, "reason": "solve.sh failed", "log": agent.output[-2000:]}
        verifier = _writable(work / "verifier")
        mounts = [
            Mount(work / "tests", "/tests"),
            # Harbor puts an artifact back at its source path in the verifier's container.
            Mount(artifacts, str(Path(AGENT_PATCH).parent)),
            Mount(verifier, "/logs/verifier", writable=True),
        ]
        for name in ("run_script.sh", "parser.py"):
            if (work / "tests" / name).is_file():
                mounts.append(Mount(work / "tests" / name, f"/root/{name}"))
        result = _in_shipped_tree(env, built, work, "verifier", "bash /tests/test.sh", mounts)
        return _reward(verifier, result.output)


# The agent's side: the shipped tree is a repository whose HEAD is base_commit (as in the
# image), solve.sh runs, and the mode's collect command writes what changed.
_AGENT = (
    "cd /testbed && git init -q && git add -A "
    "&& git -c user.name=oracle -c user.email=oracle@localhost commit -qm shipped "
    "&& bash /solution/solve.sh && git add -A && git diff --cached --binary HEAD > {patch}"
)


def _in_shipped_tree(env, built, work: Path, name: str, command: str, mounts: list[Mount]):
    """Run ``command`` on a fresh shipped tree: base commit, the install's generated files,
    the setup patch."""
    tree = work / name
    checkout(Path(env.repository.path), env.base_commit, tree)
    _copied, refused = overlay_generated(built.testbed, built.manifest.get("generated", []), tree)
    apply_patches(tree, [("setup patch", env.setup_patch or "")])
    spec = env.environment_spec or {}
    image = built.manifest.get("image")
    result = get_sandbox().run(
        command=command,
        limits=limits_from_settings(),
        tree=tree,
        mounts=([] if image else built.mounts) + mounts,
        env={**built.run_env(spec), "REPO": "/testbed", "HOME": SANDBOX_HOME},
        **({"image": image} if image else {}),
    )
    return note_refused_overlay(result, refused)


__all__ = ["oracle_runs", "oracle_verdict"]
