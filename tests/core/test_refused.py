"""Issue 47, item 3: one base for what a service refuses, so a command, a bulk action or a
tool catches ``Refused`` instead of repeating ``(DomainError, AccessDenied)``; a page still
tells the two apart (an access refusal is never a domain error a view shows as a message)."""

from hilbench_annotate.errors import AccessDenied, DomainError, Refused, StaleVersion


def test_both_kinds_are_refusals_and_stay_apart():
    assert issubclass(DomainError, Refused) and issubclass(AccessDenied, Refused)
    assert not issubclass(AccessDenied, DomainError)
    assert issubclass(StaleVersion, Refused)
