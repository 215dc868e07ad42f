"""Which judge scores a task's ``ask_human``: said by the manifest (``tasks[].ask_human_judge``)
and ``provenance/validation.json`` (``ask_human_judge``), read from the files the bundle holds.

A task the app wrote answers ``ask_human`` with the app's embedded judge: its ask-human
sidecar is built from the app's code (``ask_human/environment/sidecars/ask-human/``). A task
kept from the HiL-Bench release names the release's sidecar image
(``hil-bench-harbor/ask-human:latest``), which calls an LLM judge (``ASK_HUMAN_MODEL``, read
from its compose file's variables). By default the export puts the app's sidecar in its place
(``shared/sidecars/ask-human/``, the embedded judge with the project's calibration). When the
lead gives an endpoint and a model, the release's own sidecar judges instead, configured as the
release's compose file reads it (``ASK_HUMAN_BACKEND=vllm``, ``VLLM_BASE_URL``,
``VLLM_MODEL``, ``ASK_HUMAN_MODEL``): the bundle then carries no sidecar of the app's for it,
and ``shared/ask-human-data/judge.json`` names the judge and those variables (never a key).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from harbor_agents.trial_model import RELEASE_LLM
from hilbench_annotate.errors import DomainError
from hilbench_annotate.toolkit.jsontext import json_loads

EMBEDDED = "embedded"
NONE = "none"
RELEASE_IMAGE = "hil-bench-harbor/ask-human:latest"
APP_CONTEXT = "ask_human/environment/sidecars/ask-human/Dockerfile"
RELEASE_CONTEXT = "shared/sidecars/ask-human/Dockerfile"
JUDGE = "shared/ask-human-data/judge.json"


@dataclass(frozen=True)
class LlmJudge:
    """The release's LLM judge, as a lead gives it: an OpenAI-compatible endpoint and a model."""

    endpoint: str
    model: str

    def environment(self) -> dict[str, str]:
        """The release's compose variables for its ask-human sidecar (its ``vllm`` backend
        posts to ``<VLLM_BASE_URL>/v1/chat/completions``)."""
        base = self.endpoint.rstrip("/").removesuffix("/v1")
        return {
            "ASK_HUMAN_BACKEND": "vllm",
            "ASK_HUMAN_MODEL": self.model,
            "VLLM_BASE_URL": base,
            "VLLM_MODEL": self.model,
        }

    def settings(self) -> dict:
        """``judge.json`` of a task whose ask_human the release's LLM judge scores."""
        return {"judge": RELEASE_LLM, "model": self.model, "environment": self.environment()}


def llm_judge_clean(endpoint: str = "", model: str = "") -> LlmJudge | None:
    """The lead's endpoint and model, both or neither; DomainError naming what is wrong."""
    endpoint, model = (endpoint or "").strip(), (model or "").strip()
    if not endpoint and not model:
        return None
    if not endpoint or not model:
        raise DomainError("The release's LLM judge needs both an endpoint and a model.")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
        raise DomainError(f"{endpoint!r} is not an http(s) URL without credentials.")
    if len(endpoint) > 500 or len(model) > 200 or any(c.isspace() for c in model):
        raise DomainError("The judge's endpoint or model name is too long or has spaces.")
    return LlmJudge(endpoint, model)


def ask_human_judge(entries: dict, folder: str) -> dict:
    """Which judge scores the task's ask_human, from its files as written (``entries``: the
    bundle's paths). ``said`` is the manifest's line."""
    if f"{folder}/{APP_CONTEXT}" in entries:
        return {
            "judge": EMBEDDED,
            "sidecar": APP_CONTEXT.removesuffix("/Dockerfile"),
            "said": "the app's embedded judge (its ask-human sidecar, built from the app's code)",
        }
    if f"{folder}/{RELEASE_CONTEXT}" in entries:
        return {
            "judge": EMBEDDED,
            "sidecar": RELEASE_CONTEXT.removesuffix("/Dockerfile"),
            "said": "the app's embedded judge, in place of the release's LLM judge "
            f"(shared/sidecars/ask-human, built from the app's code; {RELEASE_IMAGE} of the "
            "release's own, where a machine holds it, is never built over and then answers)",
        }
    settings = _settings(entries.get(f"{folder}/{JUDGE}"))
    if settings.get("judge") == RELEASE_LLM:
        environment = settings.get("environment") or {}
        variables = " ".join(f"{k}={v}" for k, v in sorted(environment.items()))
        return {
            "judge": RELEASE_LLM,
            "sidecar": RELEASE_IMAGE,
            "model": settings.get("model", ""),
            "environment": environment,
            "said": f"the release's LLM judge: its own sidecar ({RELEASE_IMAGE}) calls "
            f"{settings.get('model', '')}, configured as the release's compose file reads it "
            f"({variables}); it needs a network",
        }
    return {"judge": NONE, "said": "no ask-human sidecar in the task's files"}


def _settings(content) -> dict:
    if not isinstance(content, bytes):
        return {}
    try:
        value = json_loads(content)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
