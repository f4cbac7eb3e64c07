"""Where the class of the margin matters (issue 41 item 1): MEMOIR-l2 with the exact, the random and
the light HNSW oracle on the real multi-class data we have (sector's partial files, Bibtex and
debian-tags with every row once per label) beside the generated lshtc1-margin at 2,000 classes. The
exact oracle's lead over the random one says how much the margin class matters on a data set; the
HNSW row says whether an approximate oracle keeps that lead. `benchmarks/run.py --only margin-data`
writes it as a subsection of MEMOIR's section; `make bench` runs it with the rest.
"""
from __future__ import annotations

import sys

from memoir import COMMON, LIGHT_HNSW, THREADS
from shared import load_average, load_debian, shared_dir

EPOCHS = 5
ORACLES = {"exact": ("exact", {}), "random": ("random", {}), "hnsw-light": ("hnsw", LIGHT_HNSW)}
HEADING = "### Where the margin class matters: real multi-class data against lshtc1-margin"


def _datasets() -> dict:
    """name -> (train, test); a real set whose files are absent is left out."""
    from xcviz.data import load
    from xcviz.data.registry import load_files
    from xcviz.data.presets import like

    out = {}
    sector = shared_dir() / "data" / "sector_pdsparse_partial"
    if sector.exists():  # the held-out part trains, the test part tests (see its SOURCE.md)
        out["sector (partial)"] = load_files(sector / "sector.heldout.gz", sector / "sector.test.gz", n_features=55197)
    out["bibtex-multiclass"] = load("bibtex")
    debian = load_debian()
    if debian is not None:
        out["debian-tags-multiclass"] = debian
    out["lshtc1-margin C=2,000"] = like("lshtc1-margin", 0.1, labels=2_000)
    return out


def bench() -> dict:
    """{data set: {"shape": ..., oracle: {accuracy, seconds, recall_at_10}}}, every run in this process."""
    from xcviz.api import evaluate
    from xcviz.data.transforms import replicate_multiclass
    from xcviz.solvers.memoir import MemoirParams, fit_memoir

    results = {"load": load_average()}
    for name, (train, test) in _datasets().items():
        X, _ = replicate_multiclass(train.X, train.Y)
        row = {"shape": {"rows": X.shape[0], "classes": train.Y.shape[1], "features": X.shape[1],
                         "nnz_per_row": X.nnz / max(X.shape[0], 1)}}
        for label, (oracle, extra) in ORACLES.items():
            print(f"  memoir margin data {name} {label} ...", file=sys.stderr, flush=True)
            model = fit_memoir(train.X, train.Y, MemoirParams(oracle=oracle, epochs=EPOCHS, **COMMON, **extra),
                               threads=THREADS)
            row[label] = {"accuracy": evaluate(model, test, threads=THREADS)["accuracy"],
                          "seconds": model.info["train_seconds"], "recall_at_10": model.info["oracle_recall_at_10"]}
        results[name] = row
    results["load"] += f" before, {load_average()} after"
    return results


def render(results: dict) -> list[str]:
    """Markdown: one row per data set, exact's lead over random and HNSW's accuracy and recall@10."""
    lines = [HEADING, "",
             f"MEMOIR-l2, {EPOCHS} epochs, lam {COMMON['lam']}, the index updated every {COMMON['reindex_every']} "
             f"batches, {THREADS} threads, every run in one process (`benchmarks/run.py --only margin-data`). Real "
             "multi-label sets train and test with every row once per label; sector trains on its held-out part "
             f"(the partial files we have). hnsw-light: {LIGHT_HNSW}. Load average (1 / 5 / 15 min): {results['load']}.",
             "", "| data | training rows | classes | features | nnz / row | exact % | random % | exact - random | "
             "hnsw-light % | hnsw-light recall@10 | exact s | hnsw-light s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    gaps = {}
    for name, r in results.items():
        if name == "load":
            continue
        s, e, rnd, h = r["shape"], r["exact"], r["random"], r["hnsw-light"]
        gaps[name] = e["accuracy"] - rnd["accuracy"]
        lines.append(f"| {name} | {s['rows']:,} | {s['classes']:,} | {s['features']:,} | {s['nnz_per_row']:.0f} | "
                     f"{e['accuracy']:.2f} | {rnd['accuracy']:.2f} | {gaps[name]:+.2f} | {h['accuracy']:.2f} | "
                     f"{h['recall_at_10']:.3f} | {e['seconds']:.1f} | {h['seconds']:.1f} |")
    matters = [n for n, g in gaps.items() if g >= 3]
    return lines + ["", "The exact margin leads the random one by 3 points or more on: "
                    + (", ".join(matters) if matters else "none of these") + "; elsewhere the margin class hardly matters "
                    "and no oracle's quality can show.", ""]


if __name__ == "__main__":
    print("\n".join(render(bench())))
