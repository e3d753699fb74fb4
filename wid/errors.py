"""Errors raised for bad input (SPEC section 6): each names the problem."""


class WidError(ValueError):
    """A malformed window clause or query, a bad parameter, or bad window-attribute data."""
