"""The app's repository store: bare mirrors of task repositories, read through git objects.

Each project has its own mirror of a repository name (``<project id>/<owner>__<name>.git``),
so an import into one project never writes to another project's mirror.

Every git command goes through ``toolkit.gitrepo.run_git`` (no user or system configuration,
no inherited ``GIT_*`` variable, a timeout), as every other git call of the app does.
"""

import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Project, Repository
from hilbench_annotate.toolkit.gitrepo import run_git

_REPO_NAME = re.compile(r"^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$")
_ALLOWED_URL = re.compile(r"^(https://|ssh://|git@)[^\s]+$")
# A clone or fetch of a URL that wants a password fails at once instead of waiting on a
# prompt nobody sees (the worker has no terminal).
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
# A clone or fetch of a whole repository may take long; a local command does not.
MIRROR_TIMEOUT_S = 3600


def storage_name(project: Project, repo_name: str) -> str:
    return f"{project.pk}/" + repo_name.replace("/", "__") + ".git"


def _own_folders() -> list[Path]:
    """The app's own files: its code and stores, never a repository a user may name."""
    return [
        Path(p).resolve()
        for p in (
            settings.BASE_DIR,
            settings.VAR_DIR,
            settings.REPOSITORY_STORE,
            settings.UPLOAD_STORE,
            settings.DATABASE_STORE,
            settings.BUNDLE_STORE,
        )
    ]


def borrowed_objects(path: Path) -> str | None:
    """Why the repository at ``path`` would make git read files outside it, or None.

    A ``.git`` file (a worktree or submodule checkout), ``commondir`` or an alternates file
    points git at another repository's objects, which a clone then copies.
    """
    path = Path(path)
    if (path / ".git").is_file() or (path / ".git").is_symlink():
        return "its .git is a link to another repository, not a folder"
    for git_dir in (path / ".git", path):
        for pointer in ("commondir", "objects/info/alternates", "objects/info/http-alternates"):
            if (git_dir / pointer).exists() or (git_dir / pointer).is_symlink():
                return f"it borrows objects from another repository ({pointer})"
    return None


def _url_prefix(prefix: str) -> str:
    # "https://github.com" must not also admit "https://github.com.evil.example/".
    return prefix if prefix.endswith(("/", ":")) else prefix + "/"


def _refused(origin: str) -> DomainError:
    prefixes = ", ".join(settings.REPOSITORY_URL_PREFIXES)
    where = f"give a URL starting with {prefixes}" if prefixes else "no URL is accepted here"
    return DomainError(
        f"Repository {origin!r} is not one this site clones: upload the repository as an "
        f"archive, or {where}."
    )


def origin_allowed(origin: str) -> str:
    """What to clone for a repository a user named (the import form, the API), or
    DomainError repeating what they typed, never a server path.

    A worker clones it on the server, so only URLs under the site admin's
    ``REPOSITORY_URL_PREFIXES`` and folders under ``REPOSITORY_LOCAL_ROOTS`` are accepted: any
    other path or ``file://`` URL could clone the app's own source or another project's
    mirror. Operators importing from the command line name local paths freely.
    """
    origin = str(origin).strip()
    if not origin or any(c.isspace() or ord(c) < 32 for c in origin):
        raise _refused(origin)
    if _ALLOWED_URL.match(origin) and any(
        origin.startswith(_url_prefix(p)) for p in settings.REPOSITORY_URL_PREFIXES
    ):
        rest = urlsplit(origin).path if "://" in origin else origin.partition(":")[2]
        if not any(part in (".", "..") for part in unquote(rest).split("/")):
            return origin
        raise _refused(origin)
    path = Path(unquote(urlsplit(origin).path)) if origin.startswith("file://") else Path(origin)
    if not path.is_absolute() or not settings.REPOSITORY_LOCAL_ROOTS:
        raise _refused(origin)
    resolved = path.resolve()
    inside = [Path(r).resolve() for r in settings.REPOSITORY_LOCAL_ROOTS]
    if not any(resolved.is_relative_to(r) for r in inside) or any(
        resolved.is_relative_to(own) for own in _own_folders()
    ):
        raise _refused(origin)
    problem = borrowed_objects(resolved)
    if problem:
        raise DomainError(f"Repository {origin!r} is refused: {problem}.")
    return str(resolved)


def check_origin(origin: str) -> str:
    """A local path to an existing repository, or an https/ssh URL; nothing else.

    Transports such as ``ext::`` or ``file://`` tricks are refused before git sees them.
    """
    origin = str(origin).strip()
    if _ALLOWED_URL.match(origin):
        return origin
    path = Path(origin).expanduser()
    if path.is_dir() and ((path / ".git").exists() or (path / "HEAD").is_file()):
        return str(path.resolve())
    if path.is_file() and _is_bundle(path):
        return str(path.resolve())
    raise DomainError(
        f"Repository {origin!r} is neither a local git repository, a git bundle nor an "
        "https/ssh URL."
    )


def _is_bundle(path: Path) -> bool:
    """A git bundle file (SWE-bench data ships repositories so): its first line says so."""
    with path.open("rb") as handle:
        return handle.readline().startswith(b"# v2 git bundle") or False


def _project_repository(project: Project, repo_name: str) -> Repository | None:
    if not _REPO_NAME.match(repo_name):
        raise DomainError(f"Repository name {repo_name!r} is not of the form owner/name.")
    return Repository.objects.filter(project=project, name=repo_name).first()


def repository_mirror(*, project: Project, repo_name: str, origin: str) -> Repository:
    """Mirror ``origin`` into ``project``'s mirror of ``repo_name`` (or refresh it) and
    register it.

    A new mirror is cloned into a temporary directory and moved into place, so a failed
    clone leaves nothing behind.
    """
    existing = _project_repository(project, repo_name)
    origin = check_origin(origin)
    relative = existing.storage_path if existing else storage_name(project, repo_name)
    target = settings.REPOSITORY_STORE / relative
    try:
        if target.exists():
            run_git(
                target,
                ["fetch", "--", origin, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                env=_NO_PROMPT,
                timeout=MIRROR_TIMEOUT_S,
            )
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".clone-"))
            try:
                run_git(
                    None,
                    ["clone", "--mirror", "--", origin, str(scratch / "m.git")],
                    env=_NO_PROMPT,
                    timeout=MIRROR_TIMEOUT_S,
                )
                (scratch / "m.git").rename(target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    except DomainError as exc:
        raise DomainError(f"Could not mirror {origin}: {_said(exc)}") from exc
    if existing is None:
        existing, _ = Repository.objects.get_or_create(
            project=project,
            name=repo_name,
            defaults={"origin": origin, "storage_path": relative},
        )
    if existing.origin != origin:
        existing.origin = origin
        existing.save(update_fields=["origin", "mirrored_at"])
    return existing


def commit_exists(repository: Repository, sha: str) -> bool:
    if not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha or ""):
        return False
    try:
        result = run_git(repository.path, ["cat-file", "-e", f"{sha}^{{commit}}"], check=False)
    except DomainError:  # no mirror where the row says
        return False
    return result.returncode == 0


def repository_has_tags(repository: Repository) -> bool:
    """Whether the mirror has any tag (tools that ask git for a version need one)."""
    try:
        result = run_git(repository.path, ["for-each-ref", "--count=1", "refs/tags"], check=False)
    except DomainError:  # no mirror where the row says
        return False
    return result.returncode == 0 and bool(result.stdout.strip())


def _said(error: DomainError) -> str:
    """git's own message, without ``run_git``'s "git <command> failed: " before it."""
    return str(error).split(" failed: ", 1)[-1]


def repository_add_commit(
    *, project: Project, repo_name: str, source: Path, commit: str
) -> Repository:
    """Bring ``commit`` (and what it reaches) from the local repository ``source`` into
    ``project``'s mirror of ``repo_name``, making the mirror if there is none; register it.

    An existing mirror keeps its branches: the commit is fetched under ``refs/imported/``,
    so importing a bundle never moves a branch of the repository the tasks came from.
    """
    existing = _project_repository(project, repo_name)
    relative = existing.storage_path if existing else storage_name(project, repo_name)
    target = settings.REPOSITORY_STORE / relative
    refspec = f"+{commit}:refs/imported/{commit}"
    fetch = ["fetch", "--", str(Path(source).resolve()), refspec]
    try:
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".import-"))
            try:
                run_git(None, ["init", "--bare", "-q", "--", str(scratch / "m.git")])
                run_git(scratch / "m.git", fetch, timeout=MIRROR_TIMEOUT_S)
                (scratch / "m.git").rename(target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            run_git(target, fetch, timeout=MIRROR_TIMEOUT_S)
    except DomainError as exc:
        raise DomainError(f"Could not store {repo_name}: {_said(exc)}") from exc
    if existing is None:
        existing, _ = Repository.objects.get_or_create(
            project=project,
            name=repo_name,
            defaults={"origin": "imported bundle", "storage_path": relative},
        )
    return existing
