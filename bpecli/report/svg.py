"""Charts as inline SVG strings: horizontal bars, vertical bars, lines on linear or log axes.
They draw only; the page's CSS gives them fonts and colours (classes axis, grid, label...), and
each series has its colour from PALETTE."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

# One colour per series (a tokenizer, a split), the same in every chart of a page.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f")


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def number(value: float) -> str:
    """A count or measure as the page and the terminal show it.

    Example: 1234567 -> "1,234,567"; 2.71828 -> "2.72"; 0.004 -> "0.004"
    """
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 100:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 0.1 or value == 0:
        return f"{value:.2f}"
    return f"{value:.2g}"


def short(value: float) -> str:
    """An axis label: 1500 -> "1.5k"; 2000000 -> "2M"; 999999 -> "1M"; 0.5 -> "0.5" """
    value = float(f"{value:.3g}")  # (rounded first: 999,999 is 1M, not 1e+03k)
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}"


def percent(share: float) -> str:
    """Example: 0.1234 -> "12.3%"; 0.00012 -> "0.012%" """
    if share == 0:
        return "0%"
    return f"{100 * share:.1f}%" if share >= 0.001 else f"{100 * share:.2g}%"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round steps from 0 to at least top. Example: 3.4 -> [0, 1, 2, 3, 4]"""
    if top <= 0:
        return [0, 1]
    raw = top / count
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * step:
            step *= factor
            break
    ticks = [0.0]
    while ticks[-1] < top - 1e-12:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{escape(label)}" preserveAspectRatio="xMinYMin meet">' + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, cls: str = "label", anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def legend(names: Sequence[str]) -> str:
    """The series of a chart, as HTML above it (no legend for a single series)."""
    if len(names) < 2:
        return ""
    items = "".join(f'<span class="key"><i style="background:{colour(n)}"></i>{escape(name)}</span>'
                    for n, name in enumerate(names))
    return f'<div class="legend">{items}</div>'


def hbars(labels: Sequence[str], series: Sequence[Sequence[float]], *, label: str, value_text: Callable[[float], str] = number,
          log: bool = False, width: int = 560, label_width: int = 150) -> str:
    """Horizontal bars: a row per label, a bar per series in each row (series[s][row]),
    its value written after it; on a log scale from 1 when log."""
    row_height = 6 + 16 * len(series)
    height = row_height * len(labels) + 22
    longest = max((len(value_text(v)) for values in series for v in values), default=4)
    room = width - label_width - 12 - 6.5 * longest  # the widest value fits after the longest bar
    top = max((v for values in series for v in values), default=0) or 1
    scale = (lambda v: room * math.log10(max(v, 1)) / math.log10(max(top, 10))) if log else (lambda v: room * v / top)
    body = []
    ticks = [10**k for k in range(0, int(math.log10(max(top, 10))) + 1)] if log else nice_ticks(top, 4)
    if not log:
        room_top = ticks[-1]
        scale = lambda v: room * v / room_top  # noqa: E731 (bars end on the last tick)
    for tick in ticks:
        x = label_width + scale(tick)
        body.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height - 18}"/>')
        body.append(_text(x, height - 5, short(tick), "tick", "middle"))
    for row, name in enumerate(labels):
        y = row * row_height + 4
        body.append(_text(label_width - 8, y + row_height / 2 + 1, name, "label", "end", ' dominant-baseline="middle"'))
        for s, values in enumerate(series):
            value = values[row]
            bar = max(scale(value), 1.5 if value else 0)
            yb = y + 16 * s
            body.append(f'<rect x="{label_width}" y="{yb:.1f}" width="{bar:.1f}" height="13" rx="2" fill="{colour(s)}">'
                        f"<title>{escape(name)}: {escape(value_text(value))}</title></rect>")
            body.append(_text(label_width + bar + 5, yb + 10.5, value_text(value), "value"))
    return _svg(width, height, body, label)


def columns(labels: Sequence[str], series: Sequence[Sequence[float]], *, label: str, y_text: Callable[[float], str] = short,
            value_text: Callable[[float], str] = number, width: int = 560, height: int = 240, x_title: str = "",
            y_title: str = "") -> str:
    """Vertical bars: a group per label, a bar per series in each (series[s][column])."""
    left, bottom, right, top_pad = 48, 40 if x_title else 26, 8, 12
    plot_w, plot_h = width - left - right, height - bottom - top_pad
    top = max((v for values in series for v in values), default=0) or 1
    ticks = nice_ticks(top, 4)
    body = []
    for tick in ticks:
        y = top_pad + plot_h * (1 - tick / ticks[-1])
        body.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        body.append(_text(left - 6, y + 4, y_text(tick), "tick", "end"))
    group = plot_w / max(1, len(labels))
    bar = max(1.0, (group * 0.8) / max(1, len(series)))
    every = max(1, math.ceil(len(labels) * 34 / plot_w))  # a label every few columns when they crowd
    for column, name in enumerate(labels):
        x0 = left + column * group + group * 0.1
        for s, values in enumerate(series):
            value = values[column]
            h = plot_h * value / ticks[-1]
            body.append(f'<rect x="{x0 + s * bar:.2f}" y="{top_pad + plot_h - h:.2f}" width="{max(bar - 0.5, 0.6):.2f}" '
                        f'height="{h:.2f}" fill="{colour(s)}"><title>{escape(name)}: {escape(value_text(value))}</title></rect>')
        if column % every == 0:
            body.append(_text(left + column * group + group / 2, top_pad + plot_h + 14, name, "tick", "middle"))
    body.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{top_pad + plot_h}" y2="{top_pad + plot_h}"/>')
    if x_title:
        body.append(_text(left + plot_w / 2, height - 4, x_title, "title", "middle"))
    if y_title:
        body.append(_text(12, top_pad + plot_h / 2, y_title, "title", "middle",
                          f' transform="rotate(-90 12 {top_pad + plot_h / 2:.1f})"'))
    return _svg(width, height, body, label)


def lines(series: Sequence[Sequence[tuple[float, float]]], *, label: str, log_x: int = 0, log_y: int = 0,
          width: int = 560, height: int = 260, x_title: str = "", y_title: str = "", y_from_zero: bool = False,
          x_text: Callable[[float], str] = short, y_text: Callable[[float], str] = short,
          point_text: Callable[[float, float], str] | None = None, marks: Sequence[tuple[float, float, str]] = ()) -> str:
    """Lines through points (x, y), one per series, with a dot at each point; log_x / log_y give
    the base of a log axis (0: linear). marks are points labelled with text (a token on a curve)."""
    left, bottom, right, top_pad = 54, 42, 16, 14
    plot_w, plot_h = width - left - right, height - bottom - top_pad
    xs = [x for points in series for x, _ in points] or [1]
    ys = [y for points in series for _, y in points] or [1]

    def axis(values, base, from_zero):
        if base:
            low, high = math.log(min(values), base), math.log(max(values), base)
            low, high = math.floor(low), max(math.ceil(high), math.floor(low) + 1)
            ticks = [base**k for k in range(low, high + 1)]
            if len(ticks) > 8:
                ticks = ticks[:: math.ceil(len(ticks) / 8)]
            return (lambda v: (math.log(v, base) - low) / (high - low)), ticks
        low = 0.0 if from_zero else min(values)
        ticks = nice_ticks(max(values) - low, 4) if from_zero else _span_ticks(low, max(values))
        if not from_zero:
            low = ticks[0]
        span = (ticks[-1] - low) or 1
        return (lambda v: (v - low) / span), ticks

    fx, x_ticks = axis(xs, log_x, False)
    fy, y_ticks = axis(ys, log_y, y_from_zero)

    def at(x, y):
        return left + plot_w * fx(x), top_pad + plot_h * (1 - fy(y))

    body = []
    for tick in y_ticks:
        _, y = at(xs[0], tick)
        body.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        body.append(_text(left - 6, y + 4, y_text(tick), "tick", "end"))
    for tick in x_ticks:
        x, _ = at(tick, ys[0])
        body.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad}" y2="{top_pad + plot_h}"/>')
        body.append(_text(x, top_pad + plot_h + 15, x_text(tick), "tick", "middle"))
    body.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{top_pad + plot_h}" y2="{top_pad + plot_h}"/>')
    for s, points in enumerate(series):
        placed = [at(x, y) for x, y in points]
        path = " ".join(f"{'M' if n == 0 else 'L'}{x:.1f},{y:.1f}" for n, (x, y) in enumerate(placed))
        body.append(f'<path d="{path}" fill="none" stroke="{colour(s)}" stroke-width="2.2" stroke-linejoin="round"/>')
        if len(points) <= 40:
            for (x, y), (px, py) in zip(points, placed):
                tip = point_text(x, y) if point_text else f"{x_text(x)}: {y_text(y)}"
                body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.4" fill="{colour(s)}"><title>{escape(tip)}</title></circle>')
    for x, y, text in marks:
        px, py = at(x, y)
        body.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.6" class="mark"/>')
        body.append(_text(px + 6, py - 5, text, "mark-text"))
    if x_title:
        body.append(_text(left + plot_w / 2, height - 6, x_title, "title", "middle"))
    if y_title:
        body.append(_text(13, top_pad + plot_h / 2, y_title, "title", "middle",
                          f' transform="rotate(-90 13 {top_pad + plot_h / 2:.1f})"'))
    return _svg(width, height, body, label)


def _span_ticks(low: float, high: float) -> list[float]:
    """Round ticks covering low..high on a linear axis that need not start at 0."""
    if high <= low:
        high = low + 1
    raw = (high - low) / 4
    step = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * step:
            step *= factor
            break
    first = math.floor(low / step) * step
    ticks = [round(first, 10)]
    while ticks[-1] < high - 1e-12:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks
