"""What a request asks to do, in RBAC's terms: a verb on a resource (with its group, namespace, name)."""

from __future__ import annotations

import dataclasses

__all__ = ["Attributes", "verb_of"]


@dataclasses.dataclass(frozen=True)
class Attributes:
    """A resource request's attributes, as the apiserver's ``RequestInfo`` holds them."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def resource_text(self) -> str:
        """The resource as RBAC rules and messages name it: ``pods``, ``pods/status``."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def describe(self) -> str:
        """``patch kopfexamples.kopf.dev/status in namespace default``: for reports and check failures."""
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        resource += f"/{self.subresource}" if self.subresource else ""
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.verb} {resource} {where}"


def verb_of(method: str, *, named: bool, watch: bool) -> str:
    """The RBAC verb of an HTTP method on a resource path (a collection, or one object)."""
    if method in ("GET", "HEAD"):
        return "watch" if watch else ("get" if named else "list")
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return method.lower()
