"""Local, spec-faithful implementation of the rank-tracking API (see docs/architecture.md)."""
