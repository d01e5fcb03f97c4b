"""Shipped TPM 1.2 commands; every module here registers its handlers on import."""
