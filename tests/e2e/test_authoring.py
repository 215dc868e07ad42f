"""An author turns a demo SQL task and a demo SWE task into blocked ones, in the browser."""

import re

import pytest
from playwright.sync_api import expect

from hilbench_annotate.models import Task

from .conftest import login, workspace_ready

pytestmark = pytest.mark.django_db(transaction=True)

SQL_BLOCKERS = [
    (
        "clean_finish_status",
        "question",
        "underspecified_concepts",
        "The question asks for loans that ended well but never says which status means that.",
        "Loans that ended well are loans whose status is the finished-without-problems code.",
        [
            "Which loan status counts as a loan that ended well?",
            "How is a loan that ended well identified in the loan table?",
            "What definition of ending well should the count use?",
        ],
    ),
    (
        "loan_population",
        "schema",
        "confusing_table_or_table_definition",
        "It is not said whether loans of closed accounts are part of the population.",
        "Count every loan row; closed accounts are included.",
        [
            "Should loans of closed accounts be included in the count?",
            "Which loans are in scope: all rows or only open accounts?",
            "Do loans belonging to closed accounts count toward the total?",
        ],
    ),
    (
        "reporting_window",
        "question",
        "timeframe_ambiguity",
        "The question gives no period for the loans it counts.",
        "There is no period limit: count loans granted on any date.",
        [
            "Is there a date range for the loans to count?",
            "Which granting period should the count cover?",
            "Should the count be limited to loans granted in a particular year?",
        ],
    ),
]

SWE_BLOCKERS = [
    (
        "tie_rounding_rule",
        "missing parameters",
        "",
        "The statement says amounts that end in half a minor unit come out wrong but not "
        "which way ties must go.",
        "Ties round half-up (away from zero): Decimal ROUND_HALF_UP to the currency's minor unit.",
        [
            "Which rounding rule must be used for amounts exactly halfway between two cents?",
            "How should ties at half a cent be rounded?",
            "Should half-cent amounts round up, down or to even?",
        ],
    ),
    (
        "negative_amount_ties",
        "ambiguous requirements",
        "",
        "Nothing says how negative amounts that are exactly halfway should round.",
        "Negative ties round away from zero as well: -0.125 becomes -0.13.",
        [
            "How should negative amounts exactly halfway between two cents be rounded?",
            "Do negative half-cent values round toward or away from zero?",
            "What result is expected when a negative amount ends in half a cent?",
        ],
    ),
    (
        "context_independence",
        "missing parameters",
        "",
        "It is not said whether the result may depend on the caller's decimal context.",
        "The rounding must ignore the active decimal context's rounding mode.",
        [
            "May the rounding depend on the active decimal context?",
            "Should a caller's decimal context rounding mode change the result?",
            "Is the decimal context allowed to influence how ties are rounded?",
        ],
    ),
]


def open_workspace(page, live_server, task: Task) -> None:
    page.goto(f"{live_server.url}/tasks/{task.pk}/")
    page.click("text=Open workspace")
    workspace_ready(page)


def plant(page, blockers) -> None:
    page.click("[data-tab=blockers]")
    for n, (key, btype, subtype, description, resolution, questions) in enumerate(blockers):
        page.keyboard.press("Alt+b")  # the shortcut for "+ Add blocker"
        fieldset = page.locator("fieldset.blocker-edit").nth(n)
        expect(fieldset).to_be_visible()
        fieldset.locator("input[name$='-key']").fill(key)
        fieldset.locator("select.blocker-type").select_option(btype)
        if subtype:
            fieldset.locator("select.blocker-subtype").select_option(subtype)
        fieldset.locator("textarea[name$='-description']").fill(description)
        fieldset.locator("textarea[name$='-resolution']").fill(resolution)
        inputs = fieldset.locator("input[name$='-q']")
        for i, question in enumerate(questions):
            inputs.nth(i).fill(question)


def save_now(page) -> None:
    page.keyboard.press("Control+s")
    expect(page.locator("#save-status")).to_contain_text("Saved · revision")


def check_history_and_preview(page, resolution: str) -> None:
    page.click("[data-tab=preview]")
    expect(page.locator("#preview")).to_contain_text("full_info/instruction.md")
    expect(page.locator("#preview pre").last).to_contain_text(resolution)
    page.click("text=History")
    expect(page.locator("h2")).to_contain_text(re.compile(r"Revision \d+ → \d+"))
    expect(page.locator(".word-diff ins").first).to_be_visible()
    page.go_back()


def submit(page, live_server, task: Task) -> None:
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#submit-btn")
    page.wait_for_url(f"{live_server.url}/tasks/{task.pk}/")
    expect(page.locator(".status").first).to_have_text("In review")
    task.refresh_from_db()
    assert task.status == "in_review"


def test_author_blocks_a_sql_task_end_to_end(page, live_server, demo):
    task = Task.objects.get(project__slug="demo", source_id="retail_bank/0")
    login(page, live_server, "author", "author-demo")

    # Find the task: search and filter the task list, open the task, then its workspace.
    page.select_option("select[name=domain]", "sql")
    page.fill("#id_q", "finished with no problems")
    page.press("#id_q", "Enter")
    expect(page.locator("#results td.title a")).to_have_count(1)
    page.locator("#results td.title a").click()
    page.wait_for_url(f"{live_server.url}/tasks/{task.pk}/")
    page.click("text=Open workspace")
    workspace_ready(page)

    # Environment: browse a table, query it in the read-only console; a write is refused.
    page.click("[data-tab=env]")
    page.click(".table-list button:text-is('loan')")
    expect(page.locator("#table-view")).to_contain_text("status")
    page.fill("#console-sql", "SELECT status, COUNT(*) AS n FROM loan GROUP BY status")
    page.click("button:text-is('Run')")
    expect(page.locator("#query-result th", has_text="status")).to_be_visible()
    expect(page.locator("#query-result")).to_contain_text("4 rows")
    page.fill("#console-sql", "DELETE FROM loan")
    page.click("button:text-is('Run')")
    expect(page.locator("#query-result .error")).to_be_visible()
    page.click("[data-tab=spec]")

    # Specification: the word diff follows the typing.
    page.fill("#spec-question", "How many loans ended well?")
    expect(page.locator("#diff-question ins", has_text="ended")).to_be_visible()
    expect(page.locator("#diff-question del", has_text="finished")).to_be_visible()

    # Two blockers: lint says the registry is too small; the third clears it.
    plant(page, SQL_BLOCKERS[:2])
    finding = page.locator("#lint-panel .finding[data-rule=blocker_count]")
    expect(finding).to_be_visible()
    plant_third = SQL_BLOCKERS[2:]
    page.keyboard.press("Alt+b")
    fieldset = page.locator("fieldset.blocker-edit").nth(2)
    key, btype, subtype, description, resolution, questions = plant_third[0]
    fieldset.locator("input[name$='-key']").fill(key)
    fieldset.locator("select.blocker-type").select_option(btype)
    fieldset.locator("select.blocker-subtype").select_option(subtype)
    fieldset.locator("textarea[name$='-description']").fill(description)
    fieldset.locator("textarea[name$='-resolution']").fill(resolution)
    for i, question in enumerate(questions):
        fieldset.locator("input[name$='-q']").nth(i).fill(question)
    expect(finding).to_have_count(0)

    # A self-referential trigger question is flagged as typed, and clears when fixed.
    question = fieldset.locator("input[name$='-q']").nth(0)
    question.fill("What does this blocker mean?")
    expect(page.locator("#lint-panel .finding[data-rule=self_referential]")).to_be_visible()
    question.fill(questions[0])
    expect(page.locator("#lint-panel .finding[data-rule=self_referential]")).to_have_count(0)

    save_now(page)
    task.refresh_from_db()
    assert [b.key for b in task.blockers.order_by("position")] == [b[0] for b in SQL_BLOCKERS]
    assert task.blocked_spec["question"] == "How many loans ended well?"

    check_history_and_preview(page, SQL_BLOCKERS[0][4])
    expect(page.locator("#lint-panel .badge")).to_have_text("ready")
    submit(page, live_server, task)


def test_author_blocks_a_swe_task_end_to_end(page, live_server, demo):
    task = Task.objects.get(project__slug="demo", domain="swe")
    task.author = task.author.__class__.objects.get(username="author")
    task.save(update_fields=["author"])
    login(page, live_server, "author", "author-demo")
    open_workspace(page, live_server, task)

    statement = page.locator("#spec-problem_statement")
    statement.fill(statement.input_value().replace("(banker's rounding instead of half-up)", ""))
    expect(page.locator("#diff-problem_statement del", has_text="half-up)")).to_be_visible()
    requirements = page.locator("#spec-requirements")
    requirements.fill(
        "- `round_money(value, currency)` must round to the currency's minor unit.\n"
        "- `Invoice.tax` and `Invoice.total` must use the same rounding.\n"
    )

    # Environment: edit a file in the browser; it becomes the setup patch.
    page.click("[data-tab=env]")
    page.click("#repo >> text=invoicing/")
    page.click("#repo >> text=money.py")
    editor = page.locator("#repo-file")
    editor.fill(
        editor.input_value().replace("ROUND", "ROUND", 1) + "\n# Rounding rules live in the spec.\n"
    )
    page.click("text=Fold edit into setup patch")
    expect(page.locator("#setup-patch-text")).to_have_value(
        re.compile(r"\+# Rounding rules live in the spec\.")
    )

    plant(page, SWE_BLOCKERS)
    save_now(page)
    task.refresh_from_db()
    assert "Rounding rules live in the spec" in task.swe_environment.setup_patch
    assert task.blockers.count() == 3
    expect(page.locator("#lint-panel .finding[data-rule=setup_patch]")).to_have_count(0)

    # The example in the statement names a value of how negative ties round: lint warns, and
    # the author decides to keep it, recording why with a waiver the reviewers will see.
    leak = page.locator("#lint-panel .finding.warning[data-rule=resolution_literal_visible]")
    expect(leak).to_contain_text("0.125")
    leak.locator("summary").click()
    leak.locator("input[name=reason]").fill("Positive example only; the negative case stays open.")
    leak.locator("button", has_text="Waive").click()
    expect(page.locator("#lint-panel .finding.waived")).to_contain_text("Positive example only")
    expect(page.locator("#lint-panel .badge")).to_have_text("ready")

    check_history_and_preview(page, SWE_BLOCKERS[0][4])
    submit(page, live_server, task)
