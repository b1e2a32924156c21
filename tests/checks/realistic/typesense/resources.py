"""The objects of a Typesense cluster, rendered from ``templates.yaml`` (a sibling of the operator's file)."""

import pathlib
import string

import yaml

TEMPLATES = pathlib.Path(__file__).with_name("templates.yaml").read_text()
DEFAULT_IMAGE = "typesense/typesense:26.0"


def namespace_of(name):
    return f"typesense-{name}"


def render(name, spec):
    """The namespace, the nodes' ConfigMap, the peers' and the clients' Services, the StatefulSet."""
    replicas = spec.get("replicas", 1)
    namespace = namespace_of(name)
    port = spec.get("apiPort", 8108)
    nodes = ",".join(f"{name}-{i}.{name}-peers.{namespace}.svc:8107:{port}" for i in range(replicas))
    text = string.Template(TEMPLATES).substitute(
        name=name,
        namespace=namespace,
        nodes=nodes,
        port=port,
        replicas=replicas,
        image=spec.get("image", DEFAULT_IMAGE),
        memory=spec.get("memory", "256Mi"),
        storage="1Gi",  # the claims' templates cannot change: one size for all (the data is an index, rebuilt)
    )
    return yaml.safe_load(text)
