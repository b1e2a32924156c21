"""RBAC as the apiserver enforces it: who makes a request (users, service accounts, impersonation), which
Roles and ClusterRoles their bindings grant, and the 403 Forbidden of a request that none allows.

Off by default: a simulated cluster allows every request unless :class:`~kopf_sim.rbac.access.Access`
is told to enforce (``kopf-sim serve --rbac``, ``kopf_cluster.rbac(enforce=True, as_=...)``).
"""
