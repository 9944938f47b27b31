"""Reading sources as raw evidence: the front-door probe, saved capture directories."""
