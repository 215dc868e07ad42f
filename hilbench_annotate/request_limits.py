"""Request bodies, refused before anything reads them.

- A request that is neither signed in nor carrying a valid API token may send a small body
  only (``ANONYMOUS_BODY_MAX_KB``: the login form is tiny). A larger ``Content-Length`` is
  refused with 413 at once; a body of unknown length (``Transfer-Encoding`` without
  ``Content-Length``) is read through :class:`CappedStream`, which stops at the limit with the
  same 413.
- Django spools a multipart upload larger than ``FILE_UPLOAD_MAX_MEMORY_SIZE`` to
  ``FILE_UPLOAD_TEMP_DIR`` (``var/upload-spool``, never ``/tmp``) while it parses it. An upload
  whose ``Content-Length`` would take that folder past ``UPLOAD_SPOOL_QUOTA_MB`` is refused
  with 413 naming the usage and the limit. The usage is what the folder holds when the request
  arrives (one ``os.scandir``): uploads that start at the same moment may pass it together.

Under WSGI (gunicorn, runserver) Django reads at most ``CONTENT_LENGTH`` bytes of a body, and
none of a chunked one gunicorn hands over without it, so the length is what counts; the cap
on the stream holds should a server or a later Django hand such a body over all the same.

The middleware sits after ``AuthenticationMiddleware`` (``request.user`` is known).
``CsrfViewMiddleware``, listed earlier, reads the form only in ``process_view``, which runs
once every middleware's request phase, this one's included, is done.
"""

import io
import os

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse
from django.utils.html import format_html
from rest_framework.exceptions import AuthenticationFailed

from hilbench_annotate.authentication import ApiTokenAuthentication
from hilbench_annotate.toolkit.heap import heap_release
from hilbench_annotate.toolkit.sqlconsole import amount

# A body this large (a records import, an upload) leaves the worker a heap of freed objects
# parsed from it: given back once the response is made (toolkit/heap.py).
LARGE_BODY = 1 << 20

TOO_LARGE_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    "<title>Request too large · HiL-Bench Annotate</title></head>"
    '<body><main><h1>Request too large</h1><p class="error-report" role="alert">{}</p>'
    "</main></body></html>"
)


class BodyTooLarge(RequestDataTooBig):
    """A body of unknown length read past the anonymous limit."""


class CappedStream(io.IOBase):
    """Reads at most ``limit`` bytes of ``stream``; reading further raises
    :class:`BodyTooLarge` and marks the stream ``exceeded`` (Django answers that 400 from
    wherever it was reading; the middleware turns it into its 413). An ``IOBase``, as the
    ``LimitedStream`` it wraps, for what Django asks of a request's stream (``close``)."""

    def __init__(self, stream, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._pos = 0
        self.exceeded = False

    def _bounded(self, size) -> int:
        # One byte past the limit, so a body of exactly the limit is not refused.
        room = self._limit - self._pos + 1
        return room if size is None or size < 0 else min(size, room)

    def _count(self, data: bytes) -> bytes:
        self._pos += len(data)
        if self._pos > self._limit:
            self.exceeded = True
            raise BodyTooLarge(f"The request body is larger than {self._limit} bytes.")
        return data

    def read(self, size=-1, /) -> bytes:
        if self.exceeded:
            raise BodyTooLarge(f"The request body is larger than {self._limit} bytes.")
        return self._count(self._stream.read(self._bounded(size)))

    def readline(self, size=-1, /) -> bytes:
        if self.exceeded:
            raise BodyTooLarge(f"The request body is larger than {self._limit} bytes.")
        return self._count(self._stream.readline(self._bounded(size)))


def anonymous_body_limit() -> int:
    return round(settings.ANONYMOUS_BODY_MAX_KB * 1_000)


def spool_quota() -> int:
    return round(settings.UPLOAD_SPOOL_QUOTA_MB * 1_000_000)


def spool_usage(folder) -> int:
    """Bytes the files directly in ``folder`` hold (Django's spooled uploads are files there)."""
    total = 0
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_size
                except FileNotFoundError:  # the request that spooled it ended meanwhile
                    continue
    except FileNotFoundError:
        return 0
    return total


def _content_length(request) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0  # as Django reads it: no body


def _signed_in(request) -> bool:
    """A session user, or an API token the API would accept (the API's own check, so a
    revoked or made-up token in the header buys nothing)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return True
    # DRF's test clients' force_authenticate, which DRF's Request honours as well (an
    # attribute of the request object: nothing a client sends can set it).
    if getattr(request, "_force_auth_user", None) is not None:
        return True
    try:
        return ApiTokenAuthentication().authenticate(request) is not None
    except (AuthenticationFailed, UnicodeError):
        return False


def too_large(request, text: str, limit: int) -> HttpResponse:
    """413: JSON for the API, a one-line fragment for htmx, else a small page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": text, "limit": limit}, status=413)
    if request.headers.get("HX-Request") == "true":
        fragment = format_html('<p class="error-report" role="alert">{}</p>', text)
        return HttpResponse(fragment, status=413)
    return HttpResponse(format_html(TOO_LARGE_PAGE, text), status=413)


def _anonymous_refusal(request, size: str) -> HttpResponse:
    limit = anonymous_body_limit()
    text = (
        f"Request body too large ({size}): without signing in a request may send at most "
        f"{amount(limit)}. Sign in first."
    )
    return too_large(request, text, limit)


def _spool_refusal(request, length: int) -> HttpResponse | None:
    folder = settings.FILE_UPLOAD_TEMP_DIR
    if (
        not folder
        or request.content_type != "multipart/form-data"
        or length <= settings.FILE_UPLOAD_MAX_MEMORY_SIZE  # kept in memory, never spooled
    ):
        return None
    used, quota = spool_usage(folder), spool_quota()
    if used + length <= quota:
        return None
    text = (
        f"Upload refused: the uploads being received hold {amount(used)} of the upload "
        f"spool; with this one ({amount(length)}) they would pass its limit of "
        f"{amount(quota)} (HILBENCH_UPLOAD_SPOOL_QUOTA_MB). Try again when they have finished."
    )
    return too_large(request, text, quota)


class RequestBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        length = _content_length(request)
        unknown_length = not length and "HTTP_TRANSFER_ENCODING" in request.META
        capped = None
        if (length > anonymous_body_limit() or unknown_length) and not _signed_in(request):
            if length:
                return _anonymous_refusal(request, amount(length))
            # Django's own stream of the request, read by everything after this.
            capped = request._stream = CappedStream(request._stream, anonymous_body_limit())
        if length and (refusal := _spool_refusal(request, length)):
            return refusal
        response = self.get_response(request)
        if length >= LARGE_BODY:  # what parsing it freed goes back to the system
            heap_release()
        if capped is not None and capped.exceeded:
            return _anonymous_refusal(request, f"more than {amount(anonymous_body_limit())}")
        return response
