"""What the workspace's forms post, as typed, under the names of the input schema of the same
action (``authoring.serializers``), which the view then reads it through with ``form_input``:
a refused form is shown again as it was typed, and the schema's refusal (a ``DomainError``,
400) is said where the fragment says its other errors."""

from django.http import QueryDict

# Schema name → the workspace form's name, per action.
WAIVE = {"fingerprint": "fingerprint", "reason": "reason", "withdraw": "withdraw"}
SAVE = {
    "expected_version": "expected_version",
    "session": "session",
    "autosave": "autosave",
    "blocker": "blocker",
}
SQL = {
    "console_sql": "console_sql",
    "gold_sql": "env.gold_sql",
    "golden_output": "env.golden_output",
    "edit_script": "env.edit_script",
}
SETUP_PATCH = {"setup_patch": "env.setup_patch"}
REPO_EDIT = {**SETUP_PATCH, "path": "path", "content": "content"}


def spec_section(section: str) -> dict[str, str]:
    """The form's text of one section of the blocked specification (``spec.<section>``)."""
    return {"text": f"spec.{section}"}


def form_typed(post, names: dict[str, str]) -> QueryDict:
    """The fields ``names`` maps, as posted, under the schema's names. A field the form did not
    send stays out (the schema's default, or "as saved", holds), and the result is a form's
    data still, so the schema reads it as it reads a page's ``request.POST``."""
    typed = QueryDict(mutable=True)
    for name, posted in names.items():
        if posted in post:
            typed.setlist(name, post.getlist(posted))
    return typed
