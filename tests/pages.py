"""Reading the timeline pages in tests: a strict parse into a small tree (the standard library's html.parser).

The pages are written by :mod:`kopf_sim.timelines.rendering`; these helpers check that one is well-formed
(every element closed in order, ids unique), that it refers to nothing outside itself, and find its parts.
"""

from __future__ import annotations

import dataclasses
import html.parser
import re
from collections.abc import Callable, Iterator

VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})
#: Elements that load something by themselves (none may appear in a self-contained page).
LOADING = frozenset({"link", "img", "iframe", "object", "embed", "base", "audio", "video", "source", "frame"})


@dataclasses.dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = dataclasses.field(default_factory=list)
    line: int = 0

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def walk(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Element]:
        return [
            element
            for element in self.walk()
            if (tag is None or element.tag == tag)
            and (cls is None or cls in element.classes)
            and all(element.attrs.get(name.replace("_", "-")) == value for name, value in attrs.items())
        ]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Element:
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag or '*'} class={cls!r} {attrs}> in the page"
        return found[0]

    def by_id(self, ident: str) -> Element:
        return self.find(id=ident)


class _Builder(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]
        self.problems: list[str] = []
        self.doctype = ""

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = [name for name, _ in attrs]
        if len(names) != len(set(names)):
            self.problems.append(f"line {self.getpos()[0]}: <{tag}> repeats an attribute: {names}")
        element = Element(tag, {name: value or "" for name, value in attrs}, line=self.getpos()[0])
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.problems.append(f"line {self.getpos()[0]}: <{tag} /> is not HTML")

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> of a void element")
            return
        if self.stack[-1].tag != tag:
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> closes <{self.stack[-1].tag}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_page(text: str) -> Element:
    """The page's tree; an AssertionError names what is not well-formed."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    problems = list(builder.problems)
    if len(builder.stack) != 1:
        problems.append(f"unclosed: {[element.tag for element in builder.stack[1:]]}")
    if builder.doctype.lower() != "doctype html":
        problems.append(f"the doctype is {builder.doctype!r}")
    ids = [element.attrs["id"] for element in builder.root.walk() if "id" in element.attrs]
    repeated = sorted({ident for ident in ids if ids.count(ident) > 1})
    if repeated:
        problems.append(f"ids used more than once: {repeated}")
    assert not problems, "the page is not well-formed:\n" + "\n".join(problems)
    return builder.root


def external_references(root: Element) -> list[str]:
    """Whatever in the page would load something from outside it (a file, the network)."""
    found = []
    for element in root.walk():
        if element.tag in LOADING:
            found.append(f"<{element.tag}> at line {element.line}")
        for name, value in element.attrs.items():
            if name in ("src", "srcset", "action", "formaction", "data", "poster", "background"):
                found.append(f"<{element.tag} {name}={value!r}>")
            if name == "href" and not value.startswith("#"):
                found.append(f"<{element.tag} href={value!r}>")
            if name == "style" and re.search(r"url\(|@import", value):
                found.append(f"<{element.tag} style={value!r}>")
        if element.tag == "style" and re.search(r"url\(|@import|@font-face", element.text()):
            found.append("a <style> that loads a URL or a font")
        if element.tag == "script":
            if "src" in element.attrs:
                continue  # counted above
            if re.search(r"fetch\(|XMLHttpRequest|import\(|WebSocket|EventSource|https?://|sendBeacon", element.text()):
                found.append("a <script> that reaches out")
    return found


def items(root: Element, predicate: Callable[[Element], bool] = lambda element: True) -> list[Element]:
    """The timeline's items (``<div class="item …">``) that satisfy the predicate."""
    return [element for element in root.find_all("div", cls="item") if predicate(element)]


def label(item: Element) -> str:
    return item.find("span", cls="label").text()


def details(item: Element) -> str:
    return item.find("span", cls="details").text()
