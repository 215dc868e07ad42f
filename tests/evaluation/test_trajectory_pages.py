"""Long trajectories: read in time linear in their size (a bad step still named by file and
line), kept within a pass's caps, and shown a page at a time — the database hands over one
page of steps, each long text is clipped with all of it a link away, and the k-th ask_human
step keeps the k-th verdict on whichever page it falls."""

import json
import re
import time
from urllib.parse import quote

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation import trajectories
from evaluation.models import TaskPass, Trajectory
from evaluation.services import evaluation_run_execute, results_import_start
from evaluation.trajectories import (
    MAX_STEPS,
    TrajectoryError,
    parse_trajectory_text,
    read_trajectory,
    steps_within_caps,
)
from evaluation.trajectory_pages import trajectory_outline, trajectory_steps
from evaluation.viewer import FULL_PART, PAGE_STEPS, PAGE_TEXT

from ..core.test_filter_fuzz import HOSTILE
from .test_trajectories import TROUBLED, _folder
from .util import import_results

OUTPUT = ("row | " + "x" * 70 + "\n") * 60  # about 4.6 KB a step: a long tool output
IRRELEVANT = "What is the capital of France?"
# Steps (1-based) that call ask_human, and what they ask: the second one is on page 2.
ASKS = {10: IRRELEVANT, 60: TROUBLED, 75: "Is the sky green on Tuesdays?", 2_990: IRRELEVANT}
STEPS = 3_000


def _steps(count: int, *, output: str = OUTPUT) -> list[dict]:
    steps = []
    for n in range(1, count + 1):
        if n in ASKS:
            steps.append(
                {"role": "assistant", "tool": "ask_human", "tool_input": {"question": ASKS[n]}}
            )
            steps[-1]["tool_output"] = "an answer"
        else:
            steps.append(
                {
                    "role": "assistant",
                    "content": f"step {n}",
                    "tool": "run_shell",
                    "tool_input": {"command": f"cat file_{n}.txt"},
                    "tool_output": output,
                    "time": n / 2,
                }
            )
    return steps


@pytest.fixture
def long_pass(sql_task, lead, tmp_path):
    """An ask_human pass of 3,000 steps (about 14 MB), imported as a harness would send it."""
    root = _folder(tmp_path, sql_task, json.dumps(_steps(STEPS), indent=1))
    (run,) = results_import_start(project=sql_task.project, actor=lead, path=root)
    evaluation_run_execute(run_id=run.pk)
    return TaskPass.objects.get(run=run)


def _stored(task, lead, steps: list[dict]) -> TaskPass:
    """An imported baseline pass, ``steps`` stored as its trajectory."""
    (run,) = import_results(
        project=task.project,
        actor=lead,
        records=[{"task": task.pk, "mode": "baseline", "pass": 1, "resolved": False}],
    )
    task_pass = TaskPass.objects.get(run=run)
    Trajectory.objects.create(task_pass=task_pass, steps=steps)
    return task_pass


def _ids(html: str, kind: str) -> list[int]:
    return [int(n) for n in re.findall(rf'id="{kind}-(\d+)"', html)]


def test_a_long_pass_is_shown_a_page_at_a_time(client, long_pass, author):
    client.force_login(author)
    url = reverse("evaluation-pass", args=[long_pass.pk])
    first = client.get(url)
    html = first.content.decode()
    assert first.status_code == 200
    assert len(first.content) < 1_000_000  # the whole trajectory is about 14 MB
    assert _ids(html, "step") == list(range(1, PAGE_STEPS + 1))
    assert "Steps 1–50 of 3000 · page 1 of 60" in html
    assert 'href="?page=2" rel="next"' in html
    assert "?step=2&amp;field=tool_output" in html  # the clipped output, whole on demand
    assert html.count("x" * 70) < PAGE_STEPS * (PAGE_TEXT // 70 + 1)

    second = client.get(url + "?page=2").content.decode()
    assert _ids(second, "step") == list(range(51, 101))
    assert 'href="?page=1" rel="prev"' in second and 'href="?page=3" rel="next"' in second
    # Step 60 is the second ask_human call: its own verdict, not the first call's.
    assert _ids(second, "ask") == [2, 3]
    step_60 = second.split('id="ask-2"')[1].split('id="ask-3"')[0]
    assert TROUBLED in step_60
    assert "matched <code>troubled_loan_definition</code>" in step_60
    assert "irrelevant question" not in step_60
    assert "irrelevant question" in second.split('id="ask-3"')[1].split("</li>")[0]
    # The page knows where every ask_human call is, for Previous / Next across pages.
    assert '<script id="ask-pages" type="application/json">[1, 2, 2, 60]</script>' in second
    assert 'data-asks-before="1"' in second

    last = client.get(url + "?page=999").content.decode()  # past the end: the last page
    assert _ids(last, "step") == list(range(2_951, 3_001)) and _ids(last, "ask") == [4]


def test_the_database_hands_over_only_the_page(client, long_pass, author):
    client.force_login(author)
    url = reverse("evaluation-pass", args=[long_pass.pk])
    counts = []
    for page in (1, 2, 60):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"{url}?page={page}").status_code == 200
        counts.append(len(queries))
        # No query reads the steps column whole (a plain SELECT of it, or of the row).
        assert not [q for q in queries if '"evaluation_trajectory"."steps"' in q["sql"]]
    assert len(set(counts)) == 1, counts
    outline = trajectory_outline(long_pass.pk)
    assert outline.total == STEPS and outline.asks == [n - 1 for n in sorted(ASKS)]
    page = trajectory_steps(long_pass.pk, offset=2_989, limit=PAGE_STEPS)  # from step 2,990
    assert len(page) == 11 and page[0]["tool"] == "ask_human"
    assert page[-1]["content"] == "step 3000"
    assert trajectory_steps(long_pass.pk, offset=STEPS, limit=PAGE_STEPS) == []


def test_a_clipped_output_is_shown_whole_a_part_at_a_time(client, author, long_pass):
    client.force_login(author)
    url = reverse("evaluation-pass", args=[long_pass.pk])
    whole = client.get(f"{url}?step=2&field=tool_output")
    html = whole.content.decode()
    assert whole.status_code == 200 and OUTPUT in html
    assert f'href="{url}?page=1#step-2"' in html  # back to where it was
    fragment = client.get(f"{url}?step=2&field=tool_output", HTTP_HX_REQUEST="true")
    assert OUTPUT in fragment.content.decode() and b"<html" not in fragment.content
    assert client.get(f"{url}?step=3001&field=tool_output").status_code == 404
    # A text longer than a part comes in parts, each a bounded response.
    step = {"role": "assistant", "tool": "run_shell", "tool_output": "y" * (FULL_PART * 2 + 5)}
    Trajectory.objects.filter(task_pass=long_pass).update(steps=[step])
    second = client.get(f"{url}?step=1&field=tool_output&part=2").content.decode()
    assert (
        "part 2 of 3" in second
        and "y" * FULL_PART in second
        and "y" * (FULL_PART + 1) not in second
    )
    assert "&amp;part=3" in second and "&amp;part=1" in second


def test_side_by_side_is_paged_too(client, author, long_pass):
    client.force_login(author)
    url = reverse("evaluation-compare") + f"?left={long_pass.pk}&right={long_pass.pk}"
    response = client.get(url + "&page=2")
    html = response.content.decode()
    assert len(response.content) < 2_000_000
    assert _ids(html, "l-step") == list(range(51, 101)) == _ids(html, "r-step")
    assert f"?left={long_pass.pk}&amp;right={long_pass.pk}&amp;page=3" in html


def _timed(text: str, *, jsonl: bool = False) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        parse_trajectory_text(text, name="t.json", jsonl=jsonl)
        best = min(best, time.perf_counter() - started)
    return best


def test_reading_a_trajectory_takes_time_linear_in_its_size():
    """Twice the steps take about twice the time (it was four times: every step counted the
    lines from the start of the file)."""
    small = json.dumps(_steps(1_000, output="z" * 5_000), indent=1)  # about 5 MB
    large = json.dumps(_steps(2_000, output="z" * 5_000), indent=1)
    small_time, large_time = _timed(small), _timed(large)
    assert large_time < 3 * small_time + 0.05, (small_time, large_time)
    assert large_time < 2  # a 10 MB file


def test_a_bad_step_deep_in_a_large_file_is_still_named_by_line():
    steps = _steps(2_000, output="z" * 2_000)
    steps[1_990] = {"content": "no role"}
    text = json.dumps(steps, indent=2)
    line = text[: text.index('"content": "no role"')].count("\n")  # the line its { is on
    with pytest.raises(
        TrajectoryError, match=rf"^t\.json line {line} \(step 1991\): the step has no role$"
    ):
        parse_trajectory_text(text, name="t.json", jsonl=False)
    wrapped = json.dumps({"model": "m", "steps": steps}, indent=1)
    line = wrapped[: wrapped.index('"content": "no role"')].count("\n")
    with pytest.raises(TrajectoryError, match=rf"w\.json line {line} \(step 1991\)"):
        parse_trajectory_text(wrapped, name="w.json", jsonl=False)


def test_caps_are_checked_before_the_file_is_read_whole(tmp_path, monkeypatch):
    path = tmp_path / "pass_1_trajectory.json"
    path.write_text(json.dumps(_steps(20, output="o" * 100)))
    monkeypatch.setattr(trajectories, "MAX_BYTES", path.stat().st_size - 1)
    with pytest.raises(TrajectoryError, match=r"pass_1_trajectory\.json: larger than \d+ bytes"):
        read_trajectory(path)
    many = "\n".join(json.dumps({"role": "user"}) for _ in range(MAX_STEPS + 1))
    with pytest.raises(TrajectoryError, match=f"t.jsonl: more than {MAX_STEPS} steps"):
        parse_trajectory_text(many, name="t.jsonl", jsonl=True)
    with pytest.raises(TrajectoryError, match=f"t.json: more than {MAX_STEPS} steps"):
        parse_trajectory_text("[" + many.replace("\n", ",") + "]", name="t.json", jsonl=False)
    # Steps built another way (Harbor's ATIF) are held to the same caps, as stored: an "é" is
    # six bytes of JSON.
    monkeypatch.setattr(trajectories, "MAX_BYTES", 1_000)
    with pytest.raises(TrajectoryError, match=r"^atif: 1,2\d\d bytes once stored as JSON"):
        steps_within_caps([{"role": "user", "content": "é" * 200}], name="atif")
    assert steps_within_caps([{"role": "user"}], name="atif") == [{"role": "user"}]


def test_a_trajectory_over_the_caps_at_storing_keeps_the_pass_and_says_why(
    client, sql_task, lead, tmp_path, monkeypatch
):
    root = _folder(tmp_path, sql_task, json.dumps(_steps(12, output="o")))
    (run,) = results_import_start(project=sql_task.project, actor=lead, path=root)
    monkeypatch.setattr(trajectories, "MAX_STEPS", 5)  # lowered after the file was checked
    evaluation_run_execute(run_id=run.pk)
    run.refresh_from_db()
    task_pass = TaskPass.objects.get(run=run)
    assert run.status == "succeeded" and not Trajectory.objects.filter(task_pass=task_pass)
    reason = task_pass.detail["trajectory_refused"]
    assert reason.endswith("pass_1_trajectory.json: more than 5 steps (12)")
    client.force_login(lead)
    html = client.get(reverse("evaluation-pass", args=[task_pass.pk])).content.decode()
    assert "The trajectory was not kept: trajectories/" in html


def test_hostile_page_and_step_parameters_are_never_a_server_error(client, author, sql_task, lead):
    task_pass = _stored(sql_task, lead, _steps(3))
    client.force_login(author)
    url = reverse("evaluation-pass", args=[task_pass.pk])
    compare = reverse("evaluation-compare") + f"?left={task_pass.pk}&right={task_pass.pk}"
    for value in HOSTILE.values():
        hostile = quote(value.encode("utf-8", "surrogatepass"), safe="")
        for query in (
            f"page={hostile}",
            f"step={hostile}&field=tool_output",
            f"step=1&field={hostile}",
            f"step=1&field=tool_output&part={hostile}",
        ):
            assert client.get(f"{url}?{query}").status_code in (200, 404), query
        assert client.get(f"{compare}&page={hostile}").status_code == 200
