#!/usr/bin/env python3
"""Writes vectors.json: inputs and scipy's answers for the statistics behind `lowlat compare`
(src/compare/stats/ and src/compare/estimate.rs). Run once; the output is committed and checked
by tests/it/compare.rs.

    python3 tests/data/compare/make_vectors.py > tests/data/compare/vectors.json

Needs scipy >= 1.11 (`pip install scipy`; Debian's python3-scipy 1.10 lacks the interval of
ttest_ind). The inputs come from a seeded generator and are rounded, so the file is the same on
every run with the same scipy.

What compare computes, and its scipy counterpart:
- the ratio B/A of two arms of runs and its 95 % interval: Welch's t on the logs of the runs'
  values, `stats.ttest_ind(log b, log a, equal_var=False)` and its `confidence_interval(0.95)`;
- the 90 % interval behind "equivalent" (the two one-sided tests at 5 %);
- Student's t quantiles (`stats.t.ppf`), which the minimum detectable effect uses.
"""
import json
import sys

import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(20261127)


def r(values):
    return [round(float(v), 3) for v in values]


welch = []
# Runs per arm, log-scale spread of each arm, and the true ratio B/A.
for n1, n2, sd_a, sd_b, ratio in [(2, 2, 0.1, 0.1, 1.0), (3, 3, 0.05, 0.2, 1.5), (4, 4, 0.1, 0.1, 1.5),
                                  (5, 8, 0.3, 0.1, 0.8), (10, 10, 0.02, 0.05, 1.02), (4, 6, 0.5, 0.4, 2.0)]:
    a = r(np.exp(rng.normal(np.log(1000.0), sd_a, n1)))
    b = r(np.exp(rng.normal(np.log(1000.0 * ratio), sd_b, n2)))
    res = stats.ttest_ind(np.log(b), np.log(a), equal_var=False)
    ci95 = res.confidence_interval(0.95)
    ci90 = res.confidence_interval(0.90)
    welch.append({
        "a": a, "b": b,
        "ratio": float(np.exp(np.mean(np.log(b)) - np.mean(np.log(a)))),
        "p": float(res.pvalue), "df": float(res.df),
        "low": float(np.exp(ci95.low)), "high": float(np.exp(ci95.high)),
        "low90": float(np.exp(ci90.low)), "high90": float(np.exp(ci90.high)),
    })

t_quantiles = [{"p": p, "df": df, "t": float(stats.t.ppf(p, df))}
               for p, df in [(0.975, 1), (0.975, 2.5), (0.975, 6), (0.8, 6), (0.9917, 6), (0.975, 30)]]

json.dump({"scipy": scipy.__version__, "welch": welch, "t_quantiles": t_quantiles}, sys.stdout, indent=1)
sys.stdout.write("\n")
