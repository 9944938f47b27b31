"""Capture: raw evidence (front-door probe, startup logs, saved directories) with provenance."""
