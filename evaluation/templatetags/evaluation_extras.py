from django import template
from django.conf import settings

register = template.Library()

_PERCENT = {
    "pass_at_1",
    "pass_at_2",
    "pass_at_3",
    "pass_at_1_unbiased",
    "pass_at_2_unbiased",
    "pass_at_3_unbiased",
    "ask_f1",
    "ask_precision",
    "ask_recall",
    "duplicate_rate",
}


@register.filter
def pct(value) -> str:
    # A key a row lacks reaches the template as "".
    return "—" if value is None or value == "" else f"{value * 100:.1f}%"


@register.filter
def num3(value) -> str:
    return "—" if value is None or value == "" else f"{value:.3f}"


@register.filter
def metric(row: dict, key: str) -> str:
    value = row.get(key)
    if value is None:
        return "—"
    if key in _PERCENT:
        return pct(value)
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


@register.filter
def audbc_cells(by_method: dict) -> str:
    names = {
        "direct_ask": "DA",
        "write_then_ask": "WA",
        "execute_then_ask": "EA",
        "imported": "imported",
    }
    cells = [f"{num3(by_method[m])} ({label})" for m, label in names.items() if m in by_method]
    return ", ".join(cells) or "—"


@register.filter
def get_item(mapping: dict, key: str):
    """``mapping[key]``, or None (a reference agent that has not run on the task)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


_APP_JUDGES = {
    "embedded": "the app's embedded judge",
    "llm": "the app's LLM judge (HILBENCH_JUDGE=llm)",
    "ensemble": "the app's ensemble (the embedded judge, the LLM near its threshold)",
}


@register.simple_tag
def app_judge() -> str:
    """The judge the app reads an ask log with when it stores a pass (``HILBENCH_JUDGE``)."""
    return _APP_JUDGES.get(settings.JUDGE_BACKEND, settings.JUDGE_BACKEND)
