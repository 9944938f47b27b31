"""Shared test configuration: Hypothesis profiles.

``HYPOTHESIS_PROFILE=dev`` runs more examples; CI uses the default profile (Hypothesis
loads its own derandomised ``ci`` profile when ``CI=true``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=100)
settings.register_profile("dev", max_examples=500)
settings.register_profile("fast", max_examples=20, suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI") != "true" or "HYPOTHESIS_PROFILE" in os.environ:
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
