"""Regenerate the java.util.HashMap order vectors (needs a JDK on the PATH).

    cd tests/data/hashmap_order && python generate.py

Each case: the keys of the bitmap writer's computeIfAbsent calls in row order,
and the iteration order java.util.HashMap gives (the JVM's own, via
HashMapOrder.java).  The cases make bins of >= 8 keys so that tree bins,
their splits on resize and moveRootToFront are exercised.
"""

import gzip
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))
from paimon_fast.reference.bitmap import java_string_hash  # noqa: E402


def cases():
    r = random.Random(20261122)
    out = []
    v = [k * 1024 for k in range(200)]
    calls = [r.choice(v) for _ in range(3000)] + v
    r.shuffle(calls)
    out.append(("int_multiples_of_1024", "INT", calls))
    out.append(("int_shift20_small_table", "INT", [i << 20 for i in range(40)] * 2 + [7]))
    v = [(x << 32) | x for x in range(1, 151)]  # Long.hashCode() == 0 for all
    calls = v + [r.choice(v) for _ in range(500)]
    r.shuffle(calls)
    out.append(("bigint_all_hash_zero", "BIGINT", calls))
    v = [m * 4096 for m in range(300)] + [r.randrange(-(2**31), 2**31) for _ in range(3000)]
    calls = list(v)
    r.shuffle(calls)
    out.append(("int_tree_bins_split_on_resize", "INT", calls + calls[:10]))
    v = [m * 65536 + (m % 3) for m in range(400)]
    calls = [r.choice(v) for _ in range(4000)]
    out.append(("int_clusters_random_calls", "INT", calls))
    out.append(("int_threshold_trailing_call", "INT", list(range(13)) + [0]))
    out.append(("int_threshold_no_trailing", "INT", list(range(13))))
    s = ["k%05d" % r.randrange(100000) for _ in range(3000)]
    out.append(("string_plain", "STRING", s))
    return out


def java_order(kind, calls):
    lines = []
    for c in calls:
        if kind == "INT":
            lines.append(f"I {c}")
        elif kind == "BIGINT":
            lines.append(f"L {c}")
        else:
            b = c.encode()
            lines.append(f"S {java_string_hash(b)} {b.hex()}")
    res = subprocess.run(
        ["java", "-cp", HERE, "HashMapOrder"], input="\n".join(lines), capture_output=True, text=True, check=True
    )
    got = res.stdout.split("\n")[:-1]
    if kind == "STRING":
        return [bytes.fromhex(x.split(" ")[1] if " " in x else "").decode() for x in got]
    return [int(x) for x in got]


def main():
    subprocess.run(["javac", "-d", HERE, os.path.join(HERE, "HashMapOrder.java")], check=True)
    ver = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.split("\n")[0]
    names = []
    for name, kind, calls in cases():
        with gzip.open(os.path.join(HERE, name + ".json.gz"), "wt") as f:
            json.dump(
                {
                    "name": name,
                    "key_type": kind,
                    "calls": calls,
                    "java_order": java_order(kind, calls),
                    "producer": ver,
                },
                f,
            )
        names.append(name)
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"producer": ver, "cases": [{"name": n} for n in names]}, f, indent=1)
    os.remove(os.path.join(HERE, "HashMapOrder.class"))
    for c in os.listdir(HERE):
        if c.endswith(".class"):
            os.remove(os.path.join(HERE, c))


if __name__ == "__main__":
    main()
