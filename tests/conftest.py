"""Top-level test configuration: pytest_plugins may only be declared here (not in tests/plugin/conftest.py)."""
import hypothesis

pytest_plugins = ["pytester"]  # the plugin's own tests run inner pytest sessions

# The property-based tests run the same examples on every run (a failure on CI shows again on a laptop),
# and with no deadline per example: on a busy 2-core CI machine, a slow example is no bug of the code.
hypothesis.settings.register_profile("kopf-tests", deadline=None, derandomize=True)
hypothesis.settings.load_profile("kopf-tests")
