"""Capture: reading raw evidence (HTTP answers, startup logs) with its provenance."""
