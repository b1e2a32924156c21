"""
The reactor: the watch-streams of the resources, the per-object queues of their events,
and the processing of every event into the handlers' calls and the objects' patches.
"""
