"""Every JSON document and text report, produced from typed objects (the output layer)."""
