"""A BIRD-format demo set: one SQLite database of a regional retail bank and six questions.

The layout mirrors BIRD's dev set (``databases/<db_id>/<db_id>.sqlite``, one
``database_description/<table>.csv`` per table, and a ``questions.json`` array) so the demo goes
through the same import path as real BIRD data. Rows come from ``random.Random(42)``, so every
build produces the same content and the questions' answers never drift.
"""

from __future__ import annotations

import csv
import json
import random
import sqlite3
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

DB_ID = "retail_bank"
SEED = 42

DESCRIPTION_HEADER = (
    "original_column_name",
    "column_name",
    "column_description",
    "data_format",
    "value_description",
)

SCHEMA = """
CREATE TABLE branch (
    branch_id INTEGER PRIMARY KEY,
    branch_name TEXT NOT NULL,
    city TEXT NOT NULL,
    region TEXT NOT NULL,
    opened_date DATE NOT NULL
);
CREATE TABLE customer (
    customer_id INTEGER PRIMARY KEY,
    branch_id INTEGER NOT NULL REFERENCES branch (branch_id),
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    gender TEXT NOT NULL,
    birth_date DATE NOT NULL,
    city TEXT NOT NULL,
    joined_date DATE NOT NULL
);
CREATE TABLE account (
    account_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customer (customer_id),
    branch_id INTEGER NOT NULL REFERENCES branch (branch_id),
    account_type TEXT NOT NULL,
    frequency TEXT NOT NULL,
    opened_date DATE NOT NULL,
    balance REAL NOT NULL
);
CREATE TABLE loan (
    loan_id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES account (account_id),
    granted_date DATE NOT NULL,
    amount INTEGER NOT NULL,
    duration INTEGER NOT NULL,
    payments REAL NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE transaction_log (
    trans_id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES account (account_id),
    trans_date DATE NOT NULL,
    type TEXT NOT NULL,
    operation TEXT,
    amount REAL NOT NULL,
    balance REAL NOT NULL,
    k_symbol TEXT
);
"""

# (name, city, region, opened) - a Wisconsin bank, so the regions are the state's own.
BRANCHES: tuple[tuple[str, str, str, str], ...] = (
    ("Capitol Square", "Madison", "South Central", "1995-02-13"),
    ("East Towne", "Madison", "South Central", "1996-09-02"),
    ("Third Ward", "Milwaukee", "Southeast", "1995-05-08"),
    ("Bay Beach", "Green Bay", "Northeast", "1995-11-20"),
    ("Fox River", "Appleton", "Northeast", "1997-03-17"),
    ("Lake Winnebago", "Oshkosh", "Northeast", "1996-04-29"),
    ("Chippewa Valley", "Eau Claire", "West Central", "1995-08-21"),
    ("Riverside", "La Crosse", "West Central", "1997-10-06"),
    ("Rib Mountain", "Wausau", "North Central", "1996-06-24"),
)

FEMALE_NAMES = (
    "Mary", "Patricia", "Linda", "Barbara", "Elizabeth", "Jennifer", "Susan", "Margaret",
    "Dorothy", "Karen", "Nancy", "Betty", "Helen", "Sandra", "Donna", "Carol", "Ruth", "Sharon",
    "Michelle", "Laura", "Kimberly", "Deborah", "Jessica", "Shirley", "Angela", "Heidi",
)  # fmt: skip
MALE_NAMES = (
    "James", "John", "Robert", "Michael", "William", "David", "Richard", "Joseph", "Thomas",
    "Charles", "Daniel", "Mark", "Donald", "Steven", "Paul", "Kenneth", "Gary", "Dale", "Roger",
    "Gerald", "Dennis", "Larry", "Jeffrey", "Scott", "Eric", "Gregory",
)  # fmt: skip
LAST_NAMES = (
    "Schmidt", "Mueller", "Johnson", "Anderson", "Nelson", "Olson", "Peterson", "Larson",
    "Hansen", "Kowalski", "Nowak", "Wagner", "Becker", "Schultz", "Meyer", "Krueger", "Weber",
    "Hoffmann", "Jensen", "Christensen", "Thompson", "Miller", "Brown", "Wilson", "Lee", "Garcia",
    "Martinez", "Vang", "Xiong", "Lor", "Klein", "Fischer", "Zimmerman", "Brandt", "Lindgren",
)  # fmt: skip

ACCOUNT_TYPES = ("CHK", "SAV")
FREQUENCIES = ("M", "W", "T")
LOAN_DURATIONS = (12, 24, 36, 48, 60)
END_OF_DATA = date(1999, 12, 31)
# How often each k_symbol shows up among everyday transactions; None is a plain cash/transfer.
_PURPOSES = ("HH", "INS", "STM", "INT", "PNS", None)
_PURPOSE_WEIGHTS = (3, 2, 2, 1, 1, 3)
# Loan instalments are collected on the 15th of each month.
_PAYMENT_DAYS = tuple(date(year, month, 15) for year in (1998, 1999) for month in range(1, 13))

# k_symbol code -> (type, operation) of the transactions that carry it.
K_SYMBOLS: dict[str, tuple[str, str]] = {
    "HH": ("DEBIT", "STANDING ORDER"),
    "LN": ("DEBIT", "STANDING ORDER"),
    "INS": ("DEBIT", "STANDING ORDER"),
    "STM": ("DEBIT", "FEE"),
    "PEN": ("DEBIT", "FEE"),
    "INT": ("CREDIT", "INTEREST"),
    "PNS": ("CREDIT", "TRANSFER IN"),
}

# Descriptions read like BIRD's: written by a person who knows the bank, not generated from names.
DESCRIPTIONS: dict[str, tuple[tuple[str, str, str, str, str], ...]] = {
    "branch": (
        ("branch_id", "branch id", "the unique id of the branch", "integer", ""),
        ("branch_name", "branch name", "the name the branch goes by locally", "text", ""),
        ("city", "", "the city where the branch is located", "text", ""),
        (
            "region",
            "",
            "the region of the state the branch reports to",
            "text",
            "South Central, Southeast, Northeast, West Central or North Central",
        ),
        (
            "opened_date",
            "opened date",
            "the date when the branch opened for business",
            "date",
            "YYYY-MM-DD",
        ),
    ),
    "customer": (
        ("customer_id", "customer id", "the unique id of the customer", "integer", ""),
        (
            "branch_id",
            "branch id",
            "the branch the customer is registered at",
            "integer",
            "commonsense evidence: a customer can hold accounts at other branches too",
        ),
        ("first_name", "first name", "the customer's first name", "text", ""),
        ("last_name", "last name", "the customer's family name", "text", ""),
        ("gender", "", "the gender of the customer", "text", "F: female; M: male"),
        ("birth_date", "birth date", "the customer's date of birth", "date", "YYYY-MM-DD"),
        ("city", "", "the city where the customer lives", "text", ""),
        (
            "joined_date",
            "joined date",
            "the date when the customer first became a client of the bank",
            "date",
            "YYYY-MM-DD",
        ),
    ),
    "account": (
        ("account_id", "account id", "the id of the account", "integer", ""),
        ("customer_id", "customer id", "the customer who owns the account", "integer", ""),
        ("branch_id", "branch id", "the branch where the account is kept", "integer", ""),
        (
            "account_type",
            "account type",
            "the kind of account",
            "text",
            "CHK: checking account; SAV: savings account",
        ),
        (
            "frequency",
            "",
            "how often the bank sends a statement for the account",
            "text",
            "M: monthly statement; W: weekly statement; T: statement after every transaction",
        ),
        (
            "opened_date",
            "opened date",
            "the date when the account was opened",
            "date",
            "YYYY-MM-DD",
        ),
        (
            "balance",
            "",
            "the balance of the account at the end of 1999",
            "real",
            "in US dollars; equals the balance after the account's last transaction",
        ),
    ),
    "loan": (
        ("loan_id", "loan id", "the id of the loan", "integer", ""),
        (
            "account_id",
            "account id",
            "the account the loan is paid from",
            "integer",
            "commonsense evidence: an account has at most one loan",
        ),
        ("granted_date", "granted date", "the date when the loan was granted", "date", ""),
        ("amount", "", "the approved amount of the loan", "integer", "in US dollars"),
        ("duration", "", "the duration of the loan", "integer", "in months"),
        ("payments", "monthly payments", "the monthly payment", "real", "in US dollars"),
        (
            "status",
            "",
            "repayment status of the loan",
            "text",
            "A: contract finished, no problems; B: contract finished, loan not paid; "
            "C: running contract, OK so far; D: running contract, client in debt",
        ),
    ),
    "transaction_log": (
        ("trans_id", "transaction id", "the id of the transaction", "integer", ""),
        ("account_id", "account id", "the account the transaction was posted to", "integer", ""),
        (
            "trans_date",
            "date of transaction",
            "the date when the transaction was posted",
            "date",
            "",
        ),
        (
            "type",
            "",
            "the direction of the transaction",
            "text",
            "CREDIT: money into the account; DEBIT: money out of the account",
        ),
        (
            "operation",
            "",
            "how the transaction was made",
            "text",
            "CASH DEPOSIT; CASH WITHDRAWAL; TRANSFER IN; TRANSFER OUT; STANDING ORDER; FEE; "
            "INTEREST",
        ),
        ("amount", "", "the amount of money moved", "real", "in US dollars, always positive"),
        ("balance", "", "the balance of the account after the transaction", "real", ""),
        (
            "k_symbol",
            "characterization of the transaction",
            "the purpose of the payment",
            "text",
            "HH: household payment (rent, utilities); LN: loan payment; INS: insurance payment; "
            "STM: payment for statement; INT: interest credited; PEN: penalty interest charged "
            "on an overdue loan; PNS: old-age pension; "
            "empty when the transaction has no specific purpose",
        ),
    ),
}

QUESTIONS: tuple[tuple[str, str, str, str], ...] = (
    (
        "How many loans were finished with no problems?",
        "finished with no problems refers to status = 'A'",
        "SELECT COUNT(loan_id) FROM loan WHERE status = 'A'",
        "simple",
    ),
    (
        "Which branch opened first? Give its name and city.",
        "opened first refers to MIN(opened_date)",
        "SELECT branch_name, city FROM branch ORDER BY opened_date ASC LIMIT 1",
        "simple",
    ),
    (
        "Among the female customers born before 1960, how many have a savings account?",
        "female refers to gender = 'F'; born before 1960 refers to birth_date < '1960-01-01'; "
        "savings account refers to account_type = 'SAV'",
        "SELECT COUNT(DISTINCT T1.customer_id) FROM customer AS T1 "
        "INNER JOIN account AS T2 ON T1.customer_id = T2.customer_id "
        "WHERE T1.gender = 'F' AND T1.birth_date < '1960-01-01' AND T2.account_type = 'SAV'",
        "moderate",
    ),
    (
        "What was the total amount of loans granted in 1997 by the branches of each region?",
        "in 1997 refers to granted_date LIKE '1997%'; total amount refers to SUM(amount)",
        "SELECT T3.region, SUM(T1.amount) FROM loan AS T1 "
        "INNER JOIN account AS T2 ON T1.account_id = T2.account_id "
        "INNER JOIN branch AS T3 ON T2.branch_id = T3.branch_id "
        "WHERE STRFTIME('%Y', T1.granted_date) = '1997' GROUP BY T3.region",
        "moderate",
    ),
    (
        "Among the clients whose loan contract is running but who are in debt, who paid the "
        "most in loan payments in 1998? Give the full name.",
        "running contract but in debt refers to status = 'D'; loan payments refer to "
        "k_symbol = 'LN'; in 1998 refers to trans_date LIKE '1998%'; "
        "full name refers to first_name, last_name",
        "SELECT T4.first_name, T4.last_name FROM loan AS T1 "
        "INNER JOIN account AS T2 ON T1.account_id = T2.account_id "
        "INNER JOIN transaction_log AS T3 ON T2.account_id = T3.account_id "
        "INNER JOIN customer AS T4 ON T2.customer_id = T4.customer_id "
        "WHERE T1.status = 'D' AND T3.k_symbol = 'LN' AND STRFTIME('%Y', T3.trans_date) = '1998' "
        "GROUP BY T4.customer_id ORDER BY SUM(T3.amount) DESC LIMIT 1",
        "challenging",
    ),
    (
        "What percentage of the debit transactions made in 1999 on accounts kept at branches in "
        "the Northeast region were insurance payments?",
        "debit refers to type = 'DEBIT'; in 1999 refers to trans_date LIKE '1999%'; "
        "insurance payments refer to k_symbol = 'INS'; percentage = "
        "DIVIDE(COUNT(k_symbol = 'INS'), COUNT(trans_id)) * 100",
        "SELECT CAST(SUM(CASE WHEN T1.k_symbol = 'INS' THEN 1 ELSE 0 END) AS REAL) * 100 "
        "/ COUNT(T1.trans_id) FROM transaction_log AS T1 "
        "INNER JOIN account AS T2 ON T1.account_id = T2.account_id "
        "INNER JOIN branch AS T3 ON T2.branch_id = T3.branch_id "
        "WHERE T1.type = 'DEBIT' AND STRFTIME('%Y', T1.trans_date) = '1999' "
        "AND T3.region = 'Northeast'",
        "challenging",
    ),
)


@dataclass(frozen=True)
class _Rows:
    branch: list[tuple[object, ...]]
    customer: list[tuple[object, ...]]
    account: list[tuple[object, ...]]
    loan: list[tuple[object, ...]]
    transaction_log: list[tuple[object, ...]]


def build(out_dir: Path) -> dict[str, Path]:
    """Write the database, its description CSVs and ``questions.json`` under ``out_dir``."""
    out_dir = Path(out_dir).resolve()
    db_dir = out_dir / "databases" / DB_ID
    db_path = db_dir / f"{DB_ID}.sqlite"
    desc_dir = db_dir / "database_description"
    desc_dir.mkdir(parents=True, exist_ok=True)

    _write_database(db_path, _generate_rows(random.Random(SEED)))
    for table, columns in DESCRIPTIONS.items():
        _write_description(desc_dir / f"{table}.csv", columns)

    questions_path = out_dir / "questions.json"
    records = [
        {
            "question_id": i,
            "db_id": DB_ID,
            "question": question,
            "evidence": evidence,
            "SQL": sql,
            "difficulty": difficulty,
        }
        for i, (question, evidence, sql, difficulty) in enumerate(QUESTIONS)
    ]
    questions_path.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    return {"questions": questions_path, "databases": out_dir / "databases"}


def _day(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def _add_months(day: date, months: int) -> date:
    month = day.month - 1 + months
    return date(day.year + month // 12, month % 12 + 1, min(day.day, 28))


def _generate_rows(rng: random.Random) -> _Rows:
    """Generate every table's rows from one RNG; the order of draws fixes the data."""
    branches = [(i, *row) for i, row in enumerate(BRANCHES, start=1)]

    customers: list[tuple[object, ...]] = []
    for customer_id in range(1, 81):
        branch = rng.choice(branches)
        gender = rng.choice("FM")
        first = rng.choice(FEMALE_NAMES if gender == "F" else MALE_NAMES)
        birth = _day(rng, date(1928, 1, 1), date(1977, 12, 31))
        branch_opened = date.fromisoformat(str(branch[4]))
        joined = _day(
            rng, branch_opened, min(branch_opened + timedelta(days=700), date(1998, 6, 30))
        )
        last = rng.choice(LAST_NAMES)
        row = (customer_id, branch[0], first, last, gender, birth.isoformat(), branch[2])
        customers.append((*row, joined.isoformat()))

    accounts: list[list[object]] = []
    for customer in customers:
        for _ in range(rng.choice((1, 1, 1, 2))):
            joined = date.fromisoformat(str(customer[7]))
            opened = _day(rng, joined, min(joined + timedelta(days=400), date(1998, 6, 30)))
            kind, frequency = rng.choice(ACCOUNT_TYPES), rng.choice(FREQUENCIES)
            account_id = len(accounts) + 1
            accounts.append(
                [account_id, customer[0], customer[1], kind, frequency, opened.isoformat(), 0.0]
            )

    loans: list[tuple[object, ...]] = []
    loan_by_account: dict[int, tuple[object, ...]] = {}
    checking = [a for a in accounts if a[3] == "CHK"]
    for account in sorted(rng.sample(checking, k=min(30, len(checking))), key=lambda a: a[0]):
        opened = date.fromisoformat(str(account[5]))
        granted = _day(rng, max(opened + timedelta(days=30), date(1996, 1, 1)), date(1998, 12, 31))
        amount = rng.randrange(3_000, 60_000, 500)
        duration = rng.choice(LOAN_DURATIONS)
        # The status follows from the dates: a contract whose term ended by 1999 is finished.
        if _add_months(granted, duration) <= END_OF_DATA:
            status = rng.choices(("A", "B"), weights=(4, 1))[0]
        else:
            status = rng.choices(("C", "D"), weights=(3, 1))[0]
        payments = round(amount * 1.07 / duration, 2)
        loan = (len(loans) + 1, account[0], granted.isoformat(), amount, duration, payments, status)
        loans.append(loan)
        loan_by_account[int(account[0])] = loan

    transactions: list[tuple[object, ...]] = []
    for account in accounts:
        account_id = int(account[0])
        balance = round(rng.uniform(200, 8_000), 2)
        events: list[tuple[date, str, str | None, float]] = []
        deposit = _day(rng, date(1998, 1, 1), date(1998, 2, 28))
        events.append((deposit, "CASH DEPOSIT", None, round(rng.uniform(100, 2_500), 2)))
        for _ in range(rng.randint(1, 3)):
            symbol = rng.choices(_PURPOSES, weights=_PURPOSE_WEIGHTS)[0]
            when = _day(rng, date(1998, 3, 1), date(1999, 12, 31))
            if symbol is None:
                operation = rng.choice(("CASH WITHDRAWAL", "TRANSFER OUT", "TRANSFER IN"))
                events.append((when, operation, None, round(rng.uniform(20, 900), 2)))
            else:
                low, high = (5, 40) if symbol in ("STM", "INT") else (60, 700)
                events.append(
                    (when, K_SYMBOLS[symbol][1], symbol, round(rng.uniform(low, high), 2))
                )
        loan = loan_by_account.get(account_id)
        if loan is not None and loan[6] in "CD":  # running contracts still pay in 1998-1999
            granted = date.fromisoformat(str(loan[2]))
            due = [d for d in _PAYMENT_DAYS if d > granted]
            for when in rng.sample(due, k=min(3, len(due))):
                events.append((when, "STANDING ORDER", "LN", float(loan[5])))
            if loan[6] == "D":
                charged = _day(rng, date(1999, 1, 1), date(1999, 12, 31))
                events.append((charged, "FEE", "PEN", 15.0))
        for when, operation, symbol, amount in sorted(events, key=lambda e: (e[0], e[1])):
            if symbol is not None:
                kind = K_SYMBOLS[symbol][0]
            else:
                kind = "CREDIT" if operation in ("CASH DEPOSIT", "TRANSFER IN") else "DEBIT"
            balance = round(balance + (amount if kind == "CREDIT" else -amount), 2)
            transactions.append(
                (0, account_id, when.isoformat(), kind, operation, amount, balance, symbol)
            )
        account[6] = balance

    # Number transactions in posting order, as a real ledger would.
    transactions.sort(key=lambda t: (str(t[2]), int(t[1])))
    numbered = [(i, *t[1:]) for i, t in enumerate(transactions, start=1)]
    return _Rows(branches, customers, [tuple(a) for a in accounts], loans, numbered)


def _write_database(db_path: Path, rows: _Rows) -> None:
    """Rebuild the SQLite file from scratch so a rerun never appends duplicate rows."""
    db_path.unlink(missing_ok=True)
    conn = sqlite3.connect(db_path)
    try:
        conn.executescript(SCHEMA)
        for table in ("branch", "customer", "account", "loan", "transaction_log"):
            table_rows = getattr(rows, table)
            marks = ", ".join("?" * len(table_rows[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", table_rows)  # noqa: S608
        conn.commit()
        conn.execute("VACUUM")
    finally:
        conn.close()


def _write_description(path: Path, columns: tuple[tuple[str, str, str, str, str], ...]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(DESCRIPTION_HEADER)
        writer.writerows(columns)
