"""
Timelines as self-contained HTML pages: what happened, when, on which lane, drawn for a person to look at.

Neutral building blocks, shared by the views of a recorded watch-event log (``kopf-sim show``) and of a
failed check of ``pytest_kopf`` (two worlds side by side): they know lanes, items, anchors and sections,
nothing of kopf, of checks or of logs. ``model`` holds the data; ``aligning`` puts two runs side by side at
their anchors (the user's actions) and finds where they part; ``differences`` lists the fields in which two
JSON documents differ; ``rendering`` writes the page: one file, no network, no external scripts or fonts.
"""
