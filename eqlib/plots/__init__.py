"""Figures for the book: one module per topic, each function returns a matplotlib Figure."""
