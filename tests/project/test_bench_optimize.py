"""benchmarks/bench_optimize.py's own logic, on no data: the order its engines run in, the
many-value point queries' values and oracle, and the report of a query only ours ran."""

import importlib.util
import os
from collections import Counter

import pytest

from tests.support import paths


def _load():
    spec = importlib.util.spec_from_file_location(
        "_bench_optimize_under_test", os.path.join(str(paths.ROOT), "benchmarks", "bench_optimize.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bo = _load()
ENGINES = ["ours_opt", "ours_orig", "duckdb_orig", "duckdb_opt", "polars_orig", "polars_opt"]


def _shuffle(xs):
    xs.reverse()  # (deterministic, and not the identity)


def test_our_two_reads_run_in_turn_first_then_the_others_as_ordered():
    for order in ("back-to-back", "shuffled"):
        runs = bo.schedule(list(ENGINES), 4, order, _shuffle, ("ours_orig", "ours_opt"))
        assert runs[:8] == ["ours_orig", "ours_opt", "ours_opt", "ours_orig"] * 2
        assert Counter(runs) == {e: 4 for e in ENGINES}
    rest = bo.schedule(list(ENGINES), 3, "back-to-back", _shuffle, ("ours_orig", "ours_opt"))[6:]
    assert rest == [e for e in reversed(ENGINES[2:]) for _ in range(3)]  # each engine's rounds in a row


def test_cycles_repeat_the_schedule_each_in_a_new_order():
    runs = bo.schedule(["a", "b", "c"], 2, "back-to-back", _shuffle, ("a", "b"), cycles=2)
    assert runs == ["a", "b", "b", "a", "c", "c"] * 2
    runs = bo.schedule(["a", "b", "c"], 2, "back-to-back", _shuffle, cycles=3)
    assert runs == ["c", "c", "b", "b", "a", "a", "a", "a", "b", "b", "c", "c", "c", "c", "b", "b", "a", "a"]
    assert Counter(bo.schedule(list(ENGINES), 3, "shuffled", _shuffle, ("ours_orig", "ours_opt"), 4)) == {
        e: 12 for e in ENGINES
    }


def test_without_a_pair_every_engine_follows_the_order():
    assert bo.schedule(["a", "b"], 2, "back-to-back", _shuffle) == ["b", "b", "a", "a"]
    assert bo.schedule(["a", "b"], 2, "shuffled", _shuffle) == ["b", "a", "a", "b"]


def test_point_values_are_fixed_distinct_and_their_oracle_is_their_own_row():
    vs = bo.point_values(10_000_000, 100)
    assert vs == bo.point_values(10_000_000, 100) and len(set(vs)) == 100
    assert all(0 <= v < 10_000_000 for v in vs)
    assert bo.point_values(5, 100) == [0, 1, 2, 3, 4]
    want = bo.point_oracle(1000, 7)
    assert want == {v: {"count": 1, "id_sum": v} for v in bo.point_values(1000, 7)}
    assert bo.point_where("id", 12) == "id = 12"
    assert bo.point_where("key", 12) == f"key = '{bo.bench_peers._key(12)}'"


def test_a_query_only_ours_ran_shows_dashes_for_the_peers():
    res = {
        "cost": {"ours": 2.0, "duckdb": 1.0},
        "reads": [{"query": "key points (3 values)", "action": "rows", "ours_opt": 0.002, "ours_orig": 0.003}],
        "plans": {n: 0.001 for n, _ in bo.CLUSTER_QUERIES} | {n + " files": "1/2" for n, _ in bo.CLUSTER_QUERIES},
        "plain_before": {"pyarrow": (3, 6)},
        "plain_after": {"pyarrow": (3, 6)},
    }
    line = next(x for x in bo.table(res).splitlines() if x.startswith("| key points"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells == ["key points (3 values)", "rows", "2.00", "3.00"] + ["-"] * 8 + ["**1.50x**"]


@pytest.mark.parametrize("argv", [["--cycles", "0"], ["--rounds", "0"], ["--points", "-1"]])
def test_counts_that_would_measure_nothing_are_refused(argv, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        bo.main(argv + ["--rows", "1000", "--data", str(tmp_path)])
    assert e.value.code == 2 and "at least" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before any data was written
