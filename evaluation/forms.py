from django import forms

from .agents import AGENTS, GUESSABILITY
from .models import Mode, SupportStudy
from .support import METHODS


def _task_ids(text: str) -> list[int]:
    ids = []
    for part in text.replace(",", " ").split():
        if not part.isdigit():
            raise forms.ValidationError(f"{part!r} is not a task id.")
        ids.append(int(part))
    return ids


class EndpointForm(forms.Form):
    name = forms.CharField(max_length=100)
    base_url = forms.URLField(
        label="Base URL", help_text="e.g. http://gpu-1:8000/v1", assume_scheme="https"
    )
    model = forms.CharField(
        max_length=200,
        label="Model it serves",
        help_text="As the server names it (e.g. gpt-4o, meta-llama/Llama-3.3-70B-Instruct): the "
        "pass-rate gate counts this endpoint's runs as this model, and two endpoints of one "
        "model as one",
    )
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="API key variable",
        help_text="An environment variable of the workers named HILBENCH_MODEL_KEY_…",
    )
    concurrency = forms.IntegerField(min_value=1, max_value=32, initial=1)
    timeout_s = forms.FloatField(min_value=1, initial=60, label="Timeout (s)")
    max_turns = forms.IntegerField(min_value=1, max_value=100, initial=12)


class _TaskChoice(forms.Form):
    endpoint = forms.TypedChoiceField(coerce=int, choices=())
    tasks = forms.CharField(
        required=False,
        help_text="Task ids separated by spaces; empty: every SQL task of the project",
    )

    def __init__(self, *args, endpoints=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["endpoint"].choices = [(e.pk, str(e)) for e in endpoints]

    def clean_tasks(self):
        return _task_ids(self.cleaned_data["tasks"])


class RunForm(_TaskChoice):
    modes = forms.MultipleChoiceField(
        choices=Mode.choices, initial=Mode.values, widget=forms.CheckboxSelectMultiple
    )
    passes = forms.IntegerField(min_value=1, max_value=10, initial=3, label="Passes (k)")


class HarborRunForm(forms.Form):
    agent = forms.ChoiceField(choices=(), help_text=GUESSABILITY)
    endpoint = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, choices=(),
        help_text="Needed for a model agent; its key stays in the workers' environment",
    )  # fmt: skip
    tasks = forms.CharField(
        required=False, help_text="Task ids separated by spaces (SQL and SWE alike)"
    )
    tag = forms.CharField(required=False, max_length=100, help_text="…or every task with a tag")
    waiting = forms.BooleanField(
        required=False, label="…or every task the pass-rate gate has not kept yet"
    )
    modes = forms.MultipleChoiceField(
        choices=Mode.choices, initial=Mode.values, widget=forms.CheckboxSelectMultiple
    )
    passes = forms.IntegerField(min_value=1, max_value=10, initial=1, label="Passes (k)")
    allow_internet = forms.BooleanField(
        required=False,
        label="Let the trials reach the internet",
        help_text="Off: the agent's container has no network at all, whatever a task's "
        "task.toml asks; its tools are reached on loopback",
    )

    def __init__(self, *args, endpoints=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].choices = [(a.key, a.label) for a in AGENTS.values()]
        self.fields["endpoint"].choices = [("", "—")] + [(e.pk, str(e)) for e in endpoints]

    def clean_tasks(self):
        return _task_ids(self.cleaned_data["tasks"])

    def clean(self):
        data = super().clean()
        if not (data.get("tasks") or data.get("tag") or data.get("waiting")):
            raise forms.ValidationError(
                "Choose the tasks: their ids, a tag, or the tasks waiting on the pass-rate gate."
            )
        return data


class StudyForm(_TaskChoice):
    method = forms.ChoiceField(
        choices=[(m, label) for m, label in SupportStudy.Method.choices if m in METHODS]
    )


class ResultsForm(forms.Form):
    file = forms.FileField(help_text=".jsonl, or a HiL-Bench results folder as .zip / .tar.gz")
    model = forms.CharField(
        max_length=200, required=False, help_text="Needed for .jsonl (a folder names its models)"
    )


class SupportScoresForm(forms.Form):
    file = forms.FileField(help_text=".jsonl: {task, score, correct, correct_with_support}")
    model = forms.CharField(max_length=200)


class PolicyForm(forms.Form):
    k = forms.IntegerField(min_value=1, max_value=10, label="k")
    full_info_min = forms.FloatField(min_value=0, max_value=1, label="full_info pass@k ≥")
    baseline_max = forms.FloatField(min_value=0, max_value=1, label="baseline pass@k ≤")
    min_models = forms.IntegerField(
        min_value=1,
        max_value=50,
        label="Distinct models needed",
        help_text="2 by default; runs of one served model count as one",
    )
    min_models_reason = forms.CharField(
        required=False,
        max_length=1000,
        label="Why fewer than two models",
        help_text="Needed to decide with one model; recorded with your name and shown with "
        "every verdict of the gate",
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def clean(self):
        data = super().clean()
        if data.get("min_models") == 1 and not data.get("min_models_reason", "").strip():
            self.add_error(
                "min_models_reason", "Say why one model is enough for this project's tasks."
            )
        return data


def taxonomy_typed(post, entries) -> dict:
    """The taxonomy editor's rows as posted (``name-<id>``, ``definition-<id>``,
    ``examples-<id>``), in the shape ``TaxonomyIn`` reads; a field the form did not send keeps
    the entry's current words."""
    return {
        "entries": [
            {
                "id": e.pk,
                "name": post.get(f"name-{e.pk}", e.name),
                "definition": post.get(f"definition-{e.pk}", e.definition),
                "examples": post.get(f"examples-{e.pk}", e.examples),
            }
            for e in entries
        ]
    }


def with_files(post, files):
    """A page's form and its files in one ``QueryDict``, as DRF's ``request.data`` holds a
    multipart body: a schema reads the page's upload as the API reads its own."""
    data = post.copy()
    data.update(files)
    return data
