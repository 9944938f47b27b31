"""Test support that this package ships: the stub front door."""
