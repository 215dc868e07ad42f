"""``{{ type_or_subtype|gap_kind }}``: which of the paper's three kinds of blocker a type or
subtype is — *missing*, *ambiguous* or *contradictory* (``vocabulary.GAP_KIND``); a SQL type,
which says where the gap lives, is the kinds of its subtypes ("ambiguous, missing or
contradictory"). Empty for a name the vocabulary does not know."""

from django import template

from hilbench_annotate.toolkit.wording import plain_list
from hilbench_annotate.vocabulary import gap_kinds

register = template.Library()


@register.filter
def gap_kind(name) -> str:
    return plain_list(gap_kinds(str(name or "")), quote=False, last="or")
