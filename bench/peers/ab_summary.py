"""The summary of an A/B run of bench/peers/ab.sh: every round's median_ms and checksum, then each
cell's variants as the median of the rounds with min and max and the ratio of medians to the
first variant (ab.sh's AB_VARIANTS order), as BENCHMARKS.md compares.

    python3 ab_summary.py DIR VARIANT...   summary of DIR's runs (ab.sh calls it)
    python3 ab_summary.py                  the doctests
"""
import collections
import glob
import os
import statistics
import sys

import compare  # bench/peers/compare.py (the script's own folder is on the path)


def read_rows(out):
    """{(workload, m, n, timing): {variant: [(median_ms, checksum), ...]}} from DIR's JSON files,
    named VARIANT-mM-nN-cI-tT-rR.json; and the lines for files that could not be read."""
    rows, problems = collections.defaultdict(dict), []
    for f in sorted(glob.glob(os.path.join(out, "*.json"))):
        v, m, n, _, t, _ = os.path.basename(f)[:-5].rsplit("-", 5)
        try:
            results = compare.jx_results(f)[0]  # bench_peers' JSON, read as compare.py reads it
        except (ValueError, KeyError) as e:
            problems.append(f"unreadable {os.path.basename(f)} {e}")
            continue
        for (workload, *_), r in results.items():
            rows[(workload, m, n, t)].setdefault(v, []).append((r["ms"], r["checksum"]))
    return rows, problems


def table(rows, order):
    """Each cell of the rounds without JX_VK_TIMING (t0), its variants in `order` (the first the base).

    >>> rows = {("par_filter", "m13", "n102400", "t0"): {
    ...     "base": [(5.2, -1.5), (5.1, -1.5), (5.3, -1.5)],
    ...     "new": [(4.0, -1.5), (4.4, -1.5), (4.2, -1.5)]},
    ...   ("par_filter", "m13", "n102400", "t1"): {"base": [(5.3, -1.5)]}}
    >>> print(table(rows, ["base", "new"]), end="")
    | cell | variant | median ms | [min, max] | × base | checksum |
    |---|---|---|---|---|---|
    | par_filter m13 n102400 | base | 5.200 | [5.100, 5.300] | 1.000 | -1.5 |
    | par_filter m13 n102400 | new | 4.200 | [4.000, 4.400] | 0.808 | -1.5 |
    >>> rows[("par_filter", "m13", "n102400", "t0")]["new"][1] = (4.4, float("nan"))
    >>> print(table(rows, ["base", "new"]).splitlines()[-1])
    | par_filter m13 n102400 | new | 4.200 | [4.000, 4.400] | 0.808 | differs: -1.5, nan |
    """
    lines = [f"| cell | variant | median ms | [min, max] | × {order[0]} | checksum |", "|---|---|---|---|---|---|"]
    for key in sorted(k for k in rows if k[3] == "t0"):
        base = rows[key].get(order[0])
        base_med = statistics.median(x[0] for x in base) if base else None
        for v in order:
            if v not in rows[key]:
                continue
            ms = [x[0] for x in rows[key][v]]
            sums = sorted({repr(x[1]) for x in rows[key][v]})
            med = statistics.median(ms)
            ratio = f"{med / base_med:.3f}" if base_med else "–"
            check = sums[0] if len(sums) == 1 else "differs: " + ", ".join(sums)
            lines.append(f"| {' '.join(key[:3])} | {v} | {med:.3f} | [{min(ms):.3f}, {max(ms):.3f}] | {ratio} | {check} |")
    return "\n".join(lines) + "\n"


def summary(out, order):
    rows, problems = read_rows(out)
    lines = list(problems)
    for f in sorted(glob.glob(os.path.join(out, "*-t1-*.err"))):
        with open(f) as fh:
            lines.append(f"{os.path.basename(f)} {[l.strip() for l in fh if 'GPU' in l][-1:]}")
    for key in sorted(rows):
        lines.append(f"{key} {({v: [(round(x[0], 3), x[1]) for x in rows[key][v]] for v in rows[key]})}")
    return "\n".join(lines) + "\n\n" + table(rows, order)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.stdout.write(summary(sys.argv[1], sys.argv[2:]))
    else:
        import doctest
        raise SystemExit(doctest.testmod().failed)
