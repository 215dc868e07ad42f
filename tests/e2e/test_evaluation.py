"""The evaluation page in a browser: leaderboard, curves, the CSV link, a run's page."""

import os
import tempfile
from pathlib import Path

from .conftest import login

# The docs' screenshots are refreshed only when asked (HILBENCH_SCREENSHOTS=1): a test run
# does not rewrite files of the repository.
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("HILBENCH_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "hilbench-screenshots"
)


def test_leaderboard_and_curves_render(page, live_server, demo):
    login(page, live_server, "lead", "lead-demo")
    page.click("nav >> text=Evaluation")
    page.wait_for_selector("#leaderboard")
    rows = page.locator("#leaderboard tbody tr")
    assert rows.count() == 6  # two demo models × three modes
    assert "demo-synthetic-a" in rows.first.inner_text()
    # Three curves and the histogram are drawn as SVG with one polyline per model.
    assert page.locator("svg[role=img] polyline").count() >= 6
    assert page.locator("figcaption", has_text="Delta-Burden curve").is_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "evaluation-leaderboard.png", full_page=True)

    with page.expect_download() as download:
        page.click("text=Download CSV")
    header = Path(download.value.path()).read_text().splitlines()[0]
    assert header.startswith("model,mode,tasks,passes,pass_at_1")

    page.click("#runs tbody tr >> nth=0 >> a")
    page.wait_for_selector("#passes")
    assert page.locator("#run-status").inner_text().startswith("Succeeded")
    page.screenshot(path=SCREENSHOTS / "evaluation-run.png")


def test_trajectory_viewer_jumps_between_ask_human_calls(page, live_server, demo):
    from evaluation.models import TaskPass

    # A failed demo pass that asked at least twice.
    task_pass = next(
        p
        for p in TaskPass.objects.filter(mode="ask_human", resolved=False).order_by("pk")
        if p.ask_human_run and p.ask_human_run.calls.count() >= 2
    )
    login(page, live_server, "reviewer", "reviewer-demo")
    page.goto(f"{live_server.url}/projects/{task_pass.run.project_id}/failures/")
    page.wait_for_selector("table.heat")
    assert page.locator("table.heat").count() == 2  # one heat map per demo model
    assert page.locator("#agreement tbody tr").count() >= 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "failures-heatmap.png", full_page=True)

    page.goto(f"{live_server.url}/evaluation/passes/{task_pass.pk}/")
    asks = page.locator(".step-ask")
    total = asks.count()
    assert total >= 2
    page.click("#ask-next")
    assert page.evaluate("location.hash") == "#ask-1"
    assert page.locator("#ask-pos").inner_text() == f"1 / {total}"
    page.click("#ask-next")
    assert page.evaluate("location.hash") == "#ask-2"
    assert page.evaluate("document.activeElement.id") == "ask-2"
    page.keyboard.press("k")  # back to the first
    assert page.evaluate("location.hash") == "#ask-1"
    page.check("input[name=show][value=ask]")
    assert page.locator(".step-tool").first.is_hidden()
    assert asks.first.is_visible()
    page.check("input[name=show][value=all]")
    page.screenshot(path=SCREENSHOTS / "trajectory-viewer.png")

    # Label the failure from the viewer.
    page.select_option("#dimension", "logic")
    page.select_option("#mode", "self_assessment")
    page.fill("#note", "Submitted although the year was never settled.")
    page.click("text=Save label") if page.locator("text=Save label").count() else page.click(
        "text=Update my label"
    )
    assert "logic × self_assessment" in page.locator("#h-label + *").inner_text() or (
        "logic × self_assessment" in page.content()
    )
