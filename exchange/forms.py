from django import forms
from django.conf import settings

from exchange.models import ImportJob
from exchange.serializers import ExportIn
from exchange.services.imports import IMPORTERS, SKIP_MISSING_DATABASES_LABEL
from hilbench_annotate.forminput import form_input
from hilbench_annotate.vocabulary import Domain, TaskStatus


class ImportForm(forms.Form):
    """One form for every importer (``services.imports.IMPORTERS``: the fields each kind
    shows and the files it needs); ``clean`` checks the files the chosen kind needs."""

    kind = forms.ChoiceField(choices=ImportJob.Kind.choices, label="What to import")
    project = forms.TypedChoiceField(coerce=int, label="Project")
    questions = forms.FileField(
        required=False,
        label="BIRD questions (.json / .jsonl)",
        help_text="Records {question_id, db_id, question, evidence, SQL, difficulty}",
    )
    databases = forms.FileField(
        required=False,
        label="BIRD databases (.zip / .tar.gz)",
        help_text="<db_id>/<db_id>.sqlite and <db_id>/database_description/*.csv",
    )
    skip_missing_databases = forms.BooleanField(required=False, label=SKIP_MISSING_DATABASES_LABEL)
    instances = forms.FileField(required=False, label="SWE-bench instances (.json / .jsonl)")
    repository = forms.FileField(
        required=False, label="Repository archive (.zip / .tar.gz with its .git)"
    )
    # Its length is ImportOptionsIn's to check, in the words the API says it in.
    repo_url = forms.CharField(
        required=False,
        label="…or repository URL",
        widget=forms.TextInput(attrs={"maxlength": 500}),
    )
    archive = forms.FileField(
        required=False,
        label="HiL-Bench task folders or export bundle (.zip / .tar.gz)",
        help_text="Folders like sql_0/ with baseline/, ask_human/, full_info/, shared/; "
        "a bundle's manifest checksums are verified",
    )

    def __init__(self, *args, projects=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [(p.pk, p.name) for p in projects]
        prefixes = settings.REPOSITORY_URL_PREFIXES
        self.fields["repo_url"].help_text = (
            f"This site clones URLs starting with {', '.join(prefixes)}"
            if prefixes
            else "This site takes uploaded repository archives only"
        )

    def clean(self):
        data = super().clean()
        kind = data.get("kind")
        importer = IMPORTERS.get(kind)
        for name in importer.needs if importer else ():
            if not data.get(name):
                self.add_error(name, "Needed for this kind of import.")
        if (
            kind == ImportJob.Kind.BIRD
            and not data.get("databases")
            and not data.get("skip_missing_databases")
        ):
            self.add_error("databases", "Upload the databases, or tick the box to import without.")
        if kind == ImportJob.Kind.SWEBENCH and not (data.get("repository") or data.get("repo_url")):
            self.add_error("repository", "Upload the repository or give its URL.")
        return data


class ExportForm(forms.Form):
    """What a lead exports, as the Export page shows it: a selection of one project's tasks,
    and the opt-ins. What the page posts is read by ``export_input`` (the API's
    ``ExportIn``), not by this form."""

    project = forms.TypedChoiceField(coerce=int, label="Project")
    domain = forms.ChoiceField(
        required=False, choices=[("", "Both domains"), *Domain.choices], label="Domain"
    )
    states = forms.MultipleChoiceField(
        required=False,
        choices=TaskStatus.choices,
        widget=forms.CheckboxSelectMultiple,
        label="States (none ticked: any)",
        help_text="Without a draft bundle only approved tasks whose gates are green are written.",
    )
    tasks = forms.CharField(
        required=False,
        label="Task ids (optional)",
        help_text="Comma- or space-separated; empty: every task the other filters match",
    )
    tags = forms.CharField(
        required=False,
        label="Tags (optional)",
        help_text="Tasks carrying any of these tags; comma- or space-separated",
    )
    draft = forms.BooleanField(
        required=False,
        label="Draft bundle: include tasks that did not pass every gate (the manifest says so)",
    )
    reveal_reviewers = forms.BooleanField(
        required=False, label="Name reviewers in review.json (default: pseudonyms)"
    )
    allow_internet = forms.BooleanField(
        required=False,
        label="Allow the tasks' containers to reach the internet (default: no network)",
    )
    judge_endpoint = forms.CharField(
        required=False,
        max_length=500,
        label="The release's LLM judge: endpoint (optional)",
        help_text="Tasks kept from the HiL-Bench release: their ask_human is judged by the "
        "release's own sidecar calling this OpenAI-compatible endpoint, instead of the app's "
        "embedded judge. Give a model too. The manifest says which judge scores.",
    )
    judge_model = forms.CharField(
        required=False, max_length=200, label="The release's LLM judge: model (optional)"
    )

    def __init__(self, *args, projects=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [(p.pk, p.name) for p in projects]


EXPORT_TEXTS = ("project", "domain", "tasks", "tags", "judge_endpoint", "judge_model")
EXPORT_CHECKBOXES = ("draft", "reveal_reviewers", "allow_internet")


def export_typed(post) -> dict:
    """The Export form as posted, kept as typed (ids and tags as written): a refused export
    shows it again."""
    # A field the form did not send is left out, as from the API's body: "required".
    typed = {name: post.get(name) for name in EXPORT_TEXTS if name in post}
    typed["states"] = post.getlist("states")
    # An unticked box is not posted at all: false, as in the API's body.
    typed |= {name: post.get(name, False) for name in EXPORT_CHECKBOXES}
    return typed


def export_input(typed: dict) -> dict:
    """The typed export in the body ``POST /api/exports/`` takes, validated by the same
    ``ExportIn``; the page separates ids and tags by commas or spaces."""
    words = {name: typed.get(name, "").replace(",", " ").split() for name in ("tasks", "tags")}
    return form_input(ExportIn, {**typed, **words})
