"""The app's repository store: bare mirrors of task repositories, read through git objects."""

import re
import shutil
import tempfile
from pathlib import Path

import git
from django.conf import settings

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Repository

_REPO_NAME = re.compile(r"^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$")
_ALLOWED_URL = re.compile(r"^(https://|ssh://|git@)[^\s]+$")


def storage_name(repo_name: str) -> str:
    return repo_name.replace("/", "__") + ".git"


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


def repository_mirror(*, repo_name: str, origin: str) -> Repository:
    """Mirror ``origin`` into the store (or refresh the mirror) and register it.

    A new mirror is cloned into a temporary directory and moved into place, so a failed
    clone leaves nothing behind.
    """
    if not _REPO_NAME.match(repo_name):
        raise DomainError(f"Repository name {repo_name!r} is not of the form owner/name.")
    origin = check_origin(origin)
    relative = storage_name(repo_name)
    target = settings.REPOSITORY_STORE / relative
    try:
        if target.exists():
            mirror = git.Repo(target)
            mirror.git.fetch(origin, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
        else:
            settings.REPOSITORY_STORE.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(dir=settings.REPOSITORY_STORE, prefix=".clone-"))
            try:
                git.Repo.clone_from(origin, scratch / "m.git", mirror=True)
                (scratch / "m.git").rename(target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    except git.GitCommandError as exc:
        raise DomainError(f"Could not mirror {origin}: {exc.stderr.strip() or exc}") from exc
    repository, created = Repository.objects.get_or_create(
        name=repo_name, defaults={"origin": origin, "storage_path": relative}
    )
    if not created and repository.origin != origin:
        repository.origin = origin
        repository.save(update_fields=["origin", "mirrored_at"])
    return repository


def commit_exists(repository: Repository, sha: str) -> bool:
    if not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha or ""):
        return False
    try:
        git.Repo(repository.path).git.cat_file("-e", f"{sha}^{{commit}}")
    except git.GitCommandError:
        return False
    return True


def repository_has_tags(repository: Repository) -> bool:
    """Whether the mirror has any tag (tools that ask git for a version need one)."""
    try:
        return bool(git.Repo(repository.path).git.for_each_ref("refs/tags", "--count=1"))
    except git.GitCommandError:
        return False


def repository_add_commit(*, repo_name: str, source: Path, commit: str) -> Repository:
    """Bring ``commit`` (and what it reaches) from the local repository ``source`` into the
    store's mirror of ``repo_name``, making the mirror if there is none; register it.

    An existing mirror keeps its branches: the commit is fetched under ``refs/imported/``,
    so importing a bundle never moves a branch of the repository the tasks came from.
    """
    if not _REPO_NAME.match(repo_name):
        raise DomainError(f"Repository name {repo_name!r} is not of the form owner/name.")
    relative = storage_name(repo_name)
    target = settings.REPOSITORY_STORE / relative
    refspec = f"+{commit}:refs/imported/{commit}"
    try:
        if not target.exists():
            settings.REPOSITORY_STORE.mkdir(parents=True, exist_ok=True)
            scratch = Path(tempfile.mkdtemp(dir=settings.REPOSITORY_STORE, prefix=".import-"))
            try:
                bare = git.Repo.init(scratch / "m.git", bare=True)
                bare.git.fetch(str(Path(source).resolve()), refspec)
                (scratch / "m.git").rename(target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            git.Repo(target).git.fetch(str(Path(source).resolve()), refspec)
    except git.GitCommandError as exc:
        raise DomainError(f"Could not store {repo_name}: {exc.stderr.strip() or exc}") from exc
    repository, _ = Repository.objects.get_or_create(
        name=repo_name, defaults={"origin": "imported bundle", "storage_path": relative}
    )
    return repository
