"""The reference agents show only what a scripted agent can show (issue 44, item 10): none
submits the oracle's solution to stand for guessing, and the page says that guessability is
what a model's baseline pass rate (the pass-rate gate) measures."""

from html import unescape

import pytest
from django.urls import reverse

from evaluation.agents import AGENTS, GUESSABILITY, REFERENCE_AGENTS
from evaluation.services import harbor_run_start
from hilbench_annotate.errors import DomainError

pytestmark = pytest.mark.django_db


def test_no_reference_agent_guesses_with_the_oracles_solution():
    assert "guesser" not in AGENTS
    assert [a.key for a in REFERENCE_AGENTS] == ["oracle", "no-op", "asks-every-trigger", "spammer"]
    # Those that run a solution run it as the oracle, and are expected to pass as it does.
    assert all("Guesser" not in a.harbor for a in AGENTS.values())


def test_a_guesser_run_can_no_longer_be_started(project, lead):
    with pytest.raises(DomainError, match="Unknown agent 'guesser'"):
        harbor_run_start(
            project=project, actor=lead, agent="guesser", task_ids=[1], modes=["baseline"],
            passes=1,
        )  # fmt: skip


def test_the_run_form_says_what_measures_guessability(client, project, lead):
    client.force_login(lead)
    html = unescape(client.get(reverse("evaluation-project", args=[project.pk])).content.decode())
    assert GUESSABILITY in html
    assert "baseline pass rate" in GUESSABILITY and "pass-rate gate" in GUESSABILITY
    assert 'value="guesser"' not in html
