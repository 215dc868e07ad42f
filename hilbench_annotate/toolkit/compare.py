"""Score a query's result table against the gold one exactly as the HiL-Bench release does.

The release's rule is ``compare_pandas_outputs`` in its
``hil_bench/utils/calculate_sql_pass_at_1.py`` (with ``parse_golden_output`` reading
golden_output.csv). This module is that rule in plain
Python, because the bundle's verifier (``grade.py``) runs on a bare ``python3`` beside a copy of
this file; ``tests/evaluation/test_release_parity_scoring.py`` runs the release's own code and
this one on the same results and requires the same verdict. ``score`` is the one function
everything that rewards SQL calls: the verifier, the built-in runner, the support study and the
validators' ``golden_output_matches`` check.

What it does, in the release's order:

1. **Columns are typed as pandas types them.** A column whose every non-NULL value is a number
   — an int or a float, or text that reads as a decimal number (``"5"``, ``" -1.5 "``,
   ``"2e3"``; not ``"1_000"``, ``"0x10"``, ``"nan"``) — becomes numbers, unless some value's text
   starts with ``0`` and a digit (``"01234"`` stays text). Any other column becomes text, a
   number in it written as Python writes it (``5.0`` is ``"5.0"``, not ``"5"``). NULL stays NULL.
2. **A row is the multiset of its values; names and positions of columns do not count.** A
   number ``v`` counts as ``round(v / 0.01) * 0.01``: two numbers are equal when they fall in
   the same 0.01 bucket, not when they are within 0.01 (``round`` rounds halves to even, so
   gold 22.625 is 22.62 while ``ROUND(x, 2)`` = 22.63 is 22.63: different). NULL equals NULL
   only; text equals the same text only (``"5"`` text in a text column is not the number 5).
3. **Tables match** when they have the same number of rows, the prediction has at least the
   gold's number of columns, and: with as many columns, the two multisets of rows are equal;
   with more, each gold row in order takes the first prediction row not yet taken that contains
   all its values (greedy, as the release does; extra values are allowed).
4. **Duplicates.** Step 3 is tried on the tables as they are and with exact duplicate rows
   removed, each side independently: (gold, prediction), (gold, prediction de-duplicated),
   (gold de-duplicated, prediction), (both de-duplicated). Any match scores 1.

golden_output.csv is read as pandas' ``read_csv(dtype=str)`` reads it after ``strip()``
(``read_golden_csv``): an empty cell, and a cell that is exactly one of pandas' NA words (``NA``,
``NULL``, ``None``, ``nan``, ``N/A``…: ``NA_WORDS``), is NULL — never an empty string.

What the release's scorer raises on it scores 0 (its caller catches the exception), and so does
this module, saying why: two result columns with the same name, bytes that are not UTF-8 text,
an infinite number or one too large to bucket. Pure: no Django, no SQLite, no pandas.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Sequence

BUCKET = 0.01  # the release's ``tol``: numbers are compared as round(v / 0.01) * 0.01
# pandas' default NA words (pandas._libs.parsers.STR_NA_VALUES; the parity suite checks them).
NA_WORDS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
# What pandas.to_numeric reads as a number: ASCII digits only, surrounding whitespace allowed.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INFINITY = re.compile(r"[+-]?inf(?:inity)?", re.IGNORECASE)
_LEADING_ZERO = re.compile(r"^0\d")  # the release's test, Unicode digits included
_SPACE = " \t\n\r\f\v"
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1

_ANY = object()

COMPARISONS = (
    ("as returned", False, False),
    ("with duplicate rows removed from the prediction", False, True),
    ("with duplicate rows removed from the gold table", True, False),
    ("with duplicate rows removed from both", True, True),
)


class Unscorable(ValueError):
    """The release's scorer raises on this table, so the result scores 0."""


# --- cells ------------------------------------------------------------------------------


def cell_text(value: object) -> str:
    """How a result cell is written in a CSV: NULL is empty, BLOBs are text (or hex)."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.hex()
    return str(value)


def _text(value: object) -> str | None:
    """pandas' ``astype(str)`` of one cell: NULL stays NULL, bytes are decoded as UTF-8."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise Unscorable("a value is bytes that are not UTF-8 text") from None
    return str(value)


def _number(value: object, text: str | None) -> int | float | None:
    """pandas' ``to_numeric(errors="coerce")`` of one cell: None when it is not a number."""
    if text is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    stripped = text.strip(_SPACE)
    if _DECIMAL.fullmatch(stripped):
        return int(stripped) if _INTEGER.fullmatch(stripped) else float(stripped)
    if _INFINITY.fullmatch(stripped):
        return float(stripped)
    return None


def _as_int_column(numbers: list[int | float | None]) -> bool:
    """Would pandas keep this numeric column as integers (int64 / uint64), not float64?"""
    if any(n is None or isinstance(n, float) for n in numbers):
        return False
    if all(_INT64[0] <= n <= _INT64[1] for n in numbers):  # type: ignore[operator]
        return True
    return all(0 <= n <= _UINT64_MAX for n in numbers)  # type: ignore[operator]


def _normalise_column(values: list[object]) -> list[object]:
    """One column as the release's ``_normalize_single_dataframe`` leaves it."""
    texts = [_text(v) for v in values]
    if any(t is not None and _LEADING_ZERO.match(t) for t in texts):
        return texts
    numbers = [_number(v, t) for v, t in zip(values, texts, strict=True)]
    if sum(n is not None for n in numbers) != sum(t is not None for t in texts):
        return texts
    if _as_int_column(numbers):
        return numbers
    return [None if n is None else float(n) for n in numbers]


def _key(value: object) -> object:
    """The release's ``tolerant_counter`` key of one normalised cell."""
    if value is None or isinstance(value, str):
        return value
    try:
        return round(value / BUCKET) * BUCKET  # type: ignore[operator]
    except (OverflowError, ValueError):
        raise Unscorable(f"the number {value!r} cannot be rounded to 0.01 buckets") from None


# --- golden_output.csv ------------------------------------------------------------------


def golden_output_csv(columns: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A result table as ``golden_output.csv`` text: header line, one line per row, ``\\n``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([str(c) for c in columns])
    for row in rows:
        writer.writerow([cell_text(v) for v in row])
    return out.getvalue()


def _unique(names: list[str]) -> list[str]:
    """Header names made unique as pandas makes them (``a``, ``a.1``…): a CSV's repeated
    header never makes the table unscorable, unlike a query's repeated column name."""
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 0
        while candidate in seen:
            n += 1
            candidate = f"{name}.{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def _blank(record: list[str]) -> bool:
    # pandas skips empty lines and lines of spaces; a lone quoted "" is a NULL row.
    return not record or (len(record) == 1 and record[0] != "" and not record[0].strip(" \t"))


def read_golden_csv(text: str) -> tuple[list[str], list[tuple]]:
    """golden_output.csv as the release reads it (``parse_golden_output``): header and rows,
    each cell its text or ``None`` for NULL (an empty cell or one of ``NA_WORDS``). A short
    row is padded with NULLs; ValueError for no header or a row longer than the header."""
    text = (text or "").strip().lstrip("\ufeff")
    records = [r for r in csv.reader(io.StringIO(text)) if not _blank(r)]
    if not records:
        raise ValueError("golden_output.csv is empty: there is no header")
    header = _unique(list(records[0]))
    rows: list[tuple] = []
    for number, record in enumerate(records[1:], start=2):
        if len(record) > len(header):
            raise ValueError(
                f"row {number} has {len(record)} cells but the header has {len(header)}"
            )
        cells = [None if c in NA_WORDS else c for c in record]
        rows.append(tuple(cells + [None] * (len(header) - len(cells))))
    return header, rows


# --- tables -----------------------------------------------------------------------------


def _normalise(columns: Sequence[str], rows: Sequence[Sequence], side: str) -> list[tuple]:
    """A table's rows after the release's column typing (``Unscorable`` where it raises)."""
    repeated = [name for name, n in Counter(str(c) for c in columns).items() if n > 1]
    if repeated:
        raise Unscorable(
            f"the {side} has two columns named {repeated[0]!r}: the release's scorer cannot "
            "tell them apart and scores such a result 0 (give each column its own name)"
        )
    width = len(columns)
    for row in rows:
        if len(row) != width:
            raise Unscorable(f"a {side} row has {len(row)} cells but {width} columns")
    typed = [_normalise_column([row[j] for row in rows]) for j in range(width)]
    return list(zip(*typed, strict=True)) if typed else [() for _ in rows]


def _dedupe(rows: list[tuple], keyed: list[Counter]) -> tuple[list[tuple], list[Counter]]:
    """``drop_duplicates()``: the first of each group of exactly equal rows, in order."""
    seen: set[tuple] = set()
    kept_rows, kept_keys = [], []
    for row, keys in zip(rows, keyed, strict=True):
        if row not in seen:
            seen.add(row)
            kept_rows.append(row)
            kept_keys.append(keys)
    return kept_rows, kept_keys


def _shown(row: tuple) -> str:
    return "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")"


def _greedy_unmatched(gold: list[Counter], pred: list[Counter]) -> int | None:
    """The release's greedy pairing when the prediction has extra columns: each gold row in
    order takes the first untaken prediction row holding all its values. The index of the
    first gold row left without one, or None when every gold row found one.

    Same outcome as the release's scan of every prediction row, found faster: a row holding
    all of a gold row's values holds its rarest one, so only that value's rows are scanned,
    from past the ones already taken at their front.
    """
    holders: dict[object, list[int]] = {}
    for j, counter in enumerate(pred):
        for key in counter:
            holders.setdefault(key, []).append(j)
    taken = [False] * len(pred)
    front: dict[object, int] = {}
    holders[_ANY] = list(range(len(pred)))  # a gold row of no columns: any row holds it
    for i, need in enumerate(gold):
        rarest = min(need, key=lambda k: len(holders.get(k, ())), default=_ANY)
        rows = holders.get(rarest, [])
        start = front.get(rarest, 0)
        while start < len(rows) and taken[rows[start]]:
            start += 1
        front[rarest] = start
        for j in rows[start:]:
            if not taken[j] and all(n <= pred[j].get(k, 0) for k, n in need.items()):
                taken[j] = True
                break
        else:
            return i
    return None


def _rows_match(
    gold: tuple[list[tuple], list[Counter]],
    pred: tuple[list[tuple], list[Counter]],
    widths: tuple[int, int],
) -> tuple[bool, str]:
    """The release's ``compare_pandas_outputs_helper`` on two (possibly de-duplicated)
    tables, and why it fails: "" for a row count that differs (the caller says it)."""
    (gold_rows, gold_keys), (pred_rows, pred_keys) = gold, pred
    gold_width, pred_width = widths
    if len(gold_rows) != len(pred_rows):
        return False, ""
    if pred_width < gold_width:
        return False, f"gold has {gold_width} columns, prediction {pred_width}"
    if pred_width == gold_width:
        wanted = Counter(frozenset(c.items()) for c in gold_keys)
        offered = Counter(frozenset(c.items()) for c in pred_keys)
        if wanted == offered:
            return True, ""
        missing = wanted - offered
        i = next(i for i, c in enumerate(gold_keys) if frozenset(c.items()) in missing)
        return False, f"no predicted row has the values of gold row {_shown(gold_rows[i])}"
    i = _greedy_unmatched(gold_keys, pred_keys)
    if i is None:
        return True, ""
    return False, (
        f"no predicted row left holds the values of gold row {_shown(gold_rows[i])} "
        "(each gold row takes the first unused predicted row that contains its values)"
    )


def _keyed(rows: list[tuple]) -> list[Counter]:
    return [Counter(_key(v) for v in row) for row in rows]


def score(
    pred_columns: Sequence[str],
    pred_rows: Sequence[Sequence],
    gold_columns: Sequence[str],
    gold_rows: Sequence[Sequence],
) -> dict:
    """The release's verdict on a predicted table against the gold one.

    ``gold_rows`` are the gold query's result, or golden_output.csv as ``read_golden_csv``
    reads it. Returns ``{"match": bool, "compared": how the matching tables were compared
    (one of ``COMPARISONS``' names; "" when none matched), "reason": why they do not match
    ("" when they do)}``. A match found only once duplicate rows are removed is a match, and
    its reason is empty like any other's: ``compared`` says how it was found.
    """
    try:
        gold = _normalise(gold_columns, gold_rows, "gold table")
        pred = _normalise(pred_columns, pred_rows, "result")
        # The release meets an unbucketable number only once the row counts agree, and then
        # raises: a table holding one never matches, whatever the counts.
        golds = {False: (gold, _keyed(gold))}
        preds = {False: (pred, _keyed(pred))}
    except Unscorable as problem:
        return {"match": False, "compared": "", "reason": str(problem)}
    golds[True], preds[True] = _dedupe(*golds[False]), _dedupe(*preds[False])
    widths = (len(gold_columns), len(pred_columns))
    why = ""
    for name, gold_once, pred_once in COMPARISONS:
        matched, reason = _rows_match(golds[gold_once], preds[pred_once], widths)
        if matched:
            return {"match": True, "compared": name, "reason": ""}
        if reason and not why:
            why = reason if name == COMPARISONS[0][0] else f"{reason} ({name})"
    if not why:
        why = f"gold has {len(gold)} rows, prediction {len(pred)}"
        once = (len(golds[True][0]), len(preds[True][0]))
        if once != (len(gold), len(pred)):
            why += f" ({once[0]} and {once[1]} without duplicate rows)"
    return {"match": False, "compared": "", "reason": why}


__all__ = [
    "BUCKET",
    "COMPARISONS",
    "NA_WORDS",
    "Unscorable",
    "cell_text",
    "golden_output_csv",
    "read_golden_csv",
    "score",
]
