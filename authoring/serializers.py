"""Input schemas of the workspace's actions. The pages read their forms through them
(``hilbench_annotate.forminput.form_input``), so an API of the same action takes the same body
and refuses it in the same words; every rule beyond shape lives in the services."""

from rest_framework import serializers

from authoring.models import LintWaiver
from hilbench_annotate.params import MAX_ID


def _text(**kwargs) -> serializers.CharField:
    """Text as typed: spaces and line ends kept (a patch, a script, SQL), empty allowed."""
    return serializers.CharField(allow_blank=True, trim_whitespace=False, **kwargs)


def _version() -> serializers.IntegerField:
    """The task version the form was made on (optimistic lock), as core's ``VersionedIn``;
    bounded by the column's range, so a larger number is refused, never a database error."""
    return serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        help_text="The task version the change was made on (optimistic lock)",
    )


class WaiveIn(serializers.Serializer):
    """Waive a lint finding (``lint_waive``), or withdraw its waiver (``withdraw``)."""

    fingerprint = serializers.CharField(
        max_length=LintWaiver._meta.get_field("fingerprint").max_length,
        trim_whitespace=False,
        help_text="The finding's fingerprint (its rule and field)",
    )
    # The service says why a reason is too short; a withdrawal needs none.
    reason = _text(default="")
    withdraw = serializers.BooleanField(default=False)


class RestoreIn(serializers.Serializer):
    """Restore revision ``number`` as the task's next revision (``revision_restore``)."""

    number = serializers.IntegerField(min_value=1, max_value=MAX_ID, label="Revision")
    expected_version = _version()


class WorkspaceSaveIn(serializers.Serializer):
    """What a workspace save carries beside its draft (``drafts.draft_from_form``): the version
    it was made on, its editing session (a session's autosaves fold into one revision), whether
    it is an autosave (the page's script says so; Ctrl+S, the Save button and a plain form post
    are explicit saves), and the blocker fieldsets' form indexes in page order (each is told its
    row's pk)."""

    expected_version = _version()
    session = _text(default="", max_length=64)
    autosave = serializers.BooleanField(default=False)
    blocker = serializers.ListField(child=_text(), default=list)


class SpecTextIn(serializers.Serializer):
    """A section of the blocked specification, for its live diff against the original."""

    text = _text(default="", label="Blocked text")


class GoldSqlIn(serializers.Serializer):
    """The Gold SQL card: formatting the gold SQL, filling the golden output from its result.
    A field left out is the saved one (``edit_script``) or the form's own (``golden_output``)."""

    gold_sql = _text(default="", label="Gold SQL")
    golden_output = _text(required=False)
    edit_script = _text(required=False, label="Database-edit script")


class ConsoleIn(GoldSqlIn):
    """The read-only console: its query (``console_sql``), or else the gold SQL, run on the
    database as the edit script leaves it."""

    console_sql = _text(required=False, label="Query")


class SetupPatchIn(serializers.Serializer):
    """The setup patch the form holds; left out, the saved one."""

    setup_patch = _text(required=False)


class RepoEditIn(SetupPatchIn):
    """A file edited in the repository browser, folded into the setup patch."""

    path = serializers.CharField(trim_whitespace=False)
    content = _text(default="")
