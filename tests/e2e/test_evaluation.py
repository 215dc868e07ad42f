"""The evaluation page in a browser: leaderboard, curves, the CSV link, a run's page."""

from pathlib import Path

from .conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


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
