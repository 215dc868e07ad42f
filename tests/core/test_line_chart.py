"""toolkit.charts.line_chart: one polyline per series, escaped labels, the shared empty chart."""

import re

from hilbench_annotate.toolkit.charts import LINE_COLOURS, line_chart


def polylines(svg):
    return re.findall(r'<polyline points="([^"]*)"[^>]*stroke="([^"]+)"', svg)


def test_one_polyline_per_series_with_every_point():
    svg = line_chart(
        [
            ("Execute then Ask", [(0, 0), (0.25, 0.1), (0.5, 0.2), (1, 0.3)]),
            ("Direct Ask", [(0, 0), (1, 0.3)]),
            ("Write then Ask", [(0, 0), (0.5, 0.05), (1, 0.3)]),
        ],
        title="Delta-Burden Curve",
        x_label="Burden",
        y_label="Δ accuracy",
    )
    lines = polylines(svg)
    assert [len(points.split()) for points, _ in lines] == [4, 2, 3]
    assert [colour for _, colour in lines] == list(LINE_COLOURS[:3])
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'role="img"' in svg and 'aria-label="Delta-Burden Curve"' in svg
    assert "<title>Delta-Burden Curve</title>" in svg
    for text in ("Execute then Ask", "Direct Ask", "Write then Ask", "Burden", "Δ accuracy"):
        assert text in svg
    assert 'class="diagonal"' not in svg


def test_points_map_onto_the_plot_area_and_y_range_is_honoured():
    svg = line_chart(
        [("a", [(0, 0), (1, 1)])],
        title="t",
        x_label="x",
        y_label="y",
        y_range=(0, 2),
        diagonal=True,
    )
    ((points, _),) = polylines(svg)
    (x0, y0), (x1, y1) = (tuple(map(float, p.split(","))) for p in points.split())
    assert x1 > x0 and y1 < y0  # up and to the right
    # y=1 sits half-way up a 0..2 axis; the diagonal reaches the top (y=2).
    diagonal = re.search(
        r'class="diagonal" x1="([^"]+)" y1="([^"]+)" x2="([^"]+)" y2="([^"]+)"', svg
    )
    dx0, dy0, dx1, dy1 = map(float, diagonal.groups())
    assert (dx0, dy0, dx1) == (x0, y0, x1)
    assert y1 == (dy0 + dy1) / 2
    assert "Random" in svg and "stroke-dasharray" in svg


def test_labels_are_escaped():
    evil = "<script>alert(1)</script>"
    svg = line_chart([(evil, [(0, 0), (1, 1)])], title=evil, x_label=evil, y_label=f"{evil} & co")
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert "&amp; co" in svg


def test_empty_series_render_the_empty_chart():
    empty = line_chart([], title="Flip rate", x_label="x", y_label="y")
    assert "No data yet" in empty and "<polyline" not in empty
    assert 'aria-label="Flip rate"' in empty
    assert line_chart([("a", []), ("b", [])], title="Flip rate", x_label="x", y_label="y") == empty


def test_empty_and_single_point_series_among_others():
    svg = line_chart(
        [("empty", []), ("one", [(0.5, 0.5)]), ("two", [(0, 0), (1, float("nan")), (1, 1)])],
        title="t",
        x_label="x",
        y_label="y",
    )
    lines = polylines(svg)
    assert [len(points.split()) for points, _ in lines] == [1, 2]  # NaN point skipped
    assert [colour for _, colour in lines] == [LINE_COLOURS[1], LINE_COLOURS[2]]
    assert svg.count("<circle") == 1  # a lone point still shows
    assert "empty" in svg  # still named in the legend
