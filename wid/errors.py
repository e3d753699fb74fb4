"""Errors raised for bad input (docs/semantics.md section 11): each names the problem."""


class WidError(ValueError):
    """A malformed window clause or query, a bad parameter, or bad window-attribute data.

    >>> from wid.spec.clause import parse_window
    >>> issubclass(WidError, ValueError)
    True
    >>> parse_window("RANGE -5 SLIDE 1 WATTR ts")
    Traceback (most recent call last):
    wid.errors.WidError: RANGE must be positive, got -5 in [RANGE -5 SLIDE 1 WATTR ts]
    """
