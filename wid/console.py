"""Plain text of the command line: aligned tables, and progress on the ``wid`` logger
(:func:`wid.cli.main` shows it on stderr)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

#: Progress of long commands (bench, experiment); results go to stdout.
log = logging.getLogger("wid")


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool],
            rule: bool = False) -> list[str]:
    """``header`` and ``rows`` as lines of columns two spaces apart, each as wide as its widest
    cell, right-aligned where ``right``; ``rule``: a line of dashes under the header."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = [["-" * w for w in widths]] if rule else []

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return [line(header), *map(line, lines), *map(line, rows)]
