"""Small server-rendered SVG charts: pure functions from rows to markup, no JavaScript.

Every chart is an ``<svg role="img">`` named by its title; each bar carries a ``<title>``
tooltip and prints its value, so the numbers are readable without hovering or colour.
Labels are escaped here: callers pass plain text.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

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


# Distinct hues that stay apart for common colour-vision deficiencies; series beyond the
# palette reuse it, and the legend names every line so colour is never the only cue.
LINE_COLOURS = ("#2f5bd3", "#d1495b", "#1b998b", "#e59500", "#7b2cbf", "#5f6b7a")


def _tick(value: float) -> str:
    """Tick labels: at most two decimals, no trailing zeros (``0.25``, ``1``, ``-0.5``)."""
    return f"{round(value, 2) + 0.0:g}"


def _span(low: float, high: float) -> tuple[float, float]:
    """A degenerate range (one value) is widened so the scale does not divide by zero."""
    return (low - 0.5, high + 0.5) if low == high else (low, high)


@dataclass(frozen=True)
class _Plot:
    """The plot area in pixels and the data ranges its edges stand for."""

    left: float
    top: float
    width: float
    height: float
    x_min: float
    x_max: float
    y_min: float
    y_max: float

    def px(self, x: float) -> float:
        return self.left + self.width * (x - self.x_min) / (self.x_max - self.x_min)

    def py(self, y: float) -> float:
        y = min(max(y, self.y_min), self.y_max)
        return self.top + self.height * (1 - (y - self.y_min) / (self.y_max - self.y_min))


def _finite_series(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
) -> list[tuple[str, list[tuple[float, float]]]]:
    """Each series' name and its points as floats, non-finite points dropped."""
    return [
        (
            str(name),
            [
                (float(x), float(y))
                for x, y in points
                if math.isfinite(float(x)) and math.isfinite(float(y))
            ],
        )
        for name, points in series
    ]


def _line_legend(names: Sequence[str], *, width: int, diagonal: bool) -> tuple[list[str], int]:
    """The legend entries and how many rows they wrap onto.

    Entries flow left to right and wrap; ~7 px a character at font-size 12.
    """
    entries = [(name, LINE_COLOURS[i % len(LINE_COLOURS)], "") for i, name in enumerate(names)]
    if diagonal:
        entries.append(("Random", MUTED, "4 3"))
    legend, cursor_x, row = [], 8.0, 0
    for name, colour, dash in entries:
        text = _shorten(name, 28)
        entry_width = 26 + 7 * len(text) + 14
        if cursor_x + entry_width > width - 8 and cursor_x > 8:
            cursor_x, row = 8.0, row + 1
        y = 14 + row * 18
        legend.append(
            format_html(
                '<g class="legend-entry"><title>{}</title>'
                '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.5"'
                ' stroke-dasharray="{}"/>'
                '<text x="{}" y="{}" font-size="12" fill="{}">{}</text></g>',
                name,
                _n(cursor_x),
                y - 4,
                _n(cursor_x + 20),
                y - 4,
                colour,
                dash or "none",
                _n(cursor_x + 26),
                y,
                INK,
                text,
            )
        )
        cursor_x += entry_width
    return legend, row + 1


def _line_plot(
    every_point: Sequence[tuple[float, float]],
    *,
    width: int,
    height: int,
    legend_rows: int,
    y_range: tuple[float, float] | None,
) -> _Plot:
    """The plot area below the legend, scaled to the data (or to ``y_range`` for y)."""
    x_min, x_max = _span(min(x for x, _ in every_point), max(x for x, _ in every_point))
    if y_range is not None:
        y_min, y_max = _span(float(y_range[0]), float(y_range[1]))
    else:
        y_min, y_max = _span(min(y for _, y in every_point), max(y for _, y in every_point))
    top = 14 + legend_rows * 18
    left, right, bottom = 56, 14, 44
    return _Plot(
        left=left,
        top=top,
        width=max(1, width - left - right),
        height=max(1, height - top - bottom),
        x_min=x_min,
        x_max=x_max,
        y_min=y_min,
        y_max=y_max,
    )


def _line_axes(plot: _Plot, *, height: int, x_label: str, y_label: str) -> list[str]:
    """Grid lines with tick labels, the two axes, and the axis titles."""
    left, top = plot.left, plot.top
    parts = []
    ticks = 4
    for i in range(ticks + 1):
        x_value = plot.x_min + (plot.x_max - plot.x_min) * i / ticks
        y_value = plot.y_min + (plot.y_max - plot.y_min) * i / ticks
        parts.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>'
                '<text x="{}" y="{}" text-anchor="end" font-size="11" fill="{}">{}</text>'
                '<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="{}">{}</text>',
                left,
                _n(plot.py(y_value)),
                left + plot.width,
                _n(plot.py(y_value)),
                GRID,
                left - 6,
                _n(plot.py(y_value) + 4),
                MUTED,
                _tick(y_value),
                _n(plot.px(x_value)),
                top + plot.height + 15,
                MUTED,
                _tick(x_value),
            )
        )
    parts.append(
        format_html(
            '<path d="M{} {}V{}H{}" fill="none" stroke="{}"/>'
            '<text x="{}" y="{}" text-anchor="middle" font-size="12" fill="{}">{}</text>'
            '<text x="{}" y="{}" text-anchor="middle" font-size="12" fill="{}"'
            ' transform="rotate(-90 {} {})">{}</text>',
            left,
            top,
            top + plot.height,
            left + plot.width,
            MUTED,
            _n(left + plot.width / 2),
            height - 8,
            INK,
            x_label,
            14,
            _n(top + plot.height / 2),
            INK,
            14,
            _n(top + plot.height / 2),
            y_label,
        )
    )
    return parts


def _line_diagonal(plot: _Plot) -> str:
    """The dashed random baseline from the bottom-left to the top-right corner."""
    return format_html(
        '<line class="diagonal" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"'
        ' stroke-width="1.5" stroke-dasharray="4 3"><title>Random</title></line>',
        _n(plot.px(plot.x_min)),
        _n(plot.py(plot.y_min)),
        _n(plot.px(plot.x_max)),
        _n(plot.py(plot.y_max)),
        MUTED,
    )


def _line_series(
    lines: Sequence[tuple[str, Sequence[tuple[float, float]]]], plot: _Plot
) -> list[str]:
    """One polyline per series that has points, in the series' legend colour."""
    parts = []
    for i, (name, points) in enumerate(lines):
        if not points:
            continue
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        coordinates = " ".join(f"{_n(plot.px(x))},{_n(plot.py(y))}" for x, y in points)
        marker = ""
        if len(points) == 1:  # a one-point polyline draws nothing
            x, y = points[0]
            marker = format_html(
                '<circle cx="{}" cy="{}" r="3" fill="{}"/>',
                _n(plot.px(x)),
                _n(plot.py(y)),
                colour,
            )
        parts.append(
            format_html(
                '<g class="series"><title>{}</title>'
                '<polyline points="{}" fill="none" stroke="{}" stroke-width="2"'
                ' stroke-linejoin="round"/>{}</g>',
                name,
                coordinates,
                colour,
                marker,
            )
        )
    return parts


def line_chart(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 480,
    height: int = 300,
    y_range: tuple[float, float] | None = None,
    diagonal: bool = False,
) -> SafeString:
    """One polyline per named series over shared axes, with a legend above the plot.

    Points are (x, y) pairs in drawing order; non-finite ones are skipped. ``y_range``
    fixes the y axis (points outside are drawn at its edge) so curves of several models
    compare on one scale; by default it spans the data. ``diagonal`` adds a dashed line
    from the bottom-left to the top-right corner, the random baseline of a
    Delta-Burden Curve.
    """
    lines = _finite_series(series)
    every_point = [point for _, points in lines for point in points]
    if not every_point:
        return _empty(width=width, title=title)
    legend, legend_rows = _line_legend([name for name, _ in lines], width=width, diagonal=diagonal)
    plot = _line_plot(
        every_point, width=width, height=height, legend_rows=legend_rows, y_range=y_range
    )
    parts = _line_axes(plot, height=height, x_label=x_label, y_label=y_label)
    if diagonal:
        parts.append(_line_diagonal(plot))
    parts += _line_series(lines, plot)
    return mark_safe(  # noqa: S308 - every part is built with format_html
        _open_svg(width=width, height=height, title=title)
        + "".join(legend)
        + "".join(parts)
        + "</svg>"
    )
