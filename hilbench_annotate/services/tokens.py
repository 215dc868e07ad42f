from django.utils import timezone

from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import ApiToken


def api_token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """Make a token; returns it with its key, which is shown once and never stored."""
    name = name.strip()
    if not name:
        raise DomainError("A token needs a name.")
    key = ApiToken.new_key()
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[:10], key_hash=ApiToken.hash_key(key)
    )
    return token, key


def api_token_revoke(*, user, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(user=user, pk=token_id).first()
    if token is None:
        raise DomainError("No such token among yours.")
    ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=timezone.now())
    return token
