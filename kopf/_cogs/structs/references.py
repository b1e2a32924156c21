"""
Resources, resource selectors, and namespace patterns.

A :class:`Resource` is one specific, discovered kind of objects in the cluster
(an API group, a version, a plural name, and the informational extras).
A :class:`Selector` is what an operator developer writes in the decorators:
a possibly vague specification that is matched against the discovered resources
once the cluster is scanned. Namespace patterns are what ``--namespace`` accepts.
"""

import dataclasses
import enum
import fnmatch
import re
import urllib.parse
from collections.abc import Collection, Iterable, Mapping

from kopf._cogs.structs.ids import NamespaceName

NamespacePattern = str | re.Pattern[str]


class Marker(enum.Enum):
    """Special values used in place of resource names in the selectors."""

    EVERYTHING = enum.auto()

    def __repr__(self) -> str:
        return f"kopf.{self.name}"


EVERYTHING = Marker.EVERYTHING

# The core v1 events are never served by EVERYTHING: posting them is a side-effect of handling.
CORE_EVENTS = ("", "v1", "events")

# kubectl-like names: `plural[.version][.group]`; the version is recognised by its shape.
_VERSION_RE = re.compile(r"^v\d+(?:(?:alpha|beta)\d+)?$")


@dataclasses.dataclass(frozen=True)
class Resource:
    """A very specific resource kind as discovered in the cluster (or declared explicitly)."""

    group: str
    version: str
    plural: str
    kind: str | None = None
    singular: str | None = None
    shortcuts: frozenset[str] = frozenset()
    categories: frozenset[str] = frozenset()
    subresources: frozenset[str] = frozenset()
    namespaced: bool | None = None
    preferred: bool = True
    verbs: frozenset[str] = frozenset()

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        """A kubectl-style unambiguous name: ``kopfexamples.v1.kopf.dev`` or ``pods.v1``."""
        return ".".join(part for part in (self.plural, self.version, self.group) if part)

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` as used in the objects: ``kopf.dev/v1`` or ``v1`` for the core API."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def get_url(
        self,
        *,
        server: str | None = None,
        namespace: NamespaceName | str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> str:
        """
        Build an API URL for a list (no name) or an object (with a name) of this resource.

        No namespace means a cluster-wide URL; for cluster-scoped resources, it is ignored.
        """
        if subresource is not None and name is None:
            raise ValueError("Subresources can be accessed only for specifically named objects.")
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [(server or "").rstrip("/") + root]
        if namespace is not None and self.namespaced is not False:
            parts.append(f"namespaces/{urllib.parse.quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(urllib.parse.quote(name, safe=""))
        if subresource is not None:
            parts.append(subresource)
        url = "/".join(parts)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        return url


@dataclasses.dataclass(frozen=True, init=False)
class Selector:
    """
    A resource specification as given to the decorators, parsed into its parts.

    The positional arguments follow the documented forms: ``(name)``, ``(group, name)``,
    ``(group/version, name)``, ``('v1', name)``, ``(group, version, name)``, and the
    kubectl-like ``'plural.version.group'``. The ``name`` can be ``EVERYTHING``.
    The name can be any of the plural, singular, kind, or a short name unless one of
    the specific keywords is used instead (``kind=``, ``plural=``, etc.).
    """

    group: str | None = None
    version: str | None = None
    kind: str | None = None
    plural: str | None = None
    singular: str | None = None
    shortcut: str | None = None
    category: str | None = None
    any_name: str | Marker | None = None

    def __init__(
        self,
        arg1: str | Marker | None = None,
        arg2: str | Marker | None = None,
        arg3: str | Marker | None = None,
        *,
        group: str | None = None,
        version: str | None = None,
        kind: str | None = None,
        plural: str | None = None,
        singular: str | None = None,
        shortcut: str | None = None,
        category: str | None = None,
        any_name: str | Marker | None = None,
    ) -> None:
        named = any(name is not None for name in (kind, plural, singular, shortcut, category, any_name))
        if named:
            pos_group, pos_version = _parse_api_positionals(arg1, arg2, arg3)
            pos_name: str | Marker | None = None
        else:
            pos_group, pos_version, pos_name = _parse_positionals(arg1, arg2, arg3)
        if pos_group is not None and group is not None:
            raise TypeError("The API group is specified both positionally and as group=.")
        if pos_version is not None and version is not None:
            raise TypeError("The API version is specified both positionally and as version=.")
        if pos_name is not None and any_name is not None:
            raise TypeError("The resource name is specified both positionally and as any_name=.")
        values = dict(
            group=group if pos_group is None else pos_group,
            version=version if pos_version is None else pos_version,
            kind=kind,
            plural=plural,
            singular=singular,
            shortcut=shortcut,
            category=category,
            any_name=any_name if pos_name is None else pos_name,
        )
        for key, value in values.items():
            object.__setattr__(self, key, value)
        self.check()

    def check(self) -> None:
        """Fail early on ambiguous, conflicting, or incomplete specifications."""
        names = [
            name
            for name in (self.kind, self.plural, self.singular, self.shortcut, self.category, self.any_name)
            if name is not None
        ]
        if not names:
            raise TypeError(
                "A resource name is required: positionally, or as kind=, plural=, "
                "singular=, shortcut=, category=, or kopf.EVERYTHING."
            )
        if len(names) > 1:
            raise TypeError(
                "Ambiguous resource specification: only one name is allowed "
                "(positional, kind=, plural=, singular=, shortcut=, category=)."
            )
        for name in names:
            if isinstance(name, str) and not name:
                raise TypeError("Resource names cannot be empty.")
        if self.any_name is not None and not isinstance(self.any_name, (str, Marker)):
            raise TypeError(f"Unsupported resource name: {self.any_name!r}")
        if isinstance(self.any_name, str) and ("/" in self.any_name or "." in self.any_name):
            raise TypeError(f"Malformed resource name: {self.any_name!r}")
        if self.version is not None and not self.version:
            raise TypeError("The API version cannot be empty when specified.")
        if self.group is not None and "/" in self.group:
            raise TypeError(f"Malformed API group: {self.group!r}")
        if self.version is not None and "/" in self.version:
            raise TypeError(f"Malformed API version: {self.version!r}")

    def __repr__(self) -> str:
        kwargs = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        text = ", ".join(f"{key}={val!r}" for key, val in kwargs.items() if val is not None)
        return f"{type(self).__name__}({text})"

    @property
    def is_specific(self) -> bool:
        """Whether exactly one resource is intended (i.e. not a category nor EVERYTHING)."""
        return self.category is None and self.any_name is not EVERYTHING

    @property
    def api_version(self) -> str | None:
        if self.group is None or self.version is None:
            return None
        return f"{self.group}/{self.version}" if self.group else self.version

    def check_resource(self, resource: Resource) -> bool:
        """Whether a single resource fits this selector, ignoring cross-resource ambiguities."""
        if self.group is not None and resource.group != self.group:
            return False
        if self.version is not None and resource.version != self.version:
            return False
        if self.version is None and not resource.preferred:
            return False
        if self.any_name is EVERYTHING:
            return (resource.group, resource.version, resource.plural) != CORE_EVENTS
        return (
            (self.kind is not None and resource.kind == self.kind)
            or (self.plural is not None and resource.plural == self.plural)
            or (self.singular is not None and resource.singular == self.singular)
            or (self.shortcut is not None and self.shortcut in resource.shortcuts)
            or (self.category is not None and self.category in resource.categories)
            or (
                isinstance(self.any_name, str)
                and (
                    self.any_name == resource.plural
                    or self.any_name == resource.kind
                    or self.any_name == resource.singular
                    or self.any_name in resource.shortcuts
                )
            )
        )

    def select(self, resources: Iterable[Resource]) -> frozenset[Resource]:
        """
        Pick the resources to serve, as documented.

        For specific (single-name) selectors, if the matching resources belong to 2+ groups,
        the core v1 API wins if it is among them; otherwise none is served at all
        (see :meth:`ambiguities` to report them).
        """
        matching = frozenset(resource for resource in resources if self.check_resource(resource))
        if not self.is_specific:
            return matching
        groups = {resource.group for resource in matching}
        if len(groups) <= 1:
            return matching
        core = frozenset(resource for resource in matching if resource.group == "")
        return core  # either the core resources as the priority, or nothing if ambiguous.

    def ambiguities(self, resources: Iterable[Resource]) -> frozenset[Resource]:
        """The matching resources that are not served because of the ambiguity (for warnings)."""
        matching = frozenset(resource for resource in resources if self.check_resource(resource))
        if not self.is_specific or len({resource.group for resource in matching}) <= 1:
            return frozenset()
        if any(resource.group == "" for resource in matching):
            return frozenset()
        return matching


def _parse_api_positionals(
    arg1: str | Marker | None,
    arg2: str | Marker | None,
    arg3: str | Marker | None,
) -> tuple[str | None, str | None]:
    """Convert the positional notations into (group, version) when the name is a keyword."""
    if arg3 is not None:
        raise TypeError("The resource name is specified both positionally and by a keyword.")
    if isinstance(arg1, Marker) or isinstance(arg2, Marker):
        raise TypeError("kopf.EVERYTHING cannot be combined with the keyword-specified names.")
    if arg2 is not None:
        if arg1 is None or "/" in arg1:
            raise TypeError("Two positional API specifiers must be: group, version.")
        return arg1, arg2
    if arg1 is None:
        return None, None
    if "/" in arg1:
        group, _, version = arg1.rpartition("/")
        return group, version
    if arg1 == "v1":
        return "", "v1"
    return arg1, None


def _parse_positionals(
    arg1: str | Marker | None,
    arg2: str | Marker | None,
    arg3: str | Marker | None,
) -> tuple[str | None, str | None, str | Marker | None]:
    """Convert the positional notations into (group, version, name)."""
    if arg3 is not None:
        if arg1 is None or arg2 is None:
            raise TypeError("All three positional arguments are needed: group, version, name.")
        if isinstance(arg1, Marker) or isinstance(arg2, Marker):
            raise TypeError("Only the resource name can be kopf.EVERYTHING, not group/version.")
        if "/" in arg1:
            raise TypeError(f"The group with a version is followed by another version: {arg1!r}")
        return arg1, arg2, arg3
    if arg2 is not None:
        if arg1 is None:
            raise TypeError("The API specification is missing before the resource name.")
        if isinstance(arg1, Marker):
            raise TypeError("Only the resource name can be kopf.EVERYTHING, not group/version.")
        if "/" in arg1:
            group, _, version = arg1.rpartition("/")
            if not version:
                raise TypeError(f"The API version is missing: {arg1!r}")
            return group, version, arg2
        if isinstance(arg2, str) and _VERSION_RE.match(arg2):
            raise TypeError(f"The resource name is missing after the API version: {arg1!r}, {arg2!r}")
        if arg1 == "v1":
            return "", "v1", arg2
        return arg1, None, arg2
    if arg1 is None:
        return None, None, None
    if isinstance(arg1, Marker):
        return None, None, arg1
    if "/" in arg1:
        raise TypeError(f"The resource name is missing after the API specification: {arg1!r}")
    if "." in arg1:
        name, _, rest = arg1.partition(".")
        head, _, tail = rest.partition(".")
        if _VERSION_RE.match(head):
            return tail, head, name
        return rest, None, name
    return None, None, arg1


def match_namespace(name: str, pattern: NamespacePattern) -> bool:
    """
    Check a namespace against one pattern: a regexp, or comma-separated (negated) globs.

    The first glob is decisive: if it is positive and does not match, nothing else matters.
    If the first glob is negated, all namespaces are implied initially. Then, the rightmost
    matching glob wins: positive globs include the namespace, negated ones exclude it.
    """
    if isinstance(pattern, re.Pattern):
        return bool(pattern.fullmatch(name))
    globs = [glob.strip() for glob in pattern.split(",")]
    result = True
    if not globs[0].startswith("!"):
        if not fnmatch.fnmatchcase(name, globs[0]):
            return False
        globs = globs[1:]
    for glob in globs:
        negated = glob.startswith("!")
        if fnmatch.fnmatchcase(name, glob[1:] if negated else glob):
            result = not negated
    return result


def match_namespaces(name: str, patterns: Iterable[NamespacePattern]) -> bool:
    """Check a namespace against several patterns (several ``--namespace`` options): any fits."""
    return any(match_namespace(name, pattern) for pattern in patterns)


def select_specific_namespaces(patterns: Iterable[NamespacePattern]) -> Collection[NamespaceName]:
    """
    Get only the exact namespace names, with no globs, negations, or regexps.

    Used as a fallback when the namespaces cannot be listed/watched due to RBAC.
    """
    return frozenset(
        NamespaceName(pattern)
        for pattern in patterns
        if isinstance(pattern, str) and not any(char in pattern for char in ",*?!")
    )
