"""Adapters: one parser per evidence source; typed observations or a typed failure out."""
