"""A SWE task's repository in a bundle: ``shared/repository.fast-export``.

What ships is :func:`validators.leakage.sanitize`'s repository — one orphan commit holding
the base tree with the setup patch, by a fixed identity at the base commit's date — written
as a ``git fast-export`` stream. The stream is plain data (no links, no git internals such as
an index with inode numbers or a pack whose deltas depend on threads), so the same task always
gives the same bytes, and ``git fast-import`` rebuilds exactly that commit (same id).

The bundle's ``base_commit`` is the *sanitized base*: the same orphan commit made from the
base tree without the setup patch. It is computed here without building anything; an import
rebuilds it by reverse-applying the setup patch, and checks the id matches.
"""

import hashlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.faststream import StreamRefused, checked_stream
from hilbench_annotate.toolkit.gitrepo import git_dir, git_env, resolve_commit, run_git, stderr_text
from validators.leakage import (
    BRANCH,
    COMMIT_MESSAGE,
    IDENTITY_EMAIL,
    IDENTITY_NAME,
    sanitize,
)

EXPORT_TIMEOUT = 900


def _commit_date(repo: Path, sha: str) -> str:
    return run_git(repo, ["show", "-s", "--format=%cd", "--date=raw", sha]).stdout.decode().strip()


def orphan_commit_id(*, tree: str, date: str) -> str:
    """The id ``sanitize`` gives a commit of ``tree`` at ``date`` (raw ``<epoch> <tz>``)."""
    identity = f"{IDENTITY_NAME} <{IDENTITY_EMAIL}> {date}"
    body = f"tree {tree}\nauthor {identity}\ncommitter {identity}\n\n{COMMIT_MESSAGE}".encode()
    return hashlib.sha1(b"commit %d\x00" % len(body) + body, usedforsecurity=False).hexdigest()


def sanitized_base(*, mirror: Path, base_commit: str) -> str:
    """The bundle's base commit: the base tree as one orphan commit (see the module doc)."""
    sha = resolve_commit(mirror, base_commit)
    tree = run_git(mirror, ["rev-parse", f"{sha}^{{tree}}"]).stdout.decode().strip()
    return orphan_commit_id(tree=tree, date=_commit_date(mirror, sha))


def repository_export(
    *, mirror: Path, base_commit: str, setup_patch: str, out: Path, workdir: Path
) -> str:
    """Write the sanitized repository as a fast-export stream to ``out``; return HEAD's id."""
    shipped = sanitize(
        mirror=mirror, base_commit=base_commit, setup_patch=setup_patch, dest=workdir / "shipped"
    )
    head = run_git(shipped, ["rev-parse", "HEAD"]).stdout.decode().strip()
    with tempfile.TemporaryDirectory(prefix="hilbench-export-") as home, open(out, "wb") as sink:
        result = subprocess.run(
            [
                "git",
                f"--git-dir={git_dir(shipped)}",
                "fast-export",
                "--signed-tags=strip",
                "--tag-of-filtered-object=drop",
                f"refs/heads/{BRANCH}",
            ],
            stdout=sink,
            stderr=subprocess.PIPE,
            env=git_env(Path(home)),
            cwd=home,
            timeout=EXPORT_TIMEOUT,
        )
    if result.returncode != 0:
        raise DomainError(f"git fast-export failed: {result.stderr.decode(errors='replace')}")
    return head


def repository_unpack(*, stream: Path, dest: Path) -> str:
    """Rebuild the shipped repository (work tree and ``.git``) in ``dest``; return HEAD's id.

    The same steps as the bundle's Dockerfile: no reflog is written, nothing but ``main``.
    """
    dest = Path(dest)
    with tempfile.TemporaryDirectory(prefix="hilbench-unpack-") as scratch:
        home = Path(scratch)
        run_git(None, ["init", "-q", f"--initial-branch={BRANCH}", str(dest)], home=home)
        quiet = ["-c", "core.logAllRefUpdates=false"]
        with open(stream, "rb") as handle:
            returncode, errors = _fast_import(handle, dest=dest, home=home)
        if returncode != 0:
            raise DomainError(f"the repository stream does not load: {errors}")
        run_git(dest, [*quiet, "read-tree", "-u", "--reset", "HEAD"], home=home, cwd=dest)
        run_git(dest, ["gc", "-q", "--prune=now"], home=home, timeout=EXPORT_TIMEOUT)
        return run_git(dest, ["rev-parse", "HEAD"], home=home).stdout.decode().strip()


def _fast_import(handle, *, dest: Path, home: Path) -> tuple[int, str]:
    """``git fast-import`` into ``dest`` fed only the commands :func:`checked_stream` passes
    (the stream is task-supplied: see ``docs/security.md``); a refused stream stops it before
    the offending command reaches it, and the caller's folder is then thrown away whole."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            ["git", f"--git-dir={git_dir(dest)}", "-c", "core.logAllRefUpdates=false"]
            + ["fast-import", "--quiet"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=git_env(home),
            cwd=home,
        )
        deadline = time.monotonic() + EXPORT_TIMEOUT
        try:
            for piece in checked_stream(handle, branch=BRANCH):
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired("git fast-import", EXPORT_TIMEOUT)
                process.stdin.write(piece)
            process.stdin.close()
            returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except StreamRefused:
            process.kill()
            process.wait()
            shutil.rmtree(dest, ignore_errors=True)
            raise
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait(), f"it took longer than {EXPORT_TIMEOUT} s"
        except BrokenPipeError:  # fast-import stopped early: its own message says why
            process.kill()
            returncode = process.wait()
        errors.seek(0)
        return returncode, errors.read(4000).decode("utf-8", "replace").strip()


def rebuild_base(*, repo: Path, head: str, setup_patch: str) -> str:
    """Make in ``repo`` the sanitized base of ``head`` (its tree with ``setup_patch``
    reverse-applied, same identity and date) and point ``main`` at it; return its id."""
    date = _commit_date(repo, head)
    if not setup_patch.strip():
        return head
    with tempfile.TemporaryDirectory(prefix="hilbench-rebase-") as scratch:
        home = Path(scratch)
        env = {
            "GIT_INDEX_FILE": str(home / "index"),
            "GIT_AUTHOR_NAME": IDENTITY_NAME,
            "GIT_AUTHOR_EMAIL": IDENTITY_EMAIL,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": IDENTITY_NAME,
            "GIT_COMMITTER_EMAIL": IDENTITY_EMAIL,
            "GIT_COMMITTER_DATE": date,
        }
        quiet = ["-c", "core.logAllRefUpdates=false"]
        run_git(repo, ["read-tree", head], home=home, env=env)
        applied = run_git(
            repo,
            ["apply", "--cached", "-R", "--whitespace=nowarn"],
            home=home,
            env=env,
            input=setup_patch.encode("utf-8", "surrogateescape"),
            check=False,
        )
        if applied.returncode != 0:
            raise DomainError(
                f"the setup patch does not reverse-apply on the shipped repository: "
                f"{stderr_text(applied)}"
            )
        tree = run_git(repo, ["write-tree"], home=home, env=env).stdout.decode().strip()
        base = (
            run_git(repo, ["commit-tree", tree], home=home, env=env, input=COMMIT_MESSAGE.encode())
            .stdout.decode()
            .strip()
        )
        run_git(repo, [*quiet, "update-ref", f"refs/heads/{BRANCH}", base], home=home)
    return base
