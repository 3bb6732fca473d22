"""paimon_fast.io.pool: the process-wide worker threads the fast path's reads run on."""

import os
import threading

import pytest

from paimon_fast.io import pool


def test_results_in_order_on_at_most_workers_threads():
    seen = set()
    lock = threading.Lock()

    def fn(x):
        with lock:
            seen.add(threading.current_thread().name)
        return x * x

    assert pool.map_on_pool(fn, list(range(50)), 3) == [x * x for x in range(50)]
    assert 1 <= len(seen) <= 3 and all(t.startswith("paimon-fast-pool-3") for t in seen)
    assert pool.shared_pool(3) is pool.shared_pool(3)  # kept, not started per call


def test_one_worker_or_one_item_run_in_the_calling_thread():
    me = threading.current_thread().name
    assert pool.map_on_pool(lambda x: threading.current_thread().name, [1, 2, 3], 1) == [me] * 3
    assert pool.map_on_pool(lambda x: threading.current_thread().name, [1], 4) == [me]


def test_a_task_on_the_pool_never_waits_for_the_pool():
    """Every thread of the pool busy with a task that maps again: the inner maps run in the
    task's own thread instead of queueing behind their callers (a deadlock)."""

    def outer(x):
        return sum(pool.map_on_pool(lambda y: y + x, [1, 2, 3], 2))

    out = []
    t = threading.Thread(target=lambda: out.append(pool.map_on_pool(outer, [10, 20], 2)), daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "nested map deadlocked"
    assert out == [[36, 66]]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_gets_its_own_threads():
    """The parent's threads do not exist in a child: the child makes its pool anew instead of
    queueing work no thread will run (it would hang: an alarm ends the child then)."""
    assert pool.map_on_pool(lambda x: x + 1, [1, 2], 2) == [2, 3]  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        import signal

        signal.alarm(20)
        ok = pool.map_on_pool(lambda x: x + 1, [1, 2, 3], 2) == [2, 3, 4]
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
