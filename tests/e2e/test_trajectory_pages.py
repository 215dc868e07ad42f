"""A long trajectory in a browser: a page at a time, Previous / Next ask_human across pages,
a clipped output shown whole in place."""

from .axe import axe_violations, describe
from .conftest import login, new_page
from .test_evaluation import SCREENSHOTS

OUTPUT = ("row | " + "x" * 70 + "\n") * 60


def _long_pass():
    """A demo ask_human pass whose trajectory becomes 3,000 steps, its ask_human calls (the
    judge's verdicts are kept) at steps 10, 60, 110…: the second is on page 2."""
    from evaluation.models import TaskPass, Trajectory

    task_pass = next(
        p
        for p in TaskPass.objects.filter(mode="ask_human").order_by("pk")
        if p.ask_human_run and p.ask_human_run.calls.count() >= 2
    )
    calls = list(task_pass.ask_human_run.calls.order_by("id"))
    at = {10 + 50 * k: call.question for k, call in enumerate(calls)}
    steps = [
        {"role": "assistant", "tool": "ask_human", "tool_input": {"question": at[n]}}
        if n in at
        else {
            "role": "assistant",
            "content": f"Looking at file {n}.",
            "tool": "run_shell",
            "tool_input": {"command": f"cat file_{n}.txt"},
            "tool_output": OUTPUT,
            "time": n / 2,
        }
        for n in range(1, 3_001)
    ]
    Trajectory.objects.update_or_create(task_pass=task_pass, defaults={"steps": steps})
    return task_pass, len(calls)


def test_a_long_trajectory_pages_and_keeps_its_verdicts(page, live_server, demo):
    task_pass, asks = _long_pass()
    login(page, live_server, "lead", "lead-demo")
    url = f"{live_server.url}/evaluation/passes/{task_pass.pk}/"
    page.goto(url)
    assert page.locator(".step").count() == 50
    assert page.locator(".traj-pager").first.inner_text().startswith("← Previous steps")
    assert "Steps 1–50 of 3000" in page.locator(".traj-pager").first.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "trajectory-pages.png")

    # Next ask_human: the first is on this page, the second on page 2.
    page.click("#ask-next")
    assert page.evaluate("location.hash") == "#ask-1"
    page.click("#ask-next")
    page.wait_for_url("**page=2#ask-2")
    page.wait_for_selector("#ask-2")
    assert page.locator("#ask-pos").inner_text() == f"2 / {asks}"
    assert page.evaluate("document.activeElement.id") == "ask-2"
    assert page.locator("#step-51").count() == 1 and page.locator("#step-50").count() == 0
    page.screenshot(path=SCREENSHOTS / "trajectory-page-2-ask.png")
    page.keyboard.press("k")  # back to the first, on page 1
    page.wait_for_url("**page=1#ask-1")

    # A clipped output, whole in place (htmx), then the plain Next link.
    step = page.locator(".step", has=page.locator("#step-2"))
    step.locator("a.show-all").first.click()
    page.wait_for_selector(".full-text")
    assert "Characters 1–4,620 of 4,620" in step.locator(".full-text").inner_text()
    step.scroll_into_view_if_needed()
    page.screenshot(path=SCREENSHOTS / "trajectory-show-all.png")
    page.click(".traj-pager >> nth=0 >> text=Next steps →")
    page.wait_for_url("**page=2")
    assert page.locator(".step").first.locator(".step-n").inner_text() == "51"

    # The same text on its own page, as a link without a script opens it.
    page.goto(url + "?step=2&field=tool_output")
    assert "Characters 1–4,620 of 4,620" in page.locator(".full-text").inner_text()
    page.screenshot(path=SCREENSHOTS / "trajectory-step-text.png")
    page.click("text=← Back to step 2 of the trajectory")
    page.wait_for_url("**page=1#step-2")


def test_the_paged_viewer_and_a_whole_output_pass_axe(browser, live_server, demo):
    task_pass, _ = _long_pass()
    page = new_page(browser, live_server, "lead", bypass_csp=True)
    url = f"{live_server.url}/evaluation/passes/{task_pass.pk}/"
    found = []
    for where in ("?page=2", "?step=2&field=tool_output"):
        page.goto(url + where)
        found += axe_violations(page)
    page.goto(url)
    page.locator("a.show-all").first.click()
    page.wait_for_selector(".full-text")
    found += axe_violations(page)
    page.context.close()
    assert not found, describe(found)
