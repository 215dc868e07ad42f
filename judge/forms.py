"""What the judge validation page's forms post, gathered as typed into the shapes of
``judge.serializers``, which read them (``hilbench_annotate.forminput.form_input``)."""


def question_typed(post) -> dict:
    """A held-out question as written: a refused one is named in the refusal."""
    return {"style": post.get("style", ""), "text": post.get("text", "")}


def suggestions_typed(post) -> dict:
    """The ticked suggestions (``accept``) with their edited words (``text-<id>``), in the
    shape ``SuggestionsAcceptIn`` reads; a suggestion sent without words keeps its own."""
    rows = []
    for raw in post.getlist("accept"):
        row = {"question": raw}
        if f"text-{raw}" in post:
            row["text"] = post[f"text-{raw}"]
        rows.append(row)
    return {"accepted": rows}
