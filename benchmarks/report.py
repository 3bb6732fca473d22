"""Run the benchmark suite (or named parts) and write one report: Markdown + PNG plots.

    python -m benchmarks.report                 # every part (tens of minutes; some need tables / Spark)
    python -m benchmarks.report --quick         # a subset that runs in under 3 minutes on 2 cores
    python -m benchmarks.report bloom scaling   # named parts
    python -m benchmarks.report --quick --output docs/benchmarks.md   # the committed report
    paimon-fast bench --quick                   # the same, from the CLI

The report goes where ``--output`` says, else to a new directory of the temporary directory
(the checkout is written to only when asked).  The parts run against the ``paimon_fast`` this
process imports (an installed one, or the checkout's with an editable install), in a working
directory of their own, without bytecode or pytest caches.

Each part is one ``benchmarks/bench_*.py`` file run by pytest-benchmark in a child process
(``--benchmark-json``); every implementation of an operation (our kernel, the pure-Python
twin, pypaimon, pypaimon-rust, numpy / pyarrow.compute, Java Paimon 0.9 where it runs here)
is measured in that same run, and the report gives each one's median and its ratio to ours.
Figures that could not be measured are listed with the reason (a skipped benchmark's
message, or why an anchor does not run here).  Plots need matplotlib (the ``bench`` extra);
without it the report is written without them and says so.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from _keys import bench_key  # noqa: E402

# part -> (file, pytest -k expression for --quick (None: whole file), env for --quick, note)
PARTS = {
    "bloom": ("bench_bloom.py", None, {}, "bloom filter add / probe, 1e6 values"),
    "bitmap": (
        "bench_bitmap.py",
        "open_equal_kernel or open_equal_twin or build_kernel or in5",
        {},
        "bitmap file index V2, 1e6 rows",
    ),
    "range_bitmap": (
        "bench_range_bitmap.py",
        "cold_open_range or open_range or top10_kernel or build_kernel",
        {},
        "range bitmap file index, 1e6 rows",
    ),
    "bsi": ("bench_bsi.py", "not build_twin", {}, "BSI file index, 1e6 rows"),
    "globalindex": (
        "bench_globalindex.py",
        "cold_equal or cold_in5 or build_kernel",
        {},
        "bitmap global index, 1e6 rows",
    ),
    "multivalue": ("bench_multivalue.py", None, {}, "multivalue (ARRAY) global index"),
    "btree": (
        "bench_btree.py",
        "cold_equal or cold_range",
        {},
        "BTree global index: one file (1e6 rows) and a Paimon table, vs twins and pypaimon",
    ),
    "tableindex": ("bench_tableindex.py", None, {}, "deletion vectors, hash index"),
    "scaling": (
        "bench_scaling.py",
        None,
        {"PF_BENCH_SCALING_NS": "100000,1000000,10000000"},
        "build / query time against N, peak RSS at 1e7",
    ),
    "topn": ("bench_topn.py", None, {}, "table-level top-N"),
    "parquet_rows": ("bench_parquet_rows.py", None, {}, "rows at known positions: native reader vs row-group read"),
    "peers": (
        "bench_peers.py",
        None,
        {"PF_PEERS_ROWS": "1000000"},
        "indexed reads and counts vs DuckDB, Polars, pyarrow.dataset (1e6 rows; bench_peers.py alone for 1e7)",
    ),
    "paimon": ("bench_paimon.py", None, {}, "pruned Paimon reads vs pypaimon / pypaimon-rust"),
    "hudi": ("bench_hudi.py", None, {}, "Hudi RFC-92 bitmap index (Spark)"),
    "spark": ("bench_spark.py", None, {}, "Spark builds"),
}
QUICK = ["bloom", "globalindex", "bitmap", "range_bitmap", "bsi", "scaling"]
ANCHOR_NAMES = {
    "twin": "pure-Python twin",
    "java": "Java Paimon 0.9",
    "pypaimon": "pypaimon 2.1",
    "pypaimon_rust": "pypaimon-rust",
    "pyarrow_compute": "pyarrow.compute scan",
    "rowgroup": "pyarrow row-group read + take",
}
# anchors that do not run for a part, and why (printed under its table)
STANDING_NOTES = {
    "bloom": "pypaimon and pypaimon-rust expose no bloom filter build or probe API to compare with.",
    "bitmap": "Java Paimon 0.9 (the jar that runs here) writes bitmap V1; our writer is V2, so no same-run "
    "Java figure; pypaimon 2.1 has no bitmap file index writer.",
    "range_bitmap": "Java Paimon 0.9 has no range-bitmap index (added after 0.9); no Java figure.",
    "bsi": "Java Paimon 0.9 has no BSI file index; no Java figure.",
    "globalindex": "Java Paimon 0.9 has no global index; pypaimon 2.1's reader is timed on the STRING files "
    "only (its integer lookups give wrong answers on Java-ordered files).",
    "scaling": "Queries are compared with scanning the column (what a reader does without an index; for the "
    "bloom probe, `pc.is_in` against the added values). Java 0.9 is not run here (bloom only, "
    "see the bloom part).",
}


def _package_parent() -> str:
    """The directory the ``paimon_fast`` this process runs is imported from (site-packages for an
    installed one, the checkout for an editable install)."""
    import importlib.util

    spec = importlib.util.find_spec("paimon_fast")
    if spec is None or not spec.origin:
        return ROOT
    return os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))


def _env(extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_parent(), env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the checkout's benchmarks/
    env.update(extra)
    return env


def _load():
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def probe_samples(part) -> list:
    """The speed probes (``speed_probe_us``, before and after each benchmark; benchmarks/conftest.py)
    of a part's benchmarks, in microseconds."""
    return [v for b in part.get("benchmarks", ()) for v in ((b.get("extra_info") or {}).get("speed_probe_us") or ())]


def probe_summary(samples, fastest: float) -> str:
    """``median (p10-p90) us, n% slow``; slow = over 1.4x the report's ``fastest`` probe sample
    (the machine's speed in its fast spells)."""
    if not samples:
        return "no probe samples"
    s = sorted(samples)
    med, lo, hi = s[len(s) // 2], s[len(s) // 10], s[(len(s) * 9) // 10]
    slow = sum(v > 1.4 * fastest for v in s) / len(s)
    return f"speed probe {med:.0f} us (p10-p90 {lo:.0f}-{hi:.0f} us), {slow:.0%} of samples in a slow spell"


def run_part(name, quick, workdir, log):
    fname, quick_k, quick_env, _ = PARTS[name]
    jpath = os.path.join(workdir, f"{name}.json")
    xpath = os.path.join(workdir, f"{name}.xml")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        os.path.join(HERE, fname),
        "--benchmark-only",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--benchmark-json={jpath}",
        f"--junitxml={xpath}",
        "-o",
        "junit_family=xunit1",
    ]
    if quick and quick_k:
        cmd += ["-k", quick_k]
    load0 = _load()
    t0 = time.perf_counter()
    log(f"[{name}] {' '.join(cmd[3:5])}{' -k ' + repr(quick_k) if quick and quick_k else ''}")
    # a working directory of its own: ``python -m pytest`` puts it first on sys.path, so the
    # checkout's sources never shadow the installed package
    r = subprocess.run(cmd, cwd=workdir, env=_env(quick_env if quick else {}), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    load1 = _load()
    res = {
        "name": name,
        "wall_s": wall,
        "load": (load0[0], load1[0]),
        "returncode": r.returncode,
        "benchmarks": [],
        "skipped": [],
        "failed": [],
    }
    if os.path.exists(jpath):
        with open(jpath) as f:
            res["benchmarks"] = json.load(f).get("benchmarks", [])
    if os.path.exists(xpath):
        for tc in ET.parse(xpath).getroot().iter("testcase"):
            for tag, key in (("skipped", "skipped"), ("failure", "failed"), ("error", "failed")):
                el = tc.find(tag)
                if el is not None:
                    res[key].append((tc.get("name"), (el.get("message") or "").strip()))
    if r.returncode not in (0, 5) and not res["benchmarks"]:
        res["failed"].append(("(run)", (r.stdout + r.stderr)[-1500:]))
    log(
        f"[{name}] {len(res['benchmarks'])} benchmarks, {len(res['skipped'])} skipped, {len(res['failed'])} "
        f"failed, {wall:.0f} s, load {load0[0]:.1f} -> {load1[0]:.1f}"
    )
    for test, msg in res["failed"][:3]:  # why, here and not only in the report
        log(f"[{name}]   FAILED {test}: {first_line(msg)}")
    return res


def first_line(msg: str) -> str:
    """The telling line of a failure message: the last ``E   ...`` / error line, else the first."""
    lines = [ln.strip() for ln in (msg or "").splitlines() if ln.strip()]
    errs = [ln[1:].strip() for ln in lines if ln.startswith("E ")] or [
        ln for ln in lines if "Error" in ln or "error:" in ln
    ]
    text = (errs[-1] if errs else lines[0]) if lines else "(no message)"
    return text if len(text) <= 200 else text[:197] + "..."


def rows_of(part):
    """{(operation, case): {impl: stats}} of one part, Java medians folded in as impl 'java'."""
    out = {}
    for b in part["benchmarks"]:
        op, case, impl = bench_key(b["name"], b.get("group"), b.get("params"), b.get("param"), b.get("extra_info"))
        out.setdefault((op, case), {})[impl] = dict(b["stats"], extra=b.get("extra_info") or {})
        for jop, v in ((b.get("extra_info") or {}).get("java") or {}).items():
            out.setdefault((jop, ""), {})["java"] = {"median": v["median"], "min": v["min"], "extra": {}}
    return out


# ---------------------------------------------------------------- formatting


def fmt_t(s):
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def machine():
    info = {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            info["cpu"] = m.group(1) if m else platform.processor()
        with open("/proc/meminfo") as f:
            info["memory"] = f"{int(f.readline().split()[1]) / 2**20:.1f} GiB"
    except OSError:
        info["cpu"] = platform.processor()
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        caches = [
            f"{k.strip()} {v.strip()}" for k, v in re.findall(r"^(L[123]d? cache|L[23] cache):\s*(.*)$", out, re.M)
        ]
        info["caches"] = ", ".join(caches)
    vers = []
    for mod in ("numpy", "pyarrow", "pyroaring", "pypaimon", "pypaimon_rust", "hudi", "pyspark", "pytest_benchmark"):
        try:
            from importlib.metadata import version

            vers.append(f"{mod} {version(mod.replace('_', '-'))}")
        except Exception:
            vers.append(f"{mod} (not installed)")
    info["versions"] = ", ".join(vers)
    if shutil.which("java"):
        r = subprocess.run(["java", "-version"], capture_output=True, text=True)
        info["java"] = (r.stderr or r.stdout).splitlines()[0] if (r.stderr or r.stdout) else "?"
    else:
        info["java"] = "not on the PATH"
    try:
        import java_anchor

        jar = java_anchor.bridge_jar()
        info["java_paimon"] = (
            f"Paimon 0.9.0 bridge jar ({os.path.basename(jar)})"
            if jar
            else f"not available: {java_anchor.unavailable()}"
        )
    except Exception as e:  # pragma: no cover
        info["java_paimon"] = f"not available: {e}"
    try:
        info["commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        info["commit"] = "?"
    return info


def write_report(parts, out_md, quick, wall, plots_note, plot_files, named=False):
    m = machine()
    # the command as given: the parts named (if any) after --quick
    args_text = (" --quick" if quick else "") + ("".join(" " + p["name"] for p in parts) if named else "")
    fastest = min((v for p in parts for v in probe_samples(p)), default=float("nan"))
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `python -m benchmarks.report{args_text}` "
        f"(`paimon-fast bench{args_text}`) on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit {m['commit']}, "
        f"in {wall:.0f} s.",
        "",
        "## Machine",
        "",
        f"- CPU: {m.get('cpu')}, {m['cores']} cores; {m.get('caches', '')}",
        f"- memory: {m.get('memory', '?')}; {m['platform']}",
        f"- Python {m['python']}; {m['versions']}",
        f"- Java: {m['java']}; {m['java_paimon']}",
        "- Load average (1 min) before -> after each part is given with it: the machine may be shared, "
        "and medians taken under load are slower (anchors in the same part ran under the same load).",
        f"- Speed probe (`speed_probe_us` in benchmarks/conftest.py): a fixed pure-Python loop timed in the "
        f"benchmark's process before and after every benchmark; its fastest in this report is {fastest:.0f} us, "
        f"and a probe over 1.4x that counts as a slow spell (shared VMs move between spells of different "
        f"speed; ours and the anchors slow down alike, so ratios hold where absolute times do not).",
        "",
        "Ratios are *anchor median / our median*: how many times faster our kernel is "
        "(below 1: slower).  Medians are wall clock.",
        "",
    ]
    if plot_files:
        lines += ["## Plots", ""]
        for title, rel in plot_files:
            lines += [f"![{title}]({rel})", ""]
    elif plots_note:
        lines += [f"Plots: {plots_note}", ""]
    for part in parts:
        name = part["name"]
        fname, _, _, desc = PARTS[name]
        lines += [
            f"## {name}: {desc}",
            "",
            f"`benchmarks/{fname}`, {part['wall_s']:.0f} s, load {part['load'][0]:.1f} -> {part['load'][1]:.1f}, "
            f"{probe_summary(probe_samples(part), fastest)}.",
            "",
        ]
        rows = rows_of(part)
        if name == "scaling":
            lines += scaling_tables(rows)
        elif rows:
            rows = {k: v for k, v in rows.items() if not k[0].endswith("anchor")}
            anchors = sorted(
                {i for impls in rows.values() for i in impls if i != "kernel"},
                key=lambda a: list(ANCHOR_NAMES).index(a) if a in ANCHOR_NAMES else 99,
            )
            head = (
                "| operation | case | ours | " + " | ".join(f"{ANCHOR_NAMES.get(a, a)} (ratio)" for a in anchors) + " |"
            )
            lines += [head, "|" + " --- |" * (3 + len(anchors))]
            for (op, case), impls in sorted(rows.items()):
                if "rss_peak_growth" in impls.get("kernel", {}).get("extra", {}):
                    continue
                ours = impls.get("kernel", {}).get("median")
                cells = []
                for a in anchors:
                    v = impls.get(a, {}).get("median")
                    if v is None:
                        cells.append("-")
                    else:
                        cells.append(f"{fmt_t(v)} ({v / ours:.1f}x)" if ours else fmt_t(v))
                lines.append(f"| {op} | {case or '-'} | {fmt_t(ours)} | " + " | ".join(cells) + " |")
            lines.append("")
            mins = [
                f"{op}: ours {fmt_t(impls['kernel'].get('min'))}, Java {fmt_t(impls['java'].get('min'))}"
                for (op, _), impls in sorted(rows.items())
                if "java" in impls and "kernel" in impls
            ]
            if mins:
                lines += [
                    "Minimum of the rounds (JIT-warm Java, after its warm-up rounds): " + "; ".join(mins) + ".",
                    "",
                ]
            extra = peak_lines(rows)
            if extra:
                lines += extra + [""]
        else:
            lines += ["No figures from this part.", ""]
        notes = []
        if name in STANDING_NOTES:
            notes.append(STANDING_NOTES[name])
        for test, msg in part["skipped"]:
            notes.append(f"not measured: `{test}`: {msg}")
        for test, msg in part["failed"]:
            notes.append(f"FAILED: `{test}`: {msg[:300]}")
        lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    skipped_parts = [p for p in PARTS if p not in {x["name"] for x in parts}]
    if skipped_parts:
        lines += ["## Parts not run in this report", ""]
        lines += [
            f"- {p} (`benchmarks/{PARTS[p][0]}`, {PARTS[p][3]}): not in "
            f"{'the parts asked for' if named else 'the --quick subset'}; run "
            f"`python -m benchmarks.report {p}`."
            for p in skipped_parts
        ] + [""]
    with open(out_md, "w") as f:
        f.write("\n".join(lines))


def peak_lines(rows):
    out = []
    for (op, case), impls in sorted(rows.items()):
        k = impls.get("kernel", {})
        e = k.get("extra", {})
        if "rss_peak_growth" in e:
            out.append(
                f"| {case} | {e.get('rows', 0):,} | {e['rss_peak_growth'] / 2**20:.0f} MiB | "
                f"{e.get('input_bytes', 0) / 2**20:.0f} MiB | {e.get('index_bytes', 0) / 2**20:.1f} MiB |"
            )
    if out:
        out = [
            "Peak RSS of one build (fresh process, growth of VmHWM over the build):",
            "",
            "| index | rows | peak RSS growth | input | index size |",
            "| --- | --- | --- | --- | --- |",
        ] + out
    return out


def scaling_tables(rows):
    ns = sorted({int(c.rsplit("-", 1)[-1]) for (op, c) in rows if op.startswith("scaling") and c})
    lines = [
        "| operation | " + " | ".join(f"N = {n:.0e}".replace("e+0", "e") for n in ns) + " |",
        "|" + " --- |" * (1 + len(ns)),
    ]
    for op in sorted({op for op, _ in rows if op.startswith("scaling")}):
        anchors = sorted({i for (o, c), impls in rows.items() if o == op for i in impls if i != "kernel"})
        for impl in ["kernel"] + anchors:
            cells = []
            for n in ns:
                case = next((c for (o, c) in rows if o == op and c.endswith(f"-{n}")), None)
                impls = rows.get((op, case), {}) if case else {}
                v = impls.get(impl, {}).get("median")
                ours = impls.get("kernel", {}).get("median")
                if v is None:
                    cells.append("-")
                elif impl == "kernel":
                    cells.append(fmt_t(v))
                else:
                    cells.append(f"{fmt_t(v)} ({v / ours:.1f}x)" if ours else fmt_t(v))
            label = op.replace("scaling ", "") + ("" if impl == "kernel" else f" — {ANCHOR_NAMES.get(impl, impl)}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    lines += peak_lines(rows)
    return lines + [""]


# ---------------------------------------------------------------- plots


def plot(parts, out_dir, rel_dir):
    """PNG plots; returns ([(title, relative path)], note)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "not drawn: matplotlib is not installed (pip install 'paimon-fast[bench]')."
    os.makedirs(out_dir, exist_ok=True)
    files = []
    # ratios per operation: one group of bars per operation (named once), one bar per anchor
    groups = []
    for part in parts:
        if part["name"] == "scaling":
            continue
        for (op, case), impls in sorted(rows_of(part).items()):
            ours = impls.get("kernel", {}).get("median")
            if not ours:
                continue
            ratios = {a: st["median"] / ours for a, st in impls.items() if a != "kernel" and st.get("median")}
            if ratios:
                groups.append((f"{op} {case}".strip(), ratios))
    if groups:
        anchors = sorted(
            {a for _, r in groups for a in r},
            key=lambda a: list(ANCHOR_NAMES).index(a) if a in ANCHOR_NAMES else 99,
        )
        colors = dict(zip(anchors, plt.rcParams["axes.prop_cycle"].by_key()["color"] * 3))
        height = 0.8 / max(1, max(len(r) for _, r in groups))
        n_bars = sum(len(r) for _, r in groups)
        fig, ax = plt.subplots(figsize=(11, max(3.0, 0.16 * n_bars + 0.12 * len(groups) + 1.2)))
        for g, (_, ratios) in enumerate(groups):
            present = [a for a in anchors if a in ratios]
            for k, a in enumerate(present):
                y = g + (k - (len(present) - 1) / 2) * height
                ax.barh(y, ratios[a], height=height * 0.92, color=colors[a])
        ax.set_yticks(range(len(groups)))
        ax.set_yticklabels([label for label, _ in groups], fontsize=7)
        ax.set_ylim(len(groups) - 0.5, -0.5)
        ax.set_xscale("log")
        ax.axvline(1, color="black", lw=0.8)
        ax.grid(True, axis="x", which="both", lw=0.3)
        ax.set_xlabel("anchor median / our median (log scale; > 1: ours is faster)")
        from matplotlib.patches import Patch

        ax.legend(
            handles=[Patch(color=colors[a], label=ANCHOR_NAMES.get(a, a)) for a in anchors],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
            title="anchor",
        )
        ax.set_title("Speed-up over each anchor, per operation (same run)")
        p = os.path.join(out_dir, "ratios.png")
        fig.savefig(p, dpi=110, bbox_inches="tight")  # the figure grows to hold every label
        plt.close(fig)
        files.append(("ratios per operation", f"{rel_dir}/ratios.png"))
    # time vs N: one colour per operation (named once in the legend), the line style says who
    sc = next((p for p in parts if p["name"] == "scaling"), None)
    if sc:
        from matplotlib.lines import Line2D

        rows = rows_of(sc)
        for kind in ("build", "query"):
            ops = sorted({op for op, _ in rows if op.startswith(f"scaling {kind}")})
            if not ops:
                continue
            fig, ax = plt.subplots(figsize=(7.5, 4.5))
            cyc = plt.rcParams["axes.prop_cycle"].by_key()["color"]
            others = set()
            for i, op in enumerate(ops):
                series = {}
                for (o, c), impls in rows.items():
                    if o != op:
                        continue
                    n = int(c.rsplit("-", 1)[-1])
                    for impl, st in impls.items():
                        series.setdefault(impl, []).append((n, st["median"]))
                for impl, pts in sorted(series.items()):
                    pts.sort()
                    if impl != "kernel":
                        others.add(impl)
                    ax.plot(
                        [p[0] for p in pts],
                        [p[1] for p in pts],
                        marker="o",
                        color=cyc[i % len(cyc)],
                        ls="-" if impl == "kernel" else "--",
                    )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("rows N")
            ax.set_ylabel("median time (s)")
            ax.set_title(f"{kind} time against N")
            names = [Line2D([], [], color=cyc[i % len(cyc)], marker="o", label=op.replace(f"scaling {kind} ", ""))
                     for i, op in enumerate(ops)]  # fmt: skip
            first = ax.legend(handles=names, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="index")
            ax.add_artist(first)
            styles = [Line2D([], [], color="black", ls="-", label="paimon-fast")] + [
                Line2D([], [], color="black", ls="--", label=ANCHOR_NAMES.get(a, a)) for a in sorted(others)
            ]
            ax.legend(handles=styles, loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8, title="line")
            ax.grid(True, which="both", lw=0.3)
            p = os.path.join(out_dir, f"scaling_{kind}.png")
            fig.savefig(p, dpi=110, bbox_inches="tight")
            plt.close(fig)
            files.append((f"{kind} time against N", f"{rel_dir}/scaling_{kind}.png"))
    return files, None


# ---------------------------------------------------------------- entry point


def main(argv=None):
    ap = argparse.ArgumentParser(prog="benchmarks.report", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "parts", nargs="*", help=f"parts to run (default: all, or the quick set); one of {', '.join(PARTS)}"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"the quick subset ({', '.join(QUICK)}, reduced cases): under 3 minutes on 2 cores",
    )
    ap.add_argument(
        "--output",
        "--out",
        dest="out",
        default=None,
        help="report path (Markdown; its plots go in a directory named like it); default: a new directory "
        "of the temporary directory (docs/benchmarks.md: the checkout's committed report)",
    )
    ap.add_argument("--json", help="also write the raw results (pytest-benchmark JSON per part) here")
    args = ap.parse_args(argv)
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")
    names = args.parts or (QUICK if args.quick else list(PARTS))
    t0 = time.perf_counter()
    parts = []
    with tempfile.TemporaryDirectory(prefix="pf-bench-report-") as work:
        for n in names:
            parts.append(run_part(n, args.quick, work, lambda s: print(s, flush=True)))
    out_md = os.path.abspath(args.out or os.path.join(tempfile.mkdtemp(prefix="paimon-fast-bench-"), "benchmarks.md"))
    os.makedirs(os.path.dirname(out_md), exist_ok=True)
    img_dir = os.path.splitext(out_md)[0]
    files, note = plot(parts, img_dir, os.path.basename(img_dir))
    write_report(parts, out_md, args.quick, time.perf_counter() - t0, note, files, named=bool(args.parts))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(parts, f)
    print(f"wrote {out_md}" + (f" and {len(files)} plots in {img_dir}" if files else f" ({note})"))
    return 1 if any(p["failed"] for p in parts) else 0


if __name__ == "__main__":
    sys.exit(main())
