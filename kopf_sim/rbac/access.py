"""Who makes each request, and whether RBAC lets them: the simulator's authentication and authorization.

Requests are made with a client certificate signed by the served simulator's CA (its CN is the user, its Os
the groups), a bearer token (each known token is one user), or neither (the kubeconfig's admin, in-process);
an allowed user may act as another with the impersonation headers (``kubectl --as``).
With ``enforce`` off (the default), every request is allowed and still observed, so that tests can record
what an operator asked for; with it on, a request that no binding allows is a 403 worded as the apiserver's.
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime
import secrets
from collections.abc import Callable, Mapping, Sequence

from kopf_sim.kube import errors
from kopf_sim.rbac.attributes import Attributes
from kopf_sim.rbac.policy import Decision, ObjectsView, Policy
from kopf_sim.rbac.users import ADMIN, User, user_named

__all__ = ["CERTIFICATE_USER", "Access", "Identity", "certificate_user", "forbidden"]

Observer = Callable[["Identity", Attributes, Decision], None]

#: The user of the request's client certificate, verified by the HTTPS server against its CA (None: no certificate).
CERTIFICATE_USER: contextvars.ContextVar[User | None] = contextvars.ContextVar("kopf_sim_cert_user", default=None)


def certificate_user(common_name: str, organizations: Sequence[str]) -> User:
    """A client certificate's user, as the apiserver's x509 authenticator reads it: CN is the name, O the groups."""
    return User(common_name, tuple(dict.fromkeys([*organizations, "system:authenticated"])))


Clock = Callable[[], datetime.datetime]


@dataclasses.dataclass(frozen=True)
class _Token:
    user: User
    label: str
    expires: datetime.datetime | None = None  # None: never (the tokens given on the command line)
    alive: Callable[[], bool] | None = None  # False once the object it is bound to is gone


@dataclasses.dataclass(frozen=True)
class Identity:
    """The user a request acts as, and the label of the token it came with (``""``: none)."""

    user: User
    token_label: str = ""


class Access:
    """The identities the simulator knows, its RBAC policy, and whether it enforces it."""

    def __init__(self, store: ObjectsView, *, enforce: bool = False, clock: Clock | None = None) -> None:
        self.policy = Policy(store)
        self.enforce = enforce
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._tokens: dict[str, _Token] = {}
        self._observers: list[Observer] = []

    def add_token(
        self,
        user: User,
        *,
        label: str = "",
        token: str | None = None,
        expires: datetime.datetime | None = None,
        alive: Callable[[], bool] | None = None,
    ) -> str:
        """Accept a bearer token as this user (a new random one unless given), until it expires; returns it."""
        token = token or secrets.token_urlsafe(24)
        self._tokens[token] = _Token(user, label, expires, alive)
        return token

    def set_token_user(self, token: str, user: User) -> None:
        """Make an issued token act as another user from now on."""
        self._tokens[token] = dataclasses.replace(self._tokens[token], user=user)

    def knows_token(self, token: str) -> bool:
        """Whether the token is one of ours and has not expired."""
        return self.user_of_token(token) is not None

    def user_of_token(self, token: str) -> User | None:
        """The user that a valid token authenticates as; None if it is unknown or expired (as TokenReview)."""
        known = self._tokens.get(token)
        if known is None or self._expired(known):
            return None
        return known.user

    def _expired(self, token: _Token) -> bool:
        """Whether a token is no longer valid: past its expiry, or its bound object deleted."""
        if token.alive is not None and not token.alive():
            return True
        return token.expires is not None and self.clock() >= token.expires

    def observe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer`` for every resource request decided from now on; returns a function to stop it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer) if observer in self._observers else None

    def identify(self, headers: Mapping[str, str]) -> Identity:
        """The identity of a request: its client certificate's user, or its token's, maybe impersonating another.

        A verified client certificate comes first, as the apiserver's x509 authenticator comes before tokens.
        """
        authorization = headers.get("Authorization", "")
        certified = CERTIFICATE_USER.get()
        if certified is not None:
            identity = Identity(certified)
        elif authorization.startswith("Bearer "):
            known = self._tokens.get(authorization[len("Bearer ") :].split(" ", 1)[0])
            if known is not None and self._expired(known):  # never the admin's, even where tokens are not checked
                raise errors.unauthorized()
            identity = Identity(known.user, known.label) if known is not None else Identity(ADMIN)
        else:
            identity = Identity(ADMIN)
        wanted = headers.get("Impersonate-User")
        if wanted:
            identity = self._impersonated(identity, wanted, _all_values(headers, "Impersonate-Group"))
        return identity

    def _impersonated(self, identity: Identity, name: str, groups: tuple[str, ...]) -> Identity:
        user = user_named(name, groups)
        account = user.service_account
        if account is not None:
            attrs = Attributes("impersonate", "", "serviceaccounts", namespace=account[0], name=account[1])
        else:
            attrs = Attributes("impersonate", "", "users", name=name)
        if not identity.user.is_admin and not self.policy.decide(identity.user, attrs).allowed:
            raise forbidden(identity.user, attrs)
        return Identity(user, identity.token_label)

    def authorize(self, identity: Identity, attrs: Attributes) -> Decision:
        """Decide a request; observers see it; a denial raises 403 only when enforced."""
        decision = self.decide(identity.user, attrs)
        for observer in list(self._observers):
            observer(identity, attrs, decision)
        if not decision.allowed and self.enforce:
            raise forbidden(identity.user, attrs)
        return decision

    def decide(self, user: User, attrs: Attributes) -> Decision:
        """The policy's decision, or "allowed" for everyone while not enforced."""
        if not self.enforce:
            return Decision(True, "the simulated cluster does not enforce RBAC")
        return self.policy.decide(user, attrs)


def forbidden(user: User, attrs: Attributes) -> errors.ApiError:
    """The apiserver's 403 for a request that RBAC does not allow."""
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    subject = f"{qualified} {_go_quote(attrs.name)}" if attrs.name else qualified
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    message = (
        f'{subject} is forbidden: User "{user.name}" cannot {attrs.verb} resource "{attrs.resource_text}" '
        f'in API group "{attrs.group}" {where}'
    )
    details: dict[str, str] = {"name": attrs.name} if attrs.name else {}
    if attrs.group:
        details["group"] = attrs.group
    details["kind"] = attrs.resource
    return errors.ApiError(403, "Forbidden", message, details=details)


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _all_values(headers: Mapping[str, str], name: str) -> tuple[str, ...]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return tuple(getall(name, []))
    value = headers.get(name)
    return (value,) if value else ()
