"""A simulated Kubernetes API server: an in-memory store with the apiserver's semantics.

It knows nothing of :mod:`kopf`: any Kubernetes client can talk to it, in-process
through :mod:`kopf_sim.transports.inmemory` or over HTTP(S) through :mod:`kopf_sim.transports.serving`.

Its subpackages are layers; each imports only those below it (an import-linter contract checks it):

- ``cli``: ``kopf-sim serve``, ``record``, ``replay`` (with ``manifests``, the files they load);
- ``recording``: watch-event logs: their format, recording any cluster, replaying into one;
- ``transports``: how clients reach the HTTP face: in memory, in-process, or on a real socket;
- ``http``: the HTTP face (the aiohttp app: paths, bodies, discovery, OpenAPI, faults), and beside it
  ``controllers``: the built-in controllers (workloads, pods on simulated nodes, services, volumes);
- ``admission``: the admission webhooks, and the writes that call them;
- ``store``: the object store (:class:`kopf_sim.store.cluster.Cluster`), watches, deletion and its aftermath;
- ``writes``: how a request's body becomes the next stored object (decoding, patches, apply, schemas);
- ``kube``: the API's vocabulary: objects, resource types, errors, selectors, tables;
- ``timing``: the cluster's clock and uids, and the virtual-time event loop.
"""
