"""Operator family: qnn (records are added by the family's author)."""
