"""Dask benchmarks (`python benchmarks/run.py --only dask`): the same one-vs-all training on numba
threads and on Dask LocalClusters, alternated in one process, medians and ratios of the same run.

Contenders: threads (2 numba threads, no Dask), local:2x1 (2 worker processes, 1 numba thread
each) and local:1x2 (1 worker process, 2 numba threads). Both clusters are started once and each
contender trains once untimed first (numba loads its compiled kernels in every worker process),
then the repeats alternate the contenders. The time compared is the model's train_seconds: the
driver's preparation plus first task submitted to last block collected (cluster start and the
scatter apart, reported beside). Recording off, DiSMEC with MSI (the default), eps 0.01. On a
machine whose other jobs come and go, a repeat's contenders (adjacent runs) share its load: the
targets are checked on the median over the repeats of each repeat's ratio to threads.

Problems: Delicious, and the Amazon-670K/10 synthetic shape (n 49,000, d 13,600, 67,000 labels,
5.45 labels and 75.7 non-zeros per row, 30% test), whose 67,000 labels would take about half an
hour per contender here: its training uses every 67th label (1,000 labels from head to tail), on
the full rows and features, so the data each worker receives is the full problem's. The workers read each problem themselves (a DataSource: Delicious by its bundled
name, the synthetic sample from a file written once to a temporary folder), as a run names its
data; nothing is scattered (the scatter column reads 0).
"""
from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import tempfile
import time

CONTENDERS = ("threads", "local:2x1", "local:1x2")
TARGETS = {"delicious": 0.15, "synthetic Amazon-670K/10 (1,000 labels)": 0.05}


def problems(folder: str) -> dict:
    """{name: (X, Y, source)}: each problem as read from its source, which the Dask workers read
    too; the synthetic sample is written to `folder` first."""
    from xcviz.data.registry import resolve
    from xcviz.data.source import DataSource
    from xcviz.data.synthetic import generate, split
    from xcviz.data.textio import write_xc

    sample = os.path.join(folder, "amazon670k-10-every-67th-label.txt")
    ds = generate(49_000, 13_600, 67_000, avg_labels=5.45, avg_nnz=75.7, seed=0)
    syn, _ = split(ds, 0.3, seed=0)
    write_xc(sample, dataclasses.replace(syn, Y=syn.Y.tocsc()[:, ::67].tocsr()))
    out = {}
    for name, where in (("delicious", "delicious"), ("synthetic Amazon-670K/10 (1,000 labels)", sample)):
        train, _ = resolve(where)
        out[name] = (train.X, train.Y, DataSource.of(where))
    return out


def _fit(X, Y, source, contender: str, sessions: dict):
    from xcviz.solvers.dismec import fit_dismec

    if contender == "threads":
        return fit_dismec(X, Y, threads=2)
    return fit_dismec(X, Y, threads=2, cluster=sessions[contender], source=source)


def bench(repeats: int = 3) -> dict:
    """{problem: {contender: {"seconds": [...], "scatter": [...], "blocks": n, "start": s}}}; seconds[r]
    of every contender come from the same repeat r (adjacent runs), so their ratios pair up."""
    from xcviz.compute.cluster import connect, parse_cluster

    sessions = {c: connect(parse_cluster(c), 2) for c in CONTENDERS if c != "threads"}
    folder = tempfile.TemporaryDirectory(prefix="xcviz-dask-bench-")
    try:
        results = {}
        for name, (X, Y, source) in problems(folder.name).items():
            print(f"dask bench: {name}", file=sys.stderr)
            rows = {c: {"seconds": [], "scatter": [], "start": sessions[c][1].cluster_start_seconds
                        if c in sessions else 0.0} for c in CONTENDERS}
            reference = None
            for c in CONTENDERS:  # untimed: kernels loaded in every process; the models must agree
                model = _fit(X, Y, source, c, sessions)
                reference = reference if reference is not None else model
                assert (model.weights != reference.weights).nnz == 0, f"{c}: a different model"
            for r in range(repeats):
                order = CONTENDERS if r % 2 == 0 else CONTENDERS[::-1]
                for c in order:
                    model = _fit(X, Y, source, c, sessions)
                    rows[c]["seconds"].append(model.info["train_seconds"])
                    rows[c]["scatter"].append(model.info.get("scatter_seconds", 0.0))
                    rows[c]["blocks"] = model.info.get("blocks", "")
                    print(f"  {c}: {model.info['train_seconds']:.2f} s", file=sys.stderr)
            results[name] = rows
        return results
    finally:
        for client, _ in sessions.values():
            client.close()
        folder.cleanup()


def section(repeats: int = 3) -> list[str]:
    """The `## Dask` section of BENCHMARKS.md."""
    t0, load = time.time(), os.getloadavg()
    results = bench(repeats)
    lines = ["## Dask", "",
             "DiSMEC (MSI, eps 0.01, recording off) on numba threads against Dask LocalClusters, one process "
             f"alternating the contenders, {repeats} timed repeats after an untimed one each, medians "
             "(`benchmarks/dask_bench.py`). train_seconds = preparation + first task submitted to last block "
             "collected; cluster start and scatter apart. The models are checked bit-identical. "
             "The local clusters run with xcviz's Dask settings (`xcviz/compute/cluster.py`, LOCAL_CONFIG) and "
             "the Dask runs' guided block plan (blocks: tasks per run). Other jobs shared the 2 cores while "
             "this ran, their load changing from one run to the next: the paired ratio (median over the "
             "repeats of each repeat's contender time over its threads time, adjacent runs) is what the "
             "targets are checked on; the ratio of the medians is shown beside it.", "",
             "| problem | contender | train s (median) | paired ratio (median) | ratio of medians | blocks | scatter s "
             "| cluster start s | target | met |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, rows in results.items():
        base = rows["threads"]["seconds"]
        for c in CONTENDERS:
            med = statistics.median(rows[c]["seconds"])
            paired = statistics.median(t / b for t, b in zip(rows[c]["seconds"], base))
            target = TARGETS[name]
            met = "" if c == "threads" else ("yes" if paired <= 1 + target else "no")
            lines.append(f"| {name} | {c} | {med:.2f} | {paired:.3f} | {med / statistics.median(base):.3f} | "
                         f"{rows[c].get('blocks', '')} | {statistics.median(rows[c]['scatter']):.3f} | "
                         f"{rows[c]['start']:.2f} | {'' if c == 'threads' else f'<= {1 + target:.2f}'} | {met} |")
    lines += [""] + [f"- {name}, each repeat's ratios to threads: " + "; ".join(
        f"{c} " + " ".join(f"{t / b:.2f}" for t, b in zip(rows[c]["seconds"], rows["threads"]["seconds"]))
        for c in CONTENDERS[1:]) + " (threads: " + " ".join(f"{t:.2f}" for t in rows["threads"]["seconds"]) + " s)"
        for name, rows in results.items()]
    lines += ["", f"Section written in {time.time() - t0:.0f} s; load average {load[0]:.1f} at its start, "
              f"{os.getloadavg()[0]:.1f} at its end (2 cores)."]
    return lines


if __name__ == "__main__":
    print("\n".join(section(int(sys.argv[1]) if len(sys.argv) > 1 else 3)))
