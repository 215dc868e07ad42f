"""pass@k as the leaderboard shows it and as the pass-rate gate reads it: one estimator
(evaluation.metrics.pass_at_k, the unbiased 1 - C(n-c,k)/C(n,k)), so the two agree."""

import pytest
from django.urls import reverse

from evaluation.selectors import leaderboard, task_selection
from hilbench_annotate.gates import gate_results

from .util import import_results

# Issue 25's worked example: passes [F, F, F, T, T] have pass@3 0.9 (the first three: 0).
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


def test_leaderboard_and_pass_rate_gate_show_the_same_pass_at_k(sql_task, lead):
    for model, passes in PASSES.items():
        import_results(
            project=sql_task.project, actor=lead, records=_records(sql_task, passes), model=model
        )
    board = {(row["model"], row["mode"]): row for row in leaderboard(sql_task.project)}
    selection = task_selection(sql_task)
    assert selection["k"] == 3
    # Per model: the leaderboard's pass@3 over the project's one task is the gate's evidence.
    # gpt-4o: baseline 1 - C(3,3)/C(5,3) = 0.9; full_info 1 - C(4,3)/C(5,3) = 0.6.
    # claude-sonnet-4: 0 and 1.
    a, b = PASSES
    expected = {(a, "baseline"): 0.9, (a, "full_info"): 0.6}
    expected |= {(b, "baseline"): 0.0, (b, "full_info"): 1.0}
    evidence = {m["model"]: m for m in selection["models"]}
    for (model, mode), figure in expected.items():
        assert board[model, mode]["pass_at_3"] == pytest.approx(figure)
        assert evidence[model][mode] == pytest.approx(figure)
    # The gate's mean over models is the mean of the leaderboard's rows.
    assert selection["baseline_pass"] == pytest.approx(0.45)
    assert selection["full_info_pass"] == pytest.approx(0.8)
    for mode in ("baseline", "full_info"):
        rows = [board[model, mode]["pass_at_3"] for model in PASSES]
        assert selection[f"{mode}_pass"] == pytest.approx(sum(rows) / len(rows))
    # pass@1 on the leaderboard is the mean over passes: gpt-4o's baseline solved 2 of 5.
    assert board[a, "baseline"]["pass_at_1"] == pytest.approx(0.4)
    # Baseline 0.45 > 0.34 by default: the gate is red and says the leaderboard's figure.
    ((name, green, message),) = gate_results(sql_task, ["pass_rate"])
    assert (name, green) == ("pass_rate", False)
    assert message.startswith("drop: baseline pass@3 0.45 > 0.34") and "full_info" not in message


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
