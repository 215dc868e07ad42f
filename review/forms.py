"""What the review pages' forms post, read through the API's input schema of the same action
(``review.serializers``): a page and the API accept the same input and refuse it for the
same reasons, so they cannot drift. A page's refusal is a ``DomainError`` (400), which the
view shows next to its form as it does a service's refusal."""

from hilbench_annotate.errors import DomainError


def form_input(schema, data) -> dict:
    """``data`` (a page's ``request.POST``, or a dict built from it) validated by ``schema``,
    the serializer the API's endpoint of the same action validates its body with."""
    serializer = schema(data=data)
    if serializer.is_valid():
        return dict(serializer.validated_data)
    raise DomainError(" ".join(_said(field, errors) for field, errors in serializer.errors.items()))


def _said(field: str, errors) -> str:
    messages = errors if isinstance(errors, list) else [errors]
    text = " ".join(str(m) for m in messages)
    return (
        text if field == "non_field_errors" else f"{field.replace('_', ' ').capitalize()}: {text}"
    )
