"""The demo bundle, built once per test session (per xdist worker): the seeded demo project's
blocked SQL task exported alone, and with the planted SWE task beside it, in a transaction
rolled back once both files are written. A test gets its own copy of the file (a test may
write beside it or change it), and the facts it checks the SWE folder against as values."""

import shutil
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.test import override_settings

from .bundle_helpers import export, plant_swe, seed_demo, sql_task


@pytest.fixture(scope="session")
def _demo_exports(django_db_setup, django_db_blocker, tmp_path_factory):
    from judge.services import forget_process_caches

    root = tmp_path_factory.mktemp("demo-exports")
    # What the function-scoped autouse fixtures of tests/conftest.py (_stores, _judge_caches)
    # set for a test, for the time the exports are built.
    built_as = override_settings(
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        DATABASE_STORE=root / "store" / "databases",
        REPOSITORY_STORE=root / "store" / "repositories",
        UPLOAD_STORE=root / "store" / "uploads",
        BUNDLE_STORE=root / "store" / "bundles",
    )
    with django_db_blocker.unblock(), built_as, transaction.atomic():
        forget_process_caches()
        project = seed_demo(None, root)
        sql = sql_task(project)
        sql_only = export(project, root / "demo.tar.gz", tasks=[sql])
        swe = plant_swe(project, root)
        both = export(project, root / "demo-sql-swe.tar.gz", tasks=[sql, swe])
        env = swe.swe_environment
        facts = SimpleNamespace(
            gold_patch=env.gold_patch,
            setup_patch=env.setup_patch,
            resolutions=[(b.key, b.resolution) for b in swe.blockers.all()],
        )
        transaction.set_rollback(True)
    forget_process_caches()
    return SimpleNamespace(sql_only=sql_only, both=both, swe=facts)


@pytest.fixture
def demo_bundle(_demo_exports, tmp_path):
    """The demo's blocked SQL task exported alone (a draft bundle), this test's copy."""
    return shutil.copyfile(_demo_exports.sql_only, tmp_path / "demo.tar.gz")


@pytest.fixture
def demo_sql_swe_bundle(_demo_exports, tmp_path):
    """The demo's blocked SQL task and its planted SWE task exported together, this test's
    copy, with what the SWE task held (gold and setup patch, its blockers' resolutions)."""
    path = shutil.copyfile(_demo_exports.both, tmp_path / "demo-sql-swe.tar.gz")
    return SimpleNamespace(path=path, swe=_demo_exports.swe)
