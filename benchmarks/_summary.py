"""Summaries of the Spark build benchmarks: min / median / rounds of each measured step and
the machine load while it ran, and build-to-baseline ratios (printed at the end of a run)."""

import os


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def record(results: dict, key: str, benchmark, load_before: str) -> None:
    """Keep ``benchmark``'s min, median and rounds under ``key`` with the 1-minute load
    averages before and after its rounds (also put into ``extra_info``)."""
    st = benchmark.stats.stats
    after = loadavg()
    results[key] = {
        "min": st.min,
        "median": st.median,
        "rounds": st.rounds,
        "load": f"{load_before.split()[0]}-{after.split()[0]}",
    }
    benchmark.extra_info.update(loadavg_before=load_before, loadavg_after=after)


def lines(results: dict, pairs) -> list:
    """One line per measured step, then ``build / baseline`` ratios of the medians (and of the
    mins) for every ``(build key, baseline key, target or None)`` in ``pairs``."""
    out = [
        f"{k}: min {v['min']:.2f} s, median {v['median']:.2f} s ({v['rounds']} rounds, load {v['load']})"
        for k, v in results.items()
    ]
    for a, b, target in pairs:
        if a in results and b in results:
            ra = results[a]["median"] / results[b]["median"]
            rm = results[a]["min"] / results[b]["min"]
            t = f"; target <= {target}x: {'met' if ra <= target else 'NOT met'}" if target else ""
            out.append(f"{a} / {b}: {ra:.2f}x of the medians ({rm:.2f}x of the mins){t}")
    return out


def write_section(request, title: str, results: dict, pairs) -> None:
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    if not results or tr is None:
        return
    tr.section(title)
    for ln in lines(results, pairs):
        tr.write_line(ln)
    path = os.environ.get("PF_BENCH_SUMMARY")
    if path:
        with open(path, "a") as f:
            f.write(f"## {title}\n" + "\n".join(lines(results, pairs)) + "\n")
