"""A SWE-bench-style demo instance backed by a real git repository with a real bug.

``build`` writes a tiny ``invoicing`` package as six commits. The fifth commit (multi-currency
support) rewrites ``round_money`` with ``Decimal.quantize`` but drops ``rounding=ROUND_HALF_UP``,
so ties silently fall back to the decimal context's banker's rounding; the existing tests have no
half-cent cases, so the bug shipped. HEAD of ``main`` is the base commit. The fix and the tests
that expose it are produced by editing a scratch clone and running ``git diff``, so both patches
are genuine and apply to the base commit.

Author, committer, dates and git configuration are pinned, so every build yields the same commit
hashes and byte-identical patches.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

INSTANCE_ID = "demo__invoicing-1"
REPO_NAME = "demo/invoicing"
AUTHOR_NAME = "Demo Dev"
AUTHOR_EMAIL = "demo@example.com"

# Pinned config: independent of the user's ~/.gitconfig and of /etc/gitconfig, which could
# otherwise change hashes (signing) or the diff format (noprefix, color, external diff).
GIT_CONFIG = (
    f"user.name={AUTHOR_NAME}",
    f"user.email={AUTHOR_EMAIL}",
    "init.defaultBranch=main",
    "commit.gpgsign=false",
    "core.autocrlf=false",
)

FAIL_TO_PASS = [
    "tests/test_money.py::test_round_money_rounds_half_up",
    "tests/test_money.py::test_round_money_rounds_half_up_for_zero_decimal_currency",
    "tests/test_money.py::test_format_money_rounds_half_cent_up",
    "tests/test_invoice.py::test_tax_on_half_cent_rounds_up",
]
PASS_TO_PASS = [
    "tests/test_money.py::test_to_decimal_accepts_strings_and_ints",
    "tests/test_money.py::test_to_decimal_refuses_floats",
    "tests/test_money.py::test_round_money_to_cents",
    "tests/test_money.py::test_format_money_usd",
    "tests/test_money.py::test_format_money_negative",
    "tests/test_money.py::test_format_money_jpy",
    "tests/test_money.py::test_unknown_currency_is_refused",
    "tests/test_invoice.py::test_subtotal_sums_line_items",
    "tests/test_invoice.py::test_total_includes_tax",
    "tests/test_invoice.py::test_add_refuses_non_positive_quantity",
    "tests/test_invoice.py::test_discount_applies_before_tax",
    "tests/test_invoice.py::test_discount_rate_must_be_a_fraction",
    "tests/test_invoice.py::test_jpy_invoice_has_no_minor_units",
    "tests/test_invoice.py::test_render_lists_items_and_totals",
]

PROBLEM_STATEMENT = """\
Tax is rounded down on half cents since 0.2.0 (banker's rounding instead of half-up)

After upgrading to 0.2.0 some invoices come out one cent short. It only happens when the \
unrounded tax ends in exactly half a cent.

**To reproduce**

```python
from decimal import Decimal
from invoicing.invoice import Invoice

invoice = Invoice(number="INV-2041", tax_rate=Decimal("0.0825"))
invoice.add("Notebook", 4, "2.50")
print(invoice.tax, invoice.total)
```

**Expected:** `0.83 10.83` (8.25% of $10.00 is $0.825, which rounds up to $0.83, and that is \
what 0.1.0 printed and what our accounting system books).

**Actual:** `0.82 10.82`

The helpers show the same thing directly: `round_money("0.125")` returns `Decimal("0.12")` and \
`format_money("0.005")` gives `$0.00`. It is not limited to dollars either: \
`round_money("2.5", "JPY")` returns `Decimal("2")` where we expect `Decimal("3")`.

It looks like round-half-to-even is being applied somewhere. Amounts that are not exactly on a \
half (e.g. `10.234`, `10.236`) still round correctly, which is probably why the tests did not \
catch it.
"""

REQUIREMENTS = """\
- `round_money(value, currency)` must round to the currency's minor unit using round-half-up \
(ties away from zero) for every supported currency, e.g. `round_money("0.125")` returns \
`Decimal("0.13")`, `round_money("-0.125")` returns `Decimal("-0.13")` and \
`round_money("2.5", "JPY")` returns `Decimal("3")`.
- The result must not depend on the rounding mode of the active `decimal` context.
- `format_money` must display amounts rounded the same way, e.g. `format_money("0.005")` returns \
`"$0.01"`.
- `Invoice.subtotal`, `Invoice.discount`, `Invoice.tax` and `Invoice.total` must use the same \
rounding; an invoice with a $10.00 subtotal and a 0.0825 tax rate has a tax of `Decimal("0.83")` \
and a total of `Decimal("10.83")`.
- Amounts that are not ties keep rounding as before (`round_money("10.234")` is \
`Decimal("10.23")`), and unsupported currencies are still refused with `ValueError`.
"""

INTERFACE = "No new interfaces are introduced."
TEST_CMD = "python -m pytest -rA tests"
# What the demo's tests need: the machine's Python 3.11 and pytest, nothing installed from
# the repository (the tests import it from the working tree).
ENVIRONMENT_SPEC = {
    "language": "python",
    "python": "3.11",
    "packages": ["pytest==8.3.3"],
    "log_parser": "pytest",
}


def _replace(text: str, old: str, new: str) -> str:
    """``str.replace`` that fails loudly, so an edit to a snapshot cannot silently no-op."""
    if text.count(old) != 1:
        raise ValueError(f"expected exactly one occurrence of {old!r}")
    return text.replace(old, new)


# --------------------------------------------------------------------------------------------
# Repository content, one snapshot per file version.
# --------------------------------------------------------------------------------------------

GITIGNORE = """\
__pycache__/
.pytest_cache/
*.egg-info/
"""

README_V1 = """\
# invoicing

Small helpers for building invoices: `Decimal` money arithmetic, rounding and formatting.

    python -m pytest -rA tests
"""

README_V2 = """\
# invoicing

Small helpers for building invoices: `Decimal` money arithmetic, rounding and formatting.

```python
from decimal import Decimal
from invoicing.invoice import Invoice

invoice = Invoice(number="INV-1001", tax_rate=Decimal("0.05"))
invoice.add("Consulting hour", 2, "80.00")
print(invoice.render())
```

Supported currencies: USD, EUR, GBP and JPY (no minor unit). Amounts are rounded half-up to the
currency's smallest unit.

    python -m pytest -rA tests
"""

PYPROJECT_V1 = """\
[project]
name = "invoicing"
version = "0.1.0"
requires-python = ">=3.10"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
"""

PYPROJECT_V2 = _replace(PYPROJECT_V1, 'version = "0.1.0"', 'version = "0.2.0"')

INIT = '''\
"""Invoice arithmetic on ``Decimal`` amounts."""
'''

MONEY_V1 = '''\
"""Money helpers: parsing, rounding and formatting amounts.

Amounts are ``Decimal`` everywhere; a float never touches a price.
"""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_decimal(value: Decimal | int | str) -> Decimal:
    """Convert ``value`` to ``Decimal``; floats are refused because they are inexact."""
    if isinstance(value, float):
        raise TypeError("use str or Decimal for money, not float")
    return Decimal(value)


def round_money(value: Decimal | int | str) -> Decimal:
    """Round to whole cents, half a cent up."""
    return to_decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def format_money(value: Decimal | int | str) -> str:
    """Format as US dollars, e.g. ``$1,234.50`` or ``-$3.00``."""
    amount = round_money(value)
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,.2f}"
'''

# The buggy multi-currency rewrite: ``quantize`` without ``rounding=`` uses the context's
# ROUND_HALF_EVEN.
MONEY_V2 = '''\
"""Money helpers: parsing, rounding and formatting amounts.

Amounts are ``Decimal`` everywhere; a float never touches a price.
"""

from decimal import Decimal

# ISO 4217 minor units: how many decimal places the currency's smallest unit has.
MINOR_UNITS = {"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0}
SYMBOLS = {"USD": "$", "EUR": "\\u20ac", "GBP": "\\u00a3", "JPY": "\\u00a5"}


def to_decimal(value: Decimal | int | str) -> Decimal:
    """Convert ``value`` to ``Decimal``; floats are refused because they are inexact."""
    if isinstance(value, float):
        raise TypeError("use str or Decimal for money, not float")
    return Decimal(value)


def _exponent(currency: str) -> Decimal:
    try:
        places = MINOR_UNITS[currency]
    except KeyError:
        raise ValueError(f"unsupported currency: {currency}") from None
    return Decimal(1).scaleb(-places)


def round_money(value: Decimal | int | str, currency: str = "USD") -> Decimal:
    """Round to the currency's smallest unit: cents for USD, whole yen for JPY."""
    return to_decimal(value).quantize(_exponent(currency))


def format_money(value: Decimal | int | str, currency: str = "USD") -> str:
    """Format with the currency's symbol, e.g. ``$1,234.50``, ``-$3.00`` or ``\\u00a51,234``."""
    amount = round_money(value, currency)
    sign = "-" if amount < 0 else ""
    return f"{sign}{SYMBOLS[currency]}{abs(amount):,.{MINOR_UNITS[currency]}f}"
'''

MONEY_FIXED = _replace(
    _replace(
        MONEY_V2, "from decimal import Decimal\n", "from decimal import ROUND_HALF_UP, Decimal\n"
    ),
    '''    """Round to the currency's smallest unit: cents for USD, whole yen for JPY."""
    return to_decimal(value).quantize(_exponent(currency))
''',
    '''    """Round half-up to the currency's smallest unit: cents for USD, whole yen for JPY.

    The rounding mode is explicit because ``quantize`` otherwise uses the decimal context's
    ROUND_HALF_EVEN, which books half a cent of tax down.
    """
    return to_decimal(value).quantize(_exponent(currency), rounding=ROUND_HALF_UP)
''',
)

INVOICE_V1 = '''\
"""Invoices: line items, sales tax and totals."""

from dataclasses import dataclass, field
from decimal import Decimal

from invoicing.money import round_money, to_decimal


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_price: Decimal

    @property
    def amount(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    number: str
    tax_rate: Decimal = Decimal("0")
    items: list[LineItem] = field(default_factory=list)

    def add(self, description: str, quantity: int, unit_price: Decimal | int | str) -> LineItem:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        item = LineItem(description, quantity, to_decimal(unit_price))
        self.items.append(item)
        return item

    @property
    def subtotal(self) -> Decimal:
        return round_money(sum((item.amount for item in self.items), Decimal("0")))

    @property
    def tax(self) -> Decimal:
        # Tax is computed once on the subtotal, not per line, so lines never drift by a cent.
        return round_money(self.subtotal * self.tax_rate)

    @property
    def total(self) -> Decimal:
        return self.subtotal + self.tax
'''

INVOICE_V2 = '''\
"""Invoices: line items, discounts, sales tax and totals."""

from dataclasses import dataclass, field
from decimal import Decimal

from invoicing.money import round_money, to_decimal


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_price: Decimal

    @property
    def amount(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    number: str
    tax_rate: Decimal = Decimal("0")
    discount_rate: Decimal = Decimal("0")
    items: list[LineItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not Decimal("0") <= self.discount_rate <= Decimal("1"):
            raise ValueError("discount_rate must be between 0 and 1")

    def add(self, description: str, quantity: int, unit_price: Decimal | int | str) -> LineItem:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        item = LineItem(description, quantity, to_decimal(unit_price))
        self.items.append(item)
        return item

    @property
    def subtotal(self) -> Decimal:
        return round_money(sum((item.amount for item in self.items), Decimal("0")))

    @property
    def discount(self) -> Decimal:
        return round_money(self.subtotal * self.discount_rate)

    @property
    def tax(self) -> Decimal:
        # Sales tax is owed on what the customer actually pays, so the discount comes first.
        # It is computed once on the total, not per line, so lines never drift by a cent.
        return round_money((self.subtotal - self.discount) * self.tax_rate)

    @property
    def total(self) -> Decimal:
        return self.subtotal - self.discount + self.tax
'''

INVOICE_V3 = '''\
"""Invoices: line items, discounts, sales tax and totals."""

from dataclasses import dataclass, field
from decimal import Decimal

from invoicing.money import MINOR_UNITS, round_money, to_decimal


@dataclass(frozen=True)
class LineItem:
    description: str
    quantity: int
    unit_price: Decimal

    @property
    def amount(self) -> Decimal:
        return self.unit_price * self.quantity


@dataclass
class Invoice:
    number: str
    tax_rate: Decimal = Decimal("0")
    discount_rate: Decimal = Decimal("0")
    currency: str = "USD"
    items: list[LineItem] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not Decimal("0") <= self.discount_rate <= Decimal("1"):
            raise ValueError("discount_rate must be between 0 and 1")
        if self.currency not in MINOR_UNITS:
            raise ValueError(f"unsupported currency: {self.currency}")

    def add(self, description: str, quantity: int, unit_price: Decimal | int | str) -> LineItem:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        item = LineItem(description, quantity, to_decimal(unit_price))
        self.items.append(item)
        return item

    @property
    def subtotal(self) -> Decimal:
        amount = sum((item.amount for item in self.items), Decimal("0"))
        return round_money(amount, self.currency)

    @property
    def discount(self) -> Decimal:
        return round_money(self.subtotal * self.discount_rate, self.currency)

    @property
    def tax(self) -> Decimal:
        # Sales tax is owed on what the customer actually pays, so the discount comes first.
        # It is computed once on the total, not per line, so lines never drift by a cent.
        return round_money((self.subtotal - self.discount) * self.tax_rate, self.currency)

    @property
    def total(self) -> Decimal:
        return self.subtotal - self.discount + self.tax
'''

INVOICE_V4 = (
    _replace(
        INVOICE_V3,
        "from invoicing.money import MINOR_UNITS, round_money, to_decimal\n",
        "from invoicing.money import MINOR_UNITS, format_money, round_money, to_decimal\n",
    )
    + '''
    def render(self) -> str:
        """Plain-text invoice, one line per item, for e-mails and the console."""

        def money(amount: Decimal) -> str:
            return format_money(amount, self.currency)

        lines = [f"Invoice {self.number}"]
        for item in self.items:
            lines.append(
                f"  {item.quantity} x {item.description} @ {money(item.unit_price)}"
                f" = {money(item.amount)}"
            )
        lines.append(f"Subtotal: {money(self.subtotal)}")
        if self.discount:
            lines.append(f"Discount: -{money(self.discount)}")
        lines.append(f"Tax: {money(self.tax)}")
        lines.append(f"Total: {money(self.total)}")
        return "\\n".join(lines) + "\\n"
'''
)

TEST_MONEY_V1 = """\
from decimal import Decimal

import pytest

from invoicing.money import format_money, round_money, to_decimal


def test_to_decimal_accepts_strings_and_ints():
    assert to_decimal("12.50") == Decimal("12.50")
    assert to_decimal(3) == Decimal("3")


def test_to_decimal_refuses_floats():
    with pytest.raises(TypeError):
        to_decimal(0.1)


def test_round_money_to_cents():
    assert round_money("10.234") == Decimal("10.23")
    assert round_money("10.236") == Decimal("10.24")


def test_format_money_usd():
    assert format_money("1234.5") == "$1,234.50"


def test_format_money_negative():
    assert format_money("-3") == "-$3.00"
"""

TEST_MONEY_V2 = (
    TEST_MONEY_V1
    + """

def test_format_money_jpy():
    assert round_money("1234.4", "JPY") == Decimal("1234")
    assert format_money("1234", "JPY") == "\\u00a51,234"


def test_unknown_currency_is_refused():
    with pytest.raises(ValueError):
        round_money("1", "XYZ")
"""
)

TEST_MONEY_WITH_FIX_TESTS = (
    TEST_MONEY_V2
    + """

def test_round_money_rounds_half_up():
    assert round_money("0.125") == Decimal("0.13")
    assert round_money("-0.125") == Decimal("-0.13")
    assert round_money("0.135") == Decimal("0.14")


def test_round_money_rounds_half_up_for_zero_decimal_currency():
    assert round_money("2.5", "JPY") == Decimal("3")
    assert round_money("3.5", "JPY") == Decimal("4")


def test_format_money_rounds_half_cent_up():
    assert format_money("0.005") == "$0.01"
"""
)

TEST_INVOICE_V1 = """\
from decimal import Decimal

import pytest

from invoicing.invoice import Invoice


def make_invoice(tax_rate="0", **kwargs):
    return Invoice(number="INV-1001", tax_rate=Decimal(tax_rate), **kwargs)


def test_subtotal_sums_line_items():
    invoice = make_invoice()
    invoice.add("Widget", 3, "4.99")
    invoice.add("Gadget", 1, "12.00")
    assert invoice.subtotal == Decimal("26.97")


def test_total_includes_tax():
    invoice = make_invoice("0.05")
    invoice.add("Consulting hour", 2, "80.00")
    assert invoice.tax == Decimal("8.00")
    assert invoice.total == Decimal("168.00")


def test_add_refuses_non_positive_quantity():
    with pytest.raises(ValueError):
        make_invoice().add("Widget", 0, "1.00")
"""

TEST_INVOICE_V2 = (
    TEST_INVOICE_V1
    + """

def test_discount_applies_before_tax():
    invoice = make_invoice("0.05", discount_rate=Decimal("0.10"))
    invoice.add("Consulting hour", 2, "100.00")
    assert invoice.discount == Decimal("20.00")
    assert invoice.tax == Decimal("9.00")
    assert invoice.total == Decimal("189.00")


def test_discount_rate_must_be_a_fraction():
    with pytest.raises(ValueError):
        make_invoice(discount_rate=Decimal("15"))
"""
)

TEST_INVOICE_V3 = (
    TEST_INVOICE_V2
    + """

def test_jpy_invoice_has_no_minor_units():
    invoice = make_invoice("0.10", currency="JPY")
    invoice.add("Tea set", 2, "3450")
    assert invoice.tax == Decimal("690")
    assert invoice.total == Decimal("7590")
"""
)

TEST_INVOICE_V4 = (
    TEST_INVOICE_V3
    + """

def test_render_lists_items_and_totals():
    invoice = make_invoice("0.05")
    invoice.add("Widget", 3, "4.99")
    invoice.add("Gadget", 1, "12.00")
    assert invoice.render() == (
        "Invoice INV-1001\\n"
        "  3 x Widget @ $4.99 = $14.97\\n"
        "  1 x Gadget @ $12.00 = $12.00\\n"
        "Subtotal: $26.97\\n"
        "Tax: $1.35\\n"
        "Total: $28.32\\n"
    )
"""
)

TEST_INVOICE_WITH_FIX_TESTS = (
    TEST_INVOICE_V4
    + """

def test_tax_on_half_cent_rounds_up():
    invoice = make_invoice("0.0825")
    invoice.add("Notebook", 4, "2.50")
    assert invoice.tax == Decimal("0.83")
    assert invoice.total == Decimal("10.83")
"""
)

# (message, ISO date, {path: content}) - each commit writes the listed files on top of the last.
COMMITS: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        "Add money helpers for parsing, rounding and formatting",
        "2024-03-04T09:12:00+01:00",
        {
            ".gitignore": GITIGNORE,
            "README.md": README_V1,
            "pyproject.toml": PYPROJECT_V1,
            "invoicing/__init__.py": INIT,
            "invoicing/money.py": MONEY_V1,
        },
    ),
    (
        "Add invoices with line items, tax and totals",
        "2024-03-05T14:40:00+01:00",
        {"invoicing/invoice.py": INVOICE_V1},
    ),
    (
        "Add tests for money helpers and invoices",
        "2024-03-06T10:05:00+01:00",
        {"tests/test_money.py": TEST_MONEY_V1, "tests/test_invoice.py": TEST_INVOICE_V1},
    ),
    (
        "Support percentage discounts applied before tax",
        "2024-03-12T16:21:00+01:00",
        {"invoicing/invoice.py": INVOICE_V2, "tests/test_invoice.py": TEST_INVOICE_V2},
    ),
    (
        "Support EUR, GBP and JPY; round to each currency's minor unit\n\n"
        "round_money and format_money take a currency code. JPY has no minor unit, so\n"
        "amounts are rounded to whole yen. Bump version to 0.2.0.",
        "2024-03-19T11:47:00+01:00",
        {
            "pyproject.toml": PYPROJECT_V2,
            "invoicing/money.py": MONEY_V2,
            "invoicing/invoice.py": INVOICE_V3,
            "tests/test_money.py": TEST_MONEY_V2,
            "tests/test_invoice.py": TEST_INVOICE_V3,
        },
    ),
    (
        "Add plain-text invoice rendering",
        "2024-03-21T09:30:00+01:00",
        {
            "README.md": README_V2,
            "invoicing/invoice.py": INVOICE_V4,
            "tests/test_invoice.py": TEST_INVOICE_V4,
        },
    ),
)

GOLD_CHANGES = {"invoicing/money.py": MONEY_FIXED}
TEST_CHANGES = {
    "tests/test_money.py": TEST_MONEY_WITH_FIX_TESTS,
    "tests/test_invoice.py": TEST_INVOICE_WITH_FIX_TESTS,
}


def build(out_dir: Path) -> dict[str, Path]:
    """(Re)create ``out_dir/repo`` at the buggy base commit and write ``instances.json``."""
    out_dir = Path(out_dir).resolve()  # git clone below runs in another cwd
    out_dir.mkdir(parents=True, exist_ok=True)
    repo = out_dir / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir()

    _git(repo, "init", "--quiet")
    for message, when, files in COMMITS:
        _write(repo, files)
        _git(repo, "add", "--all")
        _git(repo, "commit", "--quiet", "--no-verify", "-m", message, when=when)
    base_commit = _git(repo, "rev-parse", "HEAD").strip()

    with tempfile.TemporaryDirectory(prefix="swe-demo-") as scratch_root:
        scratch = Path(scratch_root) / "repo"
        _git(Path(scratch_root), "clone", "--quiet", "--no-hardlinks", str(repo), str(scratch))
        gold_patch = _diff_for(scratch, GOLD_CHANGES)
        test_patch = _diff_for(scratch, TEST_CHANGES)

    instance = {
        "instance_id": INSTANCE_ID,
        "repo": REPO_NAME,
        "base_commit": base_commit,
        "problem_statement": PROBLEM_STATEMENT,
        "patch": gold_patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": FAIL_TO_PASS,
        "PASS_TO_PASS": PASS_TO_PASS,
        "test_cmd": TEST_CMD,
        "environment_spec": ENVIRONMENT_SPEC,
        "requirements": REQUIREMENTS,
        "interface": INTERFACE,
    }
    instances = out_dir / "instances.json"
    instances.write_text(json.dumps([instance], indent=2) + "\n", encoding="utf-8")
    return {"instances": instances, "repo": repo}


def _diff_for(scratch: Path, changes: dict[str, str]) -> str:
    """Apply ``changes`` to the clean scratch clone, capture ``git diff``, then discard them."""
    _write(scratch, changes)
    _git(scratch, "add", "--all")  # staged, so new files would be part of the diff too
    diff = _git(scratch, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames")
    _git(scratch, "reset", "--quiet", "--hard", "HEAD")
    return diff


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8", newline="\n")


def _git(cwd: Path, *args: str, when: str | None = None) -> str:
    """Run git with pinned identity and config, ignoring the user's and the system's config."""
    # Inherited GIT_DIR / GIT_INDEX_FILE etc. (e.g. when run from a hook) would redirect git.
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": AUTHOR_NAME,
        "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
        "GIT_COMMITTER_NAME": AUTHOR_NAME,
        "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL,
        "LC_ALL": "C",
    }
    if when is not None:
        env["GIT_AUTHOR_DATE"] = when
        env["GIT_COMMITTER_DATE"] = when
    config = [arg for item in GIT_CONFIG for arg in ("-c", item)]
    result = subprocess.run(
        ["git", *config, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout
