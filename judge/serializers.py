"""Input shapes of the judge validation page's actions, which no API takes yet: the page
reads its forms through them (``hilbench_annotate.forminput.form_input``), and an API of the
same action would validate its body with the same schema, so the two could not drift. Every
rule beyond shape (a question's length and wording, whose label it is) lives in the
services."""

from rest_framework import serializers

from hilbench_annotate.params import MAX_ID

from .models import ValidationQuestion

# The label buttons' "none (irrelevant)": a question that names no blocker.
NONE_VALUE = "__none__"

CHOOSE_STYLE = "Choose the question's style: terse, naming the task's words, or paraphrase."
CHOOSE_BLOCKER = "Choose a blocker or “none (irrelevant)”."


class HeldOutQuestionIn(serializers.Serializer):
    style = serializers.ChoiceField(
        choices=ValidationQuestion.Style.choices,
        error_messages={"required": CHOOSE_STYLE, "invalid_choice": CHOOSE_STYLE},
    )
    # Too short a question is the service's refusal, in its words.
    text = serializers.CharField(allow_blank=True, required=False, default="")


class QuestionLabelIn(serializers.Serializer):
    blocker_key = serializers.CharField(
        label="Blocker",
        help_text=f"The blocker's key the question asks about, or {NONE_VALUE} for none",
        error_messages={"required": CHOOSE_BLOCKER, "blank": CHOOSE_BLOCKER},
    )


class SuggestionIn(serializers.Serializer):
    question = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="A held-out question's id"
    )
    text = serializers.CharField(
        allow_blank=True,
        required=False,
        help_text="The trigger question's words; the held-out question's own when left out",
    )


class SuggestionsAcceptIn(serializers.Serializer):
    accepted = SuggestionIn(many=True, required=False, default=list, label="Suggestions")
