"""Griffe extension (loaded by mkdocstrings): wid's docstrings, written for ``help()`` and
doctest, read as Markdown.

- a doctest example (``>>>`` lines, their continuations and expected output, up to a blank
  line) becomes a ``pycon`` code block, ``<BLANKLINE>`` a blank line and ``# doctest:`` flags
  dropped;
- a Sphinx role (``:func:`wid.query```, ``:class:`~wid.windows.flink.Discretization```) becomes
  inline code.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj|const):`~?([^`]+)`")
FLAG = re.compile(r"\s*# doctest:.*$")


def fenced(text: str) -> str:
    """``text`` with each run of doctest lines in a ``pycon`` fence at its indentation."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip())]
        if not line.lstrip().startswith(">>>"):
            out.append(line)
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].strip():
            body = lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip()
            block.append("" if body == "<BLANKLINE>" else FLAG.sub("", body))
            i += 1
        out += [f"{indent}```pycon", *(f"{indent}{b}" if b else "" for b in block), f"{indent}```"]
    return "\n".join(out)


def markdown(text: str) -> str:
    """A docstring's text as Markdown (:func:`fenced`, roles as inline code)."""
    return fenced(ROLE.sub(r"`\1`", text))


class DocstringsAsMarkdown(griffe.Extension):
    """Rewrites every loaded object's docstring with :func:`markdown`."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
