"""Issue 45, item 6d: every blocker type and subtype says whether it is *missing*,
*ambiguous* or *contradictory* information (the paper's three kinds), and a subtype given
under the wrong type is refused naming the type it belongs to."""

from django.template import Context, Template

from hilbench_annotate.services.blockers import blocker_check
from hilbench_annotate.vocabulary import (
    ALL_SUBTYPES,
    GAP_KIND,
    SQL_BLOCKER_TYPES,
    SUBTYPE_TYPE,
    SWE_BLOCKER_TYPES,
    GapKind,
    gap_kinds,
)


def test_every_swe_type_and_sql_subtype_is_one_of_the_three_kinds():
    assert set(GAP_KIND) == set(SWE_BLOCKER_TYPES) | set(ALL_SUBTYPES)
    assert set(GAP_KIND.values()) == set(GapKind.values)
    assert [gap_kinds(t) for t in SWE_BLOCKER_TYPES] == [
        ("missing",),
        ("ambiguous",),
        ("contradictory",),
    ]
    assert GAP_KIND["missing_information"] == "missing"
    assert GAP_KIND["contradicting_requirements"] == "contradictory"
    assert GAP_KIND["timeframe_ambiguity"] == "ambiguous"
    # A SQL type says where the gap lives: its kinds are its subtypes'.
    assert {t: gap_kinds(t) for t in SQL_BLOCKER_TYPES} == {
        "question": ("missing", "ambiguous", "contradictory"),
        "business info": ("missing", "ambiguous"),
        "schema": ("ambiguous",),
    }


def test_the_filter_words_them_as_the_form_shows_them():
    template = Template("{% load gaps %}{{ a|gap_kind }}/{{ b|gap_kind }}/{{ c|gap_kind }}")
    context = Context({"a": "missing parameters", "b": "business info", "c": "nonsense"})
    assert template.render(context) == "missing/missing or ambiguous/"


def test_a_subtype_under_the_wrong_type_is_refused_naming_the_type_it_belongs_to():
    problems = blocker_check(
        domain="sql",
        key="b1",
        type="question",
        subtype="missing_information",
        description="d",
        resolution="r",
    )
    assert SUBTYPE_TYPE["missing_information"] == "business info"
    assert len(problems) == 1
    assert problems[0].startswith("subtype 'missing_information' is not a subtype of 'question' (")
    assert problems[0].endswith(": 'missing_information' belongs to type 'business info'")
    unknown = blocker_check(
        domain="sql", key="b1", type="question", subtype="nope", description="d", resolution="r"
    )
    assert "belongs to" not in unknown[0]
