"""A built-in resource: pods, selected by labels and annotations.

Built-in resources are named by their API group/version and plural (``'v1', 'pods'``), like ``kubectl
get pods.v1``. The operator serves only the pods of a team (the label ``example.kopf.dev/team``) and
leaves the others alone (it does not even store its state on them):

- ``add_contact``: a new team pod gets an annotation with the team's contact address;
- ``track_phase``: the phase changes of a team pod (set by the kubelet) are appended to an annotation,
  unless the pod opts out with the annotation ``example.kopf.dev/untracked``;
- ``release_quota``: returns the pod's share of the team's quota when the pod is deleted. It must not
  be missed, so the framework puts its finalizer on the team pods: their deletion waits until the
  handler has succeeded. (With ``optional=True``, there would be no finalizer, and the handler would run
  only if the operator saw the pod marked for deletion before it vanished.)

Pods cannot hold arbitrary status fields, so the handlers return nothing and patch the metadata.
"""

from typing import Any

import kopf

TEAM = "example.kopf.dev/team"
CONTACT = "example.kopf.dev/contact"
PHASES = "example.kopf.dev/phases"
UNTRACKED = "example.kopf.dev/untracked"


@kopf.on.create("v1", "pods", labels={TEAM: kopf.PRESENT})
def add_contact(labels: kopf.Labels, patch: kopf.Patch, **_: Any) -> None:
    patch.metadata.annotations[CONTACT] = f"{labels[TEAM]}@example.com"


@kopf.on.field("v1", "pods", field="status.phase", labels={TEAM: kopf.PRESENT}, annotations={UNTRACKED: kopf.ABSENT})
def track_phase(new: Any, annotations: kopf.Annotations, patch: kopf.Patch, **_: Any) -> None:
    history = [phase for phase in annotations.get(PHASES, "").split(",") if phase]
    if new and (not history or history[-1] != new):
        patch.metadata.annotations[PHASES] = ",".join([*history, new])


@kopf.on.delete("v1", "pods", labels={TEAM: kopf.PRESENT})
def release_quota(name: str, labels: kopf.Labels, logger: kopf.Logger, **_: Any) -> None:
    logger.info(f"The quota of the pod {name} is returned to the team {labels[TEAM]}.")
