"""Lint a task draft against the benchmark's authoring rules (PRODUCT.md).

Pure functions over a revision snapshot (``{"domain", "blocked_spec", "environment",
"blockers"}``): no database, no models, no I/O. It runs on every keystroke pause, so it is
kept to cheap text heuristics plus one cached ``sqlglot`` parse of the gold SQL.

The heuristics were calibrated on the public HiL-Bench release (five registries in
``../shared/examples/hilbench``): valid release items should not raise errors, while the
genuinely questionable ones (a trigger question that lists the answer among its options) do.

*Distinctive literals* (rules ``contains_resolution`` and ``resolution_leak``) are the parts
of a resolution an agent could not guess and that give the answer away:

- quoted strings (``'CAT7'``, ``"sanctioned"``) of 2–80 characters — except a lowercase
  identifier quoted inside a backtick code span (``dict(mac=x['mac'])``), which is a key;
- codes: tokens of 2–12 characters that mix letters and digits (``CAT7``, ``R3``) or are
  all capitals (``LN``, ``CLIENT_ID``) — except SQL keywords and everyday acronyms (``AND``,
  ``MAC``, ``DHCP``), tokens of a dotted name (``district.A12``, ``distro.id()``) and names
  of known tables or columns; matched case-sensitively;
- numbers with at least two digits (``1995``, ``5.0``) and dates in ISO or written form
  (``1996-01-01``, ``January 1, 1950``; compared as dates, whatever their spelling).

Column names and ordinary words are never distinctive. A literal that also appears in the
blocker's description is the gap's topic, not its answer, and is ignored by both rules.
"""

from .findings import ERROR, RULES, WARNING, Finding
from .literals import Literal
from .runner import lint_task
from .text import STOPWORDS

__all__ = ["ERROR", "RULES", "STOPWORDS", "WARNING", "Finding", "Literal", "lint_task"]
