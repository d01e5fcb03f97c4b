"""Formula sets, one module per family or paper; each registers on import."""
