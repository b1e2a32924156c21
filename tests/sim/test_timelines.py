"""The timeline pages (kopf_sim.timelines): well-formed, self-contained, lanes and items where they belong, two runs
aligned at their anchors with the first divergence marked, the sections."""

from __future__ import annotations

import importlib.resources

import pytest

from kopf_sim.timelines.aligning import align, first_divergence
from kopf_sim.timelines.differences import ABSENT, changed_fields, dotted, shown
from kopf_sim.timelines.model import Code, DifferenceRow, Differences, Item, Lane, Page, Run, Table, Text
from kopf_sim.timelines.rendering import DETAILS_LIMIT, render
from tests.pages import Element, details, external_references, items, label, parse_page

LANES = [Lane("user", "user", "actor"), Lane("op", "operator #1", "actor"), Lane("obj", "Gadget obj-0")]


def run(title: str, *entries: tuple[float, str, str, str], lanes: list[Lane] = LANES) -> Run:
    return Run(
        title=title,
        lanes=lanes,
        items=[
            Item(t, lane, kind, text, details=f"details of {text}", anchor=kind == "action")
            for t, lane, kind, text in entries
        ],
    )


def grid_lanes(table: Element) -> dict[int, str]:
    """The column index of each lane header (the time and the between columns counted)."""
    lanes_row = table.find("tr", cls="lanes")
    runs_row = table.find("tr", cls="runs")
    columns: dict[int, str] = {}
    index = 0
    heads = iter(lanes_row.find_all("th"))
    for head in runs_row.find_all("th"):
        if "between" in head.classes:
            index += 1
            continue
        for _ in range(int(head.attrs["colspan"])):
            cell = next(heads)
            columns[index] = cell.attrs.get("data-lane", "t")
            index += 1
    return columns


def item_columns(row: Element) -> list[tuple[int, Element]]:
    """The items of a row with the column index of their cell (colspans counted)."""
    found = []
    index = 0
    for cell in row.find_all("td"):
        for item in cell.find_all("div", cls="item"):
            found.append((index, item))
        index += int(cell.attrs.get("colspan", "1"))
    return found


def test_one_run_is_drawn_with_a_lane_per_column_and_an_item_per_row() -> None:
    page = Page(
        title="A log",
        runs=[
            run(
                "the log",
                (0.0, "user", "action", "create obj-0"),
                (0.1, "op", "request", "PATCH obj-0"),
                (0.1, "obj", "change", "MODIFIED rv=7"),
                (30.000001, "op", "handler", "Handler 'create_fn' succeeded"),
            )
        ],
    )
    root = parse_page(render(page))
    assert root.find("title").text() == "A log"
    table = root.find("table", cls="timeline")
    columns = grid_lanes(table)
    assert list(columns.values()) == ["t", "user", "op", "obj"]
    rows = table.find("tbody").find_all("tr")
    assert len(rows) == 4
    placed = [(columns[index], label(item)) for row in rows for index, item in item_columns(row)]
    assert placed == [
        ("user", "create obj-0"),
        ("op", "PATCH obj-0"),
        ("obj", "MODIFIED rv=7"),
        ("op", "Handler 'create_fn' succeeded"),
    ]
    times = [row.find("td", cls="t").text() for row in rows]
    assert times == ["0.000000", "0.100000", "0.100000", "30.000001"]
    assert "same-t" in rows[2].find("td", cls="t").classes  # the same moment as the row above: dimmed
    assert not root.find_all(id="first-divergence")  # one run: nothing to part from
    assert external_references(root) == []


def test_two_runs_are_aligned_at_their_anchors_and_the_first_divergence_is_marked() -> None:
    checked = run(
        "checked world",
        (0.0, "user", "action", "create obj-0"),
        (0.1, "op", "request", "PATCH obj-0"),
        (0.1, "op", "fault", "crash after write #1"),
        (1.1, "op", "request", "PATCH obj-0"),
        (5.0, "user", "action", "delete obj-0"),
        (5.1, "obj", "change", "DELETED"),
    )
    baseline = run(
        "fault-free world",
        (0.0, "user", "action", "create obj-0"),
        (0.1, "op", "request", "PATCH obj-0"),
        (4.0, "user", "action", "delete obj-0"),
        (4.1, "obj", "change", "DELETED"),
    )
    rows = align([checked, baseline])
    parted = first_divergence(rows)
    assert parted == 2
    assert rows[2].cells[0] is not None and rows[2].cells[0].label == "crash after write #1"
    anchors = [index for index, row in enumerate(rows) if row.anchor]
    assert all(None not in rows[index].cells for index in anchors)  # each user's action on one row in both runs
    assert [rows[index].cells[0].label for index in anchors] == ["create obj-0", "delete obj-0"]  # type: ignore[union-attr]

    root = parse_page(render(Page(title="A failure", runs=[checked, baseline])))
    table = root.find("table", cls="timeline")
    assert [head.text() for head in table.find_all("th", cls="run")] == ["checked world", "fault-free world"]
    marked = root.by_id("first-divergence")
    assert "first-divergence" in marked.classes and "differs" in marked.classes
    assert [label(item) for item in marked.find_all("div", cls="item")] == ["crash after write #1"]
    jump = root.find("a", cls="jump")
    assert jump.attrs["href"] == "#first-divergence" and "row 3" in jump.text()
    body_rows = table.find("tbody").find_all("tr")
    assert body_rows.index(marked) == 2
    assert not any("differs" in row.classes for row in body_rows[:2])
    columns = grid_lanes(table)
    for row in body_rows:  # every item stands in its own run's column of its lane
        for index, item in item_columns(row):
            assert columns[index] == item.attrs["data-lane"]


def test_runs_that_agree_throughout_say_so() -> None:
    one = run("a", (0.0, "user", "action", "create"), (0.1, "obj", "change", "ADDED"))
    other = run("b", (0.0, "user", "action", "create"), (0.1, "obj", "change", "ADDED"))
    root = parse_page(render(Page(title="t", runs=[one, other])))
    assert not root.find_all(id="first-divergence")
    assert "do the same throughout" in root.find("span", cls="agree").text()


def test_items_carry_their_details_escaped_and_cut() -> None:
    long = "x" * (DETAILS_LIMIT + 500)
    hostile = '</script><script>alert("x")</script> & <b>'
    page = Page(
        title="<b>escaped</b>",
        runs=[
            Run(
                "r",
                LANES,
                [
                    Item(1.5, "op", "request", hostile, details=hostile, outcome="failed"),
                    Item(2.0, "obj", "change", "big", details=long),
                ],
            )
        ],
    )
    text = render(page)
    root = parse_page(text)
    assert root.find("title").text() == "<b>escaped</b>"
    assert len(root.find_all("script")) == 1  # the page's own only
    first, second = items(root)
    assert label(first) == hostile and details(first) == hostile
    assert {"k-request", "o-failed"} <= first.classes
    assert first.attrs["data-lane"] == "op" and first.attrs["data-t"] == "1.500000" and first.attrs["tabindex"] == "0"
    assert details(second).startswith("x" * DETAILS_LIMIT) and details(second).endswith("(500 more characters)")


def test_a_lane_that_the_run_does_not_have_is_an_error() -> None:
    with pytest.raises(ValueError, match="lane 'nowhere'"):
        render(Page(title="t", runs=[Run("r", LANES, [Item(0, "nowhere", "log", "x")])]))


def test_sections_before_and_after_the_timeline() -> None:
    page = Page(
        title="t",
        runs=[run("r", (0.0, "user", "action", "create"))],
        before=[Text("What failed", ["line one\nline two"], id="failure")],
        after=[
            Differences(
                "End states",
                "fault-free",
                "checked",
                [
                    DifferenceRow("Gadget obj-0", "status.x", '"a"', '"b"'),
                    DifferenceRow("Secret s", "data.password", '"p1"', '"p2"', noise=True),
                ],
            ),
            Code("Reproduction", "async def test_it():\n    pass\n", id="reproduction"),
            Table("Coverage", ["kind", "count"], [["create", "12"], ["crash", "3"]]),
        ],
    )
    root = parse_page(render(page))
    main = root.find("main")
    order = [child.attrs.get("id") for child in main.children if isinstance(child, Element)]
    assert order == ["failure", "timeline", "end-states", "reproduction", "coverage"]
    assert root.by_id("failure").find("p").text() == "line one\nline two"
    rows = root.by_id("end-states").find("tbody").find_all("tr")
    assert [row.attrs["class"] for row in rows] == ["differs", "noise"]
    button = root.by_id("reproduction").find("button", cls="copy")
    assert root.by_id(button.attrs["data-target"]).text() == "async def test_it():\n    pass\n"
    assert [cell.attrs.get("class") for cell in root.by_id("coverage").find("tbody").find_all("td")] == [
        None,
        "number",
        None,
        "number",
    ]


def test_the_inlined_assets_cannot_end_their_elements_early() -> None:
    files = importlib.resources.files("kopf_sim.timelines")
    for name in ("page.css", "page.js"):
        assert "</" not in files.joinpath(name).read_text(encoding="utf-8")


def test_changed_fields_of_two_documents() -> None:
    old = {"spec": {"a": 1, "items": [1, 2]}, "metadata": {"labels": {"x": "1"}}}
    new = {"spec": {"a": 2, "items": [1]}, "metadata": {"labels": {"x": "1", "app.kubernetes.io/name": "y"}}}
    changes = [(dotted(path), shown(a), shown(b)) for path, a, b in changed_fields(old, new)]
    assert changes == [
        ('metadata.labels["app.kubernetes.io/name"]', "(absent)", '"y"'),
        ("spec.a", "1", "2"),
        ("spec.items[1]", "2", "(absent)"),
    ]
    assert changed_fields({}, {"status": {"x": {"y": 1}}}) == [(("status", "x", "y"), ABSENT, 1)]
    assert changed_fields({"a": 1}, {"a": 1.0}) == [(("a",), 1, 1.0)]  # another type is another value
    assert dotted(()) == "(the whole document)"


def test_items_set_aside_stand_in_their_places_and_do_not_part_the_runs() -> None:
    def items_of(*entries: tuple[float, str, str, str, bool]) -> list[Item]:
        return [
            Item(t, lane, kind, text, anchor=kind == "action", aside=aside) for t, lane, kind, text, aside in entries
        ]

    checked = Run(
        "checked",
        LANES,
        items_of(
            (0.0, "user", "action", "create", False),
            (0.0, "op", "fault", "crash after write #1", True),
            (0.1, "op", "request", "POST child", False),
            (0.1, "op", "fault", "503 on PATCH", True),
            (1.1, "op", "request", "POST child", False),
        ),
    )
    baseline = Run(
        "baseline",
        LANES,
        items_of((0.0, "user", "action", "create", False), (0.1, "op", "request", "POST child", False)),
    )
    rows = align([checked, baseline])
    shown = [(*(item.label if item else None for item in row.cells), row.same) for row in rows]
    assert shown == [
        ("create", "create", True),
        ("crash after write #1", None, True),
        ("POST child", "POST child", True),
        ("503 on PATCH", None, True),
        ("POST child", None, False),  # the first consequence: the operator made the child again
    ]
    assert first_divergence(rows) == 4
