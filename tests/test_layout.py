"""The package's own shape (issue 12): read from the source with ``ast``, not from the code's say-so.

- no cycle among module-level imports (imports inside functions may point back: a window kind
  imports its tagger when asked for it);
- no private name (``_x``) imported from another module;
- outside ``wid/spec`` no module switches on a window kind: no ``isinstance`` against a
  :class:`wid.spec.base.WindowSpec` subclass and no ``hasattr``/``getattr(..., default)`` on a spec;
- a live query's processor unpickles, as Spark's driver-side state-schema process does at each
  query start, without loading pandas or the engine.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from pyspark import cloudpickle
from pyspark.sql.types import LongType, StructField, StructType

from wid.spec.base import WindowSpec
from wid.stream.live.processor import VALUE, Stateful
from wid.stream.live.state import PaneProcessor

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "wid"


def sources() -> dict[str, str]:
    """Module name -> source text of every module under ``wid/``."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path.read_text()
    return out


def _target(module: str, node: ast.ImportFrom, modules: set[str]) -> str:
    """The module a ``from ... import`` reads (relative imports resolved against ``module``)."""
    if node.level:
        base = module.split(".")[: len(module.split(".")) - node.level + (module in PACKAGES)]
        return ".".join([*base, node.module] if node.module else base)
    return node.module or ""


def imports(module: str, source: str, modules: set[str]) -> list[tuple[str, str, bool]]:
    """``(imported module, name or "", at module level)`` for every import in ``source``;
    ``from pkg import sub`` counts as an import of the module ``pkg.sub`` when that is one."""
    tree = ast.parse(source)
    top = {id(n) for n in tree.body}
    top |= {id(n) for stmt in tree.body if isinstance(stmt, ast.If) for n in stmt.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, "", id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, node, modules)
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, "", id(node) in top) if sub in modules else (target, a.name, id(node) in top))
    return out


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (a list of nodes, first = last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def module_graph(mods: dict[str, str]) -> dict[str, set[str]]:
    """Module-level import edges between the modules of ``mods``."""
    names = set(mods)
    return {m: {t for t, _, top in imports(m, s, names) if top and t in names and t != m} for m, s in mods.items()}


def private_imports(mods: dict[str, str]) -> list[str]:
    names = set(mods)
    return [f"{m} imports {name} from {t}" for m, s in mods.items() for t, name, _ in imports(m, s, names)
            if name.startswith("_") and not name.startswith("__") and t != m and t.split(".")[0] == "wid"]


def _resolve(node: ast.expr, bound: dict[str, tuple[str, str]]) -> list[object]:
    """The objects the class argument of ``isinstance`` names (a name, ``module.name`` or a tuple)."""
    if isinstance(node, ast.Tuple):
        return [obj for elt in node.elts for obj in _resolve(elt, bound)]
    if isinstance(node, ast.Name) and node.id in bound:
        module, name = bound[node.id]
        try:
            found = importlib.import_module(module)
            return [getattr(found, name) if hasattr(found, name) else importlib.import_module(f"{module}.{name}")
                    ] if name else [found]
        except ImportError:
            return []
    if isinstance(node, ast.Attribute):
        return [getattr(owner, node.attr, None) for owner in _resolve(node.value, bound)]
    return []


def spec_switches(module: str, source: str, modules: set[str]) -> list[str]:
    """``isinstance`` against a WindowSpec subclass, and ``hasattr``/3-argument ``getattr`` on
    anything called ``spec``, in ``source``."""
    tree = ast.parse(source)
    bound: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(module, node, modules)
            bound.update({a.asname or a.name: (target, a.name) for a in node.names})
        elif isinstance(node, ast.Import):
            bound.update({(a.asname or a.name).split(".")[0]: ((a.asname and a.name) or a.name.split(".")[0], "")
                          for a in node.names})
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
            continue
        where = f"{module}:{node.lineno}: {ast.unparse(node)}"
        if node.func.id == "isinstance" and len(node.args) == 2:
            kinds = _resolve(node.args[1], bound)
            if any(isinstance(k, type) and issubclass(k, WindowSpec) for k in kinds):
                out.append(where)
        elif (node.func.id == "hasattr" or (node.func.id == "getattr" and len(node.args) == 3)) \
                and "spec" in ast.unparse(node.args[0]):
            out.append(where)
    return out


MODULES = sources()
PACKAGES = {m for m in MODULES if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}


def test_no_cycle_among_module_level_imports():
    assert cycle(module_graph(MODULES)) is None


def test_no_private_name_imported_across_modules():
    assert private_imports(MODULES) == []


def test_no_module_outside_spec_switches_on_the_window_kind():
    names = set(MODULES)
    found = [s for m, src in MODULES.items() if not m.startswith("wid.spec") for s in spec_switches(m, src, names)]
    assert found == []


def test_the_spec_never_imports_a_later_stage_at_import_time():
    graph = module_graph(MODULES)
    later = ("wid.bucket", "wid.aggregate", "wid.stream", "wid.compiler.query", "wid.sql.views")
    assert {m: sorted(t for t in ts if t.startswith(later)) for m, ts in graph.items() if m.startswith("wid.spec")} \
        == {m: [] for m in graph if m.startswith("wid.spec")}


def test_the_aggregate_imports_no_window_kind():
    """The aggregate stage is window-agnostic: no module of ``wid.aggregate`` imports a window kind
    or a grammar (numbers and SQL text helpers of ``wid.spec`` are not kinds)."""
    kinds = ("wid.spec.base", "wid.spec.windows", "wid.spec.aware", "wid.spec.clause", "wid.spec.spl", "wid.spec.flink")
    names = set(MODULES)
    found = [f"{m} imports {t}" for m, src in MODULES.items() if m.startswith("wid.aggregate")
             for t, _, _ in imports(m, src, names) if t.startswith(kinds)]
    assert found == []


def test_the_checks_find_what_they_look_for():
    """The checks on a small made-up package: each rule broken once is reported."""
    made_up = {
        "wid.a": "from wid.b import helper\n",
        "wid.b": "from wid.a import _hidden\n\ndef f():\n    from wid.c import g\n",
        "wid.c": "from wid.spec.windows import Sliding\nfrom wid.spec import spl\n\n"
                 "def g(spec):\n    if isinstance(spec, (int, Sliding)) or isinstance(spec, spl.Tumbling):\n"
                 "        return hasattr(spec, 'slide')\n    return getattr(compiled.spec, 'slide', None)\n",
        "wid.d": "from wid.c import g\n\ndef h(policy, spec):\n"
                 "    return isinstance(policy, dict) and getattr(policy, 'x')\n",
    }
    names = set(made_up)
    assert cycle(module_graph(made_up)) == ["wid.a", "wid.b", "wid.a"]
    assert cycle(module_graph({**made_up, "wid.b": "def f():\n    from wid.a import helper\n"})) is None
    assert private_imports(made_up) == ["wid.b imports _hidden from wid.a"]
    assert sorted(s.split(":")[1] for s in spec_switches("wid.c", made_up["wid.c"], names)) == ["5", "5", "6", "7"]
    assert spec_switches("wid.d", made_up["wid.d"], names) == []


class _Step(PaneProcessor):
    """A step whose unpickling would load the engine (:mod:`wid.stream.live.state`, pandas)."""

    def __init__(self) -> None:  # no layout needed: only its state variables are read
        pass

    def variables(self):
        return {"seen": (VALUE, StructType([StructField("n", LongType())]))}


def test_spark_reads_a_live_processors_state_schemas_without_loading_the_engine(tmp_path):
    pickled = tmp_path / "processor.pickle"
    pickled.write_bytes(cloudpickle.dumps(Stateful(_Step())))
    probe = (f"import pickle, sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
             f"p = pickle.loads(open({str(pickled)!r}, 'rb').read()); "
             "print(sorted(p.variables), [m for m in ('pandas', 'numpy', 'wid.stream.live.state', "
             "'wid.compiler.query') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['seen']", "[]"]
