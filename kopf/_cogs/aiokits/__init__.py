"""Asyncio primitives and enhancements, independent of Kubernetes and of operators."""
