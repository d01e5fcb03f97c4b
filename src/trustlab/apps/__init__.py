"""Applications: the papers' protocols, built only from public device commands."""
