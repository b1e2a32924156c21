"""
The object store: objects, resource versions, history and watches (``cluster``), and what follows writes.

Every write goes through one pipeline (``pipeline``): prepared by the rules of :mod:`kopf_sim.writes`,
admitted by :mod:`kopf_sim.admission`, committed with the optimistic-concurrency check.
Deletion, finalizers, garbage collection and terminations (``lifecycle``), pods' graceful deletion
(``graceful``), watch subscriptions (``watching``), and a lagging cache's view (``lagging``).
Commits are synchronous: a change is stored and notifies its watchers without awaiting.
"""
