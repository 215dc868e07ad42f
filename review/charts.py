"""Small server-rendered SVG charts: pure functions from rows to markup, no JavaScript.

Every chart is an ``<svg role="img">`` named by its title; each bar carries a ``<title>``
tooltip and prints its value, so the numbers are readable without hovering or colour.
Labels are escaped here: callers pass plain text.
"""

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

BAR_COLOUR = "#2f5bd3"
INK = "#1d2330"
MUTED = "#5f6b7a"
GRID = "#dde2e8"
FONT = 'font-family="system-ui, sans-serif"'


def format_value(value: float) -> str:
    """``12`` for whole numbers, ``3.5`` otherwise (one decimal)."""
    value = float(value)
    if value.is_integer():
        return str(int(value))
    return f"{value:.1f}"


def _n(number: float) -> str:
    """A coordinate: format_html escapes to text, so numbers are formatted first."""
    return f"{number:.1f}"


def _shorten(label: str, limit: int) -> str:
    return label if len(label) <= limit else label[: max(1, limit - 1)] + "…"


def _with_unit(value: float, unit: str) -> str:
    return f"{format_value(value)} {unit}".strip()


def _open_svg(*, width: int, height: int, title: str) -> str:
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="{}" '
        'width="{}" height="{}" viewBox="0 0 {} {}" style="max-width:100%;height:auto" {}>'
        "<title>{}</title>",
        title,
        width,
        height,
        width,
        height,
        mark_safe(FONT),  # noqa: S308 - a constant
        title,
    )


def _empty(*, width: int, title: str) -> SafeString:
    height = 40
    return mark_safe(  # noqa: S308 - every part is built with format_html
        _open_svg(width=width, height=height, title=title)
        + format_html(
            '<text x="{}" y="24" text-anchor="middle" font-size="13" fill="{}">No data yet</text>',
            width // 2,
            MUTED,
        )
        + "</svg>"
    )


def bar_chart(
    rows: list[tuple[str, float]],
    *,
    width: int = 520,
    height: int | None = None,
    title: str,
    unit: str = "",
) -> SafeString:
    """Horizontal bars, one per row, labels on the left and values at the bar ends.

    ``height`` defaults to what the rows need (28 px each).
    """
    if not rows:
        return _empty(width=width, title=title)
    row_height = 28
    top = 6
    height = height or top * 2 + row_height * len(rows)
    row_height = (height - top * 2) / len(rows)
    label_width = int(width * 0.36)
    value_room = 64
    span = max(1, width - label_width - value_room - 8)
    biggest = max((float(value) for _, value in rows), default=0) or 1
    max_chars = max(4, label_width // 7)
    bars = []
    for i, (label, value) in enumerate(rows):
        y = top + i * row_height
        bar_height = max(4.0, row_height * 0.64)
        bar_y = y + (row_height - bar_height) / 2
        length = span * float(value) / biggest
        text_y = y + row_height / 2 + 4
        bars.append(
            format_html(
                '<g class="bar"><title>{}: {}</title>'
                '<text x="{}" y="{}" text-anchor="end" font-size="12" fill="{}">{}</text>'
                '<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"/>'
                '<text x="{}" y="{}" font-size="12" fill="{}">{}</text></g>',
                label,
                _with_unit(value, unit),
                label_width - 6,
                _n(text_y),
                INK,
                _shorten(str(label), max_chars),
                label_width,
                _n(bar_y),
                _n(length),
                _n(bar_height),
                BAR_COLOUR,
                _n(label_width + length + 4),
                _n(text_y),
                INK,
                format_value(value),
            )
        )
    return mark_safe(  # noqa: S308 - every part is built with format_html
        _open_svg(width=width, height=int(height), title=title) + "".join(bars) + "</svg>"
    )


def column_chart(
    rows: list[tuple[str, float]],
    *,
    width: int = 520,
    height: int = 200,
    title: str,
    unit: str = "",
) -> SafeString:
    """Vertical columns left to right (e.g. weeks), values above, labels below."""
    if not rows:
        return _empty(width=width, title=title)
    top, bottom, side = 18, 22, 4
    plot_height = height - top - bottom
    slot = (width - side * 2) / len(rows)
    column_width = max(2.0, slot * 0.7)
    biggest = max((float(value) for _, value in rows), default=0) or 1
    max_chars = max(3, int(slot // 6))
    baseline = top + plot_height
    columns = [
        format_html(
            '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>',
            side,
            _n(baseline),
            width - side,
            _n(baseline),
            GRID,
        )
    ]
    for i, (label, value) in enumerate(rows):
        centre = side + slot * i + slot / 2
        column_height = plot_height * float(value) / biggest
        columns.append(
            format_html(
                '<g class="bar"><title>{}: {}</title>'
                '<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"/>'
                '<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="{}">{}</text>'
                '<text x="{}" y="{}" text-anchor="middle" font-size="10" fill="{}">{}</text>'
                "</g>",
                label,
                _with_unit(value, unit),
                _n(centre - column_width / 2),
                _n(baseline - column_height),
                _n(column_width),
                _n(column_height),
                BAR_COLOUR,
                _n(centre),
                _n(baseline - column_height - 4),
                INK,
                format_value(value),
                _n(centre),
                height - 6,
                MUTED,
                _shorten(str(label), max_chars),
            )
        )
    return mark_safe(  # noqa: S308 - every part is built with format_html
        _open_svg(width=width, height=height, title=title) + "".join(columns) + "</svg>"
    )
