"""Input shapes of the evaluation pages' actions: a page reads its form through them
(``hilbench_annotate.forminput.form_input``), and the API of the same action validates its
body with the same schema (``ResultsIn``: ``POST /api/projects/<id>/results``), or would, for
the actions no API takes yet; so the two cannot drift. Every rule beyond shape (which keys
the taxonomy has, whose endpoint it is, what a results file holds) lives in the services."""

from rest_framework import serializers

from hilbench_annotate.params import MAX_ID


class FailureLabelIn(serializers.Serializer):
    # Blank is the services' refusal, which names the keys to choose from.
    dimension = serializers.CharField(
        allow_blank=True, required=False, default="", help_text="A dimension key of the taxonomy"
    )
    mode = serializers.CharField(
        allow_blank=True, required=False, default="", help_text="A mode key of the taxonomy"
    )
    note = serializers.CharField(allow_blank=True, required=False, default="")


class LabellingRunIn(serializers.Serializer):
    endpoint = serializers.IntegerField(
        min_value=1,
        max_value=MAX_ID,
        help_text="The project's model endpoint that labels the failed passes",
    )


class TaxonomyEntryIn(serializers.Serializer):
    # Blank names and definitions are the service's refusal, which names the entry's key.
    id = serializers.IntegerField()
    name = serializers.CharField(allow_blank=True)
    definition = serializers.CharField(allow_blank=True)
    examples = serializers.CharField(allow_blank=True, required=False, default="")


class TaxonomyIn(serializers.Serializer):
    # "Row 3, name: …": the editor's rows in page order, dimensions first.
    entries = TaxonomyEntryIn(many=True, label="Rows")


def taxonomy_arguments(data: dict) -> dict:
    """``taxonomy_update``'s ``entries`` from a valid ``TaxonomyIn``: entry id -> its words."""
    return {
        row["id"]: {k: row[k] for k in ("name", "definition", "examples")}
        for row in data["entries"]
    }


class ResultsIn(serializers.Serializer):
    file = serializers.FileField(help_text=".jsonl, or a results folder as .zip / .tar.gz")
    model = serializers.CharField(required=False, allow_blank=True, max_length=200)
