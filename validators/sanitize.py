"""Build the repository an agent receives: one orphan commit, nothing else to read.

:func:`sanitize` produces it: the base commit's tree with the setup patch applied, as a
*single orphan commit*. History before the base commit cannot be shipped as is: the setup
patch removes text (the very information the agent must ask for), and every older commit still
holds it. Rewriting history to drop it everywhere is fragile (renames, copies, merges); one
commit with exactly the shipped tree is the sure way, and fixed author/committer/date/message
make the result deterministic (same inputs, same commit id).

:mod:`validators.leakage` checks the result and re-exports the names defined here.
"""

import shutil
import subprocess
import tempfile
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.gitrepo import (
    git_dir,
    resolve_commit,
    run_git,
    stderr_text,
    symlink_paths,
)
from hilbench_annotate.toolkit.patches import _alternate, path_problems

BRANCH = "main"
IDENTITY_NAME = "HiL-Bench"
IDENTITY_EMAIL = "hilbench@localhost"
# Neutral on purpose: the message is shipped, so it must say nothing about the task.
COMMIT_MESSAGE = "Initial commit\n"


def sanitize(*, mirror: Path, base_commit: str, setup_patch: str, dest: Path) -> Path:
    """Build in ``dest`` the repository exactly as it is shipped to an agent; return ``dest``.

    ``dest`` (missing or an empty directory) becomes a normal repository with a work tree and
    one orphan commit on ``main``: the base commit's tree with ``setup_patch`` applied, by
    "HiL-Bench <hilbench@localhost>" (author and committer) at the base commit's committer
    date, so the same inputs always give the same commit id. It has no remote, no other ref,
    no reflog, and ``git gc --prune=now --aggressive`` leaves no loose or unreachable object.

    Why a single commit (see the module docstring): text the setup patch removed must not be
    recoverable from history, and every commit before the base commit still holds it.

    The mirror is only read: its objects serve as an alternate object store while the new
    tree is built in ``dest``, then every object the commit needs is copied into a pack in
    ``dest`` (``pack-objects`` without ``--local``), and the alternate is dropped.
    """
    mirror, dest = Path(mirror), Path(dest)
    sha = resolve_commit(mirror, base_commit)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DomainError(f"{dest} must be missing or an empty directory.")
    problems = (
        path_problems(setup_patch, symlinks=symlink_paths(mirror, sha)) if setup_patch else []
    )
    if problems:
        raise DomainError("The setup patch is refused: " + "; ".join(problems) + ".")
    date = run_git(mirror, ["show", "-s", "--format=%cd", "--date=raw", sha]).stdout.decode()
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        _build(mirror, sha, date.strip(), setup_patch, dest)
    except BaseException:
        # Never leave a half-built repository that could be shipped by mistake.
        shutil.rmtree(dest / ".git", ignore_errors=True)
        for path in dest.iterdir() if dest.exists() else ():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def _build(mirror: Path, sha: str, date: str, setup_patch: str, dest: Path) -> None:
    """The steps of :func:`sanitize` in the empty directory ``dest``."""
    with tempfile.TemporaryDirectory(prefix="hilbench-sanitize-") as scratch:
        home = Path(scratch)
        # Only this command's configuration: no reflog is ever written while building.
        quiet = ["-c", "core.logAllRefUpdates=false"]
        run_git(None, ["init", "-q", f"--initial-branch={BRANCH}", str(dest)], home=home)
        borrow = {
            "GIT_INDEX_FILE": str(home / "index"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": _alternate(git_dir(mirror) / "objects"),
            "GIT_AUTHOR_NAME": IDENTITY_NAME,
            "GIT_AUTHOR_EMAIL": IDENTITY_EMAIL,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": IDENTITY_NAME,
            "GIT_COMMITTER_EMAIL": IDENTITY_EMAIL,
            "GIT_COMMITTER_DATE": date,
        }

        def git(args: list[str], **kwargs) -> subprocess.CompletedProcess:
            return run_git(dest, quiet + args, home=home, env=borrow, **kwargs)

        git(["read-tree", sha])
        if setup_patch.strip():
            applied = git(
                ["apply", "--cached", "--whitespace=nowarn"],
                input=setup_patch.encode("utf-8", "surrogateescape"),
                check=False,
            )
            if applied.returncode != 0:
                raise DomainError(
                    f"The setup patch does not apply on {sha[:12]}: {stderr_text(applied)}"
                )
        tree = git(["write-tree"]).stdout.decode().strip()
        commit = git(["commit-tree", tree], input=COMMIT_MESSAGE.encode()).stdout.decode().strip()
        pack = git_dir(dest) / "objects" / "pack" / "pack"
        git(["pack-objects", "--revs", "-q", str(pack)], input=f"{commit}\n".encode())
        # From here on the mirror is no longer reachable: dest must be self-contained.
        del borrow["GIT_ALTERNATE_OBJECT_DIRECTORIES"], borrow["GIT_INDEX_FILE"]
        git(["update-ref", f"refs/heads/{BRANCH}", commit])
        run_git(dest, quiet + ["read-tree", "-u", "--reset", "HEAD"], home=home, cwd=dest)
        git(["reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all"])
        git(["gc", "-q", "--prune=now", "--aggressive"], timeout=600)
        git(["fsck", "--full", "--no-progress", "--no-dangling"], timeout=600)
    shutil.rmtree(git_dir(dest) / "logs", ignore_errors=True)
