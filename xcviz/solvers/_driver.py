"""The skeleton every multiclass family's fit runs on, and the one set of keywords every fit takes.

`Driver.fit` owns what MEMOIR, DS-MLR and LDGS once each wrote by hand: the kernels' warm-up before
the clock starts, the begin record, the clock (measurement time excluded from training time), the
stop / progress loop, the records and the end record with the model's shared info. A family writes
hooks: `setup` (its data and state), `steps` (trains one step per yield), `window` and `measure`
(a record's training counters and its measurement) and `model` (the model and its own info), in the
manner of scikit-learn's `NewtonSolver.solve`.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar, Iterator

import numpy as np
import param

from ..engine.threads import using_threads
from ..records.climbs import climbs
from ..records.sinks import NullSink
from .params import param_dict
from .warmup import code_paths, tiny_problem, warm_once


@dataclass(frozen=True)
class FitOptions:
    """The keywords every family's fit takes besides X, Y and params (a misspelled one raises).

    threads: numba threads (None: all). recorder: a sink of xcviz.records.sinks, or None for no
    records. run: the records' run name. progress(done, total) after every step or block. stop():
    asked before every step or block; true ends the run with the model so far. validation: (X, Y)
    a multiclass family measures while training. cluster: a (Client, ClusterInfo) pair of
    xcviz.compute.cluster for a family that distributes. skip, on_block: the labels already trained
    and the callback of every finished block, for one-vs-all runs that resume. source: the
    xcviz.data.source.DataSource X and Y were read from, which a one-vs-all family's Dask workers
    read themselves instead of receiving the rows from the driver. blocks_dir: the folder (the
    run's) where those workers write each block's weights for the driver to read back, checksummed,
    instead of sending them through the scheduler. phase(name): told
    "compiling" before the kernels' warm-up and "training" after it (solvers.warmup), when there is one."""

    threads: int | None = None
    recorder: Any = None
    run: str = "run"
    progress: Callable[[int, int], None] | None = None
    stop: Callable[[], bool] | None = None
    validation: Any = None
    cluster: Any = None
    skip: np.ndarray | None = None
    on_block: Callable | None = None
    source: Any = None
    blocks_dir: str | None = None
    phase: Callable[[str], None] | None = None

    @classmethod
    def of(cls, family: str, options: dict) -> FitOptions:
        """The options of a fit call: a TypeError names a keyword that no fit takes."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(f"{family}'s fit got unexpected keyword(s) {', '.join(unknown)}; "
                            f"it takes {', '.join(known)}")
        return cls(**options)

    def refuse(self, family: str, *names: str) -> None:
        """A ValueError for an option given that `family` has no use for (e.g. skip to a multiclass
        family, which trains all classes at once and resumes from scratch)."""
        given = [name for name in names if getattr(self, name) is not None]
        if given:
            raise ValueError(f"{family} takes no {', '.join(given)}")


def one_vs_all(family: str, options: dict) -> tuple:
    """(threads, recorder, run, progress, cluster, background, phase) of a one-vs-all fit's options,
    background the skip, stop, on_block, source and blocks_dir of solvers._onevsall.run.run_blocks; a validation set is
    refused (a one-vs-all family measures none while training)."""
    o = FitOptions.of(family, options)
    o.refuse(family, "validation")
    return (o.threads, o.recorder, o.run, o.progress, o.cluster, {"skip": o.skip, "stop": o.stop, "on_block": o.on_block,
                                                                             "source": o.source, "blocks_dir": o.blocks_dir},
            o.phase)


class Clock:
    """Training time: the seconds since `start`, less those spent measuring (records' diagnostics,
    the progress and stop callbacks)."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.measured = 0.0
        self.last = 0.0  # training seconds at the last record

    def train_seconds(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self.start - self.measured

    def restart(self) -> None:
        """Training starts now (for a family whose set-up is not training time)."""
        self.start, self.measured = time.monotonic(), 0.0

    @contextmanager
    def measuring(self) -> Iterator[None]:
        """Time spent inside is not training time."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.measured += time.monotonic() - t0


class Driver:
    """One fit of a multiclass family. Subclasses set `name` and `iter_fields` and write the hooks
    below; `fit()` runs them in order:

    warm_up (before the clock) -> setup -> [numba threads: start -> begin record -> record of step
    0 -> steps, each followed by its record when `due`, `after_step` and progress -> finish] ->
    model -> end record."""

    name: ClassVar[str]
    iter_fields: ClassVar[tuple[str, ...]]
    setup_is_training: ClassVar[bool] = True  # whether the seconds of setup and start count as training

    def __init__(self, X, Y, params: param.Parameterized, **options) -> None:
        self.X, self.Y, self.p = X, Y, params
        self.options = FitOptions.of(self.name, options)
        self.options.refuse(self.name, "skip", "on_block", "source", "blocks_dir")
        self.threads, self.recorder = self.options.threads, self.options.recorder
        self.values = param_dict(params)
        self.total = 0  # steps in all (progress's total)
        self.done = 0  # steps trained
        self.written = 0  # records written
        self.cancelled = False
        self.last_row: dict | None = None  # the last record made
        self.objectives: list[float] = []  # each record's objective, for its climbs (records.climbs)
        self.n_threads = 0
        self.compile_seconds = 0.0  # the warm-up's, before the clock (solvers.warmup)
        self.clock = Clock()

    # hooks -------------------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Compile (or load) the kernels of this kind of run before the clock starts; see `warm`."""

    def setup(self) -> None:
        """Prepare the data and the state (outside the numba threads); raise ValueError when there
        is nothing to train. Sets `total`."""

    def start(self) -> dict:
        """Set up what needs the numba threads (`n_threads` is known); returns the begin record's
        family fields."""
        return {}

    def steps(self) -> Iterator[int]:
        """Train one step per iteration and yield the number of steps done; a family whose loop
        another library drives (scipy's L-BFGS) calls `step_done` itself and yields nothing."""
        raise NotImplementedError

    def due(self, step: int) -> bool:
        """Whether step `step` ends on a record."""
        return True

    def after_step(self, step: int) -> None:
        """After a step and its record: a family's checks (divergence, the end of an epoch)."""

    def window(self, step: int) -> dict:
        """A record's training fields (counters since the last record, reset here): training time."""
        return {}

    def measure(self, step: int) -> dict:
        """A record's measured fields: not training time."""
        return {}

    def write(self, row: dict) -> None:
        """Hand a record to the sink (one row; DS-MLR writes one per worker)."""
        self.recorder.write("iteration", {k: np.array([v]) for k, v in row.items()})

    def finish(self) -> None:
        """After the loop, still on the numba threads: final measurements, engines closed."""

    def model(self, info: dict):
        """The trained model, given the shared info (train_seconds, threads, cancelled) to extend."""
        raise NotImplementedError

    # the skeleton ------------------------------------------------------------------------------

    def fit(self):
        """Train and return the model (see the class's docstring for the order)."""
        self.warm_up()
        self.clock = Clock()
        self.setup()
        with using_threads(self.threads) as n_threads:
            self.n_threads = n_threads
            begin = self.start()
            if not self.setup_is_training:
                self.clock.restart()
            if self.recorder is not None:
                self.recorder.begin({"run": self.options.run, "solver": self.name, "params": self.values,
                                     "threads": n_threads, **begin, "iter_fields": list(self.iter_fields),
                                     "label_fields": []})
                self.record(0)
            self._loop()
            self.train_seconds = self.clock.train_seconds()
            self.finish()
        info = self.model_info()
        model = self.model(info)
        if self.recorder is not None:
            self.recorder.end(info)
        return model

    def model_info(self) -> dict:
        """The info every family's model carries; a family's `model` adds its own. A recorded run
        also carries its objective's climbs (records.climbs: start and peak record, their values),
        which the runs table flags."""
        info = {"train_seconds": self.train_seconds, "compile_seconds": self.compile_seconds, "threads": self.n_threads,
                "cancelled": self.cancelled}
        if self.objectives:
            info["objective_climbs"] = [list(c) for c in climbs(self.objectives)]
        return info

    def _loop(self) -> None:
        if self.total and self._stopped():
            return
        for step in self.steps():
            if not self.step_done(step):
                return

    def step_done(self, step: int) -> bool:
        """After step `step`: its record when due, `after_step`, progress; then whether to go on
        (false once every step is done or a stop is asked)."""
        self.done = step
        if self.recorder is not None and self.due(step):
            self.record(step)
        self.after_step(step)
        if self.options.progress is not None:
            with self.clock.measuring():
                self.options.progress(step, self.total)
        return step < self.total and not self._stopped()

    def _stopped(self) -> bool:
        if self.options.stop is not None:
            with self.clock.measuring():
                self.cancelled = bool(self.options.stop())
        return self.cancelled

    def record(self, step: int) -> dict:
        """One record after step `step` (written when there is a recorder); returns it."""
        now = time.monotonic()
        wall = self.clock.train_seconds(now)
        row = {**dict.fromkeys(self.iter_fields, np.nan), "iteration": self.written, "label": 0, "wall": wall,
               "seconds": wall - self.clock.last}
        if "elapsed" in self.iter_fields:
            row["elapsed"] = now - self.clock.start
        row.update(self.window(step))
        with self.clock.measuring():
            t0 = time.monotonic()
            row.update(self.measure(step))
            if "diagnostic_seconds" in self.iter_fields:
                row["diagnostic_seconds"] = time.monotonic() - t0
            if self.recorder is not None:
                self.write(row)
        self.written += 1
        self.objectives.append(float(row.get("objective", np.nan)))
        self.clock.last = self.clock.train_seconds()
        self.last_row = row
        return row

    def warm(self, key: tuple, params: param.Parameterized, *, multilabel: bool) -> None:
        """Train `params` (settings scaled down to a tiny problem) once per process and kind of run
        on a tiny generated problem, multi-label or multiclass, recording and validating if this
        run does (see solvers.warmup); its seconds add to `compile_seconds`."""
        recording, validating = self.recorder is not None, self.options.validation is not None

        def tiny_fit() -> None:
            tiny = tiny_problem(multilabel)
            type(self)(tiny.X, tiny.Y, params, threads=self.threads, recorder=NullSink() if recording else None,
                       validation=(tiny.X, tiny.Y) if validating else None).fit()

        self.compile_seconds += warm_once((self.name, code_paths(self.p), *key, multilabel, recording, validating),
                                          tiny_fit, self.options.phase)
