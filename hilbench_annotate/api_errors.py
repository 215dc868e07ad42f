from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from hilbench_annotate.errors import DomainError, StaleVersion


def exception_handler(exc, context):
    """Domain errors become 400 / 403 / 409 with a message naming what is wrong."""
    if isinstance(exc, StaleVersion):
        return Response(
            {"detail": str(exc), "current_version": exc.current},
            status=status.HTTP_409_CONFLICT,
        )
    from judge.base import JudgeError

    if isinstance(exc, JudgeError):
        # The judge could not decide: say so, never a silent "irrelevant question".
        return Response(
            {"detail": f"Judge error: {exc}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE
        )
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc)}, status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        return Response({"detail": exc.messages}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
