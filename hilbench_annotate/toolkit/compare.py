"""Compare a query's result table with a golden one, by the release's SQL scoring rules.

The rules (PRODUCT.md, "Metrics"): row order is ignored; the prediction may carry extra columns;
numbers are equal within a tolerance (1e-2); a result is scored both with and without
de-duplication of rows.

Cell equality, as implemented here:

* A cell that is a number (``int``/``float``) or a string that reads as a decimal number
  (``"5"``, ``"-1.50"``, ``"2e3"``) compares numerically, so ``"5"``, ``5`` and ``5.0`` are equal
  and ``0.333`` equals ``"0.33"`` within ``tolerance`` (absolute difference).
* NULL (``None``) equals the empty string and nothing else: NULL is written as an empty cell in
  ``golden_output.csv``, so a CSV cannot tell them apart. The text ``"None"`` / ``"NULL"`` is an
  ordinary string.
* Every other cell compares as exact text (BLOBs as UTF-8 text, or hex when not UTF-8).

Columns are matched by their values, never by names (a prediction's ``count(*)`` is the gold
``count``). For each gold column the candidate predicted columns are those whose value multiset
(or set, with ``distinct``) is compatible; a few injective assignments are tried in order of
preference (same name, then same position, then left to right) and each is verified on whole
rows. The number of assignments tried is capped, so the comparison stays polynomial.

Rows are matched exactly first (hashing); what is left is matched within the tolerance by
augmenting paths inside groups of rows that share all their text cells. This module is pure:
no Django, no SQLite.
"""

from __future__ import annotations

import csv
import io
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence

DEFAULT_TOLERANCE = 1e-2

# Decimal numbers only: float() would also accept "nan", "inf" and "1_000".
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
# Absorbs binary rounding at the boundary (0.34 - 0.33 is 0.010000000000000009).
_SLACK = 1e-9
# Column assignments verified on rows before giving up.
_MAX_ASSIGNMENTS = 64
_MAX_SEARCH_STEPS = 10_000
# Above this many leftover rows in one group, tolerant matching is greedy (sorted order).
_MAX_AUGMENTING = 2000

_NUM, _STR = "n", "s"


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


def _cell(value: object) -> tuple[str, object]:
    """A comparable cell: ``("n", number)`` or ``("s", text)``."""
    if isinstance(value, bool):
        return (_NUM, int(value))
    if isinstance(value, int | float):
        return (_NUM, value)
    text = cell_text(value)
    stripped = text.strip()
    if _NUMBER.fullmatch(stripped):
        if _INTEGER.fullmatch(stripped):
            return (_NUM, int(stripped))
        return (_NUM, float(stripped))
    return (_STR, text)


def _cells_equal(a: tuple[str, object], b: tuple[str, object], tolerance: float) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == _NUM:
        return abs(a[1] - b[1]) <= tolerance + _SLACK  # type: ignore[operator]
    return a[1] == b[1]


def _rows_equal(a: tuple, b: tuple, tolerance: float) -> bool:
    return all(_cells_equal(x, y, tolerance) for x, y in zip(a, b, strict=True))


# --- CSV --------------------------------------------------------------------------------


def parse_csv_table(text: str) -> tuple[list[str], list[tuple]]:
    """The header and rows of a CSV table (cells as strings); empty text is ``([], [])``.

    Blank lines are skipped. A row whose length differs from the header's raises ValueError
    naming the line, because a ragged table cannot be compared column by column.
    """
    text = (text or "").lstrip("\ufeff")
    records = [r for r in csv.reader(io.StringIO(text)) if r]
    if not records:
        return [], []
    header = list(records[0])
    rows: list[tuple] = []
    for number, record in enumerate(records[1:], start=2):
        if len(record) != len(header):
            raise ValueError(
                f"row {number} has {len(record)} cells but the header has {len(header)}"
            )
        rows.append(tuple(record))
    return header, rows


def golden_output_csv(columns: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A result table as ``golden_output.csv`` text: header line, one line per row, ``\\n``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([str(c) for c in columns])
    for row in rows:
        writer.writerow([cell_text(v) for v in row])
    return out.getvalue()


# --- columns ----------------------------------------------------------------------------


def _sort_key(cell: tuple[str, object]) -> tuple:
    return cell


def _column_compatible(
    gold: list[tuple[str, object]],
    pred: list[tuple[str, object]],
    tolerance: float,
    distinct: bool,
) -> bool:
    """Could ``pred`` be the gold column? Multisets (or sets) equal within the tolerance."""
    if not distinct:
        if len(gold) != len(pred):
            return False
        return all(
            _cells_equal(g, p, tolerance)
            for g, p in zip(sorted(gold, key=_sort_key), sorted(pred, key=_sort_key), strict=True)
        )
    return _covers(set(gold), set(pred), tolerance) and _covers(set(pred), set(gold), tolerance)


def _covers(
    values: set[tuple[str, object]], other: set[tuple[str, object]], tolerance: float
) -> bool:
    """Every value in ``values`` has an equal value in ``other`` (numbers within tolerance)."""
    numbers = sorted(v[1] for v in other if v[0] == _NUM)
    for value in values:
        if value in other:
            continue
        if value[0] != _NUM:
            return False
        i = bisect_left(numbers, value[1] - tolerance - _SLACK)  # type: ignore[operator]
        if i == len(numbers) or numbers[i] > value[1] + tolerance + _SLACK:  # type: ignore[operator]
            return False
    return True


def _assignments(candidates: list[list[int]]) -> list[tuple[int, ...]]:
    """Up to ``_MAX_ASSIGNMENTS`` injective choices, one candidate per gold column, in order.

    A depth-first search that never reuses a predicted column, with a step budget so that
    many interchangeable columns cannot make it exponential.
    """
    found: list[tuple[int, ...]] = []
    steps = 0
    chosen: list[int] = []

    def search(k: int) -> None:
        nonlocal steps
        if k == len(candidates):
            found.append(tuple(chosen))
            return
        for j in candidates[k]:
            steps += 1
            if len(found) >= _MAX_ASSIGNMENTS or steps > _MAX_SEARCH_STEPS:
                return
            if j in chosen:
                continue
            chosen.append(j)
            search(k + 1)
            chosen.pop()

    search(0)
    return found


def _preview(values: list, limit: int = 3) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def _closest(
    k: int,
    name: str,
    gold_col: list[tuple[str, object]],
    pred_columns: list[str],
    pred_cols: list[list[tuple[str, object]]],
    tolerance: float,
) -> str:
    """Where the likeliest predicted column (same name, else same position) parts from gold."""
    by_name = [j for j, c in enumerate(pred_columns) if c.lower() == name.lower()]
    j = by_name[0] if by_name else (k if k < len(pred_cols) else None)
    if j is None:
        return ""
    gold_values = sorted(set(gold_col))
    pred_values = sorted(set(pred_cols[j]))
    for value in gold_values:
        if not _covers({value}, set(pred_values), tolerance):
            return f" (gold value {value[1]!r} is not in predicted column {pred_columns[j]})"
    for value in pred_values:
        if not _covers({value}, set(gold_values), tolerance):
            return f" (predicted column {pred_columns[j]} has {value[1]!r}, not in gold)"
    return f" (predicted column {pred_columns[j]} has the same values but in different counts)"


# --- rows -------------------------------------------------------------------------------


def _dedupe(rows: list[tuple], raw: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    seen: dict[tuple, tuple] = {}
    for row, original in zip(rows, raw, strict=True):
        seen.setdefault(row, original)
    return list(seen), list(seen.values())


def _tolerant_pairs(gold: list[tuple], pred: list[tuple], tolerance: float) -> dict[int, int]:
    """A maximum matching gold index -> pred index (augmenting paths; greedy when large).

    All rows share their text cells (see ``_rows_match``), so candidates for a gold row are
    found by bisecting on the first numeric cell instead of trying every predicted row.
    """
    if not gold or not pred:
        return {}
    numeric = [k for k, cell in enumerate(gold[0]) if cell[0] == _NUM]
    if not numeric:
        return {}  # identical text rows were paired exactly already
    pos = numeric[0]
    order = sorted(range(len(pred)), key=lambda j: pred[j])
    keys = [pred[j][pos][1] for j in order]
    reach = tolerance + _SLACK

    def candidates(i: int) -> Iterator[int]:
        value = gold[i][pos][1]
        k = bisect_left(keys, value - reach)
        while k < len(keys) and keys[k] <= value + reach:
            if _rows_equal(gold[i], pred[order[k]], tolerance):
                yield order[k]
            k += 1

    if len(gold) > _MAX_AUGMENTING or len(pred) > _MAX_AUGMENTING:
        match: dict[int, int] = {}
        used: set[int] = set()
        for i in sorted(range(len(gold)), key=lambda i: gold[i]):
            for j in candidates(i):
                if j not in used:
                    match[i] = j
                    used.add(j)
                    break
        return match

    edges = [list(candidates(i)) for i in range(len(gold))]
    owner: dict[int, int] = {}  # pred index -> gold index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(gold)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _rows_match(
    gold: list[tuple],
    gold_raw: list[tuple],
    pred: list[tuple],
    pred_raw: list[tuple],
    tolerance: float,
) -> tuple[bool, str]:
    """Multiset equality of rows within the tolerance; the reason names a differing row."""
    left_gold = Counter(gold)
    left_gold.subtract(Counter(pred))
    if all(n == 0 for n in left_gold.values()):
        return True, ""
    # Exact matches are paired off; only the rest need the tolerance.
    remaining = Counter(pred)
    gold_rest: list[int] = []
    for i, row in enumerate(gold):
        if remaining[row] > 0:
            remaining[row] -= 1
        else:
            gold_rest.append(i)
    taken = Counter(gold)
    pred_rest: list[int] = []
    for j, row in enumerate(pred):
        if taken[row] > 0:
            taken[row] -= 1
        else:
            pred_rest.append(j)

    def text_part(row: tuple) -> tuple:
        return tuple(c if c[0] == _STR else (_NUM,) for c in row)

    groups: dict[tuple, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for i in gold_rest:
        groups[text_part(gold[i])][0].append(i)
    for j in pred_rest:
        groups[text_part(pred[j])][1].append(j)

    missing: list[int] = []
    unexpected: list[int] = []
    for gold_ids, pred_ids in groups.values():
        pairs = _tolerant_pairs([gold[i] for i in gold_ids], [pred[j] for j in pred_ids], tolerance)
        matched_pred = set(pairs.values())
        missing += [gold_ids[k] for k in range(len(gold_ids)) if k not in pairs]
        unexpected += [pred_ids[k] for k in range(len(pred_ids)) if k not in matched_pred]
    if not missing and not unexpected:
        return True, ""
    parts = []
    if missing:
        missing.sort()
        parts.append(f"row {gold_raw[missing[0]]!r} missing from the prediction")
        if len(missing) > 1:
            parts[-1] += f" ({len(missing)} gold rows unmatched)"
    if unexpected:
        unexpected.sort()
        parts.append(f"unexpected predicted row {pred_raw[unexpected[0]]!r}")
    return False, "; ".join(parts)


# --- the comparison ---------------------------------------------------------------------


def _shape_problem(
    gold_columns: list[str],
    gold_raw: list[tuple],
    pred_columns: list[str],
    pred_raw: list[tuple],
) -> str:
    """Why the two tables cannot be compared at all ("" when their shapes are usable)."""
    for name, columns, rows in (
        ("gold", gold_columns, gold_raw),
        ("prediction", pred_columns, pred_raw),
    ):
        for row in rows:
            if len(row) != len(columns):
                return (
                    f"a {name} row has {len(row)} cells but the {name} has {len(columns)} columns"
                )
    if not gold_columns:
        return "the gold table has no columns"
    if len(pred_columns) < len(gold_columns):
        return f"gold has {len(gold_columns)} columns, prediction {len(pred_columns)}"
    return ""


def _column_candidates(
    gold_columns: list[str],
    gold: list[tuple],
    pred_columns: list[str],
    pred: list[tuple],
    tolerance: float,
    distinct: bool,
) -> tuple[list[list[int]], str]:
    """Candidate predicted columns per gold column, by value compatibility, best first.

    Returns ``(candidates, "")``, or ``([], reason)`` when some gold column has none.
    """
    pred_cols = [[row[j] for row in pred] for j in range(len(pred_columns))]
    candidates: list[list[int]] = []
    for k, name in enumerate(gold_columns):
        gold_col = [row[k] for row in gold]
        fits = [
            j
            for j, col in enumerate(pred_cols)
            if _column_compatible(gold_col, col, tolerance, distinct)
        ]
        if not fits:
            return [], f"no predicted column matches gold column {name}" + _closest(
                k, name, gold_col, pred_columns, pred_cols, tolerance
            )
        fits.sort(
            key=lambda j, k=k, name=name: (
                pred_columns[j].lower() != name.lower(),
                j != k,
                j,
            )
        )
        candidates.append(fits)
    return candidates, ""


def results_match(
    pred_columns: Sequence[str],
    pred_rows: Sequence[Sequence],
    gold_columns: Sequence[str],
    gold_rows: Sequence[Sequence],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    distinct: bool = False,
) -> tuple[bool, str]:
    """Does the predicted table answer like the gold one? ``(matched, reason)``.

    Row order is ignored, extra predicted columns are allowed (gold columns are matched to
    predicted ones by values), numbers are equal within ``tolerance``; ``distinct`` compares
    sets of rows instead of multisets. ``reason`` is empty on a match, otherwise it says what
    differs: a row count, a gold column no predicted column matches, or a missing row.
    """
    gold_columns = [str(c) for c in gold_columns]
    pred_columns = [str(c) for c in pred_columns]
    gold_raw = [tuple(r) for r in gold_rows]
    pred_raw = [tuple(r) for r in pred_rows]
    problem = _shape_problem(gold_columns, gold_raw, pred_columns, pred_raw)
    if problem:
        return False, problem

    gold = [tuple(_cell(v) for v in r) for r in gold_raw]
    pred = [tuple(_cell(v) for v in r) for r in pred_raw]
    if distinct:
        gold, gold_raw = _dedupe(gold, gold_raw)
    elif len(gold) != len(pred):
        return False, f"gold has {len(gold)} rows, prediction {len(pred)}"

    candidates, problem = _column_candidates(
        gold_columns, gold, pred_columns, pred, tolerance, distinct
    )
    if problem:
        return False, problem
    assignments = _assignments(candidates)
    if not assignments:
        return False, "two gold columns can only be matched by the same predicted column"
    first_reason = ""
    for assignment in assignments:
        proj = [tuple(row[j] for j in assignment) for row in pred]
        proj_raw = [tuple(row[j] for j in assignment) for row in pred_raw]
        if distinct:
            proj, proj_raw = _dedupe(proj, proj_raw)
            if len(proj) != len(gold):
                reason = f"gold has {len(gold)} distinct rows, prediction {len(proj)}"
                first_reason = first_reason or reason
                continue
        matched, reason = _rows_match(gold, gold_raw, proj, proj_raw, tolerance)
        if matched:
            return True, ""
        first_reason = first_reason or reason
    return False, first_reason


def score(
    pred_columns: Sequence[str],
    pred_rows: Sequence[Sequence],
    gold_columns: Sequence[str],
    gold_rows: Sequence[Sequence],
) -> dict:
    """Both of the release's scores: as multisets (``match``) and de-duplicated.

    ``reason`` explains the first failing comparison (empty when both match);
    ``reason_distinct`` is the de-duplicated comparison's own reason.
    """
    match, reason = results_match(pred_columns, pred_rows, gold_columns, gold_rows)
    match_distinct, reason_distinct = results_match(
        pred_columns, pred_rows, gold_columns, gold_rows, distinct=True
    )
    return {
        "match": match,
        "match_distinct": match_distinct,
        "reason": reason or reason_distinct,
        "reason_distinct": reason_distinct,
    }
