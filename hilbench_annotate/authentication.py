from datetime import timedelta

from django.contrib.auth.backends import ModelBackend
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from hilbench_annotate.access import is_machine_user
from hilbench_annotate.models import ApiToken


class PasswordBackend(ModelBackend):
    """Username and password, for people only: a machine user (the harness role) is refused
    even when someone gave it a password, so its only way in is an API token, which can be
    revoked on its own and never opens a web session."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and is_machine_user(user):
            return None
        return user


LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <token>`` (or ``Token <token>``) against hashed ApiTokens."""

    keywords = ("bearer", "token")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower().decode() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        key = header[1].decode(errors="replace")
        token = (
            ApiToken.objects.select_related("user")
            .filter(key_hash=ApiToken.hash_key(key), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        now = timezone.now()
        # To the minute: a write on every request (an agent asks many) bought nothing.
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request):
        return "Bearer"


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Tells drf-spectacular (and so /api/docs/) how API tokens are sent."""

    target_class = "hilbench_annotate.authentication.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API token from /tokens/"}
