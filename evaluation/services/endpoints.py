"""Model endpoints and the pass-rate thresholds that select tasks."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hilbench_annotate.access import require_role
from hilbench_annotate.errors import DomainError
from hilbench_annotate.models import Project
from hilbench_annotate.services.tasks import event_record
from hilbench_annotate.toolkit.egress import EgressRefused, host_is_named, resolve_destination
from hilbench_annotate.vocabulary import Role

from ..models import ModelEndpoint, SelectionPolicy
from ..selection import DEFAULT_MODELS_NEEDED
from .common import MAX_PASSES


@transaction.atomic
def endpoint_create(
    *,
    project: Project,
    actor,
    name: str,
    base_url: str,
    model: str,
    api_key_env: str = "",
    concurrency: int = 1,
    timeout_s: float = 60.0,
    max_turns: int = 12,
) -> ModelEndpoint:
    require_role(actor, project, Role.LEAD, action="do this")
    model = model.strip()
    if not model:
        # The pass-rate gate counts an endpoint's runs as the model it serves.
        raise DomainError("Name the model the endpoint serves (e.g. gpt-4o).")
    if len(model) > 200:
        raise DomainError("The model name is at most 200 characters.")
    if not base_url.startswith(("http://", "https://")):
        raise DomainError(f"The base URL must start with http:// or https://, not {base_url!r}.")
    prefix = settings.MODEL_KEY_ENV_PREFIX
    if api_key_env and (
        not api_key_env.startswith(prefix) or not api_key_env.replace("_", "").isalnum()
    ):
        # Only variables meant for model endpoints: a lead must not be able to send the
        # server's own secrets (DJANGO_SECRET_KEY, DATABASE_URL…) to a URL of their choosing.
        raise DomainError(
            f"The API key is read from an environment variable whose name starts with "
            f"{prefix} (e.g. {prefix}OPENAI); the key itself is never stored."
        )
    check_endpoint_address(base_url)
    if not 1 <= concurrency <= 32:
        raise DomainError("Concurrency must be between 1 and 32.")
    if not 0 < timeout_s <= 600 or not 1 <= max_turns <= 100:
        raise DomainError("The timeout is at most 600 s and a pass has 1 to 100 turns.")
    if ModelEndpoint.objects.filter(project=project, name=name).exists():
        raise DomainError(f"The project already has an endpoint called {name!r}.")
    endpoint = ModelEndpoint.objects.create(
        project=project,
        name=name,
        base_url=base_url.rstrip("/"),
        model=model,
        api_key_env=api_key_env,
        concurrency=concurrency,
        timeout_s=timeout_s,
        max_turns=max_turns,
        created_by=actor,
    )
    event_record(
        project_id=project.pk, task_id=None, actor=actor, kind="endpoint_created", name=name
    )
    return endpoint


def check_endpoint_address(base_url: str) -> None:
    """Refuse, when a lead registers it, a URL the workers' connections would refuse
    (toolkit/egress.py): with HILBENCH_MODEL_ENDPOINT_HOSTS set, a host it does not name;
    otherwise a host that does not resolve here or resolves to a loopback, link-local,
    private or other non-public address. The workers check every connection again."""
    allowed = settings.MODEL_ENDPOINT_HOSTS
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        raise DomainError(f"The base URL {base_url!r} is not a valid URL: {error}.") from None
    if not host:
        raise DomainError(f"The base URL {base_url!r} names no host.")
    if host_is_named(host, allowed):
        return  # the operator named it: any address, no lookup needed
    if allowed:
        raise DomainError(
            f"{host} is not an allowed model endpoint host (HILBENCH_MODEL_ENDPOINT_HOSTS)."
        )
    try:
        resolve_destination(host, port)
    except EgressRefused as error:
        raise DomainError(
            f"{error} To use an internal endpoint, the operator lists its host in "
            "HILBENCH_MODEL_ENDPOINT_HOSTS."
        ) from None
    except (OSError, UnicodeError) as error:
        raise DomainError(
            f"{host} does not resolve here ({error}), so it cannot be checked."
        ) from None


MIN_REASON_CHARS = 10


@transaction.atomic
def selection_policy_update(
    *,
    project: Project,
    actor,
    k: int,
    full_info_min: float,
    baseline_max: float,
    min_models: int = DEFAULT_MODELS_NEEDED,
    min_models_reason: str = "",
) -> SelectionPolicy:
    """Save the project's pass-rate thresholds. Fewer than two models only with a reason:
    who lowered it, when and why are kept (while it stays below two, re-saving the same
    reason keeps the first record) and shown wherever the gate's verdict is."""
    require_role(actor, project, Role.LEAD, action="do this")
    if not 1 <= k <= MAX_PASSES:
        raise DomainError(f"k must be between 1 and {MAX_PASSES}.")
    if not (0 <= full_info_min <= 1 and 0 <= baseline_max <= 1):
        raise DomainError("Thresholds are pass rates between 0 and 1.")
    if min_models < 1:
        raise DomainError("At least one model must have run a task to decide it.")
    reason = " ".join(min_models_reason.split()) if min_models < DEFAULT_MODELS_NEEDED else ""
    if min_models < DEFAULT_MODELS_NEEDED and len(reason) < MIN_REASON_CHARS:
        raise DomainError(
            f"The pass-rate gate asks for {DEFAULT_MODELS_NEEDED} distinct models; to decide "
            f"with {min_models}, say why (a sentence, at least {MIN_REASON_CHARS} characters): "
            "it is shown with every verdict of the gate."
        )
    policy = SelectionPolicy.objects.select_for_update().filter(project=project).first()
    lowered: dict = dict(
        min_models_reason=reason, min_models_lowered_by=None, min_models_lowered_at=None
    )
    if reason:
        # The same lowering saved again (other thresholds changed) keeps who and when.
        kept = policy is not None and (policy.min_models, policy.min_models_reason) == (
            min_models,
            reason,
        )
        lowered.update(
            min_models_lowered_by=policy.min_models_lowered_by if kept else actor,
            min_models_lowered_at=policy.min_models_lowered_at if kept else timezone.now(),
        )
    policy, _ = SelectionPolicy.objects.update_or_create(
        project=project,
        defaults={
            "k": k,
            "full_info_min": full_info_min,
            "baseline_max": baseline_max,
            "min_models": min_models,
            **lowered,
            "updated_by": actor,
        },
    )
    event_record(
        project_id=project.pk,
        task_id=None,
        actor=actor,
        kind="selection_policy_updated",
        k=k,
        full_info_min=full_info_min,
        baseline_max=baseline_max,
        min_models=min_models,
        min_models_reason=reason,
    )
    return policy
