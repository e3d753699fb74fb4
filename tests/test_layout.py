"""The package's own shape (issues 12 and 40): read from the source with ``ast``, not from the code's say-so.

- no import cycle, counting imports inside functions too;
- the window specs are a leaf: ``wid.windows`` imports nothing of wid but itself and :mod:`wid.errors`,
  not even inside a function, and loads no module by name (each stage finds its own code for a kind);
- at most 12 modules directly under ``wid/``, at most 20 in any folder, no three modules of a
  folder sharing a name prefix (``live_state``, ``live_run``, ``live_fca``: that prefix is a folder);
- no private name (``_x``) imported from another module;
- outside ``wid/windows`` no module switches on a window kind: no ``isinstance`` against a
  :class:`wid.windows.base.WindowSpec` subclass and no ``hasattr``/``getattr(..., default)`` on a spec;
- a stage that serves no kind of a made-up window says so in one error naming it;
- a live query's processor unpickles, as Spark's driver-side state-schema process does at each
  query start, without loading pandas or the engine.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql.types import LongType, StructField, StructType

from wid.bucket.kinds import bucket, bucket_sql, live_bucket
from wid.errors import WidError
from wid.windows.base import WindowSpec
from wid.stream.kinds import replay
from wid.stream.live.kinds import live_extents
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


def module_graph(mods: dict[str, str], everywhere: bool = True) -> dict[str, set[str]]:
    """Import edges between the modules of ``mods``: every import, or (``everywhere`` False) the
    module-level ones only."""
    names = set(mods)
    return {m: {t for t, _, top in imports(m, s, names) if (top or everywhere) and t in names and t != m}
            for m, s in mods.items()}


def leaf_breaches(mods: dict[str, str], leaf: str = "wid.windows",
                  allowed: tuple[str, ...] = ("wid.errors",)) -> list[str]:
    """Imports of the package ``leaf`` that reach wid outside it and ``allowed``, at any level, and
    its modules loading others by name (``importlib``)."""
    names = set(mods)
    found = []
    for m, src in mods.items():
        if m != leaf and not m.startswith(f"{leaf}."):
            continue
        for target, _, _ in imports(m, src, names):
            inside = target == leaf or target.startswith((f"{leaf}.", *allowed))
            if target.split(".")[0] == "importlib" or (target.split(".")[0] == "wid" and not inside):
                found.append(f"{m} imports {target}")
    return sorted(set(found))


def crowding(mods: dict[str, str], packages: set[str], top: int = 12, folder: int = 20, prefix: int = 3) -> list[str]:
    """Folders over their limits: more than ``top`` modules directly under ``wid`` or ``folder`` in
    any other folder, and ``prefix`` or more modules of one folder whose names share the word
    before their first underscore (``packages``: the folders among ``mods``)."""
    folders: dict[str, list[str]] = {}
    for m in mods:
        if m not in packages:
            parent, leaf = m.rsplit(".", 1)
            folders.setdefault(parent, []).append(leaf)
    found = []
    for parent, leaves in sorted(folders.items()):
        limit = top if parent == "wid" else folder
        if len(leaves) > limit:
            found.append(f"{parent} holds {len(leaves)} modules (at most {limit})")
        words: dict[str, list[str]] = {}
        for leaf in leaves:
            words.setdefault(leaf.split("_")[0], []).append(leaf)
        found += [f"{parent}: {', '.join(sorted(v))} share the prefix {w!r}: a folder" for w, v in sorted(words.items())
                  if len(v) >= prefix]
    return found


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


def test_no_import_cycle_even_inside_functions():
    assert cycle(module_graph(MODULES)) is None


def test_the_window_specs_are_a_leaf():
    assert leaf_breaches(MODULES) == []


def test_no_folder_is_crowded():
    assert crowding(MODULES, PACKAGES) == []


def test_no_private_name_imported_across_modules():
    assert private_imports(MODULES) == []


def test_no_module_outside_spec_switches_on_the_window_kind():
    names = set(MODULES)
    found = [s for m, src in MODULES.items() if not m.startswith("wid.windows") for s in spec_switches(m, src, names)]
    assert found == []


def test_the_aggregate_imports_no_window_kind():
    """The aggregate stage is window-agnostic: no module of ``wid.aggregate`` imports a window kind
    or a grammar (numbers and SQL text helpers of ``wid.windows`` are not kinds)."""
    kinds = ("wid.windows.base", "wid.windows.context_free", "wid.windows.aware", "wid.windows.clause",
             "wid.windows.spl", "wid.windows.flink")
    names = set(MODULES)
    found = [f"{m} imports {t}" for m, src in MODULES.items() if m.startswith("wid.aggregate")
             for t, _, _ in imports(m, src, names) if t.startswith(kinds)]
    assert found == []


def test_the_checks_find_what_they_look_for():
    """The checks on a small made-up package: each rule broken once is reported."""
    made_up = {
        "wid.a": "from wid.b import helper\n",
        "wid.b": "from wid.a import _hidden\n\ndef f():\n    from wid.c import g\n",
        "wid.c": "from wid.windows.context_free import Sliding\nfrom wid.windows import spl\n\n"
                 "def g(spec):\n    if isinstance(spec, (int, Sliding)) or isinstance(spec, spl.Tumbling):\n"
                 "        return hasattr(spec, 'slide')\n    return getattr(compiled.spec, 'slide', None)\n",
        "wid.d": "from wid.c import g\n\ndef h(policy, spec):\n"
                 "    return isinstance(policy, dict) and getattr(policy, 'x')\n",
    }
    names = set(made_up)
    assert cycle(module_graph(made_up)) == ["wid.a", "wid.b", "wid.a"]
    inside = {**made_up, "wid.b": "def f():\n    from wid.a import helper\n"}
    assert cycle(module_graph(inside)) == ["wid.a", "wid.b", "wid.a"]  # an import in a function counts
    assert cycle(module_graph(inside, everywhere=False)) is None
    spec = {"wid.windows": "", "wid.windows.kind": "import importlib\nfrom wid.errors import WidError\n"
                                             "from wid.windows.numbers import LIMIT\n\n"
                                             "def bucket(df):\n    from wid.bucket.fcf import bucket\n",
            "wid.windows.numbers": "from wid.stream import replay\n",
            "wid.bucket.fcf": "from wid.windows.kind import x\n"}
    assert leaf_breaches(spec) == ["wid.windows.kind imports importlib", "wid.windows.kind imports wid.bucket.fcf",
                                   "wid.windows.numbers imports wid.stream"]
    crowded = {"wid": "", **{f"wid.m{i}": "" for i in range(13)}, "wid.live": "",
               **{f"wid.live.live_{w}": "" for w in ("state", "run", "fca")}, "wid.live.live": "",
               **{f"wid.live.p{i}": "" for i in range(17)}}
    assert crowding(crowded, {"wid", "wid.live"}) == [
        "wid holds 13 modules (at most 12)", "wid.live holds 21 modules (at most 20)",
        "wid.live: live, live_fca, live_run, live_state share the prefix 'live': a folder"]
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


class Hexagonal(WindowSpec):
    """A window kind no stage serves."""

    wattr = "ts"


@pytest.mark.parametrize("stage", [
    lambda spark: bucket(Hexagonal(), spark.range(1)),
    lambda spark: bucket_sql(Hexagonal(), "readings", spark.range(1)),
    lambda spark: live_bucket(Hexagonal(), spark.range(1)),
    lambda spark: replay(Hexagonal(), None, None),
    lambda spark: live_extents(Hexagonal(), None, None, None),
], ids=["bucket", "bucket_sql", "live_bucket", "replay", "live_extents"])
def test_a_stage_that_serves_no_kind_says_so(spark, stage):
    with pytest.raises(WidError, match="Hexagonal"):
        stage(spark)


def test_the_public_names_and_the_former_spec_imports_still_work():
    """The API of the SPEC (section 4) and the window kinds' former home ``wid.spec``."""
    import wid
    from wid.spec import flink, windows
    from wid.spec.flink import Discretization
    from wid.windows import context_free
    from wid.windows import flink as moved

    assert all(callable(getattr(wid, name)) for name in ("query", "replay", "live", "to_sql", "register", "run_sql",
                                                        "create_view", "arrival"))
    assert callable(wid.punctuate.slack) and callable(wid.punctuate.heartbeat)
    assert (flink, windows, Discretization) == (moved, context_free, moved.Discretization)
