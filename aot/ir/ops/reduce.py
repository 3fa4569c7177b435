"""Operator family: reduce (records are added by the family's author)."""
