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
  identifier quoted inside a backtick code span (``dict(mac=x['mac'])``), which is a key —
  and quoted one-letter capitals (``'D'``), found unquoted too ("status D");
- codes: tokens of 2–12 characters that mix letters and digits (``CAT7``, ``R3``) or are
  all capitals (``LN``, ``CLIENT_ID``) — except SQL keywords and everyday acronyms (``AND``,
  ``MAC``, ``DHCP``) and tokens of a dotted name (``district.A12``); matched
  case-sensitively;
- names written as code: CamelCase, snake_case or a leading underscore (``MIMEApplication``,
  ``set_run_state_for_host``, ``_encoder``);
- numbers with at least two digits (``1995``, ``5.0``) and dates in ISO or written form
  (``1996-01-01``, ``January 1, 1950``; compared as dates, whatever their spelling).

Only what the resolution *states* decides: a value it rules out ("do NOT use '7bit'",
"'$2a$', not '$2b$'", "Counterexample: …") or only shows in an example is not its answer, and
a date inside a year the resolution names is that year. A literal that the blocker's
description mentions (also a quoted phrase in other word forms) is the gap's topic, not its
answer. Names the agent reads elsewhere are not distinctive: the database's tables and
columns (or, without one, those the description CSVs, the task's ``table.column`` mentions
and its gold SQL name), the repository's names at the base commit, and the names the
specification gives as code — except that when the gap is which name to use (its
description speaks of columns, keys, parameters…, or names their family, ``AvGScrWrite*``),
a sentence must name the chosen ones to give the answer away. Nor is the task's own
vocabulary: a name, an acronym (``SAT``) or a phrase that two or more visible sentences use.
"""

from .findings import ERROR, RULES, WARNING, Finding
from .literals import Literal
from .runner import lint_task, resolution_names
from .text import STOPWORDS

__all__ = [
    "ERROR",
    "RULES",
    "STOPWORDS",
    "WARNING",
    "Finding",
    "Literal",
    "lint_task",
    "resolution_names",
]
