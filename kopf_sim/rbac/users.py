"""The identities of requests: a user name and groups, as the apiserver's authenticators give them."""

from __future__ import annotations

import dataclasses

__all__ = ["ADMIN", "SERVICE_ACCOUNT_PREFIX", "User", "user_named"]

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclasses.dataclass(frozen=True)
class User:
    """Who makes a request."""

    name: str
    groups: tuple[str, ...] = ("system:authenticated",)

    @property
    def is_admin(self) -> bool:
        """The ``system:masters`` group is allowed everything, without any binding (as in every cluster)."""
        return "system:masters" in self.groups

    @property
    def service_account(self) -> tuple[str, str] | None:
        """The namespace and name, if the user is a service account."""
        if not self.name.startswith(SERVICE_ACCOUNT_PREFIX):
            return None
        namespace, _, name = self.name[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
        return (namespace, name) if namespace and name else None


#: The user of the kubeconfig that the simulator writes (and of requests that carry no token in-process).
ADMIN = User("kubernetes-admin", ("system:masters", "system:authenticated"))


def user_named(name: str, groups: tuple[str, ...] = ()) -> User:
    """A user by name, with the groups its kind implies (a service account's, the authenticated users')."""
    implied: list[str] = []
    if name.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace = name[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")[0]
        implied = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    return User(name, tuple(dict.fromkeys([*groups, *implied, "system:authenticated"])))
