"""A page's form read through the API's input schema of the same action: a page and the API
accept the same input and refuse it for the same reasons, so they cannot drift. A page's
refusal is a ``DomainError`` (400), which the view shows next to its form as it does a
service's refusal. Every app's pages read their forms through ``form_input``."""

from hilbench_annotate.errors import DomainError


def form_input(schema, data) -> dict:
    """``data`` (a page's ``request.POST``, or a dict built from it) validated by ``schema``,
    the serializer the API's endpoint of the same action validates its body with."""
    serializer = schema(data=data)
    if serializer.is_valid():
        return dict(serializer.validated_data)
    raise DomainError(
        " ".join(
            _said(_label(serializer, field), errors) for field, errors in serializer.errors.items()
        )
    )


def _label(serializer, field: str) -> str:
    """The field's label (its name, "Lock minutes", unless the schema gives one)."""
    if field in serializer.fields and serializer.fields[field].label:
        return str(serializer.fields[field].label)
    return field.replace("_", " ").capitalize()


def _said(label: str, errors) -> str:
    """A field's refusal in one line, its label first ("Revision: A valid integer is
    required."), unless the words already name it ("The lock time is a whole number of
    minutes."). A list of rows (``many=True``; its errors keyed by the row's index) names the
    row from 1: "Layer 2, name: …"."""
    if isinstance(errors, dict):
        return " ".join(_said(_inner(label, key), sub) for key, sub in errors.items())
    text = " ".join(str(m) for m in errors) if isinstance(errors, list) else str(errors)
    if label == "Non field errors" or label.lower() in text.lower():
        return text
    return f"{label}: {text}"


def _inner(label: str, key) -> str:
    """The label of a nested error: a row of a list ("Layers", 1 → "Layer 2"), a key of a
    dict ("Blocker comments, b1"), or the whole ("non_field_errors")."""
    if key == "non_field_errors":
        return label
    if isinstance(key, int):
        return f"{label[:-1] if label.endswith('s') else label} {key + 1}"
    return f"{label}, {key}"
