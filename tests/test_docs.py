"""The documentation: the site builds with ``mkdocs build --strict`` (a broken link, anchor or API
reference fails it), and every code example of the README and the guide runs as shown.

The examples are fenced blocks, run by their language, page by page in the order written:

- ``python``: run in one namespace per page, ``spark`` (the session of the run) predefined;
- ``pycon``: a doctest in that namespace (``...`` for any text; runs of whitespace, a table's
  trailing blank line included, compare as one space);
- ``console``: ``$ COMMAND`` lines, each followed by the output it prints, compared line by line
  (runs of spaces as one, a ``...`` line standing for any lines; stderr for a failing command);
- ``bash`` and ``sh``: commands alone;
- ``sql``: each statement through ``wid.run_sql``; ``toml``: parsed;
- ``text``: shown, not run (output, a synopsis).

Each page runs in a temporary directory, holding the files the page writes and the checkout's
``plans/`` and ``datasets/``, that is also the working directory of Spark's local file system
(so Spark resolves a relative path there, as it would in a user's own session): ``wid ...`` through :func:`wid.cli.main` on the run's
session, ``cat > FILE <<'EOF'`` writes FILE. ``pip install`` and ``python -m pytest`` are skipped
(they make the environment this test runs in). Any other command fails the test unless its block
is marked ``<!-- not run: REASON -->`` on the line before it, or ``<!-- walkthrough: tests/FILE ...
-->`` when another test runs it as written.
"""

from __future__ import annotations

import contextlib
import difflib
import doctest
import io
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import wid
from wid.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent
#: The README, CONTRIBUTING.md and the guide; docs/semantics.md (the contract) keeps its own examples.
PAGES = ["README.md", "CONTRIBUTING.md",
         *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if p.name != "semantics.md")]
#: Pages whose examples take a minute or more, and why.
SLOW = {"docs/live.md": "a streaming job over four micro-batches",
        "docs/replay.md": "a dozen replays under each generator, ~50 s on 2 busy cores",
        "docs/lateness-and-sessions.md": "replays with allowed lateness and of sessions, ~1 min on 2 busy cores"}
RUN = {"python", "pycon", "console", "bash", "sh", "sql", "toml"}
SHOWN = {"text"}
#: Commands that make the environment the suite runs in.
SETUP = (("pip", "install"), ("python", "-m", "pytest"))
HEREDOC = re.compile(r"^cat > (\S+) <<-?'?\"?(\w+)'?\"?$")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")


@dataclass
class Block:
    """A fenced block of a page: its language, text, first line's number and the HTML comment
    on the line before its fence (if any)."""

    language: str
    text: str
    line: int
    note: str


@dataclass
class Command:
    """A shell command of a block, the body of its here-document, the output shown after it."""

    text: str
    heredoc: str | None
    shown: list[str] | None


def blocks(markdown: str) -> list[Block]:
    """The fenced blocks of ``markdown``, in order (indented ones dedented).

    >>> [(b.language, b.text, b.note) for b in blocks("<!-- not run: x -->\\n```bash\\nls\\n```\\n  ```text\\n  a\\n  ```\\n")]
    [('bash', 'ls\\n', '<!-- not run: x -->'), ('text', 'a\\n', '')]
    """
    out, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        body, j = [], i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        note = before if before.startswith("<!--") else ""
        out.append(Block(opening["info"].strip().split(" ")[0], "".join(f"{b}\n" for b in body), i + 1, note))
        i = j + 1
    return out


def commands(block: Block) -> list[Command]:
    """The commands of a ``console`` block (``$ `` prompts, output after each) or a ``bash`` one
    (every line a command); a line ending with ``\\`` continues on the next.

    >>> text = "$ cat > a.csv <<'EOF'\\nx\\nEOF\\n$ wid query a.csv \\\\\\n  'SELECT 1'\\nrow\\n"
    >>> [(c.text, c.heredoc, c.shown) for c in commands(Block("console", text, 1, ""))]
    [("cat > a.csv <<'EOF'", 'x\\n', []), ("wid query a.csv 'SELECT 1'", None, ['row'])]
    """
    console = block.language == "console"
    out: list[Command] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if console and not line.startswith("$ "):
            assert out, f"line {block.line + 1 + i}: output before any '$ ' command"
            out[-1].shown.append(line)
            i += 1
            continue
        text = line[2:] if console else line
        while text.endswith("\\"):
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        heredoc = None
        if found := HEREDOC.match(text.strip()):
            end = lines.index(found[2], i)
            heredoc, i = "".join(f"{body}\n" for body in lines[i:end]), end + 1
        if text.strip() and not text.lstrip().startswith("#"):
            out.append(Command(text.strip(), heredoc, [] if console else None))
    return out


def normal(lines: list[str]) -> list[str]:
    """Lines with runs of whitespace as one space, trailing blank lines dropped."""
    out = [" ".join(line.split()) for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is ``shown`` line by line, a ``...`` line in ``shown`` standing for any lines.

    >>> matches(["a", "...", "z"], ["a", "b", "c", "z"]), matches(["a", "..."], ["b"]), matches(["...", "b"], ["b"])
    (True, False, True)
    """
    if not shown:
        return not actual
    if shown[0] == "...":
        return any(matches(shown[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and shown[0] == actual[0] and matches(shown[1:], actual[1:])


def run_command(command: Command, spark, where: str) -> None:
    """Run one command in the current directory; compare its output with the one shown."""
    if command.heredoc is not None:
        Path(HEREDOC.match(command.text)[1]).write_text(command.heredoc)
        return
    # `A && B`: the set-up commands among them are skipped, the one left runs
    parts = [list(part) for sep, part in itertools.groupby(shlex.split(command.text, comments=True),
                                                           lambda word: word == "&&") if not sep]
    parts = [argv for argv in parts if not any(tuple(argv[:len(setup)]) == setup for setup in SETUP)]
    if not parts:
        return
    assert len(parts) == 1, f"{where}: `{command.text}` runs more than one command"
    argv = parts[0]
    assert argv[0] == "wid", (f"{where}: cannot run `{command.text}`; mark its block "
                              "<!-- not run: REASON --> if it must not run")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv[1:], spark=spark)
    shown = normal(command.shown or [])
    failing = bool(shown) and shown[0].startswith("wid:")
    actual = normal((err if failing else out).getvalue().splitlines())
    assert status == (2 if failing else 0), f"{where}: `{command.text}` exited {status}: {err.getvalue()}"
    if command.shown:
        assert matches(shown, actual), f"{where}: `{command.text}` printed other lines:\n" + "\n".join(
            difflib.unified_diff(shown, actual, "shown", "printed", lineterm=""))


def run_block(block: Block, namespace: dict, page: str) -> None:
    where = f"{page}:{block.line}"
    if block.language == "python":
        exec(compile(block.text, where, "exec"), namespace)
    elif block.language == "pycon":
        test = doctest.DocTestParser().get_doctest(block.text, namespace, where, page, block.line)
        runner, report = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE), io.StringIO()
        runner.run(test, out=report.write, clear_globs=False)
        assert runner.failures == 0, report.getvalue()
    elif block.language == "sql":
        for statement in filter(str.strip, block.text.split(";")):
            wid.run_sql(namespace["spark"], statement).collect()
    elif block.language == "toml":
        tomllib.loads(block.text)
    else:
        for command in commands(block):
            run_command(command, namespace["spark"], where)


def runnable(block: Block, page: str) -> bool:
    """Whether the test runs ``block``; a block it cannot run must say why, or who runs it."""
    where = f"{page}:{block.line}"
    assert block.language in RUN | SHOWN, f"{where}: a block without a known language ({block.language!r})"
    if block.note.startswith("<!-- walkthrough:"):
        test = re.search(r"tests/\S+\.py", block.note)
        assert test and (ROOT / test[0]).is_file(), f"{where}: the walkthrough names no test file"
        return False
    if block.note.startswith("<!-- not run"):
        assert re.match(r"<!-- not run: \S", block.note), f"{where}: say why the block does not run"
        return False
    return block.language in RUN


def test_the_runner_reads_blocks_and_commands_as_documented():
    assert doctest.testmod(sys.modules[__name__]).failed == 0


def test_every_page_is_in_the_site_and_every_block_has_a_language():
    config = (ROOT / "mkdocs.yml").read_text()
    for page in PAGES[2:]:
        assert page.removeprefix("docs/") in config, f"{page} is not in mkdocs.yml's nav"
    for page in PAGES:
        for block in blocks((ROOT / page).read_text()):
            runnable(block, page)


@contextlib.contextmanager
def working_directory(spark, path: Path):
    """``path`` as the working directory of this process and of Spark's local file system, which
    resolves the relative paths Spark reads and writes (the JVM's own cwd stays where it started)."""
    local = spark._jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration())
    before, cwd = local.getWorkingDirectory(), os.getcwd()
    local.setWorkingDirectory(spark._jvm.org.apache.hadoop.fs.Path(str(path)))
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(cwd)
        local.setWorkingDirectory(before)


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW else p for p in PAGES])
def test_examples_run_as_shown(spark, page, tmp_path):
    for folder in ("plans", "datasets"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    namespace = {"spark": spark, "__name__": "__docs__"}
    with working_directory(spark, tmp_path):
        for block in blocks((ROOT / page).read_text()):
            if runnable(block, page):
                run_block(block, namespace, page)


def mkdocs(root: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the checkout at ``root`` into ``site``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_site_builds_strict_with_both_references(tmp_path):
    done = mkdocs(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    for command in ("query", "replay", "run", "sql", "serve", "live", "bench", "experiment"):
        assert f'id="wid-{command}"' in cli, f"wid {command} is missing from the CLI reference"
    assert "--punctuation TEXT" in cli and "examples:" in cli
    api = "".join((tmp_path / "site" / "reference" / page / "index.html").read_text()
                  for page in ("api", "live", "windows", "datasets"))
    for name in ("wid.query", "wid.replay", "wid.live", "wid.to_sql", "wid.register", "wid.run_sql",
                 "wid.create_view", "wid.arrival", "wid.punctuate.slack", "wid.punctuate.heartbeat",
                 "wid.punctuate.ordered_by", "wid.punctuate.embedded", "Discretization", "Sliding", "Session"):
        assert re.search(rf">\s*{re.escape(name)}\s*<", api), f"{name} is missing from the API reference"
    assert "```" not in api and "&gt;&gt;&gt; " in api  # doctest examples rendered as code


@pytest.mark.slow
def test_a_broken_link_fails_the_build(tmp_path):
    for name in ("mkdocs.yml", "README.md", "CONTRIBUTING.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "wid").symlink_to(ROOT / "wid")
    (tmp_path / "datasets").symlink_to(ROOT / "datasets")
    (tmp_path / "plans").symlink_to(ROOT / "plans")  # pages include files of plans/ (pymdownx.snippets)
    page = tmp_path / "docs" / "windows.md"
    page.write_text(page.read_text() + "\nSee [the replay page](replays.md).\n")
    done = mkdocs(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    assert "Doc file 'windows.md' contains a link 'replays.md', but the target is not found" in done.stderr
