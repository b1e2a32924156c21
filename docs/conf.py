"""Sphinx configuration: Markdown pages (MyST) and the API reference from the docstrings (autodoc)."""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))  # the project's own small extensions (e.g. the CLI options tables)
sys.path.insert(0, str(HERE.parent))  # the packages themselves, when they are not installed

project = "kopf"
author = "the kopf developers"
copyright = "the kopf developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "cli_options",
    "api_modules",
    "short_refs",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: ``{directive}`` fences, ``:::`` blocks, definition lists, anchors for the headings (for links like
# ``framework/errors.md#retries``).
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = "kopf"
html_static_path: list[str] = []

# The API reference: the members in every module's ``__all__`` (or, without one, its own public members),
# in the order of the source; the signatures show the parameters and their defaults, the types go to the
# descriptions (long union types make the signatures unreadable otherwise).
autodoc_default_options = {
    "members": True,
    "undoc-members": True,
    "member-order": "bysource",
    "show-inheritance": True,
}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_class_signature = "mixed"
autodoc_inherit_docstrings = False  # e.g. dict.copy()'s docstring is no reST

# Nitpicky mode (``-n``) checks every cross-reference of our own pages and docstrings. The names that cannot
# resolve offline are those of the standard library and third-party packages (there is no network for their
# inventories) and of the framework's private modules (deliberately not in the reference): type annotations
# mention them.
nitpicky = True
_EXTERNAL = (
    r"(_?asyncio|aiohttp|web|yarl|multidict|click|collections|concurrent|contextlib|contextvars|dataclasses|datetime"
    r"|copy|decimal|enum|functools|io|logging|os|pathlib|random|re|ssl|threading|types|typing|typing_extensions|uuid|json"
    r"|hypothesis|st"
    r"|_pytest|pytest|pluggy|kubernetes|pykube|urllib3|yaml|cryptography|selectors|socket|weakref|abc)"
)
nitpick_ignore_regex = [
    (r"py:.*", _EXTERNAL + r"(\..*)?"),
    (r"py:.*", r"(kopf|kopf_sim|pytest_kopf)(\.\w+)*\._\w+.*"),  # private modules and names
    (
        r"py:.*",
        r"(None|NoneType|Ellipsis|EllipsisType|bool|int|float|str|bytes|dict|list|tuple|set|frozenset"
        r"|object|type|Any|Callable|Coroutine|Awaitable|Iterable|Iterator|AsyncIterator|AsyncIterable"
        r"|Mapping|MutableMapping|Sequence|MutableSequence|Collection|Literal|TypeVar|Self|Generic"
        r"|Protocol|Exception|BaseException|TimeoutError|OSError|RuntimeError|ValueError|TypeError"
        r"|KeyError|LookupError|ResourceWarning|Warning|ssl\.SSLContext|T|K|V|_\w+)",
    ),
]

# A short name in an annotation that several modules define (``JsonDict``) resolves to the first of them:
# no warning for that (the fully qualified references are still checked).
suppress_warnings = ["ref.python"]

# The objects of the API reference are not listed in the tables of contents (there are hundreds of them:
# they made every page's navigation huge and the build slow); the modules are.
toc_object_entries = False

# Keep "--option" and quotes as written: the pages are full of command lines.
smartquotes = False
