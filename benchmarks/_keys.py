"""How a benchmark maps to (operation, case, implementation), shared by conftest's
summary and ``benchmarks/report.py``.

Implementation: ``extra_info["impl"]``, else an ``impl`` parameter, else the test
name's last ``_`` part (``test_add_bigint_kernel`` -> ``kernel``).  Operation: the
benchmark group, else the test name without that suffix.  Case: the parameter id
without the implementation.
"""


def bench_key(name, group, params, param_id, extra_info):
    base = name.split("[", 1)[0]
    params = dict(params or {})
    impl = (extra_info or {}).get("impl")
    if impl is None and "impl" in params:
        impl = str(params["impl"])
    if impl is None:
        impl = base.rsplit("_", 1)[-1]
    case = param_id or ""
    if "impl" in params:
        case = "-".join(p for p in case.split("-") if p != str(params["impl"]))
    op = group or base.rsplit("_", 1)[0].removeprefix("test_")
    return op, case, impl
