"""pass@k as the leaderboard shows it and as the pass-rate gate reads it (issue 44): the
leaderboard's pass@k is the release's (any of the first k passes), its "unbiased pass@k"
column the estimate 1 - C(n-c,k)/C(n,k) (evaluation.metrics.pass_at_k_unbiased), and the gate
reads the unbiased column: over all of a model's passes, not their order."""

import pytest
from django.urls import reverse

from evaluation.selectors import leaderboard, task_selection
from hilbench_annotate.gates import gate_results

from .util import import_results

# Issue 25's worked example: passes [F, F, F, T, T] have unbiased pass@3 0.9; the release's
# pass@3 (the first three) is 0.
# Two distinct models (the gate's default asks for two).
PASSES = {
    "gpt-4o": {"baseline": [False, False, False, True, True], "full_info": [True] + [False] * 4},
    "claude-sonnet-4": {"baseline": [False] * 3, "full_info": [True] * 3},
}


def _records(task, passes: dict[str, list[bool]]) -> list[dict]:
    return [
        {"task": task.pk, "mode": mode, "pass": i, "resolved": resolved}
        for mode, results in passes.items()
        for i, resolved in enumerate(results, start=1)
    ]


def test_the_gate_reads_the_leaderboards_unbiased_column(sql_task, lead):
    for model, passes in PASSES.items():
        import_results(
            project=sql_task.project, actor=lead, records=_records(sql_task, passes), model=model
        )
    board = {(row["model"], row["mode"]): row for row in leaderboard(project=sql_task.project)}
    selection = task_selection(task=sql_task)
    assert selection["k"] == 3
    # Per model: the leaderboard's unbiased pass@3 over the project's one task is the gate's
    # evidence. gpt-4o: baseline 1 - C(3,3)/C(5,3) = 0.9; full_info 1 - C(4,3)/C(5,3) = 0.6.
    # claude-sonnet-4: 0 and 1.
    a, b = PASSES
    expected = {(a, "baseline"): 0.9, (a, "full_info"): 0.6}
    expected |= {(b, "baseline"): 0.0, (b, "full_info"): 1.0}
    evidence = {m["model"]: m for m in selection["models"]}
    for (model, mode), figure in expected.items():
        assert board[model, mode]["pass_at_3_unbiased"] == pytest.approx(figure)
        assert evidence[model][mode] == pytest.approx(figure)
    # The release's pass@3 is the first three passes: gpt-4o's baseline 0, full_info 1.
    assert board[a, "baseline"]["pass_at_3"] == 0.0
    assert board[a, "full_info"]["pass_at_3"] == 1.0
    # The gate's mean over models is the mean of the leaderboard's unbiased rows.
    assert selection["baseline_pass"] == pytest.approx(0.45)
    assert selection["full_info_pass"] == pytest.approx(0.8)
    for mode in ("baseline", "full_info"):
        rows = [board[model, mode]["pass_at_3_unbiased"] for model in PASSES]
        assert selection[f"{mode}_pass"] == pytest.approx(sum(rows) / len(rows))
    # pass@1: the release's is the first pass (failed); the unbiased one solved 2 of 5.
    assert board[a, "baseline"]["pass_at_1"] == 0.0
    assert board[a, "baseline"]["pass_at_1_unbiased"] == pytest.approx(0.4)
    # Baseline 0.45 > 0.34 by default: the gate is red and names its figure.
    ((name, green, message),) = gate_results(sql_task, ["pass_rate"])
    assert (name, green) == ("pass_rate", False)
    assert message.startswith("drop: baseline unbiased pass@3 0.45 > 0.34")
    assert "full_info" not in message


def test_with_exactly_k_passes_the_two_figures_agree(sql_task, lead):
    passes = {"baseline": [False, False, True], "full_info": [True, False, False]}
    import_results(
        project=sql_task.project, actor=lead, records=_records(sql_task, passes), model="m"
    )
    for row in leaderboard(project=sql_task.project):
        assert row["pass_at_3"] == row["pass_at_3_unbiased"] == 1.0
        assert row["pass_at_1"] != row["pass_at_1_unbiased"]


def test_selection_page_shows_the_estimate(client, sql_task, lead):
    import_results(
        project=sql_task.project,
        actor=lead,
        records=_records(sql_task, PASSES["gpt-4o"]),
        model="gpt-4o",
    )
    client.force_login(lead)
    url = reverse("evaluation-task-selection", args=[sql_task.pk])
    page = client.get(url).content.decode()
    assert "90.0%" in page and "60.0%" in page
