"""The shape every structural check returns."""

from dataclasses import dataclass, field
from typing import Any

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"


@dataclass
class CheckResult:
    """One check's outcome: ``message`` is a sentence a person can act on."""

    name: str
    outcome: str  # PASSED | FAILED | ERROR | SKIPPED
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome in (PASSED, SKIPPED)
