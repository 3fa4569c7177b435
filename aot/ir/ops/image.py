"""Operator family: image (records are added by the family's author)."""
