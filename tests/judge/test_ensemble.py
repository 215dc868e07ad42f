"""The ensemble judge: the embedded verdict where it is sure, the LLM judge (a real HTTP
server on loopback) only where the embedded logit is within the band of its threshold."""

import pytest

from judge.embedded import EmbeddedJudge
from judge.ensemble import EnsembleJudge
from judge.services import get_judge

from .test_ask_human_api import Endpoint, endpoint  # noqa: F401 - the loopback endpoint fixture
from .test_embedded import REGISTRY

CLEAR_MATCH = "Over which dates does the crisis period run?"
CLEAR_MISS = "What is the capital of France?"


@pytest.fixture(scope="module")
def embedded():
    return EmbeddedJudge()


def _band_around(embedded, question):
    """A band that holds ``question``'s best logit (and one that does not)."""
    best = max(embedded.scores(question, REGISTRY).values())
    return abs(best - embedded.thresholds["sql"]) + 0.5


def test_the_llm_decides_only_inside_the_band(endpoint, embedded, settings):  # noqa: F811
    llm = get_judge("llm")
    narrow = EnsembleJudge(embedded, llm, band=0.01)
    verdict = narrow.judge(CLEAR_MATCH, REGISTRY)
    assert verdict.reason.startswith("embedded:")
    assert verdict.blocker_id == embedded.judge(CLEAR_MATCH, REGISTRY).blocker_id
    # A message the rules refuse (it names nothing of the task) never reaches the LLM, however
    # wide the band.
    wide = EnsembleJudge(embedded, llm, band=100.0)
    refused = wide.judge(CLEAR_MISS, REGISTRY)
    assert refused.blocker_id is None and refused.reason.startswith("vague")
    assert endpoint.requests == []

    # A band wide enough to hold the question: the LLM's answer stands, even against the
    # embedded one.
    wide = EnsembleJudge(embedded, llm, band=_band_around(embedded, CLEAR_MATCH))
    endpoint.replies = [(200, "senior_owner")]
    verdict = wide.judge(CLEAR_MATCH, REGISTRY)
    assert verdict.blocker_id == "senior_owner" and verdict.reason.startswith("LLM (embedded")
    assert len(endpoint.requests) == 1
    assert "1996" not in str(endpoint.requests[0])  # resolutions never reach the LLM


def test_a_failing_llm_is_an_error_not_irrelevant(endpoint, embedded):  # noqa: F811
    from judge.base import JudgeError

    wide = EnsembleJudge(embedded, get_judge("llm"), band=_band_around(embedded, CLEAR_MATCH))
    endpoint.replies = [(503, None)] * 5
    with pytest.raises(JudgeError):
        wide.judge(CLEAR_MATCH, REGISTRY)


@pytest.mark.django_db  # get_judge()'s encoder reads the stored embeddings
def test_the_version_names_both_judges_and_the_band(endpoint, settings):  # noqa: F811
    settings.JUDGE_BACKEND = "ensemble"
    settings.JUDGE_ENSEMBLE_BAND = 2.0
    judge = get_judge()
    assert judge.version.startswith("ensemble-embedded-4-") and judge.version.endswith(":2")
    assert "llm-prompt" in judge.version
    # Multi-topic messages stay the embedded judge's call.
    message = "What dates define the crisis period? And what birth date makes someone senior?"
    assert judge.judge(message, REGISTRY).reason.startswith("multi-topic")


@pytest.mark.django_db
def test_a_long_model_name_still_fits_the_version_columns(endpoint, settings):  # noqa: F811
    """With a long model name the ensemble's version passed the 100 characters of the
    ``judge_version`` columns, which PostgreSQL refuses to store."""
    from judge.models import AskHumanRun, JudgeCacheEntry
    from judge.services import judge_cached

    settings.JUDGE_BACKEND = "ensemble"
    model = "accounts/fireworks/models/llama-v3p1-405b-instruct-long-context-" + "x" * 20
    settings.JUDGE_LLM_MODEL = model + "-a"
    first = get_judge()
    settings.JUDGE_LLM_MODEL = model + "-b"
    second = get_judge()
    limit = min(
        model_class._meta.get_field("judge_version").max_length
        for model_class in (AskHumanRun, JudgeCacheEntry)
    )
    assert len(first.long_version) > limit
    assert len(first.version) <= limit and len(second.version) <= limit
    assert first.version != second.version  # differing only past the cut
    assert first.version.startswith("ensemble-embedded-4-")
    # The long form stays readable, naming both judges and the band.
    assert first.long_version.endswith(f"{model}-a:{settings.JUDGE_ENSEMBLE_BAND:g}")
    # Stored with a verdict (the embedded judge is sure of this one: no LLM call).
    judge_cached(judge=first, registry=REGISTRY, question=CLEAR_MISS, domain="sql")
    assert JudgeCacheEntry.objects.get().judge_version == first.version
    assert endpoint.requests == []
