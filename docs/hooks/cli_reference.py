"""MkDocs hook: the command-line reference, generated from ``wid.cli.commands.parser()`` at build time.

A page holding the line ``<!-- cli-reference -->`` gets, in its place, ``wid --help`` and one
section per subcommand with its ``--help`` (80 columns, whatever the terminal), so the reference
is always the parser's own text.
"""

from __future__ import annotations

import argparse
import os
from unittest import mock

MARKER = "<!-- cli-reference -->"


def reference() -> str:
    """Markdown: the top-level help, then ``## wid NAME`` and the help of each subcommand."""
    from wid.cli.commands import parser

    with mock.patch.dict(os.environ, {"COLUMNS": "80"}):
        top = parser()
        subcommands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        summaries = {choice.dest: choice.help for choice in subcommands._choices_actions}
        parts = ["```text", top.format_help().rstrip(), "```"]
        for name, sub in subcommands.choices.items():
            parts += ["", f"## wid {name}", "", f"{summaries[name].capitalize()}.", "",
                      "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace the marker line with :func:`reference` (other pages pass unchanged)."""
    return markdown.replace(MARKER, reference()) if MARKER in markdown else markdown
