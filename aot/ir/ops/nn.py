"""Operator family: nn (records are added by the family's author)."""
