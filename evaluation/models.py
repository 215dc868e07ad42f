"""Model runs of a project's tasks, their passes, and the thresholds that select tasks.

A pass in ``ask_human`` mode logs its questions through the judge's own ``AskHumanRun`` /
``AskHumanCall`` tables (the same service the evaluation API uses), so there is one record of
what an agent asked and what the judge matched, however the run reached us.
"""

import re
from functools import lru_cache

from django.conf import settings
from django.db import models

from hilbench_annotate.jobs import Job
from hilbench_annotate.models import Project, Revision, Task

from .runner import Endpoint


class Mode(models.TextChoices):
    BASELINE = "baseline", "baseline (blocked task)"
    FULL_INFO = "full_info", "full_info (blocked task + resolutions)"
    ASK_HUMAN = "ask_human", "ask_human (blocked task + ask_human tool)"


# Words that name no model on their own: a run, endpoint or import named only with these
# (and single characters and numbers) has no recorded identity.
_GENERIC = (
    "model models llm lm ai agent bot assistant chat completion completions default unknown "
    "none null nil na nan test tests testing tmp temp local localhost custom mock fake dummy "
    "stub standin stand in echo scripted script placeholder any auto my the our new endpoint "
    "server api run baseline example sample foo bar baz loopback"
)
GENERIC_MODEL_WORDS = frozenset(_GENERIC.split())
# Hosts of many models: a name of only these names no model, and "openai:" or "openai/"
# before a name does not change it.
_PROVIDERS = (
    "openai anthropic google google-gla google-vertex vertex-ai azure bedrock groq together "
    "openrouter hosted-vllm vllm ollama cohere fireworks litellm"
)
MODEL_PROVIDERS = frozenset(_PROVIDERS.split())
_NO_IDENTITY_WORDS = GENERIC_MODEL_WORDS | MODEL_PROVIDERS
# A dated snapshot or "latest" suffix does not change which model a name denotes.
_SNAPSHOT = re.compile(r"(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8})|[-:]latest)$")


@lru_cache(maxsize=4096)
def model_identity(name: str | None) -> str | None:
    """The model a name denotes, as the pass-rate gate counts distinct models: lower case,
    spaces and underscores as hyphens, without the provider or organisation prefix
    (``openai/``, ``meta-llama/``, ``anthropic:``) or a dated snapshot / ``latest`` suffix
    (``-2024-08-06``, ``@20240620``, ``:latest``) — so ``openai/GPT-4o-2024-08-06`` and
    ``gpt-4o`` are one model. ``None`` when the name identifies no model: empty, or made
    only of generic words, single characters and numbers (``model``, ``model-a``, ``b``,
    ``default``, ``stand-in``, ``local``, ``1``)."""
    text = "-".join(str(name or "").replace("_", " ").split()).lower()
    text = text.rsplit("/", 1)[-1]
    provider, colon, rest = text.partition(":")
    if colon and provider in MODEL_PROVIDERS:
        text = rest
    text = _SNAPSHOT.sub("", text).strip("-.:@")
    tokens = [t for t in re.split(r"[-.:@]+", text) if t]
    if all(t in _NO_IDENTITY_WORDS or len(t) == 1 or t.isdigit() for t in tokens):
        return None  # also for no token at all
    return text


class ModelEndpoint(models.Model):
    """An OpenAI-compatible chat endpoint a lead registered. The key never lives here: only
    the name of the environment variable that holds it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=100, help_text="Shown on the leaderboard")
    base_url = models.URLField(help_text="…/v1 of an OpenAI-compatible server")
    model = models.CharField(
        max_length=200,
        help_text="The model the server serves, by the name it expects (e.g. gpt-4o, "
        "meta-llama/Llama-3.3-70B-Instruct): its runs count in the pass-rate gate as this model",
    )
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="Environment variable holding the API key"
    )
    concurrency = models.PositiveSmallIntegerField(default=1)
    timeout_s = models.FloatField(default=60.0)
    max_turns = models.PositiveSmallIntegerField(
        default=12, help_text="Model turns per pass before the pass counts as failed"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="endpoint_name_unique"),
            models.CheckConstraint(
                condition=models.Q(concurrency__gte=1, concurrency__lte=32),
                name="endpoint_concurrency_1_32",
            ),
            models.CheckConstraint(condition=models.Q(timeout_s__gt=0), name="endpoint_timeout"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"

    @property
    def identity(self) -> str | None:
        """The model this endpoint's runs are, for the pass-rate gate (``model_identity``)."""
        return model_identity(self.model)

    def client(self, *, max_turns: int | None = None):
        """What the runner calls: this endpoint's address, model, key variable and limits."""

        return Endpoint(
            base_url=self.base_url,
            model=self.model,
            api_key_env=self.api_key_env or None,
            timeout_s=self.timeout_s,
            max_turns=max_turns or self.max_turns,
            allowed_hosts=tuple(settings.MODEL_ENDPOINT_HOSTS),
        )


class EvaluationRun(Job):
    """A batch of passes of one model: run here against an endpoint, or imported."""

    class Source(models.TextChoices):
        BUILTIN = "builtin", "Built-in SQL runner"
        IMPORTED = "imported", "Imported results"
        HARBOR = "harbor", "Agent run in Harbor"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluation_runs")
    source = models.CharField(max_length=10, choices=Source.choices)
    endpoint = models.ForeignKey(
        ModelEndpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    model_name = models.CharField(max_length=200, help_text="Leaderboard row")
    modes = models.JSONField(default=list)
    passes = models.PositiveSmallIntegerField(default=3, help_text="k: passes per task and mode")
    task_ids = models.JSONField(default=list, blank=True)
    pending = models.JSONField(
        default=dict, blank=True, help_text="{file}: imported passes awaiting the worker"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    # A run the app drives in Harbor (``exchange.services.harbor_runs``).
    agent = models.CharField(
        max_length=80, blank=True, help_text="The agent a Harbor run ran (evaluation.agents)"
    )
    reference = models.BooleanField(
        default=False,
        help_text="A reference agent's run (scripted, no model): read by the benchmark report, "
        "never by the leaderboard or the pass-rate gate",
    )
    cancel_requested = models.BooleanField(default=False)
    allow_internet = models.BooleanField(
        default=False,
        help_text="A Harbor run: the agent's container may reach the internet (a lead's "
        "choice on the run's form; otherwise it has no network, whatever the task says)",
    )
    harbor = models.JSONField(
        default=dict, blank=True, help_text="Harbor settings of the run and the trials it skipped"
    )

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return f"run {self.pk}: {self.model_name}"


class TaskPass(models.Model):
    """One attempt of one model at one task in one mode."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="task_passes")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="task_passes")
    revision = models.ForeignKey(Revision, on_delete=models.PROTECT, related_name="+")
    mode = models.CharField(max_length=10, choices=Mode.choices)
    index = models.PositiveSmallIntegerField(help_text="1-based pass number")
    resolved = models.BooleanField()
    blocker_count = models.PositiveSmallIntegerField()
    ask_human_run = models.OneToOneField(
        "judge.AskHumanRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="task_pass",
    )
    final_sql = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True, help_text="Scoring, turns, reasons")
    error = models.TextField(blank=True, help_text="Why the pass could not finish, if it did not")
    tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "task", "mode", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "task", "mode", "index"], name="one_pass_per_index"
            ),
            models.CheckConstraint(condition=models.Q(index__gte=1), name="pass_index_from_1"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} {self.mode} pass {self.index}: {self.resolved}"


class ExcludedTry(models.Model):
    """A Harbor trial the release leaves out of every figure (``evaluation/tries.py``): the
    agent's process failed, or the environment, the verifier or Harbor did. Not a pass; the
    leaderboard says how many a model had and why."""

    class Reason(models.TextChoices):
        AGENT_ERROR = "agent_error", "agent error"
        INFRA_ERROR = "infra_error", "infra error"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="excluded_tries")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="excluded_tries")
    mode = models.CharField(max_length=10, choices=Mode.choices)
    trial = models.CharField(max_length=200, help_text="The Harbor trial's folder name")
    reason = models.CharField(max_length=12, choices=Reason.choices)
    exception = models.CharField(max_length=200, blank=True, help_text="Harbor's exception type")
    message = models.TextField(blank=True)
    reward = models.FloatField(null=True, blank=True, help_text="The verifier's, not counted")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "task", "mode", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "trial"], name="one_excluded_try_per_trial")
        ]

    def __str__(self) -> str:
        return f"{self.trial}: {self.reason} ({self.exception or 'no reward'})"


class SelectionPolicy(models.Model):
    """A project's pass-rate thresholds: a task is kept when models solve it with full
    information and fail without the resolutions."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="selection_policy"
    )
    k = models.PositiveSmallIntegerField(default=3)
    full_info_min = models.FloatField(default=0.67, help_text="Mean full_info pass@k ≥ this")
    baseline_max = models.FloatField(default=0.34, help_text="Mean baseline pass@k ≤ this")
    min_models = models.PositiveSmallIntegerField(
        default=2,
        help_text="Distinct models (by the model each run's endpoint serves, or the name given "
        "at import) with k passes in both modes needed to decide; below 2 only with a reason",
    )
    # Who lowered min_models below 2, when and why: shown wherever the gate's verdict is.
    # A policy below 2 without a reason decides as if it asked for 2 (``selection``).
    min_models_reason = models.TextField(blank=True)
    min_models_lowered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    min_models_lowered_at = models.DateTimeField(null=True, blank=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(k__gte=1, k__lte=10), name="policy_k"),
            models.CheckConstraint(
                condition=models.Q(full_info_min__gte=0, full_info_min__lte=1)
                & models.Q(baseline_max__gte=0, baseline_max__lte=1),
                name="policy_thresholds_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"selection policy of {self.project}"


class SupportStudy(Job):
    """Need-for-help scores of one model and method (the second paper), run here or imported."""

    class Method(models.TextChoices):
        DIRECT_ASK = "direct_ask", "Direct Ask"
        WRITE_THEN_ASK = "write_then_ask", "Write then Ask"
        EXECUTE_THEN_ASK = "execute_then_ask", "Execute then Ask"
        IMPORTED = "imported", "Imported scores"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="support_studies")
    model_name = models.CharField(max_length=200)
    method = models.CharField(max_length=20, choices=Method.choices)
    endpoint = models.ForeignKey(
        ModelEndpoint, on_delete=models.SET_NULL, null=True, blank=True, related_name="studies"
    )
    task_ids = models.JSONField(default=list, blank=True)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return f"{self.get_method_display()} study {self.pk}: {self.model_name}"


class SupportRecord(models.Model):
    study = models.ForeignKey(SupportStudy, on_delete=models.CASCADE, related_name="records")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField(help_text="Need-for-help score in [0, 1]")
    score_source = models.CharField(max_length=12, blank=True, help_text="logprobs / verbalised")
    correct = models.BooleanField(help_text="Correct without support")
    correct_with_support = models.BooleanField()
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "task"], name="one_record_per_task"),
            models.CheckConstraint(
                condition=models.Q(score__gte=0, score__lte=1), name="support_score_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.score:.3f}"


class Trajectory(models.Model):
    """What the agent did in one pass: ``[{role, content, tool, tool_input, tool_output,
    time}]`` (``evaluation/trajectories.py``)."""

    task_pass = models.OneToOneField(TaskPass, on_delete=models.CASCADE, related_name="trajectory")
    steps = models.JSONField()
    source = models.CharField(max_length=300, blank=True, help_text="File it was read from")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"trajectory of pass {self.task_pass_id} ({len(self.steps)} steps)"


class TaxonomyEntry(models.Model):
    """One capability dimension or failure mode of a project's failure taxonomy."""

    class Axis(models.TextChoices):
        DIMENSION = "dimension", "Capability dimension"
        MODE = "mode", "Failure mode"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="taxonomy")
    axis = models.CharField(max_length=10, choices=Axis.choices)
    key = models.SlugField(max_length=40)
    name = models.CharField(max_length=80)
    definition = models.TextField()
    examples = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["project", "axis", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "axis", "key"], name="taxonomy_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.axis}: {self.name}"


class LabellingRun(Job):
    """LLM pre-labelling of failed passes with a versioned rubric prompt."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="labelling_runs")
    endpoint = models.ForeignKey(
        ModelEndpoint, on_delete=models.SET_NULL, null=True, related_name="labelling_runs"
    )
    model_name = models.CharField(max_length=200)
    rubric_version = models.CharField(max_length=100)
    pass_ids = models.JSONField(default=list)

    class Meta(Job.Meta):
        pass

    def __str__(self) -> str:
        return f"LLM labelling run {self.pk} ({self.model_name}, {self.rubric_version})"


class FailureLabel(models.Model):
    """A failed pass's place in the taxonomy, by a person or by an LLM labelling run."""

    task_pass = models.ForeignKey(TaskPass, on_delete=models.CASCADE, related_name="failure_labels")
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True
    )
    llm_run = models.ForeignKey(
        LabellingRun, on_delete=models.CASCADE, null=True, blank=True, related_name="labels"
    )
    dimension = models.SlugField(max_length=40)
    mode = models.SlugField(max_length=40)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_pass", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["task_pass", "labeller"],
                condition=models.Q(labeller__isnull=False),
                name="one_failure_label_per_person",
            ),
            models.UniqueConstraint(
                fields=["task_pass", "llm_run"],
                condition=models.Q(llm_run__isnull=False),
                name="one_failure_label_per_llm_run",
            ),
            models.CheckConstraint(
                condition=models.Q(labeller__isnull=True) ^ models.Q(llm_run__isnull=True),
                name="failure_label_by_person_xor_llm",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task_pass_id}: {self.dimension} × {self.mode}"
