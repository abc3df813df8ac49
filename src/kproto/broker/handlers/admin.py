"""(filled in below)."""
