"""Request bodies (issue 24, item 6): an anonymous visitor with only the CSRF cookie from
``GET /login/`` could make the server spool a 300 MB body to ``/tmp``. Now a request neither
signed in nor carrying a valid API token may send ``ANONYMOUS_BODY_MAX_KB`` (413 past it,
before a byte is read), uploads are spooled under ``var/upload-spool`` and held to
``UPLOAD_SPOOL_QUOTA_MB`` there."""

import io
import json
import os
import socket
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.files import uploadedfile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse

from exchange.models import ImportJob
from hilbench_annotate.request_limits import RequestBodyLimitMiddleware
from hilbench_annotate.services.tokens import api_token_create, api_token_revoke

from ..conftest import start_web, worker_env

pytestmark = pytest.mark.django_db

MB = 1_000_000
BOUNDARY = "hilbench-limits-boundary"


@pytest.fixture
def spooled(monkeypatch) -> list[Path]:
    """The folder of every upload Django spools to a temporary file during the test."""
    folders: list[Path] = []
    original = uploadedfile.tempfile.NamedTemporaryFile

    def recording(*args, **kwargs):
        handle = original(*args, **kwargs)
        folders.append(Path(handle.name).parent)
        return handle

    monkeypatch.setattr(uploadedfile.tempfile, "NamedTemporaryFile", recording)
    return folders


def _stored_zip(size: int) -> bytes:
    """A zip of ``size`` bytes at least (stored, not compressed: the body is that large)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("library/library.sqlite", os.urandom(size))
    return buffer.getvalue()


def _records_json(size: int) -> bytes:
    record = {
        "question_id": 1,
        "db_id": "library",
        "question": "How many books were lent?",
        "evidence": "",
        "SQL": "SELECT COUNT(*) FROM loan",
        "difficulty": "simple",
    }
    count = size // len(json.dumps(record)) + 1
    return json.dumps([{**record, "question_id": i} for i in range(count)]).encode()


def _bird_upload(client, project, size: int):
    return client.post(
        reverse("import-list"),
        {
            "kind": "bird",
            "project": project.pk,
            "questions": SimpleUploadedFile("dev.json", _records_json(1000)),
            "databases": SimpleUploadedFile("dbs.zip", _stored_zip(size)),
        },
    )


# --- anonymous requests ---------------------------------------------------------------------


def test_an_anonymous_large_body_is_refused_with_413_and_nothing_spooled(client, spooled):
    client.get("/login/")
    response = client.post(
        "/login/",
        {"username": "x", "password": "y", "file": SimpleUploadedFile("big.bin", bytes(6 * MB))},
    )
    assert response.status_code == 413
    assert "without signing in a request may send at most 256 kB" in response.text
    assert "<h1>Request too large</h1>" in response.text
    assert spooled == []


def test_the_body_is_refused_by_its_length_before_anything_reads_it():
    class Unreadable(io.RawIOBase):
        def read(self, *args):
            raise AssertionError("the body was read")

        readline = read

    request = RequestFactory().post("/login/", b"", content_type="application/octet-stream")
    request.META.update({"CONTENT_LENGTH": str(300 * MB), "wsgi.input": Unreadable()})
    request._stream = Unreadable()
    request.user = AnonymousUser()

    def view(request):
        request.read()
        return HttpResponse("read")

    assert RequestBodyLimitMiddleware(view)(request).status_code == 413


def test_an_api_path_gets_json_and_htmx_a_fragment(client):
    body = _records_json(300_000)
    api = client.post("/api/projects/1/tasks/import", body, content_type="application/json")
    assert api.status_code == 413
    assert api.json()["limit"] == 256_000
    assert "Sign in first" in api.json()["detail"]
    htmx = client.post(
        "/login/", body, content_type="application/octet-stream", headers={"HX-Request": "true"}
    )
    assert htmx.status_code == 413
    assert htmx.text.startswith('<p class="error-report" role="alert">Request body too large')


def test_a_login_form_is_small_enough(client, author):
    author.set_password("secret-pass-1")
    author.save()
    response = client.post("/login/", {"username": "author", "password": "secret-pass-1"})
    assert response.status_code == 302


def test_a_body_of_unknown_length_is_cut_off_at_the_limit():
    def view(request):
        return HttpResponse(str(len(request.body)))

    middleware = RequestBodyLimitMiddleware(convert_exception_to_response(view))

    def chunked(size: int):
        request = RequestFactory().post("/login/", b"", content_type="application/octet-stream")
        request.META.pop("CONTENT_LENGTH", None)
        request.META["HTTP_TRANSFER_ENCODING"] = "chunked"
        request._stream = io.BytesIO(b"x" * size)  # as a server handing the whole body over
        request.user = AnonymousUser()
        return middleware(request)

    refused = chunked(256_001)
    assert refused.status_code == 413
    assert "more than 256 kB" in refused.text
    accepted = chunked(256_000)
    assert (accepted.status_code, accepted.text) == (200, "256000")


def test_an_authorization_header_alone_does_not_lift_the_limit(client, project, author):
    body = _records_json(300_000)
    url = f"/api/projects/{project.pk}/tasks/import"
    token, key = api_token_create(user=author, name="harness")

    def post(key: str):
        return client.post(
            url, body, content_type="application/json", headers={"Authorization": f"Bearer {key}"}
        )

    assert post("made-up-key").status_code == 413
    assert post(key).status_code == 202
    api_token_revoke(user=author, token_id=token.pk)
    assert post(key).status_code == 413


# --- signed-in uploads and the spool --------------------------------------------------------


def test_the_spool_is_inside_the_var_folder_and_exists():
    spool = Path(settings.FILE_UPLOAD_TEMP_DIR)
    assert spool.is_relative_to(settings.VAR_DIR)
    assert spool.is_dir()


def test_a_signed_in_upload_still_works_and_spools_under_var(client, project, author, spooled):
    client.force_login(author)
    response = _bird_upload(client, project, 6 * MB)
    assert response.status_code == 302, response.content[:2000]
    assert ImportJob.objects.count() == 1
    assert spooled and set(spooled) == {Path(settings.FILE_UPLOAD_TEMP_DIR)}
    assert Path(tempfile.gettempdir()) not in spooled


def test_an_upload_past_the_spool_quota_is_refused_unread(
    client, project, author, spooled, settings, tmp_path
):
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "another-upload.upload").write_bytes(bytes(3 * MB))
    settings.FILE_UPLOAD_TEMP_DIR = spool
    settings.UPLOAD_SPOOL_QUOTA_MB = 8
    client.force_login(author)
    refused = _bird_upload(client, project, 6 * MB)
    assert refused.status_code == 413
    assert "hold 3 MB of the upload spool" in refused.text
    assert "its limit of 8 MB" in refused.text
    assert spooled == [] and ImportJob.objects.count() == 0
    settings.UPLOAD_SPOOL_QUOTA_MB = 10
    assert _bird_upload(client, project, 6 * MB).status_code == 302
    assert spooled == [spool, spool] and ImportJob.objects.count() == 1


# --- a real server --------------------------------------------------------------------------


@pytest.fixture
def server(transactional_db, tmp_path):
    """gunicorn, as deployed, on the test database, with a var folder and a TMPDIR of its own."""
    var, tmp = tmp_path / "var", tmp_path / "tmp"
    tmp.mkdir()
    env = {
        **worker_env(settings.CELERY_BROKER_URL),
        "HILBENCH_VAR_DIR": str(var),
        "TMPDIR": str(tmp),
    }
    proc, base = start_web(tmp_path, env)
    port = int(base.rsplit(":", 1)[1])
    yield {"port": port, "base": base, "spool": var / "upload-spool", "tmp": tmp}
    proc.terminate()
    proc.wait(timeout=20)


def _listing(*folders: Path) -> set[str]:
    return {str(p) for folder in folders for p in folder.rglob("*")}


def _multipart_head(fields: dict[str, str], file_field: str) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields.items()
    ]
    parts.append(
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{file_field}"; '
        'filename="big.zip"\r\nContent-Type: application/octet-stream\r\n\r\n'
    )
    return "".join(parts).encode()


def _open_post(server, path: str, cookies: dict[str, str], length: int, first: bytes):
    """A POST declaring ``length`` bytes, of which only ``first`` is sent yet."""
    sock = socket.create_connection(("127.0.0.1", server["port"]), timeout=10)
    cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server['port']}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {length}\r\nCookie: {cookie}\r\n"
        f"Origin: {server['base']}\r\nReferer: {server['base']}/login/\r\n\r\n"
    )
    sock.sendall(head.encode() + first)
    return sock


def _status(sock) -> int:
    answer = b""
    while b"\r\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    return int(answer.split(b" ", 2)[1])


def test_a_real_server_refuses_an_anonymous_300_mb_body_and_spools_nothing(server):
    visit = requests.get(server["base"] + "/login/", timeout=10)
    csrf = visit.cookies["csrftoken"]
    before = _listing(server["tmp"], server["spool"])
    first = _multipart_head({"csrfmiddlewaretoken": csrf}, "file") + bytes(256_000)
    sock = _open_post(server, "/login/", {"csrftoken": csrf}, 300 * MB, first)
    with sock:
        seen = set()
        for _ in range(10):  # while the request is open, as the server would be reading it
            seen |= _listing(server["tmp"], server["spool"]) - before
            time.sleep(0.1)
        assert seen == set(), "spooled while the request was open"
        assert _status(sock) == 413
    assert _listing(server["tmp"], server["spool"]) == before


def test_a_real_server_spools_a_signed_in_upload_under_var(server, project, author):
    visit = requests.get(server["base"] + "/login/", timeout=10)
    csrf = visit.cookies["csrftoken"]
    login = Client()
    login.force_login(author)
    cookies = {"csrftoken": csrf, "sessionid": login.cookies["sessionid"].value}
    fields = {"csrfmiddlewaretoken": csrf, "kind": "bird", "project": str(project.pk)}
    head = _multipart_head(fields, "databases")
    data = _stored_zip(8 * MB)
    questions = (
        f'\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name="questions"; '
        'filename="dev.json"\r\nContent-Type: application/json\r\n\r\n'
    ).encode() + _records_json(1000)
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    length = len(head) + len(data) + len(questions) + len(tail)
    before = _listing(server["tmp"])
    sock = _open_post(server, "/imports/", cookies, length, head + data[: 6 * MB])
    with sock:
        deadline = time.monotonic() + 10
        while not any(server["spool"].iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        spooled = list(server["spool"].iterdir())
        assert spooled, "the upload was not spooled under var/upload-spool"
        assert _listing(server["tmp"]) == before
        sock.sendall(data[6 * MB :] + questions + tail)
        assert _status(sock) == 302
    assert ImportJob.objects.filter(project=project).count() == 1
