"""The core pages' forms: the token form, and the tag field gathered as typed and read
through ``TaskTagsIn``."""

from django import forms

from hilbench_annotate.forminput import form_input
from hilbench_annotate.serializers import TaskTagsIn


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="Token name", help_text="e.g. eval-harness-1")


def tags_typed(post) -> str:
    """The tag field as typed: a refused change shows it again."""
    return post.get("tags", "")


def tags_input(typed: str) -> list[str]:
    """The typed names (spaces or commas between them) as ``TaskTagsIn`` reads them."""
    return form_input(TaskTagsIn, {"tags": typed.replace(",", " ").split()})["tags"]
