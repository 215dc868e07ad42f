"""Fixtures of the sandbox's red-team tests."""

import hashlib

import pytest

SECRET = "hilbench-redteam-secret-7f3a"


@pytest.fixture
def app_data(settings, monkeypatch):
    """What the app keeps: a database file, a var folder and a secret in its environment;
    the database file must be unchanged when the test ends."""
    target = settings.UPLOAD_STORE / "app-data.sqlite3"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"password hashes and resolutions: {SECRET}")
    monkeypatch.setenv("HILBENCH_REDTEAM_SECRET", SECRET)
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    yield {"database": target, "var": settings.VAR_DIR, "secret": SECRET}
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before, "the app's data changed"
