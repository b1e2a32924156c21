"""The pytest11 entry point of the plugin (fixtures and options arrive with the plugin's issue)."""
