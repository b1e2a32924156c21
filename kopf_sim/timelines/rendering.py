"""A :class:`~kopf_sim.timelines.model.Page` as one self-contained HTML file.

Everything is in the file: the styles and the script are inlined, the fonts are the system's, and
nothing refers to the network or to other files, so the page opens anywhere (an e-mail attachment,
a CI artifact) as it was written. The timeline is drawn by the HTML itself (a table: a time column
and a column per lane, a row per item, two runs side by side); the script only adds the inspector
(hover or click an item for its details), the legend's switches and the copy buttons. Without the
script, a focused item shows its details in place.
"""

from __future__ import annotations

import collections
import html
import importlib.resources
import os
import re
from collections.abc import Iterator, Sequence

from .aligning import Row, align, first_divergence
from .model import Code, Differences, Item, Page, Run, Section, Table, Text

__all__ = ["DETAILS_LIMIT", "render", "write"]

#: The longest details shown for one item (characters); the rest is cut, saying how much.
DETAILS_LIMIT = 16_000
#: The longest one-line label (characters).
LABEL_LIMIT = 300


def _asset(name: str) -> str:
    text = importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    if "</" in text:  # it would end the <style>/<script> element early
        raise RuntimeError(f"The page's {name} must not contain '</'.")
    return text


def write(page: Page, path: str | os.PathLike[str]) -> None:
    """Write the page into a file (UTF-8), replacing it."""
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(render(page))


def render(page: Page) -> str:
    """The page's HTML text."""
    rows = align(page.runs) if page.runs else []
    parted = first_divergence(rows) if len(page.runs) == 2 else None
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en" class="noscript">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(page.title)}</title>",
        f"<style>{_asset('page.css')}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>{_e(page.title)}</h1>",
        *_legend(page.runs),
        *_divergence_link(page.runs, rows, parted),
        "</header>",
        "<main>",
        *(_section(section) for section in page.before),
        *_timeline(page.runs, rows, parted),
        *(_section(section) for section in page.after),
        "</main>",
        '<aside id="inspector" aria-live="polite"><p class="hint">Hover over an item of the timeline, or click it '
        "to keep it here, to see its details.</p></aside>",
        f"<script>{_asset('page.js')}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


# -- the header --------------------------------------------------------------------------------------


def _legend(runs: Sequence[Run]) -> Iterator[str]:
    counts = collections.Counter(item.kind for run in runs for item in run.items)
    if not counts:
        return
    yield '<nav class="legend" aria-label="the kinds of items">'
    yield '<span class="note">Show:</span>'
    for kind, count in sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])):
        yield (
            f'<label class="chip k-{_kind(kind)}"><input type="checkbox" checked data-kind="{_kind(kind)}">'
            f"{_e(kind)} ({count})</label>"
        )
    yield "</nav>"


def _divergence_link(runs: Sequence[Run], rows: Sequence[Row], parted: int | None) -> Iterator[str]:
    if len(runs) != 2:
        return
    if parted is None:
        yield f'<span class="agree">{_e(runs[0].title)} and {_e(runs[1].title)} do the same throughout.</span>'
        return
    row = rows[parted]
    when = " / ".join(f"t={_seconds(item.t)} s" for item in row.cells if item is not None)
    yield (
        f'<a class="jump" href="#first-divergence">Where {_e(runs[0].title)} and {_e(runs[1].title)} part: '
        f"row {parted + 1} ({_e(when)})</a>"
    )


# -- the timeline ------------------------------------------------------------------------------------


def _timeline(runs: Sequence[Run], rows: Sequence[Row], parted: int | None) -> Iterator[str]:
    if not runs:
        return
    yield '<section id="timeline">'
    yield "<h2>Timeline</h2>"
    if not rows:
        yield '<p class="note">Nothing happened.</p>'
        yield "</section>"
        return
    yield '<div class="scroller">'
    lanes_shown = sum(len(run.lanes) for run in runs)
    width = max(8, min(60, 110 // max(1, lanes_shown)))  # few lanes: room for long labels
    yield f'<table class="timeline" data-runs="{len(runs)}" style="--item-width: {width}em">'
    yield "<thead>"
    heads = []
    for index, run in enumerate(runs):
        if index:
            heads.append('<th class="between" rowspan="2"></th>')
        heads.append(f'<th class="run" colspan="{len(run.lanes) + 1}">{_e(run.title)}</th>')
    yield f'<tr class="runs">{"".join(heads)}</tr>'
    lanes = []
    for run in runs:
        lanes.append('<th class="t">t (s)</th>')
        lanes.extend(
            f'<th class="lane role-{_kind(lane.role)}" data-lane="{_e(lane.id)}" title="{_e(lane.title)}">'
            f"{_e(lane.title)}</th>"
            for lane in run.lanes
        )
    yield f'<tr class="lanes">{"".join(lanes)}</tr>'
    yield "</thead>"
    yield "<tbody>"
    positions = [{lane.id: index for index, lane in enumerate(run.lanes)} for run in runs]
    previous: list[float | None] = [None] * len(runs)
    for number, row in enumerate(rows):
        classes = ["row"]
        if not row.same:
            classes.append("differs")
        if row.anchor:
            classes.append("anchor")
        attributes = ""
        if number == parted:
            classes.append("first-divergence")
            attributes = ' id="first-divergence"'
        cells = []
        for index, (run, item) in enumerate(zip(runs, row.cells, strict=True)):
            if index:
                cells.append('<td class="between"></td>')
            cells.extend(_cells(run, item, positions[index], previous[index]))
            if item is not None:
                previous[index] = item.t
        yield f'<tr class="{" ".join(classes)}"{attributes}>{"".join(cells)}</tr>'
    yield "</tbody>"
    yield "</table>"
    yield "</div>"
    yield "</section>"


def _cells(run: Run, item: Item | None, positions: dict[str, int], previous: float | None) -> Iterator[str]:
    """A run's cells of a row: its time, then an empty span, the item in its lane's column, an empty span."""
    width = len(run.lanes)
    if item is None:
        yield '<td class="t"></td>'
        yield from _empty(width)
        return
    same = " same-t" if previous is not None and _seconds(previous) == _seconds(item.t) else ""
    yield f'<td class="t{same}">{_seconds(item.t)}</td>'
    column = positions.get(item.lane)
    if column is None:
        raise ValueError(f"The item {item.label!r} is on the lane {item.lane!r}, which {run.title!r} does not have.")
    yield from _empty(column)
    yield f'<td class="cell">{_item(run, item)}</td>'
    yield from _empty(width - column - 1)


def _empty(span: int) -> Iterator[str]:
    if span == 1:
        yield "<td></td>"
    elif span > 1:
        yield f'<td colspan="{span}"></td>'


def _item(run: Run, item: Item) -> str:
    label = _cut(item.label, LABEL_LIMIT)
    details = _cut(item.details, DETAILS_LIMIT)
    outcome = f" o-{_kind(item.outcome)}" if item.outcome else ""
    return (
        f'<div class="item k-{_kind(item.kind)}{outcome}" tabindex="0" data-run="{_e(run.title)}" '
        f'data-lane="{_e(item.lane)}" data-t="{_seconds(item.t)}" data-kind="{_e(item.kind)}" '
        f'data-outcome="{_e(item.outcome)}" title="{_e(label)}">'
        f'<span class="label">{_e(label)}</span>'
        f'<span class="details">{_e(details)}</span></div>'
    )


# -- the sections ------------------------------------------------------------------------------------


def _section(section: Section) -> str:
    ident = section.id or _slug(section.title)
    if isinstance(section, Text):
        body = "".join(f"<p>{_e(paragraph)}</p>" for paragraph in section.paragraphs)
        return f'<section id="{_e(ident)}" class="text"><h2>{_e(section.title)}</h2>{body}</section>'
    if isinstance(section, Code):
        button = (
            f'<button type="button" class="copy" data-target="{_e(ident)}-text">Copy</button>'
            if section.copyable
            else ""
        )
        return (
            f'<section id="{_e(ident)}" class="code"><h2>{_e(section.title)}{button}</h2>'
            f'<pre id="{_e(ident)}-text"><code>{_e(section.text)}</code></pre></section>'
        )
    if isinstance(section, Differences):
        return _differences(section, ident)
    if isinstance(section, Table):
        return _table(section, ident)
    raise TypeError(f"Not a section of a page: {section!r}")


def _differences(section: Differences, ident: str) -> str:
    note = f'<p class="note">{_e(section.note)}</p>' if section.note else ""
    if not section.rows:
        return f'<section id="{_e(ident)}"><h2>{_e(section.title)}</h2>{note}</section>'
    rows = "".join(
        f'<tr class="{"noise" if row.noise else "differs"}"><td>{_e(row.where)}</td>'
        f'<td class="path mono">{_e(row.path)}</td><td class="value">{_e(row.left)}</td>'
        f'<td class="value">{_e(row.right)}</td></tr>'
        for row in section.rows
    )
    return (
        f'<section id="{_e(ident)}"><h2>{_e(section.title)}</h2>{note}'
        f'<table class="differences"><thead><tr><th>object</th><th>field</th><th>{_e(section.left_title)}</th>'
        f"<th>{_e(section.right_title)}</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _table(section: Table, ident: str) -> str:
    head = "".join(f"<th>{_e(cell)}</th>" for cell in section.header)
    body = "".join("<tr>" + "".join(_figure(cell) for cell in row) + "</tr>" for row in section.rows)
    if not section.rows:
        body = f'<tr><td class="note" colspan="{max(1, len(section.header))}">none</td></tr>'
    return (
        f'<section id="{_e(ident)}"><h2>{_e(section.title)}</h2>'
        f'<table class="figures"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>'
    )


# -- small helpers -----------------------------------------------------------------------------------


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _kind(text: str) -> str:
    """A kind as a CSS class name: letters, digits and dashes."""
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "other"


def _slug(text: str) -> str:
    return _kind(text) or "section"


def _seconds(t: float) -> str:
    """Virtual seconds as the traces write them: to the microsecond (the clock's tick), so the column lines up."""
    return f"{t:.6f}"


def _figure(cell: str) -> str:
    numeric = re.fullmatch(r"[-+]?[\d,]+(\.\d+)?( ?%| s)?", cell)
    return f'<td class="number">{_e(cell)}</td>' if numeric else f"<td>{_e(cell)}</td>"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"
