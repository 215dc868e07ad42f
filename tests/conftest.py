from pathlib import Path

import pytest
from rest_framework.test import APIClient

from hilbench_annotate.vocabulary import Role

from .factories import MembershipFactory, ProjectFactory, UserFactory

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path in ../shared; tests that need it are skipped where it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not on this machine")
    return path


def pytest_report_header(config):
    from django.conf import settings

    return settings.RUNTIME_MODE


@pytest.fixture(autouse=True)
def _stores(settings, tmp_path):
    """Each test gets its own database, repository and upload stores (and a fast hasher)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.DATABASE_STORE = tmp_path / "store" / "databases"
    settings.REPOSITORY_STORE = tmp_path / "store" / "repositories"
    settings.UPLOAD_STORE = tmp_path / "store" / "uploads"


@pytest.fixture
def project(db):
    return ProjectFactory(name="HiL-Bench SQL v2", slug="hilbench-sql-v2")


def _member(project, username, role):
    user = UserFactory(username=username)
    MembershipFactory(project=project, user=user, role=role)
    return user


@pytest.fixture
def author(project):
    return _member(project, "author", Role.AUTHOR)


@pytest.fixture
def reviewer(project):
    return _member(project, "reviewer", Role.REVIEWER)


@pytest.fixture
def auditor(project):
    return _member(project, "auditor", Role.AUDITOR)


@pytest.fixture
def lead(project):
    return _member(project, "lead", Role.LEAD)


@pytest.fixture
def harness(project):
    return _member(project, "harness", Role.HARNESS)


@pytest.fixture
def outsider(db):
    """An author in another project only."""
    other = ProjectFactory(name="Other team", slug="other-team")
    return _member(other, "outsider", Role.AUTHOR)


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory):
    """The demo inputs ``make run`` imports, built once per test session."""
    from hilbench_annotate.demo import build_all

    return build_all(tmp_path_factory.mktemp("demo"))
