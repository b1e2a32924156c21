"""System-level and language-enhancing adapters, incl. optional 3rd-party integrations."""
