"""
The object store: objects, resource versions, history and watches (``cluster``), and what follows writes.

Deletion, finalizers, garbage collection and terminations (``lifecycle``), pods' graceful deletion
(``graceful``), watch subscriptions (``watching``), and a lagging cache's view (``lagging``).
All of it is synchronous: a change commits and notifies its watchers without awaiting.
"""
