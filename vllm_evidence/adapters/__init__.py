"""Adapters: one parser per source, from raw bytes or text to typed observations."""
