"""What the lint panel shows people: a rule's title and the field as they name it (issue 30,
item 8); the API keeps the rule id and the field path."""

from authoring.lint import RULES
from authoring.lint.findings import RULE_TITLES, Finding, field_label


def test_every_rule_has_a_title():
    assert set(RULE_TITLES) == set(RULES)
    assert all(title[0].isupper() and "_" not in title for title in RULE_TITLES.values())


def test_field_paths_read_as_people_name_them():
    assert field_label("blockers") == "Blockers"
    assert field_label("blockers[0].description") == "Blocker 1 › description"
    assert field_label("blockers[2].trigger_questions[4]") == "Blocker 3 › trigger question 5"
    assert field_label("spec.question") == "Specification › question"
    assert field_label("gold_sql") == "Gold sql"


def test_a_finding_carries_both():
    finding = Finding("empty_field", "blockers[1].resolution", "…", "error")
    assert (finding.title, finding.where) == ("Empty field", "Blocker 2 › resolution")
    assert finding.fingerprint == "empty_field@blockers[1].resolution"  # waivers unchanged
