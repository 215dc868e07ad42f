"""``{{ patch|diff_lines }}``: a patch's lines with the class that colours each (added,
removed, hunk header, file header), rendered by ``templates/_diff.html``."""

from django import template

from hilbench_annotate.toolkit.patches import diff_lines as _diff_lines

register = template.Library()


@register.filter
def diff_lines(text) -> list[tuple[str, str]]:
    return _diff_lines(text or "")
