"""Issue 29's journey in a browser: from the Evaluation page a lead starts an agent run in
Harbor — terminus-2 with a stand-in model on loopback, 2 tasks × 3 modes × 2 passes — and
watches it: a real worker exports the tasks, Harbor runs the trials in containers, each lands
on the run's page as it finishes; the pass-rate evidence of the tasks changes; the run's page
links each trial's trajectory."""

import pytest

from tests.conftest import start_worker
from tests.exchange.standin_model import StandinModel
from tests.exchange.test_harbor_runs import standin_tasks
from tests.exchange.test_harbor_trials import _harbor_or_skip

from .conftest import login
from .test_evaluation import SCREENSHOTS

pytestmark = pytest.mark.containers


@pytest.fixture
def harbor_worker(demo, worker_broker, settings, tmp_path):
    _harbor_or_skip()
    env = {
        "HILBENCH_HARBOR_RUNS_DIR": str(tmp_path / "harbor-runs"),
        "HILBENCH_HARBOR_CONCURRENCY": "3",
        "HILBENCH_HARBOR_POLL_S": "1",
        # The model relay dials the stand-in under the operator's policy: a loopback endpoint
        # only when the operator names its host.
        "HILBENCH_MODEL_ENDPOINT_HOSTS": "127.0.0.1",
    }
    worker = start_worker(worker_broker, tmp_path / "worker.log", env=env)
    yield worker
    worker.terminate()
    worker.wait(timeout=120)


def test_a_lead_runs_a_model_in_harbor_from_the_evaluation_page(
    page, live_server, harbor_worker, tmp_path
):
    from evaluation.models import EvaluationRun, ModelEndpoint, SelectionPolicy
    from evaluation.selectors import task_selection
    from hilbench_annotate.models import Project, Task

    project = Project.objects.get(slug="demo")
    blocked = Task.objects.get(project=project, source_id="retail_bank/4")
    other = Task.objects.filter(project=project, domain="sql").exclude(pk=blocked.pk).first()
    tasks = [blocked, other]
    SelectionPolicy.objects.update_or_create(
        project=project, defaults={"k": 2, "full_info_min": 1.0, "baseline_max": 0.0,
                                   "min_models": 1},
    )  # fmt: skip
    before = {t.pk: [m["model"] for m in task_selection(task=t)["models"]] for t in tasks}
    with StandinModel(standin_tasks(tasks)) as model:
        lead = project.memberships.get(user__username="lead").user
        endpoint = ModelEndpoint.objects.create(
            project=project, name="stand-in", base_url=model.base_url, model="standin",
            created_by=lead,
        )  # fmt: skip
        login(page, live_server, "lead", "lead-demo")
        page.goto(f"{live_server.url}/projects/{project.pk}/evaluation/")
        form = page.locator("#harbor-run-form")
        form.locator("select[name=agent]").select_option("terminus-2")
        form.locator("select[name=endpoint]").select_option(str(endpoint.pk))
        form.locator("input[name=tasks]").fill(f"{blocked.pk} {other.pk}")
        form.locator("input[name=passes]").fill("2")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        form.screenshot(path=SCREENSHOTS / "evaluation-harbor-run-form.png")
        form.locator("button[type=submit]").click()
        page.wait_for_selector("#run-status")
        run = EvaluationRun.objects.latest("pk")
        assert run.total == 12 and run.agent == "terminus-2"
        # Progress while it runs: trials done, rewards so far.
        status = "document.querySelector('#run-status').innerText"
        page.wait_for_function(f"() => /[1-9][0-9]* of 12 trials/.test({status})", timeout=900_000)
        assert "Rewards so far" in page.locator("#run-progress").inner_text()
        page.screenshot(path=SCREENSHOTS / "evaluation-harbor-run-progress.png")
        page.wait_for_function(
            "() => document.querySelector('#run-status .status.succeeded, "
            "#run-status .status.failed')",
            timeout=1_200_000,
        )
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.SUCCEEDED, run.error
    page.goto(f"{live_server.url}/evaluation/runs/{run.pk}/")
    rows = page.locator("#passes tbody tr")
    assert rows.count() == 12
    assert page.locator("#passes a", has_text="Trajectory").count() == 12
    page.screenshot(path=SCREENSHOTS / "evaluation-harbor-run.png", full_page=True)
    # The pass-rate gate's evidence now has the stand-in model: solved with the resolutions
    # (and when it asks), not without them.
    for task in tasks:
        evidence = {m["model"]: m for m in task_selection(task=task)["models"]}
        assert "stand-in" not in before[task.pk] and "stand-in" in evidence
        assert evidence["stand-in"]["full_info"] == 1.0
        assert evidence["stand-in"]["baseline"] == 0.0
    page.locator("#passes a", has_text="Trajectory").first.click()
    page.wait_for_load_state()
    assert "submit_sql" in page.content() or "ask_human" in page.content()
    # terminus-2 asks through its shell (`ask_human "…"` typed in the terminal): the viewer
    # finds each call and shows its verdict (issue 44, item 7).
    from evaluation.models import TaskPass

    asked = TaskPass.objects.filter(run=run, task=blocked, mode="ask_human").order_by("index")
    first_blocker = blocked.blockers.order_by("pk").first().key
    page.goto(f"{live_server.url}/evaluation/passes/{asked.first().pk}/")
    assert page.locator("text=No ask_human call in this pass").count() == 0
    call = page.locator(".ask-call").first
    assert call.locator(".ask-verdict").inner_text().startswith(f"matched {first_blocker}")
    step = page.locator(".step", has=page.locator("#ask-1"))
    assert "ask_human" in step.locator(".tool-input").inner_text()
