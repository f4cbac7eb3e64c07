"""LibMultiLabel's linear one-vs-rest (`libmultilabel.linear.train_1vsrest`), trained and scored in its
own virtual environment: `VENV/bin/python libmultilabel_peer.py WORK` (benchmarks/peers.py builds the
environment and calls this).

It lives apart from xcviz's environment because LibMultiLabel needs liblinear-multicore, whose
`liblinear` module would replace liblinear-official's (xcviz's reference solver). It imports neither
xcviz nor torch (LibMultiLabel's torch is only in its `nn` extra): it reads WORK/{x_train,y_train,x_test}.npz
(rows already L2-normalised), writes the top-5 labels of every test row to WORK/topk.npy and prints
{"seconds": fit seconds, "threads": threads it trained on} as JSON.
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import scipy.sparse as sp
from libmultilabel import linear

# LIBLINEAR -s 2 as every other contender runs it; LibMultiLabel refuses -R, so its bias is regularised
OPTIONS = "-s 2 -c 1 -e 0.01 -B 1"


def main(work: Path) -> None:
    x_train, y_train, x_test = (sp.load_npz(work / f"{name}.npz").tocsr() for name in ("x_train", "y_train", "x_test"))
    t = time.perf_counter()
    model = linear.train_1vsrest(y_train, x_train, options=OPTIONS, verbose=False)
    seconds = time.perf_counter() - t
    scores = linear.predict_values(model, x_test)
    np.save(work / "topk.npy", np.argsort(-scores, axis=1, kind="stable")[:, :5])
    # train_1vsrest trains on as many threads as the machine has physical cores, with no option to change it
    print(json.dumps({"seconds": seconds, "threads": psutil.cpu_count(logical=False)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
