"""
Recording and replaying watch-event logs, against the simulator or any other cluster.

The log's format (``eventlog``), recording any cluster's watch events (``capture``, with ``credentials``
from a kubeconfig), replaying a log into a cluster (``replaying``, ``replay_steps``), and the small
API client that both use (``apiclient``).
"""
