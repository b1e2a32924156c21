"""
The HTML reports of the checks: a failure's two worlds as a timeline, side by side, and a run's coverage.

``worlds`` turns the typed trace of a world (:mod:`pytest_kopf._tracing`) into a run of lanes and items;
``states`` lists the fields in which two end states differ, the noise greyed; ``failures`` puts a failure's
page together; ``coverage`` a passing run's (what it explored); ``location`` says where the files go
(``--kopf-report DIR``) and keeps the machine's paths out of them. The pages are drawn by
:mod:`kopf_sim.timelines`, as ``kopf-sim show`` draws a recorded log.
"""
