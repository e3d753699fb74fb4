"""Live queries of a test run to completion a few at a time (one Spark session serves them all)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import settings

from wid.stream.live import run as live_run
from wid.stream.live.output import Live

WAVE = 2  # streaming queries at once (a loaded 2-core machine times out Python workers beyond that)


def streaming_examples(ci: int) -> settings:
    """Hypothesis settings of a property whose every example runs whole streaming queries (each
    micro-batch ~0.7 s, ~5 s a query): ``ci`` examples in the ``ci`` profile (the default, the
    suite's time budget), the profile's own count in any other (``nightly``: 200)."""
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    return settings(max_examples=ci if profile == "ci" else settings.default.max_examples)


def run_in_waves(jobs: dict[str, Live], work: Path) -> None:
    """Each job of ``jobs`` run to completion (``Trigger.AvailableNow``), ``WAVE`` at a time: its
    sink in ``work/name/out``, its checkpoint in ``work/name/checkpoint``. A failure stops the
    wave's other queries before it propagates (the session serves the tests after it)."""
    names = list(jobs)
    for wave in range(0, len(names), WAVE):
        started = []
        try:
            for n in names[wave:wave + WAVE]:
                started.append(live_run.start(jobs[n], work / n / "out", work / n / "checkpoint"))
            for query in started:
                live_run.run(query)
        finally:
            for query in started:
                query.stop()
