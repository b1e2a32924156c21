"""The pytest plugin: run operators on a simulated cluster under virtual time, or on a real one."""
