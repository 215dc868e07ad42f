"""The ``resolution_off_gold`` lint rule: an SQL blocker whose resolution shares nothing with
the gold SQL is named in a warning (issue 45, item 7)."""

import pytest

from authoring.lint import lint_task

from ..conftest import shared_path
from .test_lint import _release_draft

GOLD_NO_HEIGHT = """SELECT ROUND(AVG(r.temp_max_c), 1) AS avg_temp_max_c
FROM reading r
JOIN station s ON s.station_id = r.station_id
WHERE r.reading_date BETWEEN '2023-07-10' AND '2023-07-24'
  AND r.quality_flag IN ('A', 'E');"""

HEIGHT_BLOCKERS = [
    (
        "high_altitude_threshold",
        "High-altitude stations are those with station.elevation_m of at least 1500.",
    ),
    ("height_cutoff_unit", "The height cutoff is 1,500 metres above sea level, inclusive."),
    ("mountain_station_height", "Mountain stations are the ones whose elevation_m exceeds 2000."),
]


def _draft(gold_sql: str, resolutions) -> dict:
    return {
        "domain": "sql",
        "blocked_spec": {"question": "What was the average maximum temperature of high stations?"},
        "environment": {"gold_sql": gold_sql},
        "blockers": [
            {
                "id": key,
                "type": "question",
                "description": "A gap.",
                "resolution": text,
                "trigger_questions": ["What counts as high?"],
            }
            for key, text in resolutions
        ],
    }


def _off_gold(findings):
    return [f for f in findings if f.rule == "resolution_off_gold"]


def test_three_height_blockers_on_a_gold_without_height_are_each_named():
    found = _off_gold(lint_task(_draft(GOLD_NO_HEIGHT, HEIGHT_BLOCKERS)))
    assert [f.field for f in found] == [f"blockers[{i}].resolution" for i in range(3)]
    for finding, (key, _text) in zip(found, HEIGHT_BLOCKERS, strict=True):
        assert f'"{key}"' in finding.message
        assert finding.severity == "warning"


def test_the_same_blockers_on_a_gold_with_the_height_filter_pass():
    gold = GOLD_NO_HEIGHT.replace("WHERE ", "WHERE s.elevation_m >= 1500 AND ")
    # the third names 2000, which the gold does not; it still names elevation_m, a gold column
    assert _off_gold(lint_task(_draft(gold, HEIGHT_BLOCKERS))) == []


@pytest.mark.parametrize(
    "resolution",
    [
        "Valid readings have reading.quality_flag 'A' or 'E'.",  # a column and literals
        "The heat wave ran from July 10 to July 24, 2023.",  # a number of a date literal
        "Use the maximum temperature of each reading.",  # a word of a column (temp_max_c)
        "Ignore the 'rainy days' condition entirely.",  # leaving something out leaves no trace
    ],
)
def test_resolutions_that_share_a_column_a_value_or_say_leave_out_pass(resolution):
    assert _off_gold(lint_task(_draft(GOLD_NO_HEIGHT, [("b", resolution)]))) == []


def test_no_finding_when_the_gold_sql_does_not_parse():
    findings = lint_task(_draft("SELEC nothing", HEIGHT_BLOCKERS))
    assert _off_gold(findings) == []
    assert any(f.rule == "gold_sql" for f in findings)


@pytest.mark.shared_data
@pytest.mark.parametrize("collection", ["hilbench", "hilbench-calibration"])
def test_no_release_sql_blocker_raises_it(collection):
    root = shared_path("examples", collection)
    folders = sorted(p.parents[2] for p in root.glob("sql/*/shared/ask-human-data/*.json"))
    assert folders, f"no release SQL tasks under {root}"
    raised = [
        (folder.name, f.message)
        for folder in folders
        for f in _off_gold(lint_task(_release_draft(folder)))
    ]
    assert raised == []
