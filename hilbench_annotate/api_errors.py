from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from hilbench_annotate.errors import (
    AccessDenied,
    DomainError,
    LimitReached,
    StaleVersion,
    Unavailable,
)

MAX_INT64 = 2**63 - 1


def exception_handler(exc, context):
    """Domain errors and access refusals become 400 / 403 / 409 / 429 with a message naming
    what is wrong."""
    if isinstance(exc, StaleVersion):
        return Response(
            {"detail": str(exc), "current_version": exc.current},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, Unavailable):
        # E.g. the judge could not decide: say so, never a silent "irrelevant question".
        return Response(
            {"detail": f"{exc.what} error: {exc}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE
        )
    if isinstance(exc, LimitReached):
        body = {"detail": str(exc), "limit": exc.limit}
        if exc.retry_after is None:
            return Response(body, status=exc.status_code)
        return Response(
            {**body, "retry_after": exc.retry_after},
            status=exc.status_code,
            headers={"Retry-After": str(exc.retry_after)},
        )
    if isinstance(exc, DomainError | AccessDenied):
        return Response({"detail": str(exc)}, status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        return Response({"detail": exc.messages}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, OverflowError | DataError):
        # A number the database cannot hold (SQLite raises OverflowError past 64 bits,
        # PostgreSQL DataError past a column's range): in the path no such object can exist,
        # in the body it is the client's mistake. Never a 500.
        kwargs = (context or {}).get("kwargs") or {}
        if any(isinstance(v, int) and not -MAX_INT64 <= v <= MAX_INT64 for v in kwargs.values()):
            return Response({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
        return Response(
            {"detail": "A value in the request does not fit (a number out of range, or too long)."},
            status=status.HTTP_400_BAD_REQUEST,
        )
    return drf_exception_handler(exc, context)
