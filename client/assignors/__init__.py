"""Partition assignors."""
