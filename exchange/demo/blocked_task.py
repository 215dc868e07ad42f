"""The demo's blocked SQL task: its question, blockers and labelled validation questions.

Plain data (no Django), so benchmarks can read it without a database.
"""

BLOCKED_QUESTION = (
    "Among the clients whose loans are troubled, who paid the most in loan servicing "
    "during the review year? Give the full name."
)
DEMO_BLOCKERS = [
    {
        "key": "troubled_loan_definition",
        "type": "question",
        "subtype": "underspecified_concepts",
        "description": 'The question asks about clients whose loans are "troubled" but '
        "never says which loan states count as troubled.",
        "resolution": "Troubled loans are loans with loan.status = 'D' (contract running, "
        "client in debt).",
        "surfaces_in": "descriptions",
        "trigger_questions": [
            "Which loan status values count as a troubled loan?",
            "How is a troubled loan identified in the loan table?",
            "What definition of troubled loans should the query use?",
        ],
    },
    {
        "key": "loan_servicing_payment_code",
        "type": "schema",
        "subtype": "confusing_column_or_column_definition",
        "description": "Transactions carry purpose codes in k_symbol, but nothing says which "
        "code marks a loan servicing payment.",
        "resolution": "Loan servicing payments are transaction_log rows with k_symbol = 'LN'.",
        "surfaces_in": "schema",
        "trigger_questions": [
            "Which k_symbol code marks a loan servicing payment?",
            "How do I tell loan servicing payments apart from other transactions?",
            "What transaction purpose code should be used for loan servicing?",
        ],
    },
    {
        "key": "review_year_dates",
        "type": "question",
        "subtype": "timeframe_ambiguity",
        "description": 'The question limits payments to "the review year" without naming '
        "the year or its dates.",
        "resolution": "The review year is calendar year 1998: trans_date from 1998-01-01 to "
        "1998-12-31.",
        "surfaces_in": "specification",
        "trigger_questions": [
            "Which calendar year is the review year?",
            "What start and end dates define the review year for payments?",
            "What date range should payments be limited to?",
        ],
    },
]

# The demo author's attestation of the seven quality criteria, one line each, per blocker
# (what the workspace's criteria grid holds and the self-check shows ticked).
DEMO_CRITERIA = {
    "troubled_loan_definition": {
        "realistic": "Analysts say 'troubled' without naming the status codes.",
        "critical": "Another status set changes the average.",
        "vast_search_space": "Any subset of the four status codes could be meant.",
        "not_inferable": "The status descriptions do not say which is troubled.",
        "exact_resolution": "loan.status = 'D'.",
        "progressive": "Shows when the agent filters the loan table.",
        "independent": "Says nothing of payments or dates.",
    },
    "loan_servicing_payment_code": {
        "realistic": "Purpose codes are a bank's internal vocabulary.",
        "critical": "Without k_symbol = 'LN' the wrong payments are averaged.",
        "vast_search_space": "k_symbol holds many codes; several look plausible.",
        "not_inferable": "The column description lists codes without meanings.",
        "exact_resolution": "transaction_log.k_symbol = 'LN'.",
        "progressive": "Shows when the agent reads transaction_log.",
        "independent": "Says nothing of loan states or dates.",
    },
    "review_year_dates": {
        "realistic": "A report's 'review year' is named in a memo, not in the data.",
        "critical": "Another year gives another average.",
        "vast_search_space": "Every year of the data is a candidate.",
        "not_inferable": "No table or description names the review year.",
        "exact_resolution": "trans_date from 1998-01-01 to 1998-12-31.",
        "progressive": "Shows when the agent limits payments by date.",
        "independent": "Says nothing of loan states or purpose codes.",
    },
}
for _blocker in DEMO_BLOCKERS:
    _blocker["criteria"] = {
        key: {"ok": True, "note": note} for key, note in DEMO_CRITERIA[_blocker["key"]].items()
    }

# (gold blocker or None, question, its style): per blocker one question naming the task's words,
# one paraphrase (the troubled one so far-worded the judge misses it) and one terse, as an
# agent asks; and negatives. ``seed_demo`` gives each blocker's three to three writers.
DEMO_VALIDATION_QUESTIONS = [
    ("troubled_loan_definition", "Which loans count as troubled for this question?", "task_words"),
    (
        "troubled_loan_definition",
        "Do delinquent contracts fall under the problem category?",
        "paraphrase",
    ),
    ("troubled_loan_definition", "Which loan status letters are the bad ones?", "terse"),
    (
        "loan_servicing_payment_code",
        "Which purpose code identifies loan servicing payments?",
        "task_words",
    ),
    (
        "loan_servicing_payment_code",
        "How are payments that service a loan marked in transaction_log?",
        "paraphrase",
    ),
    ("loan_servicing_payment_code", "What k_symbol marks a repayment?", "terse"),
    ("review_year_dates", "What span of dates does the review year refer to?", "task_words"),
    ("review_year_dates", "Over which months does the period under review run?", "paraphrase"),
    ("review_year_dates", "Which year's payments?", "terse"),
    (None, "What is the capital of France?", "terse"),
    (None, "How many branches does the bank have?", "task_words"),
    (None, "What is the best way to write this query?", "paraphrase"),
]
