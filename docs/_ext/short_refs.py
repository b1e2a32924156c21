"""
Cross-references in the API reference: short names resolve, private types stay plain text.

* ``:class:`Cluster``` in a docstring of ``kopf_sim.http.app`` finds ``kopf_sim.store.cluster.Cluster``: the docstrings
  and annotations name the classes of their package as the code does, unqualified or through a module alias
  (``kubeconfigs.KubeConfig``). When Sphinx cannot resolve such a reference, it goes to the one documented
  object of that name, if there is exactly one (else it stays unresolved, and the nitpicky build says so).
* The annotations also name the framework's private types (``Vault``, ``lifecycles.LifeCycleFn``) and the
  names that a module keeps out of its ``__all__``: they are deliberately not in the reference, so their
  references stay plain text. A reference to anything else that resolves nowhere is reported.
* Autodoc gives a variable the docstring of its type (a ``dict`` constant gets the docstring of ``dict``):
  such borrowed docstrings are dropped.
* The annotations name ``str``, ``None``, ``collections.abc.Mapping`` ... tens of thousands of times. Sphinx looks
  each of them up by comparing it with the end of every documented name before it gives up and lets the
  nitpick-ignore list keep it as plain text: half of the build's time. A name that ends no documented name and
  that the list ignores is made plain text at once, before that search: the same page, without the search.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.nodes import make_refnode

PACKAGES = ("kopf", "kopf_sim", "pytest_kopf")


def resolve_short_name(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement
) -> nodes.reference | None:
    if node.get("refdomain") != "py":
        return None
    target: str = node["reftarget"].lstrip(".~")
    if not target or target.startswith("_"):
        return None
    package = (node.get("py:module") or "").split(".")[0]
    objects = env.get_domain("py").objects  # type: ignore[attr-defined]
    by_last_name = names_by_last_part(env, objects)
    for suffix in ("." + target, "." + target.rsplit(".", 1)[-1]):
        candidates = [
            name
            for name in by_last_name.get(target.rsplit(".", 1)[-1], ())
            if name.endswith(suffix) and (not package or name.split(".")[0] == package)
        ]
        if len(candidates) == 1:
            entry = objects[candidates[0]]
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, candidates[0])
        if candidates:
            return None
    return None


def names_by_last_part(env: BuildEnvironment, objects: dict[str, Any]) -> dict[str, list[str]]:
    """The documented objects by the last part of their names, built once per build (when all are known)."""
    cache: tuple[int, dict[str, list[str]]] | None = env.__dict__.get("_kopf_names_by_last_part")
    if cache is None or cache[0] != len(objects):
        index: dict[str, list[str]] = {}
        for name in objects:
            index.setdefault(name.rsplit(".", 1)[-1], []).append(name)
        cache = (len(objects), index)
        env.__dict__["_kopf_names_by_last_part"] = cache
    return cache[1]


def private_names() -> set[str]:
    """The names that the private modules of the packages define or import (e.g. ``Vault``, ``LifeCycleFn``)."""
    names: set[str] = set()
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            parts = info.name.split(".")
            if parts[-1] == "__main__" or not any(part.startswith("_") for part in parts[1:]):
                continue
            names.update(name for name in vars(importlib.import_module(info.name)) if not name.startswith("__"))
    return names


def kept_out_of_all(target: str) -> bool:
    """Whether a qualified name is of a public module that keeps it out of its ``__all__``."""
    module_name, _, name = target.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    public: list[str] | None = getattr(module, "__all__", None)
    return public is not None and name not in public


def silence_private_types(app: Sphinx, domain: Any, node: pending_xref) -> bool | None:
    if node.get("refdomain") != "py":
        return None
    target: str = node["reftarget"].lstrip(".~")
    if target.startswith("_") or "._" in target:
        return True
    if target.split(".")[0] in PACKAGES:
        return True if kept_out_of_all(target) else None  # other qualified public names must resolve.
    known = app.env.__dict__.setdefault("_kopf_private_names", private_names())
    return True if target.rsplit(".", 1)[-1] in known else None


def drop_borrowed_docstrings(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    borrowed = getattr(obj, "__doc__", None)
    if what == "data" and lines and borrowed and "\n".join(lines).strip() == inspect.cleandoc(borrowed).strip():
        lines.clear()


class PlainIgnoredNames(SphinxPostTransform):
    """Ignored names that no documented name ends with become their plain text before Sphinx searches for them."""

    default_priority = 5  # before the references are resolved (10)

    def run(self, **kwargs: Any) -> None:
        ignored = [(re.compile(kind), re.compile(target)) for kind, target in self.config.nitpick_ignore_regex]
        endings = documented_endings(self.env)
        for node in list(self.document.findall(pending_xref)):
            if node.get("refdomain") != "py" or not node.children:
                continue
            target: str = node["reftarget"]
            bare = target.lstrip(".~")
            if bare in endings or bare.rsplit(".", 1)[-1] in endings:
                continue  # it may resolve (or resolve by its short name): Sphinx decides
            kind = f"py:{node['reftype']}"
            if any(k.fullmatch(kind) and t.fullmatch(target) for k, t in ignored):
                node.replace_self(node[0].deepcopy())


def documented_endings(env: BuildEnvironment) -> frozenset[str]:
    """Every dotted ending of every documented name (``a.b.c``: ``c``, ``b.c``, ``a.b.c``), once per build."""
    objects = env.get_domain("py").objects  # type: ignore[attr-defined]
    cache: tuple[int, frozenset[str]] | None = env.__dict__.get("_kopf_documented_endings")
    if cache is None or cache[0] != len(objects):
        endings = set()
        for name in objects:
            parts = name.split(".")
            endings.update(".".join(parts[i:]) for i in range(len(parts)))
        cache = (len(objects), frozenset(endings))
        env.__dict__["_kopf_documented_endings"] = cache
    return cache[1]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(PlainIgnoredNames)
    app.connect("missing-reference", resolve_short_name)
    app.connect("warn-missing-reference", silence_private_types)
    app.connect("autodoc-process-docstring", drop_borrowed_docstrings)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
