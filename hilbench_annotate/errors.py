"""Domain errors and access refusals. The API's exception handler maps them to 400 / 403 /
409 / 429, the middleware a refusal to a 403 page."""


class Refused(Exception):
    """What a service refuses, for what the request asks (``DomainError``) or for who asks
    (``AccessDenied``): a command, a bulk action or a tool reports either as a refusal with
    its message, where a page or the API tell them apart (a message vs a 403)."""


class DomainError(Refused):
    """A request the domain refuses; the message says what is wrong."""

    status_code = 400


class Unavailable(Exception):
    """Something the request depends on could not answer (the judge's endpoint, a model):
    the API says 503 naming it, never a silent default answer."""

    what = "A service"


class AccessDenied(Refused):
    """The user may not do this; the message names the missing role or relation.

    Not a ``DomainError``: a view shows a domain error as a message on its page, but an access
    refusal is a 403 page (``access.AccessDeniedMiddleware``) or a 403 response (the API's
    ``exception_handler``) — a view that catches ``DomainError`` never swallows it."""

    status_code = 403


class StaleVersion(DomainError):
    """Someone saved the object since the caller read it."""

    status_code = 409

    def __init__(self, *, expected: int, current: int):
        # People count a task's states in revisions; ``version`` is only the lock the form
        # carries (every write, a status change too, moves it), so the message names none.
        super().__init__(
            "Someone else changed this task since you opened it; reload it to see their "
            "changes, then try again."
        )
        self.expected = expected
        self.current = current


class LimitReached(DomainError):
    """A caller's limit was reached; ``limit`` names which (the API body says it).

    A rate limit carries ``retry_after`` (seconds): the API answers 429 with a Retry-After
    header. A cap has none — waiting does not help — and is refused with 403.
    """

    def __init__(self, message: str, *, limit: str, retry_after: int | None = None):
        super().__init__(message)
        self.limit = limit
        self.retry_after = retry_after
        self.status_code = 403 if retry_after is None else 429


class ImportRefused(DomainError):
    """An import file with bad records: nothing was imported.

    ``problems`` lists every bad record as ``(where, reason)``; where is the record's
    position in the file (0-based), a folder name, or words naming another thing at fault
    (``database financial``), shown as they are.
    """

    def __init__(self, summary: str, problems: list[tuple[object, str]]):
        self.summary = summary
        self.problems = problems
        super().__init__(self.render())

    def render(self, limit: int = 50) -> str:
        lines = [self.summary]
        for where, reason in self.problems[:limit]:
            named = isinstance(where, str) and " " in where
            lines.append(f"  {where if named else f'record {where}'}: {reason}")
        if len(self.problems) > limit:
            lines.append(f"  … and {len(self.problems) - limit} more")
        return "\n".join(lines)
