"""``{% text_limit "resolution" %}``: a field's limit (``settings.TEXT_LIMITS``) for an
input's maxlength, so the page and the service refuse at the same length."""

from django import template

from hilbench_annotate.text_limits import text_limit as _limit

register = template.Library()


@register.simple_tag
def text_limit(key: str) -> int:
    return _limit(key)
