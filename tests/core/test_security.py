"""Security by default: response headers, the Content-Security-Policy our pages live with,
a clean ``check --deploy`` in production settings, and login throttling (django-axes)."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.urls import reverse

from ..factories import UserFactory

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)

pytestmark = pytest.mark.django_db


def _csp(response) -> dict[str, list[str]]:
    header = response.headers["Content-Security-Policy"]
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


# --- headers -----------------------------------------------------------------------------


def test_pages_send_the_security_headers(client, author):
    client.force_login(author)

    response = client.get(reverse("task-list"))

    assert response.status_code == 200
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "same-origin"
    csp = _csp(response)
    assert csp["default-src"] == ["'self'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["object-src"] == ["'none'"]
    assert "'unsafe-inline'" not in csp["script-src"]
    assert "'unsafe-eval'" not in csp["script-src"]


def test_the_login_page_and_the_api_carry_the_policy_too(client, api, author):
    login = client.get(reverse("login"))
    api.force_authenticate(author)
    listed = api.get(reverse("api-task-list"))

    for response in (login, listed):
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"


def test_inline_scripts_carry_the_nonce_of_their_response(client, lead):
    client.force_login(lead)

    response = client.get(reverse("import-list"))

    assert response.status_code == 200
    nonces = [v for v in _csp(response)["script-src"] if v.startswith("'nonce-")]
    assert len(nonces) == 1
    nonce = nonces[0][len("'nonce-") : -1]
    inline = [a for a in SCRIPT_TAG.findall(response.content.decode()) if "src=" not in a]
    assert inline, "the import page has an inline script"
    assert all(f'nonce="{nonce}"' in attrs for attrs in inline)


def test_each_response_gets_a_fresh_nonce(client, lead):
    client.force_login(lead)

    first = _csp(client.get(reverse("import-list")))["script-src"]
    second = _csp(client.get(reverse("import-list")))["script-src"]

    assert first != second


def test_no_template_has_an_inline_handler_or_a_script_without_nonce():
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for attrs in SCRIPT_TAG.findall(text):
            if "src=" not in attrs and "request.csp_nonce" not in attrs:
                offenders.append(f"{path.relative_to(ROOT)}: <script{attrs}> without nonce")
        for line_no, line in enumerate(text.splitlines(), 1):
            if INLINE_HANDLER.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{line_no}: inline event handler")

    assert offenders == []


def test_swagger_ui_page_has_no_inline_script(api, author):
    api.force_authenticate(author)

    page = api.get(reverse("api-docs"))
    script = api.get(reverse("api-docs") + "?script=")

    assert page.status_code == 200
    assert all("src=" in attrs for attrs in SCRIPT_TAG.findall(page.content.decode()))
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()


# --- production settings ------------------------------------------------------------------


def _production_env(tmp_path, **extra) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "HILBENCH_", "DATABASE_URL", "CELERY_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="hilbench_annotate.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="annotate.example.org",
        HILBENCH_HTTPS="1",
        HILBENCH_VAR_DIR=str(tmp_path / "var"),
    )
    env.update(extra)
    return env


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_when_https_is_off(tmp_path):
    """The guard works: without HILBENCH_HTTPS the deploy check names what is missing."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(tmp_path, HILBENCH_HTTPS="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "security.W004" in result.stderr  # no HSTS
    assert "security.W008" in result.stderr  # no SSL redirect


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path):
    env = _production_env(tmp_path)
    del env["DJANGO_SECRET_KEY"]

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def _debug_in(env: dict[str, str]) -> str:
    probe = "from django.conf import settings; print('DEBUG', settings.DEBUG)"
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.stdout + result.stderr


def test_debug_is_off_when_django_debug_is_unset(tmp_path):
    """A deployment that forgets DJANGO_DEBUG serves no tracebacks: the default is off."""
    env = _production_env(tmp_path)
    del env["DJANGO_DEBUG"]

    assert "DEBUG False" in _debug_in(env)


def test_debug_unset_without_a_secret_key_says_what_to_set(tmp_path):
    env = _production_env(tmp_path)
    del env["DJANGO_DEBUG"], env["DJANGO_SECRET_KEY"]

    output = _debug_in(env)

    assert "DJANGO_SECRET_KEY must be set" in output
    assert "make run" in output


def test_make_run_turns_debug_on_for_itself_and_what_it_runs_first(tmp_path):
    """`make run` works with no secret configured: its targets (migrate, demo, run, worker)
    set DJANGO_DEBUG=1 unless the caller set it. The probe stands in for the venv's python,
    so the commands print the variable instead of running (-o: no reinstall)."""
    code = 'import os; print(os.environ.get("DJANGO_DEBUG"))'
    probe = f"{sys.executable} -c '{code}'"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MAKE"))}

    def make(target, **extra):
        result = subprocess.run(
            ["make", "-s", "-o", ".venv/.installed", target, f"PY={probe}"],
            cwd=ROOT,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout.split()

    assert make("demo") == ["1", "1"]  # migrate, then seed_demo
    assert make("demo", DJANGO_DEBUG="0") == ["0", "0"]


# --- login throttling ---------------------------------------------------------------------


@pytest.fixture
def throttle(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    return settings


def _login(client, username, password, ip="10.0.0.1"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def test_the_throttle_is_on_in_the_real_settings():
    from django.conf import settings

    assert settings.AXES_ENABLED is True
    assert settings.AXES_FAILURE_LIMIT >= 1
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"


def test_repeated_failed_logins_lock_the_username_even_with_the_right_password(client, throttle):
    UserFactory(username="alice", password="right-password")
    assert _login(client, "alice", "wrong").status_code == 200  # the form again
    assert _login(client, "alice", "wrong").status_code == 200
    assert _login(client, "alice", "wrong").status_code == 429  # the third failure locks

    locked = _login(client, "alice", "right-password")

    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_lock_is_in_the_database_so_every_web_process_sees_it(client, throttle):
    """Another client from the same address (another process, as far as state goes) is
    refused too: the failures live in AccessAttempt rows, not in process memory."""
    from django.test import Client

    UserFactory(username="alice", password="right-password")
    for _ in range(3):
        _login(client, "alice", "wrong", ip="10.0.0.1")
    assert AccessAttempt.objects.filter(username="alice").exists()

    elsewhere = _login(Client(), "alice", "right-password", ip="10.0.0.1")

    assert elsewhere.status_code == 429


def test_one_users_failures_do_not_lock_out_colleagues_behind_the_same_address(client, throttle):
    """The red-team's finding: auditor2's typos locked author2 out, both behind one office
    address. The lock is on the (username, address) pair: only the failing user is locked."""
    from django.test import Client

    UserFactory(username="auditor2", password="auditor2-password")
    UserFactory(username="author2", password="author2-password")
    for _ in range(3):
        _login(client, "auditor2", "wrong", ip="10.6.6.6")

    colleague = _login(Client(), "author2", "author2-password", ip="10.6.6.6")
    failing_user = _login(Client(), "auditor2", "auditor2-password", ip="10.6.6.6")

    assert colleague.status_code == 302
    assert failing_user.status_code == 429


def test_guessing_many_usernames_from_one_address_locks_each_guessed_pair_only(client, throttle):
    UserFactory(username="bob", password="bobs-password")
    for name in ("x1", "x2", "x3"):
        for _ in range(3):
            _login(client, name, "guess", ip="10.6.6.6")

    assert _login(client, "x1", "guess", ip="10.6.6.6").status_code == 429
    assert _login(client, "bob", "bobs-password", ip="10.6.6.6").status_code == 302


def test_lockout_by_setting_reads_pairs_and_alternatives():
    from django.conf import settings

    from hilbench_annotate.settings import _lockout_parameters

    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert _lockout_parameters("username") == [["username"]]
    assert _lockout_parameters("username, ip_address") == [["username"], ["ip_address"]]
    assert _lockout_parameters(" username + ip_address ") == [["username", "ip_address"]]


def test_a_success_below_the_limit_resets_the_count(client, throttle):
    UserFactory(username="carol", password="carols-password")
    _login(client, "carol", "wrong")
    _login(client, "carol", "wrong")
    assert _login(client, "carol", "carols-password").status_code == 302
    client.logout()

    _login(client, "carol", "wrong")
    _login(client, "carol", "wrong")

    assert _login(client, "carol", "carols-password").status_code == 302


def test_the_lock_lifts_after_the_cool_off(client, throttle):
    from datetime import timedelta

    from django.utils import timezone

    UserFactory(username="dave", password="daves-password")
    for _ in range(3):
        _login(client, "dave", "wrong")
    assert _login(client, "dave", "daves-password").status_code == 429

    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(hours=1))

    assert _login(client, "dave", "daves-password").status_code == 302
