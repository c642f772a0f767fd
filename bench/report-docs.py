#!/usr/bin/env python3
"""Writes large measurement documents for bench/report.sh: a c2c document and a jitter
document of N CPUs, made from the small real documents in tests/fixtures/report/ (their
envelope, fields and per-CPU layout), with synthetic values: c2c latency by distance (same L3
group of 8 CPUs, same package of N/2, across packages) plus noise; jitter histograms with a
long tail. Deterministic (fixed seed)."""

import argparse
import copy
import json
import random
from pathlib import Path


def c2c(template, cpus, rng):
    doc = copy.deepcopy(template)
    res = doc["result"]
    order = list(range(cpus))
    l3, package = 8, cpus // 2

    def latency(a, b):
        if a // l3 == b // l3:
            base = 35.0
        elif a // package == b // package:
            base = 95.0
        else:
            base = 190.0
        return round(base + rng.uniform(-4, 4), 1)

    pair_template = res["run"]["pairs"][0]
    pairs, values = [], [[None] * cpus for _ in range(cpus)]
    for i in range(cpus):
        for j in range(i + 1, cpus):
            v = latency(i, j)
            values[i][j] = values[j][i] = v
            pair = copy.deepcopy(pair_template)
            pair["from_cpu"], pair["to_cpu"] = i, j
            s = pair["one_way_ns"]
            s.update(min=v - 2, median=v, mean=v, stddev=1.5, p99=v + 6, max=v + 20)
            pairs.append(pair)
    res["run"]["cpus"] = order
    res["run"]["pairs"] = pairs
    names = [str(c) for c in order]
    res["run"]["matrix_mean_ns"].update(rows=names, columns=names, values=values)
    res["group_breaks"] = [g * l3 - 1 for g in range(1, cpus // l3)]
    res["measured_cpus"] = f"0-{cpus - 1}"
    return doc


def jitter(template, cpus, rng):
    doc = copy.deepcopy(template)
    res = doc["result"]
    cpu_template = res["cpus"][0]
    out = []
    for cpu in range(cpus):
        entry = copy.deepcopy(cpu_template)
        entry["cpu"] = cpu
        buckets, n = [], 0
        value = 1000
        while value < 2_000_000:
            count = int(rng.paretovariate(1.2) * 1e6 / value)
            if count:
                buckets.append([value, count])
                n += count
            value = int(value * 1.02) + 1
        entry["histogram"]["buckets"] = buckets
        entry["interruptions"] = n
        entry["stats_ns"]["max"] = buckets[-1][0]
        entry["attribution"] = None
        out.append(entry)
    res["cpus"] = out
    res["measured_cpus"] = f"0-{cpus - 1}"
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cpus", type=int, default=512)
    ap.add_argument("--templates", type=Path, default=Path("tests/fixtures/report"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rng = random.Random(42)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, make in (("c2c", c2c), ("jitter", jitter)):
        template = json.loads((args.templates / f"{name}.json").read_text())
        doc = make(template, args.cpus, rng)
        (args.out / f"{name}-{args.cpus}.json").write_text(json.dumps(doc) + "\n")


if __name__ == "__main__":
    main()
