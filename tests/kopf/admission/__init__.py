"""
Admission control: serving the reviews by the handlers, building & managing the webhook configurations.

The unit tests call :func:`serve_admission_request` directly with crafted reviews. The end-to-end
tests run a simulated apiserver in memory (kopf's clients talk to it via the in-memory transport),
which calls the operator's webhooks either over HTTP on 127.0.0.1 (a real ``WebhookServer``)
or in-process (the simulator's ``AdmissionControl``), as configured by the managed configurations.
"""
