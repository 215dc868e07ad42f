"""Authoring lint (authoring/lint/): one failing and one passing example per rule.

Each test starts from ``make_draft()`` — a valid three-blocker SQL draft with no findings —
and changes one thing.
"""

import copy
import json
import re
import subprocess

import pytest

from authoring import lint
from authoring.lint import RULES, Finding, lint_task
from hilbench_annotate.question_rules import follows_up, question_parts, reject_reason
from hilbench_annotate.spec import parse_swe_statement
from hilbench_annotate.toolkit import gitrepo
from hilbench_annotate.vocabulary import QUALITY_CRITERIA_KEYS

from ..conftest import FIXTURES

SCHEMA = {
    "trans": {"trans_id", "account_id", "date", "k_symbol", "amount"},
    "account": {"account_id", "district_id", "date"},
    "district": {"district_id", "a2", "a12"},
    "loan": {"loan_id", "account_id", "status", "amount"},
}

GOLD_SQL = """SELECT COUNT(T.trans_id)
FROM trans AS T
JOIN account AS A ON A.account_id = T.account_id
JOIN district AS D ON D.district_id = A.district_id
WHERE T.k_symbol = 'CAT7'
  AND T.date BETWEEN '1996-01-01' AND '1996-12-31'
  AND D.A12 > 5.0;
"""

TRANS_CSV = (
    "original_column_name,column_name,column_description,data_format,value_description\n"
    "trans_id,transaction id,,integer,\n"
    'k_symbol,characterization of the transaction,,text,"internal classification code"\n'
)

BLOCKERS = [
    {
        "id": "crisis_period",
        "type": "question",
        "subtype": "timeframe_ambiguity",
        "description": 'The question mentions "the crisis period" without giving its dates.',
        "resolution": "The crisis period is the calendar year from January 1, 1996, to "
        "December 31, 1996.",
        "trigger_questions": [
            "What exact date range defines the crisis period?",
            "Which start and end dates bound the crisis period?",
            "Which calendar year should be treated as the crisis period for transactions?",
        ],
    },
    {
        "id": "servicing_code",
        "type": "schema",
        "subtype": "confusing_column_or_column_definition",
        "description": "Transactions carry internal k_symbol classification codes, and nothing "
        "says which code marks loan servicing payments.",
        "resolution": "Loan servicing transactions are those where trans.k_symbol = 'CAT7'.",
        "trigger_questions": [
            "Which k_symbol value marks loan servicing payments?",
            "How are loan servicing transactions identified in the trans table?",
            "What classification code do loan servicing payments carry?",
        ],
    },
    {
        "id": "distressed_district",
        "type": "business info",
        "subtype": "missing_information",
        "description": 'The question says "economically distressed districts" but no metric '
        "or threshold defines economic distress.",
        "resolution": "A district is economically distressed when its 1995 unemployment rate "
        "(district.A12) is above 5.0 percent.",
        "trigger_questions": [
            "What metric and threshold define an economically distressed district?",
            "How is economic distress measured for a district?",
            "Which indicator should decide whether a district counts as distressed?",
        ],
    },
]


def make_draft() -> dict:
    """A valid SQL draft: lint finds nothing in it (see test_valid_draft_has_no_findings)."""
    blockers = copy.deepcopy(BLOCKERS)
    for blocker in blockers:
        blocker["criteria"] = {
            key: {"ok": True, "note": f"{key} holds for {blocker['id']}."}
            for key in QUALITY_CRITERIA_KEYS
        }
    return {
        "domain": "sql",
        "blocked_spec": {
            "question": "How many loan servicing transactions did accounts in economically "
            "distressed districts make during the crisis period?",
            "evidence": "",
        },
        "environment": {
            "descriptions": {"trans": TRANS_CSV},
            "business_info": [
                "Loan servicing covers the payments a client makes on an active loan.",
                "Unemployment figures in the district table are percentages.",
            ],
            "gold_sql": GOLD_SQL,
        },
        "blockers": blockers,
    }


def findings(draft, rule, **kwargs) -> list[Finding]:
    kwargs.setdefault("schema", SCHEMA)
    return [f for f in lint_task(draft, **kwargs) if f.rule == rule]


def only(draft, rule, **kwargs) -> Finding:
    found = findings(draft, rule, **kwargs)
    assert len(found) == 1, found
    return found[0]


def set_question(draft, blocker: int, question: int, text: str) -> dict:
    draft["blockers"][blocker]["trigger_questions"][question] = text
    return draft


# --- the baseline -------------------------------------------------------------------------


def test_valid_draft_has_no_findings():
    assert lint_task(make_draft(), schema=SCHEMA) == []


def test_every_rule_is_described_and_findings_use_known_rules():
    draft = make_draft()
    draft["blockers"] = draft["blockers"][:2]
    draft["environment"]["gold_sql"] = ""
    for finding in lint_task(draft):
        assert finding.rule in RULES
        assert finding.severity in ("error", "warning")
    assert all(text.strip() for text in RULES.values())


def test_fingerprint_and_deterministic_order():
    draft = make_draft()
    set_question(draft, 0, 0, "What resolves this blocker? And which table?")
    set_question(draft, 2, 1, "The threshold of the rule.")
    draft["environment"]["gold_sql"] = ""
    result = lint_task(draft, schema=SCHEMA)
    assert result == lint_task(copy.deepcopy(draft), schema=SCHEMA)
    assert [(f.field, f.rule) for f in result] == [
        ("blockers[0].trigger_questions[0]", "multi_topic"),
        ("blockers[0].trigger_questions[0]", "self_referential"),
        ("blockers[2].trigger_questions[1]", "not_a_question"),
        ("environment.gold_sql", "gold_sql"),
    ]
    assert result[0].fingerprint == "multi_topic@blockers[0].trigger_questions[0]"


def test_tolerates_missing_keys():
    result = lint_task({})
    assert [(f.rule, f.field) for f in result] == [("blocker_count", "blockers")]
    result = lint_task({"domain": "sql", "blockers": [{}, None, {"trigger_questions": None}]})
    assert {f.rule for f in result} >= {"empty_field", "trigger_count", "gold_sql"}


# --- 1. blocker_count --------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 2, 6])
def test_blocker_count_out_of_range(count):
    draft = make_draft()
    pool = draft["blockers"] * 2
    draft["blockers"] = [dict(b, id=f"{b['id']}_{i}") for i, b in enumerate(pool[:count])]
    finding = only(draft, "blocker_count")
    assert (finding.field, finding.severity) == ("blockers", "error")
    assert f"{count} blocker" in finding.message


def test_blocker_count_in_range():
    draft = make_draft()
    draft["blockers"] += [dict(b, id=f"{b['id']}_again") for b in draft["blockers"][:2]]
    assert len(draft["blockers"]) == 5
    assert findings(draft, "blocker_count") == []


# --- 2. trigger_count --------------------------------------------------------------------


def test_trigger_count_too_few():
    draft = make_draft()
    draft["blockers"][1]["trigger_questions"].pop()
    finding = only(draft, "trigger_count")
    assert (finding.field, finding.severity) == ("blockers[1]", "error")
    assert 'Blocker "servicing_code" has 2 trigger questions' in finding.message


def test_trigger_count_too_many_and_blank_questions_do_not_count():
    draft = make_draft()
    draft["blockers"][0]["trigger_questions"] += [f"Which year starts period {n}?" for n in "ABC"]
    assert only(draft, "trigger_count").field == "blockers[0]"
    draft = make_draft()
    draft["blockers"][2]["trigger_questions"][2] = "   "
    assert only(draft, "trigger_count").field == "blockers[2]"


def test_trigger_count_in_range():
    draft = make_draft()
    draft["blockers"][0]["trigger_questions"] += [
        "When does the crisis period begin?",
        "Over which months does the crisis period run?",
    ]
    assert findings(draft, "trigger_count") == []


# --- 3. self_referential -----------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What is the resolution of this blocker?",
        "How should the blocker be resolved?",
        "Which value fills the gap?",
        "What does the above refer to?",
        "Which dates apply to the above-mentioned period?",
        "Which dates apply to the period mentioned above?",
        "How should this ambiguity be settled?",
        "Does the previous question also cover refunds?",
        "Which year applies as described?",
    ],
)
def test_self_referential(question):
    draft = set_question(make_draft(), 0, 1, question)
    finding = only(draft, "self_referential")
    assert (finding.field, finding.severity) == ("blockers[0].trigger_questions[1]", "error")
    assert finding.message.startswith('Blocker "crisis_period", trigger question 2')


@pytest.mark.parametrize(
    "question",
    [
        "Which blocked accounts should be excluded from the crisis period?",
        "What is the gap between the first and last crisis transactions?",
        "Should the crisis period be computed as described in the requirements?",
    ],
)
def test_not_self_referential(question):
    draft = set_question(make_draft(), 0, 1, question)
    assert findings(draft, "self_referential") == []


# --- 4. multi_topic ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What is the crisis period? Which table stores it?",
        "What is the crisis period? And which table stores it",
        "Which dates bound the crisis period and also which accounts count?",
        "Which dates bound the crisis period; also, are weekends included?",
        "Which dates bound the crisis period, as well as which accounts count?",
    ],
)
def test_multi_topic(question):
    """Several questions in one, split as the judge splits them: a warning, since the judge
    refuses the message only when the parts target different blockers."""
    draft = set_question(make_draft(), 0, 2, question)
    finding = only(draft, "multi_topic")
    assert (finding.field, finding.severity) == ("blockers[0].trigger_questions[2]", "warning")
    assert len(question_parts(question)) > 1  # the judge splits it too


@pytest.mark.parametrize(
    "question",
    [
        "Which start and end dates bound the crisis period?",
        "Should cash and non-cash transactions both count in the crisis period?",
        "Is any date range defined as the crisis period, and if so which one?",
        "Does the crisis period include the first day, or only later days?",
        "Which year is the crisis and how long did it last?",
        "Is the crisis period inclusive and should weekends count?",
    ],
)
def test_not_multi_topic(question):
    draft = set_question(make_draft(), 0, 2, question)
    assert findings(draft, "multi_topic") == []
    # The judge may split it, but every later part follows up on the first.
    assert all(follows_up(part) for part in question_parts(question)[1:])


# Probe questions: lint errors on a trigger question exactly when the judge refuses it.
PROBES = [
    "Is that right?",
    "What is the best practice for rounding?",
    "I assume the crisis period is 1996, right?",
    "We're assuming the crisis is one calendar year?",
    "Can you confirm that the crisis period is a calendar year?",
    "Tell me the crisis period dates.",
    "The crisis period dates",
    "Please give the dates!",
    "Which dates bound the crisis period?",
    "Any tips for this task?",
    "How should the crisis period be bounded?",
]


@pytest.mark.parametrize("question", PROBES)
def test_lint_and_the_judge_agree_on_what_a_question_is(question):
    draft = set_question(make_draft(), 0, 0, question)
    refused = reject_reason(question)
    found = findings(draft, "not_a_question")
    assert bool(found) == (refused is not None), (question, refused, found)
    if refused:
        assert refused in found[0].message and "irrelevant question" in found[0].message


# --- 5. not_a_question -------------------------------------------------------------------


@pytest.mark.parametrize("question", ["The crisis period dates", "Please give the dates!"])
def test_statement_is_not_a_question(question):
    draft = set_question(make_draft(), 0, 0, question)
    finding = only(draft, "not_a_question")
    assert (finding.field, finding.severity) == ("blockers[0].trigger_questions[0]", "error")
    assert "a statement, not a question" in finding.message


@pytest.mark.parametrize(
    "question",
    [
        "I assume the crisis period is the whole of the year, right?",
        "The crisis period is a calendar year, correct?",
        "We're assuming the crisis is one calendar year?",
        "Can you confirm that the crisis period is a calendar year?",
    ],
)
def test_confirmation_is_rejected(question):
    draft = set_question(make_draft(), 0, 0, question)
    finding = only(draft, "not_a_question")
    assert finding.field == "blockers[0].trigger_questions[0]"
    assert "confirmation" in finding.message


@pytest.mark.parametrize(
    "question",
    [
        "-  How should the crisis period be bounded?",
        "What rule defines the crisis period",
        "The spec mentions a crisis period — which dates bound it?",
        "Isn't the crisis period defined somewhere?",
        "1. When does the crisis period begin?",
    ],
)
def test_is_a_question(question):
    draft = set_question(make_draft(), 0, 0, question)
    assert findings(draft, "not_a_question") == []


# --- 6. contains_resolution --------------------------------------------------------------


@pytest.mark.parametrize(
    ("blocker", "question", "literal"),
    [
        (1, "Is loan servicing the code CAT7?", "CAT7"),
        (1, "Does k_symbol 'cat7' mark loan servicing?", "CAT7"),
        (0, "Does the crisis period start on 1996-01-01?", "January 1, 1996"),
        (0, "Does the crisis period end on 31 December 1996?", "December 31, 1996"),
        (2, "Is the unemployment threshold 5.0 percent?", "5.0"),
        (2, "Is it the unemployment rate of 1995?", "1995"),
    ],
)
def test_contains_resolution_literal(blocker, question, literal):
    """Naming a candidate value is how people ask which one applies: a warning to read, not
    an error (the whole resolution in a question is one, below)."""
    draft = set_question(make_draft(), blocker, 1, question)
    finding = only(draft, "contains_resolution")
    assert (finding.field, finding.severity) == (
        f"blockers[{blocker}].trigger_questions[1]",
        "warning",
    )
    assert f'"{literal}"' in finding.message


def test_contains_whole_resolution():
    draft = make_draft()
    resolution = draft["blockers"][1]["resolution"]
    set_question(draft, 1, 0, f"Is it true that {resolution.lower()}?")
    assert "whole resolution" in only(draft, "contains_resolution").message


def test_contains_unquoted_capital_code():
    draft = make_draft()
    draft["blockers"][1]["resolution"] = "Loan servicing rows have status LN in the trans table."
    set_question(draft, 1, 2, "Does status LN mark loan servicing?")
    assert only(draft, "contains_resolution").field == "blockers[1].trigger_questions[2]"


@pytest.mark.parametrize(
    "question",
    [
        "Which trans.k_symbol value marks loan servicing payments?",  # an identifier
        "Is the district.A12 column the measure of economic distress?",  # a column name
        "Which code AND flag mark loan servicing?",  # SQL keyword, not a code
    ],
)
def test_identifiers_and_words_are_not_the_resolution(question):
    draft = set_question(make_draft(), 1, 0, question)
    draft = set_question(draft, 2, 0, question)
    assert findings(draft, "contains_resolution") == []


def test_literal_also_in_description_is_the_topic():
    draft = make_draft()
    draft["blockers"][1]["description"] += " The codes include CAT7 and CAT9."
    set_question(draft, 1, 0, "Does CAT7 or CAT9 mark loan servicing payments?")
    assert findings(draft, "contains_resolution") == []


# --- 7. near_duplicate and cross_blocker_duplicate ---------------------------------------


def test_near_duplicate_in_a_blocker():
    draft = set_question(make_draft(), 0, 2, "What exact date range defines the crisis period ?")
    finding = only(draft, "near_duplicate")
    assert (finding.field, finding.severity) == ("blockers[0].trigger_questions[2]", "warning")
    assert "trigger question 1" in finding.message


def test_near_duplicate_by_word_order():
    draft = set_question(make_draft(), 0, 2, "Crisis period: what date range, exact, defines it?")
    assert only(draft, "near_duplicate").field == "blockers[0].trigger_questions[2]"


def test_varied_questions_and_threshold():
    draft = set_question(make_draft(), 0, 2, "What exact date range defined the crisis?")
    assert findings(draft, "near_duplicate")
    assert findings(draft, "near_duplicate", similarity_threshold=0.99) == []
    assert findings(make_draft(), "near_duplicate") == []


def test_cross_blocker_duplicate():
    draft = set_question(make_draft(), 2, 1, "What exact date range defines the crisis period?")
    finding = only(draft, "cross_blocker_duplicate")
    assert (finding.field, finding.severity) == ("blockers[2].trigger_questions[1]", "warning")
    assert 'blocker "crisis_period"' in finding.message
    assert findings(draft, "near_duplicate") == []
    assert findings(make_draft(), "cross_blocker_duplicate") == []


# --- 8. resolution_leak ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blocker", "sentence", "values"),
    [
        (1, "Servicing payments are booked under CAT7.", '"CAT7"'),
        (1, "Loan servicing: k_symbol = 'CAT7'.", '"CAT7"'),
        (2, "Distressed districts have a 1995 unemployment rate above 5.0.", '"1995", "5.0"'),
        (0, "The crisis period runs from 1996-01-01 to 1996-12-31.", '"January 1, 1996"'),
    ],
)
def test_a_sentence_that_states_the_values_on_the_topic_gives_the_answer_away(
    blocker, sentence, values
):
    """A short statement of every decisive value on the blocker's topic is the answer given
    away, as much as a copied sentence (issue 18): an error, with the place and the value."""
    draft = make_draft()
    draft["environment"]["business_info"].append(sentence)
    finding = only(draft, "resolution_leak")
    assert (finding.field, finding.severity) == (f"blockers[{blocker}].resolution", "error")
    assert "business info sentence 3" in finding.message and values in finding.message
    assert finding.fingerprint.startswith(f"resolution_leak@blockers[{blocker}].resolution#")
    assert "business_info[3]:" in finding.fingerprint


@pytest.mark.parametrize(
    "sentence",
    [
        "Some analysts book servicing payments under CAT7.",  # hedged
        "Servicing payments are booked under CAT7 or CAT9.",  # another value beside it
        "Servicing payments are not booked under CAT7.",  # negated
    ],
)
def test_a_distractor_that_names_the_value_is_a_warning(sentence):
    """The release's validated tasks name candidates on purpose ("'POPLATEK MESICNE' and
    'POPLATEK TYDNE' were introduced for fee cycles…"): a reviewer reads them."""
    draft = make_draft()
    draft["environment"]["business_info"].append(sentence)
    assert findings(draft, "resolution_leak") == []
    finding = only(draft, "resolution_literal_visible")
    assert (finding.field, finding.severity) == ("blockers[1].resolution", "warning")
    assert 'one sentence on its topic names "CAT7" in business info sentence 3' in finding.message
    # The same value stated plainly, beside the distractor, is the answer given away.
    draft["environment"]["business_info"].append("Servicing payments are booked under CAT7.")
    assert only(draft, "resolution_leak").detail == "business_info[4]:CAT7"


def test_leak_as_whole_text_or_as_a_copied_sentence():
    draft = make_draft()
    draft["environment"]["business_info"].append(draft["blockers"][2]["resolution"])
    first = draft["blockers"][0]["resolution"].split(". ")[0]
    draft["blocked_spec"]["evidence"] = f"Note that {first[0].lower()}{first[1:]}."
    found = {f.field: (f.message, f.severity) for f in findings(draft, "resolution_leak")}
    assert "business info sentence 3: the whole resolution" in found["blockers[2].resolution"][0]
    assert "in blocked specification (evidence)" in found["blockers[0].resolution"][0]
    assert {severity for _, severity in found.values()} == {"error"}
    # A value alone (a date spelled another way) is a warning.
    draft = make_draft()
    draft["blocked_spec"]["evidence"] = "The crisis ended on 1996-12-31."
    assert findings(draft, "resolution_leak") == []
    assert '"December 31, 1996"' in only(draft, "resolution_literal_visible").message


def test_leak_in_description_csv():
    draft = make_draft()
    draft["environment"]["descriptions"]["trans"] = TRANS_CSV.replace(
        '"internal classification code"', f'"{draft["blockers"][1]["resolution"]}"'
    )
    finding = only(draft, "resolution_leak")
    assert finding.field == "blockers[1].resolution"
    assert "description CSV trans.csv" in finding.message


def test_no_leak_for_value_lists_topic_numbers_and_column_years():
    draft = make_draft()
    draft["environment"]["descriptions"]["trans"] = TRANS_CSV.replace(
        '"internal classification code"', '"CAT1, CAT7, CAT9: internal codes"'
    )
    draft["environment"]["descriptions"]["district"] = (
        "original_column_name,column_name,column_description,data_format,value_description\n"
        "A12,unemployment rate 1995,unemployment rate 1995,real,\n"
    )
    draft["environment"]["business_info"].append("Surveys ran in 1996 and again in 1997.")
    assert findings(draft, "resolution_leak") == []
    assert findings(draft, "resolution_literal_visible") == []


def test_number_in_description_is_not_a_leak():
    draft = make_draft()
    draft["blockers"][2]["description"] += " The 1995 survey is the only one loaded."
    draft["environment"]["business_info"].append("The 1995 survey covers every district.")
    assert findings(draft, "resolution_leak") == []


SWE_SPEC = {
    "problem_statement": "Multipart bodies are always base64 encoded; OpenSearch rejects them.",
    "requirements": "- The prepare_multipart function must support a `multipart_encoding` key "
    "in body field mappings.\n- Unsupported encodings raise a ValueError.",
    "interface": "Name: set_multipart_encoding\nInput: encoding (string)",
}
ENCODING = {
    "id": "encoding_identifier",
    "type": "missing parameters",
    "description": "The exact string identifier of the non-base64 encoding is not given.",
    "resolution": "The encoding string must be exactly '7or8bit'. Example: "
    "{'multipart_encoding': '7or8bit', 'filename': 'a.txt'}. Do NOT use common names like "
    "'7bit', '8bit' or 'raw'.",
    "trigger_questions": [
        "Is the encoding type called '7bit', '8bit' or something else?",
        "What is the exact string for the non-base64 encoding?",
        "Which encoding name does prepare_multipart expect?",
    ],
}
ENCODER = {
    "id": "encoder_integration",
    "type": "ambiguous requirements",
    "description": "It is unclear whether the encoder is applied after the MIME part is built "
    "or while it is built.",
    "resolution": "The encoder function must be passed as the _encoder keyword argument to "
    "the email.mime.application.MIMEApplication() constructor. Do NOT create MIMEApplication "
    "with the default encoding and call the encoder afterwards: that encodes twice.",
    "trigger_questions": [
        "How is the encoder applied to the MIME part?",
        "Is the encoder a separate step after the part is built?",
        "How do I avoid encoding the payload twice?",
    ],
}


def swe_draft() -> dict:
    blockers = copy.deepcopy([ENCODING, ENCODER, BLOCKERS[0]])
    for blocker in blockers:
        blocker["criteria"] = {key: {"ok": True, "note": "ok"} for key in QUALITY_CRITERIA_KEYS}
    return {
        "domain": "swe",
        "blocked_spec": dict(SWE_SPEC),
        "environment": {},
        "blockers": blockers,
    }


def visible(draft, **kwargs) -> list[Finding]:
    return [
        f
        for f in lint_task(draft, **kwargs)
        if f.rule in ("resolution_leak", "resolution_literal_visible", "contains_resolution")
    ]


def test_values_the_resolution_rules_out_or_only_shows_in_an_example_are_not_its_answer():
    """'7bit', '8bit' and 'raw' are what the resolution says not to use; 'multipart_encoding'
    and 'filename' only fill its example: naming them (the spec says "raw file data", a
    question asks "'7bit' or '8bit'?") tells nothing. The stated value still counts."""
    draft = swe_draft()
    draft["blocked_spec"]["requirements"] += "\n- Parts keep the raw file data and the filename."
    assert visible(draft) == []
    draft["blocked_spec"]["requirements"] += "\n- Use the identifier '7or8bit'."
    (finding,) = visible(draft)
    assert (finding.rule, finding.severity) == ("resolution_leak", "error")
    assert finding.fingerprint == (
        "resolution_leak@blockers[0].resolution#blocked_spec.requirements:7or8bit"
    )


def test_names_written_as_code_are_the_answer_when_not_in_the_repository():
    """ "Pass it as _encoder to MIMEApplication." states the resolution (release task swe_71);
    once the repository holds MIMEApplication, _encoder alone still gives it away."""
    draft = swe_draft()
    draft["blocked_spec"]["requirements"] += "\n- Pass the encoder as _encoder to MIMEApplication."
    (finding,) = visible(draft)
    assert (finding.rule, finding.field) == ("resolution_leak", "blockers[1].resolution")
    assert '"_encoder", "MIMEApplication"' in finding.message
    (finding,) = visible(draft, repository_names={"MIMEApplication"})
    assert finding.rule == "resolution_leak" and finding.fingerprint.endswith(":_encoder")


def test_names_of_the_repository_or_the_spec_code_are_not_leaked_values(tmp_path):
    """A name the agent reads in the repository at the base commit (looked up there with
    git) or in the specification's code spans is an identifier, not the answer."""
    draft = swe_draft()
    draft["blockers"][1]["resolution"] = "Wrap the part with email_encoder before sending it."
    draft["blocked_spec"]["requirements"] += "\n- The part goes through email_encoder."
    assert [f.rule for f in visible(draft)] == ["resolution_leak"]  # unknown: the answer
    work = tmp_path / "repo"
    work.mkdir()
    (work / "urls.py").write_text("def email_encoder(part):\n    return part\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@x", *args], cwd=work, check=True
        )
    names = gitrepo.names_present(work, "HEAD", lint.resolution_names(draft))
    assert "email_encoder" in names and "urls" not in names
    assert visible(draft, repository_names=names) == []
    draft["blocked_spec"]["requirements"] = draft["blocked_spec"]["requirements"].replace(
        "through email_encoder", "through `email_encoder`"
    )
    assert visible(draft) == []


def test_schema_names_from_the_task_itself_when_there_is_no_database():
    """Without a database, the gold SQL's and the texts' table.column names are the schema:
    NumGE1500 in a business-info sentence is a column, not the answer."""
    draft = make_draft()
    draft["blockers"][2]["resolution"] = "Distress is measured by NumGE1500 above 20."
    draft["environment"]["business_info"].append("Distress reports quote NumGE1500 above 20.")
    assert only(draft, "resolution_leak", schema=None).detail == "business_info[3]:NumGE1500,20"
    draft["environment"]["gold_sql"] = GOLD_SQL.replace("D.A12 > 5.0", "D.NumGE1500 > 20")
    finding = only(draft, "resolution_leak", schema=None)
    assert finding.detail == "business_info[3]:20"  # the value still decides; the column not
    draft["environment"]["business_info"][-1] = "Distress reports quote NumGE1500."
    assert findings(draft, "resolution_leak", schema=None) == []
    assert findings(draft, "resolution_literal_visible", schema=None) == []


def test_chosen_names_must_be_named_when_the_gap_is_which_name():
    """When the description makes the gap a choice between columns ("named AvGScrWrite*"),
    the chosen ones are the answer: naming them gives it away, the year alone does not."""
    draft = make_draft()
    draft["blockers"][2]["description"] = "Several columns named AvgScr* could hold the score."
    draft["blockers"][2]["resolution"] = "Use AvgScrMath2 and AvgScrRead2 of the 2015 survey."
    draft["environment"]["gold_sql"] = "SELECT AvgScrMath2, AvgScrRead2 FROM district"
    draft["environment"]["business_info"].append("The score columns of the 2015 survey.")
    assert findings(draft, "resolution_leak", schema=None) == []
    draft["environment"]["business_info"][-1] = "Score: AvgScrMath2 and AvgScrRead2 of 2015."
    assert only(draft, "resolution_leak", schema=None).detail.endswith(
        ":AvgScrMath2,AvgScrRead2,2015"
    )


def test_the_task_vocabulary_is_not_a_value():
    """An acronym or a name two visible sentences use (SAT, PlayIterator) is the task's
    vocabulary; the same word in one sentence only may be the leak."""
    draft = make_draft()
    draft["blockers"][1]["resolution"] = "Servicing rows are SRV rows of the trans table."
    draft["environment"]["business_info"].append("Servicing is what SRV stands for.")
    assert only(draft, "resolution_leak").detail == "business_info[3]:SRV"
    draft["blocked_spec"]["question"] += " Count SRV activity too."
    assert findings(draft, "resolution_leak") == []
    assert findings(draft, "resolution_literal_visible") == []


def test_one_letter_codes_and_years():
    """'D' is a value (found as "status D" too); a year decides the dates inside it."""
    draft = make_draft()
    draft["blockers"][1]["resolution"] = "Servicing loans are loans with loan.status = 'D'."
    draft["environment"]["business_info"].append("Servicing loans have status D.")
    assert only(draft, "resolution_leak").detail == "business_info[3]:D"
    draft = make_draft()
    draft["blockers"][0]["resolution"] = "The crisis period is 1996: 1996-01-01 to 1996-12-31."
    draft["environment"]["business_info"].append("The crisis period is the year 1996.")
    assert only(draft, "resolution_leak").detail == "business_info[3]:1996"


def test_a_leak_fingerprint_names_its_place_and_value():
    """A waiver covers the leak it was given for: the same resolution elsewhere, or another
    of its values, is another fingerprint. Other rules keep ``rule@field``."""
    draft = make_draft()
    draft["environment"]["business_info"].append("Servicing payments are booked under CAT7.")
    draft["blocked_spec"]["evidence"] = "Loan servicing means k_symbol CAT7."
    prints = {f.fingerprint for f in findings(draft, "resolution_leak")}
    assert prints == {
        "resolution_leak@blockers[1].resolution#business_info[3]:CAT7",
        "resolution_leak@blockers[1].resolution#blocked_spec.evidence:CAT7",
    }
    draft = set_question(make_draft(), 0, 0, "Is that right?")
    assert only(draft, "not_a_question").fingerprint == (
        "not_a_question@blockers[0].trigger_questions[0]"
    )
    long = Finding("resolution_leak", "blockers[0].resolution", "m", "error", "x" * 400)
    assert len(long.fingerprint) == 300
    other = Finding("resolution_leak", "blockers[0].resolution", "m", "error", "x" * 399 + "y")
    assert long.fingerprint != other.fingerprint


# --- 9. overlapping_blockers -------------------------------------------------------------


def test_overlapping_descriptions_warn():
    draft = make_draft()
    draft["blockers"][2]["description"] = draft["blockers"][1]["description"].replace(
        "payments", "fees"
    )
    finding = only(draft, "overlapping_blockers")
    assert (finding.field, finding.severity) == ("blockers[2]", "warning")
    assert findings(draft, "overlapping_blockers", overlap_threshold=0.95) == []


def test_identical_resolutions_are_an_error():
    draft = make_draft()
    draft["blockers"][2]["resolution"] = draft["blockers"][1]["resolution"] + "  "
    finding = only(draft, "overlapping_blockers")
    assert (finding.field, finding.severity) == ("blockers[2]", "error")
    assert "same resolution" in finding.message


def test_independent_blockers():
    assert findings(make_draft(), "overlapping_blockers") == []


# --- 10. gold_sql ------------------------------------------------------------------------


def test_gold_sql_empty():
    draft = make_draft()
    draft["environment"]["gold_sql"] = "  \n"
    finding = only(draft, "gold_sql")
    assert (finding.field, finding.severity) == ("environment.gold_sql", "error")
    assert "empty" in finding.message


def test_gold_sql_does_not_parse():
    draft = make_draft()
    draft["environment"]["gold_sql"] = "SELECT COUNT(*) FROM trans WHERE"
    finding = only(draft, "gold_sql", schema=None)
    assert finding.message.startswith("The gold SQL does not parse as SQLite:")
    assert "line 1" in finding.message


@pytest.mark.parametrize("sql", ["DELETE FROM trans", "SELECT 1; SELECT 2"])
def test_gold_sql_must_be_one_select(sql):
    draft = make_draft()
    draft["environment"]["gold_sql"] = sql
    assert "exactly one SELECT" in only(draft, "gold_sql", schema=None).message


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("SELECT T.k_sym FROM trans AS T", 'column "T.k_sym"'),
        ("SELECT k_sym FROM trans", 'column "k_sym"'),
        ("SELECT amount FROM transactions", 'table "transactions"'),
        (
            "SELECT T1.amount FROM trans T1 WHERE T1.account_id IN "
            "(SELECT account_id FROM account WHERE district = 3)",
            'column "district"',
        ),
    ],
)
def test_gold_sql_names_missing_table_or_column(sql, named):
    draft = make_draft()
    draft["environment"]["gold_sql"] = sql
    finding = only(draft, "gold_sql")
    assert named in finding.message
    assert findings(draft, "gold_sql", schema=None) == []  # unknown schema: parse only


# Gold SQL the rule must pass on the test database (shapes BIRD and authors write).
VALID_GOLD_SQL = [
    GOLD_SQL,
    # BIRD style: T1/T2 aliases, subquery, CAST, IIF, STRFTIME, ORDER BY a select alias.
    "SELECT T2.A2, CAST(SUM(IIF(T1.amount > 1000, 1, 0)) AS REAL) * 100 / COUNT(*) AS pct "
    "FROM trans AS T1 INNER JOIN account AS T3 ON T1.account_id = T3.account_id "
    "INNER JOIN district AS T2 ON T3.district_id = T2.district_id "
    "WHERE STRFTIME('%Y', T1.date) = '1996' AND T1.account_id IN "
    "(SELECT account_id FROM loan WHERE status = 'A') GROUP BY T2.A2 ORDER BY pct DESC",
    # Quoted identifiers and a double-quoted string (SQLite reads it as text).
    'SELECT `T`.`k_symbol`, "T"."amount" FROM "trans" AS `T` WHERE T.k_symbol = "CAT7"',
    # A CTE and a derived table, with columns only they define.
    "WITH yearly AS (SELECT account_id, COUNT(*) AS n FROM trans GROUP BY account_id) "
    "SELECT y.account_id, s.total FROM yearly AS y JOIN "
    "(SELECT account_id, SUM(amount) AS total FROM trans GROUP BY account_id) AS s "
    "ON s.account_id = y.account_id WHERE n > 2",
    # Unqualified columns that live in any joined table, rowid, UNION.
    "SELECT district_id, rowid FROM account JOIN district USING (district_id) "
    "UNION SELECT district_id, 0 FROM district",
]


@pytest.mark.parametrize("sql", VALID_GOLD_SQL)
def test_gold_sql_valid_with_schema(sql):
    draft = make_draft()
    draft["environment"]["gold_sql"] = sql
    assert findings(draft, "gold_sql") == []


def test_one_walk_finds_what_find_all_finds():
    """``nodes`` stands in for a ``find_all`` per kind (one walk, not seven): the same nodes in
    the same order, a kind's subclasses included (a subquery is a DerivedTable), on the SQL
    shapes the rule reads."""
    from sqlglot import exp

    from authoring.lint.sql import nodes, parse_sql

    kinds = (exp.CTE, exp.Alias, exp.Subquery, exp.Table, exp.Column, exp.DerivedTable)
    shapes = list(VALID_GOLD_SQL)
    shapes.append("SELECT a FROM (SELECT 1 AS a) JOIN json_each('[1]') UNION SELECT b FROM t")
    for sql in shapes:
        (tree,), error = parse_sql(sql)
        assert error is None
        found = nodes(tree, *kinds)
        for kind in kinds:
            assert [id(n) for n in found[kind]] == [id(n) for n in tree.find_all(kind)], kind
        assert found[exp.Table] and found[exp.Column]


def test_gold_sql_is_not_checked_for_swe():
    draft = make_draft()
    draft["domain"] = "swe"
    draft["environment"] = {}
    assert findings(draft, "gold_sql") == []


# --- 11. criteria_unattested -------------------------------------------------------------


def test_criteria_unattested():
    draft = make_draft()
    criteria = draft["blockers"][0]["criteria"]
    criteria["critical"] = {"ok": False, "note": "Not sure yet."}
    criteria["independent"]["note"] = "  "
    del criteria["progressive"]
    finding = only(draft, "criteria_unattested")
    assert (finding.field, finding.severity) == ("blockers[0]", "warning")
    assert "critical, progressive, independent" in finding.message


def test_criteria_attested():
    assert findings(make_draft(), "criteria_unattested") == []


# --- 12. empty_field ---------------------------------------------------------------------


@pytest.mark.parametrize("part", ["description", "resolution"])
def test_empty_description_or_resolution(part):
    draft = make_draft()
    draft["blockers"][1][part] = " "
    finding = only(draft, "empty_field")
    assert (finding.field, finding.severity) == (f"blockers[1].{part}", "error")


def test_empty_trigger_question():
    draft = make_draft()
    draft["blockers"][0]["trigger_questions"].append("- ")
    finding = only(draft, "empty_field")
    assert finding.field == "blockers[0].trigger_questions[3]"
    assert findings(draft, "not_a_question") == []


def test_no_empty_fields():
    assert findings(make_draft(), "empty_field") == []


# --- the public release ------------------------------------------------------------------

_SQL_QUESTION = re.compile(r"Answer the following question:\n(.*?)\n(?:\n#|\Z)", re.DOTALL)


def _release_draft(folder) -> dict:
    """A task folder of the HiL-Bench release as a revision snapshot (schema unknown)."""
    registry = json.loads((folder / "shared/ask-human-data/blocker_registry.json").read_text())
    blockers = [
        dict(b, trigger_questions=b.get("example_questions", [])) for b in registry["blockers"]
    ]
    if folder.parent.name == "swe":
        statement = (folder / "shared/problem_statement.txt").read_text(encoding="utf-8")
        return {
            "domain": "swe",
            "blocked_spec": parse_swe_statement(statement),
            "blockers": blockers,
        }
    instruction = (folder / "baseline/instruction.md").read_text(encoding="utf-8")
    business = json.loads((folder / "shared/data/business_info.json").read_text())
    return {
        "domain": "sql",
        "blocked_spec": {"question": _SQL_QUESTION.search(instruction)[1].strip()},
        "environment": {
            "business_info": business["business_info"],
            "gold_sql": (folder / "shared/ground_truth.sql").read_text(encoding="utf-8"),
        },
        "blockers": blockers,
    }


def test_release_registries_are_clean(release_examples):
    root = release_examples
    folders = sorted(root.glob("*/*/shared/ask-human-data/blocker_registry.json"))
    assert folders, f"no release registries under {root}"
    produced = {}
    for registry in folders:
        folder = registry.parents[2]
        result = lint_task(_release_draft(folder), schema=None)
        bad = [f for f in result if f.rule in ("self_referential", "multi_topic", "gold_sql")]
        assert bad == [], folder.name
        produced[folder.name] = sorted(
            (f.rule, f.field) for f in result if f.rule != "criteria_unattested"
        )
    # What the release does produce (no criteria are attested in it): one answer-bearing
    # question in swe_5 and two warnings about its twin "missing parameter" blockers; in
    # sql_10, 'What is meant by "standard issue card"?' — a definition request that only
    # quotes the task, which the release's own judge prompt names as a rejection.
    if set(produced) == {"sql_0", "sql_3", "sql_10", "swe_0", "swe_5"}:
        assert produced["swe_5"] == [
            ("contains_resolution", "blockers[2].trigger_questions[2]"),
            ("cross_blocker_duplicate", "blockers[2].trigger_questions[1]"),
            ("overlapping_blockers", "blockers[2]"),
        ]
        assert produced["sql_10"] == [("echoes_task_text", "blockers[0].trigger_questions[2]")]
        assert all(produced[name] == [] for name in ("sql_0", "sql_3", "swe_0"))
    if root.is_relative_to(FIXTURES):  # the project's own fixtures follow every rule
        assert produced == dict.fromkeys(produced, [])
