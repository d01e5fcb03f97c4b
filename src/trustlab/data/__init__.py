"""Importers for public measurement data (JCAlgTest, wolfTPM benchmarks)."""
