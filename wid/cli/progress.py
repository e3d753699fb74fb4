"""A transient status line on the terminal (rich's spinner) while a slow step runs: shown only
when the terminal is one, and only once the step has taken ``after`` seconds; gone when it ends.
It writes to its own copy of stderr, so it still reaches the terminal while the JVM's output is
sent to a log file (:func:`wid.session.jvm_output`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner


def _stderr_copy() -> TextIO:
    """A file on this process's stderr that stays there when fd 2 is pointed elsewhere (or
    ``sys.stderr`` itself when it is no file, e.g. captured)."""
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both an OSError and a ValueError
        return sys.stderr


class Progress:
    """Status lines on ``terminal`` (default: a copy of this process's stderr, made now); a step
    inside another shows its own text until it ends.

    >>> import io
    >>> with Progress(io.StringIO()).step("running", after=2.0):  # not a terminal: nothing is shown
    ...     pass
    """

    def __init__(self, terminal: TextIO | None = None):
        self.console = Console(file=terminal or _stderr_copy(), stderr=True)
        self.texts: list[str] = []
        self.live: Live | None = None
        self.spinner = Spinner("dots")
        self.lock = threading.Lock()

    @contextmanager
    def step(self, text: str, after: float = 0.0) -> Iterator[None]:
        """A spinner with ``text`` while the block runs, from ``after`` seconds on."""
        if not self.console.is_terminal:
            yield
            return
        self.texts.append(text)
        timer = threading.Timer(after, self._show)
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            timer.join()
            with self.lock:
                self.texts.pop()
                if self.live is not None and self.texts:
                    self.spinner.update(text=self.texts[-1])
                elif self.live is not None:
                    self.live.stop()
                    self.live = None

    def _show(self) -> None:
        with self.lock:
            if not self.texts:
                return
            self.spinner.update(text=self.texts[-1])
            if self.live is None:
                # a result printed meanwhile goes above the spinner when both share the terminal,
                # straight to its file or pipe otherwise
                self.live = Live(self.spinner, console=self.console, transient=True,
                                 redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)
                self.live.start()
