"""Errors raised for bad input (docs/semantics.md section 11): each names the problem."""


class WidError(ValueError):
    """A malformed window clause or query, a bad parameter, or bad window-attribute data."""
