"""Operator family: algorithm (records are added by the family's author)."""
