"""Top-level test configuration: pytest_plugins may only be declared here (not in tests/plugin/conftest.py)."""

pytest_plugins = ["pytester"]  # the plugin's own tests run inner pytest sessions
