#!/usr/bin/env python3
"""Writes vectors.json: inputs and scipy's answers for the statistics behind `lowlat compare`
(src/compare/stats/). Run once; the output is committed and checked by tests/it/compare.rs.

    /usr/bin/python3 tests/data/compare/make_vectors.py > tests/data/compare/vectors.json

Needs scipy (Debian: python3-scipy, which the system python3 sees). The inputs come from a seeded generator and are rounded,
so the file is the same on every run with the same scipy.
"""
import json
import sys

import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(20261125)


def r(values):
    return [round(float(v), 3) for v in values]


mann_whitney = []
# Small samples without ties: the exact distribution.
for n1, n2, shift in [(4, 4, 0.0), (4, 4, 3.0), (5, 7, 0.8), (8, 6, -1.2), (10, 10, 0.5), (3, 12, 1.0)]:
    a = r(rng.normal(0, 1, n1))
    b = r(rng.normal(shift, 1, n2))
    res = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    mann_whitney.append({"a": a, "b": b, "method": "exact", "u": float(res.statistic), "p": float(res.pvalue)})
# Ties or larger samples: the normal approximation with tie and continuity corrections.
for n1, n2, shift in [(6, 9, 0.0), (12, 15, 1.0), (30, 25, 0.3)]:
    a = [float(v) for v in rng.integers(0, 5, n1)]
    b = [float(v) for v in rng.integers(0, 5, n2) + round(shift)]
    res = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    mann_whitney.append({"a": a, "b": b, "method": "normal", "u": float(res.statistic), "p": float(res.pvalue)})
for n1, n2, shift in [(25, 30, 0.4)]:
    a = r(rng.normal(0, 1, n1))
    b = r(rng.normal(shift, 1, n2))
    res = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    mann_whitney.append({"a": a, "b": b, "method": "normal", "u": float(res.statistic), "p": float(res.pvalue)})

binomial = []
for k, n, p in [(12, 12, 0.5), (0, 12, 0.5), (3, 20, 0.5), (7, 30, 0.3), (40, 100, 0.55), (5, 9, 0.5), (150, 1000, 0.12), (2, 50, 0.01)]:
    binomial.append({"k": k, "n": n, "p": p, "pvalue": float(stats.binomtest(k, n, p, alternative="two-sided").pvalue)})

dispersion = []
for counts, seconds in [
    ([5, 6, 4, 5], [1.0, 1.0, 1.0, 1.0]),
    ([5, 6, 40, 5], [1.0, 1.0, 1.0, 1.0]),
    ([3, 9, 2], [0.5, 2.0, 0.7]),
    ([0, 1, 0, 2, 1, 0, 0, 1], [0.375] * 8),
]:
    total = sum(counts) / sum(seconds)
    expected = [total * s for s in seconds]
    chi2 = sum((c - e) ** 2 / e for c, e in zip(counts, expected))
    dispersion.append({"events": counts, "seconds": seconds, "p": float(stats.chi2.sf(chi2, len(counts) - 1))})

tost = []
for n1, n2, scale_b, shift in [(6, 6, 1.0, 0.0), (8, 5, 2.0, 1.0), (10, 12, 1.0, 4.0), (5, 5, 0.5, -2.0)]:
    a = r(rng.normal(100, 1.5, n1))
    b = r(rng.normal(100 + shift, 1.5 * scale_b, n2))
    margin = 0.03
    bound = margin * abs(np.mean(a))
    # H0 low: mean(b) - mean(a) <= -bound; H0 high: mean(b) - mean(a) >= +bound.
    low = stats.ttest_ind(np.array(b) + bound, a, equal_var=False, alternative="greater").pvalue
    high = stats.ttest_ind(np.array(b) - bound, a, equal_var=False, alternative="less").pvalue
    tost.append({"a": a, "b": b, "margin": margin, "p": float(max(low, high))})

poisson = []
for k in [0, 1, 12, 59, 400]:
    low = 0.0 if k == 0 else float(stats.chi2.ppf(0.025, 2 * k) / 2)
    high = float(stats.chi2.ppf(0.975, 2 * k + 2) / 2)
    poisson.append({"events": k, "low": low, "high": high})

bootstrap = []
for n, statistic in [(200, "mean"), (301, "median")]:
    data = r(rng.normal(50, 10, n))
    fn = np.mean if statistic == "mean" else np.median
    res = stats.bootstrap((data,), fn, n_resamples=20000, method="percentile", confidence_level=0.95, random_state=1)
    bootstrap.append({
        "data": data,
        "statistic": statistic,
        "low": float(res.confidence_interval.low),
        "high": float(res.confidence_interval.high),
        "standard_error": float(res.standard_error),
    })

json.dump({
    "scipy": scipy.__version__,
    "mann_whitney": mann_whitney,
    "binomial": binomial,
    "dispersion": dispersion,
    "tost": tost,
    "poisson_interval": poisson,
    "bootstrap": bootstrap,
}, sys.stdout, indent=1)
sys.stdout.write("\n")
