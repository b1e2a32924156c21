"""Kopf: a framework for Kubernetes operators."""
