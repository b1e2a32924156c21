"""Data structures and type declarations for Kubernetes objects and their parts."""
