"""Operator family: transform (records are added by the family's author)."""
