"""No module of the package imports one that imports it back, at the top or inside a function
(docs/ARCHITECTURE.md: shared code moves down into a module both import).  Package
``__init__`` modules, which hand names on, are not nodes of the graph."""

from __future__ import annotations

import ast
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


def graph() -> dict:
    mods = modules()
    g = {}
    for name, path in mods.items():
        if path.name == "__init__.py":
            continue
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(t for t in imported(name, path, node, mods) if t != name)
        g[name] = {t for t in edges if mods[t].name != "__init__.py"}
    return g


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


def test_a_cycle_is_found():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(g) == [["a", "b", "c"]]
