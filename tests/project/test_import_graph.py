"""The package's imports, at the top of a module or inside a function (docs/ARCHITECTURE.md):
no module imports one that imports it back (shared code moves down into a module both import);
imports point down the layers, but for the few named in :data:`UPWARD`; and no module imports
a private name (``_x``) of another subpackage.  Package ``__init__`` modules, which hand names
on, are not nodes of the graph."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import paimon_fast

PKG = Path(paimon_fast.__file__).resolve().parent


def modules() -> dict:
    """Dotted module name -> path, for every .py file of the package."""
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imported(name: str, path: Path, node, mods: dict) -> list:
    """The package's modules an import statement of module ``name`` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    if node.level:
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for a in node.names:
        sub = f"{target}.{a.name}"
        out.append(sub if sub in mods else target)
    return [t for t in out if t in mods]


@functools.lru_cache(maxsize=None)
def import_nodes(path: Path) -> tuple:
    """The import statements of a module, at its top and inside its functions (parsed once a
    session: six tests read the whole package's, about 1.7 s a reading)."""
    tree = ast.parse(path.read_text(), str(path))
    return tuple(node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def graph() -> dict:
    mods = modules()
    g = {}
    for name, path in mods.items():
        if path.name == "__init__.py":
            continue
        edges = set()
        for node in import_nodes(path):
            edges.update(t for t in imported(name, path, node, mods) if t != name)
        g[name] = {t for t in edges if mods[t].name != "__init__.py"}
    return g


# the layers, bottom first: (name, module prefixes); a module's layer is its longest prefix's
LAYERS = [
    ("errors", ["paimon_fast.errors", "paimon_fast.compat"]),
    ("kernels", ["paimon_fast._kernels"]),
    ("core", ["paimon_fast.core"]),
    ("io", ["paimon_fast.io"]),
    ("file indexes", ["paimon_fast.fileindex"]),
    ("command registry", ["paimon_fast.cli"]),
    ("global and table indexes", ["paimon_fast.globalindex", "paimon_fast.tableindex"]),
    ("read", ["paimon_fast.read"]),
    ("table kinds", ["paimon_fast.tables", "paimon_fast.paimon", "paimon_fast.hudi"]),
    ("Spark", ["paimon_fast.spark"]),
    ("entry points", ["paimon_fast.samples", "paimon_fast.bench"]),
]
# modules that are entry points wherever they sit: the feature commands and the Spark jobs
ENTRY_SUFFIXES = (".cli", ".demo")
SPARK_SUFFIXES = ("_job",)
#: the imports allowed to point up: (importer, imported) -> why (each also commented at the import)
UPWARD = {
    ("paimon_fast.paimon.rewrite", "paimon_fast.spark.env"): "the rewrite's Spark build checks the "
    "Spark environment it runs in",
}
#: the table kinds (Parquet datasets, Paimon, Hudi) share what lies below them, not each other's
#: modules; the imports allowed between two of them: (importer, imported) -> why
KINDS = ("paimon_fast.tables", "paimon_fast.paimon", "paimon_fast.hudi")
ACROSS_KINDS = {
    ("paimon_fast.tables.gc", "paimon_fast.hudi.storage"): "one `gc` command serves both table kinds; "
    "the Hudi sidecar's orphan rule lives with its layout",
}


def layer_of(name: str, g: dict) -> float:
    """The layer (index in LAYERS) of a module.  A twin (``paimon_fast.reference``) sits on the
    lowest layer its own imports allow: beside its kernel."""
    if name.startswith("paimon_fast.reference."):
        return max([layer_of(t, g) for t in g.get(name, ())] + [1])
    if name.endswith(ENTRY_SUFFIXES) and name != "paimon_fast.cli":
        return len(LAYERS) - 1
    if name.endswith(SPARK_SUFFIXES):
        return len(LAYERS) - 2
    best, at = -1, len(LAYERS) - 1
    for i, (_, prefixes) in enumerate(LAYERS):
        for pre in prefixes:
            if (name == pre or name.startswith(pre + ".")) and len(pre) > best:
                best, at = len(pre), i
    return at


def upward(g: dict) -> list:
    """Every import of a module on a higher layer: ``(importer, imported)``."""
    return sorted((a, b) for a, es in g.items() for b in es if layer_of(b, g) > layer_of(a, g))


def kind_of(name: str):
    return next((k for k in KINDS if name == k or name.startswith(k + ".")), None)


def across_kinds(g: dict) -> list:
    """Every import of one table kind's module by another kind's: ``(importer, imported)``."""
    out = []
    for a, es in g.items():
        for b in es:
            ka, kb = kind_of(a), kind_of(b)
            if ka is not None and kb is not None and ka != kb:
                out.append((a, b))
    return sorted(out)


def private_imports() -> list:
    """``(importer, module, name)`` for every private name imported from another subpackage."""
    mods = modules()
    out = []

    def sub(m):
        parts = m.split(".")
        return parts[1] if len(parts) > 1 else ""

    for name, path in mods.items():
        for node in import_nodes(path):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = imported(name, path, node, mods)
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    for t in target:
                        if t in mods and f"{t}.{a.name}" not in mods and sub(t) != sub(name):
                            out.append((name, t, a.name))
    return sorted(set(out))


def cycles(g: dict) -> list:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in g:
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_graph_is_read():
    g = graph()
    # imports at the top of a module and inside functions
    assert "paimon_fast.read.lazy" in g["paimon_fast.tables.stream"]
    assert "paimon_fast.tables.plan" in g["paimon_fast.tables.stream"]
    assert "paimon_fast.tables.globalindex" in g["paimon_fast.tables.explain"]
    assert "paimon_fast.paimon.scan" in g["paimon_fast.paimon.stream"]


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_imports_point_down_the_layers():
    g = graph()
    assert upward(g) == sorted(UPWARD)
    assert len(UPWARD) <= 2


def test_table_kinds_borrow_nothing_from_each_other():
    g = graph()
    assert across_kinds(g) == sorted(ACROSS_KINDS)
    assert across_kinds({"paimon_fast.paimon.x": {"paimon_fast.tables.y", "paimon_fast.read.z"}}) == [
        ("paimon_fast.paimon.x", "paimon_fast.tables.y")
    ]


def test_the_layers_are_read():
    g = graph()
    assert layer_of("paimon_fast.core.predicate", g) < layer_of("paimon_fast.io.fs", g)
    assert layer_of("paimon_fast.hudi.cli", g) == len(LAYERS) - 1  # a command: an entry point
    assert layer_of("paimon_fast.hudi.read_job", g) == len(LAYERS) - 2  # a Spark job
    assert layer_of("paimon_fast.reference.pqread", g) == 1  # a twin beside its kernel
    # an import from a lower layer to a higher one is found
    assert upward({"paimon_fast.core.types": {"paimon_fast.tables.parquet"}, "paimon_fast.tables.parquet": set()}) == [
        ("paimon_fast.core.types", "paimon_fast.tables.parquet")
    ]


def test_no_private_names_across_subpackages():
    assert private_imports() == []


def test_a_cycle_is_found():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]


def test_package_faces_and_the_top_level_stay_small():
    """Package ``__init__`` modules hand names on (at most 80 lines), and at most four modules
    sit at the package's top level besides ``__init__``, ``cli`` and ``errors``."""
    faces = {str(p.relative_to(PKG)): len(p.read_text().splitlines()) for p in PKG.rglob("__init__.py")}
    assert {f: n for f, n in faces.items() if n > 80} == {}
    loose = sorted(p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "cli", "errors"))
    assert len(loose) <= 4, loose


#: product modules allowed over 700 lines, each with the reason its docstring gives (none today)
LONG_MODULES: dict = {}


def test_product_modules_stay_at_most_700_lines():
    """A module over 700 lines is split along its concerns; the kernels' twins
    (``reference/``, one file per kernel) are apart."""
    long = {
        str(p.relative_to(PKG)): n
        for p in PKG.rglob("*.py")
        if "reference" not in p.relative_to(PKG).parts and (n := len(p.read_text().splitlines())) > 700
    }
    assert set(long) == set(LONG_MODULES), long
    assert len(LONG_MODULES) <= 2
