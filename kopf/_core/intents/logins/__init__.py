"""
Authentication: the login functions, and the default login handlers, one job per module.

Two rudimentary login functions read the raw credentials themselves:

* :mod:`.serviceaccount` — the in-cluster token, CA, and namespace files of the pod's
  service account, with the API endpoint from the environment;
* :mod:`.kubeconfiglogin` — the current context of the kubeconfig files (read and merged
  by :mod:`.kubeconfigs` as kubectl does), including the ``exec`` credential plugins
  (:mod:`.execplugins`).

Two more "piggyback" the client libraries, if installed, and take only what is needed
for the API calls from their configurations (:mod:`.libraries` has what they share):

* :mod:`.officialclient` — the official ``kubernetes`` client and its async twin;
* :mod:`.pykubeclient` — ``pykube-ng``.

When an operator declares no login handlers of its own, :mod:`.fallbacks` decides which
of them are used. All credentials obtained here are registered for the redaction in the
logs (:mod:`.redaction`).
"""
