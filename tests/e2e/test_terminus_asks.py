"""A terminus-2 pass in the browser (issue 44, item 7): the model agent asks by typing
``ask_human "…"`` into its terminal, and the viewer shows each of those calls with its
verdict, Previous / Next going from one to the next. The trial is the one Harbor writes for
terminus-2 against the loopback stand-in model (``tests/evaluation/terminus.py``), stored
through the app's own import of Harbor jobs — no Harbor or container is needed here."""

from django.core.management import call_command

from .axe import axe_violations, describe
from .conftest import new_page
from .test_evaluation import SCREENSHOTS

IRRELEVANT = "What is the capital of France?"


def _terminus_pass(tmp_path):
    from evaluation.models import EvaluationRun, TaskPass
    from exchange.demo.blocked_task import DEMO_BLOCKERS
    from hilbench_annotate.models import Task
    from tests.evaluation.terminus import terminus_trial

    task = Task.objects.get(project__slug="demo", source_id="retail_bank/4")
    trigger = DEMO_BLOCKERS[0]["trigger_questions"][0]
    jobs = terminus_trial(
        tmp_path / "harbor",
        source_id=task.source_id,
        asks=[(trigger, DEMO_BLOCKERS[0]["resolution"]), (IRRELEVANT, "irrelevant question")],
        gold_sql=task.sql_environment.gold_sql,
    )
    call_command("import_results", str(jobs), project=task.project.slug, username="lead",
                 wait=True)  # fmt: skip
    run = EvaluationRun.objects.get(project=task.project, model_name="openai/standin")
    return TaskPass.objects.get(run=run), trigger, DEMO_BLOCKERS[0]["key"]


def test_each_ask_human_command_of_terminus_2_is_shown_with_its_verdict(
    browser, live_server, demo, tmp_path
):
    task_pass, trigger, blocker = _terminus_pass(tmp_path)
    page = new_page(browser, live_server, "reviewer", bypass_csp=True)
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/evaluation/passes/{task_pass.pk}/")

    assert page.locator("text=No ask_human call in this pass").count() == 0
    calls = page.locator(".ask-call")
    assert calls.count() == 2
    first, second = calls.nth(0), calls.nth(1)
    assert trigger in first.locator(".ask-q").inner_text()
    assert first.locator(".ask-verdict").inner_text().startswith(f"matched {blocker}")
    assert IRRELEVANT in second.locator(".ask-q").inner_text()
    assert second.locator(".ask-verdict").inner_text().strip() == "irrelevant question"
    # Each call's step is the terminal command terminus-2 typed, and what the terminal showed.
    step = page.locator(".step", has=page.locator("#ask-1"))
    assert step.locator(".step-tool").inner_text() == "bash_command"
    assert "ask_human" in step.locator(".tool-input").inner_text()

    page.click("#ask-next")
    assert page.evaluate("location.hash") == "#ask-1"
    assert page.locator("#ask-pos").inner_text() == "1 / 2"
    page.click("#ask-next")
    assert page.evaluate("location.hash") == "#ask-2"
    assert page.evaluate("document.activeElement.id") == "ask-2"
    assert page.locator("#ask-pos").inner_text() == "2 / 2"
    page.keyboard.press("k")
    assert page.evaluate("location.hash") == "#ask-1"
    page.check("input[name=show][value=ask]")  # the shell steps that asked stay in view
    assert calls.nth(0).is_visible() and calls.nth(1).is_visible()
    assert page.locator(".step[data-kind=message]").first.is_hidden()
    page.check("input[name=show][value=all]")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "trajectory-terminus-2-asks.png", full_page=True)

    found = axe_violations(page)
    page.context.close()
    assert not errors, errors
    assert not found, describe(found)
