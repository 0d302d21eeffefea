"""Is the accelerator waiting for the CPU? A dataset with a real CPU cost, loaders for each framework, a timed loop.

- ``SyntheticImages``: a seeded, image-like dataset whose samples cost real NumPy work to "decode" and
  "augment"; it lives in this module so that DataLoader worker processes can unpickle it (a class defined
  in a notebook cannot be found by a worker started with spawn or forkserver).
- ``worker_context()``: the multiprocessing context for DataLoader workers inside a notebook kernel
  (forkserver, else spawn; never fork, which can deadlock once threads run).
- ``Prefetch``: a background thread that moves the next batches to the device (``jax.device_put``) ahead.
- ``run_loop``: a training loop that records, per step, the time spent waiting for the batch and the
  time spent computing (synchronised), as a ``Timeline``; ``timeline_plot`` draws it as a Gantt chart.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_MEAN = np.float32(0.5)
_STD = np.float32(0.25)


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}; got {value!r}")


# ---------------------------------------------------------------------------------------------------------
# The dataset


class SyntheticImages:
    """``n`` seeded image-like samples: ``ds[i]`` -> (float32 image (3, size, size), int64 label).

    Each sample is "stored" as a small uint8 picture (a class prototype plus noise), then decoded
    (upsampled to ``size`` and smoothed ``work`` times: the stand-in for a codec's per-pixel work) and
    augmented (random crop from a padded copy, horizontal flip, brightness and contrast, normalisation).
    Everything depends only on (seed, i), so every loader, worker count or framework yields identical data.
    """

    def __init__(self, n: int, *, size: int = 64, classes: int = 10, work: int = 8, seed: int = 0) -> None:
        _check_int("n", n, 1)
        _check_int("size", size, 8)
        if size % 4:
            raise ValueError(f"size must be a multiple of 4; got {size!r}")
        _check_int("classes", classes, 2)
        _check_int("work", work, 0)
        _check_int("seed", seed, 0)
        self.n, self.size, self.classes, self.work, self.seed = int(n), int(size), int(classes), int(work), int(seed)
        rng = np.random.default_rng(seed)
        self._prototypes = rng.integers(0, 256, size=(classes, 3, size // 4, size // 4), dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return (f"SyntheticImages(n={self.n}, size={self.size}, classes={self.classes}, work={self.work}, "
                f"seed={self.seed})")

    @property
    def features(self) -> int:
        """Numbers per sample once flattened (3 * size * size)."""
        return 3 * self.size * self.size

    def _index(self, i: Any) -> int:
        i = int(i)
        if not 0 <= i < self.n:
            raise IndexError(f"index must be in [0, {self.n}); got {i}")
        return i

    def label(self, i: int) -> np.int64:
        """The class of sample ``i``."""
        return np.int64(np.random.default_rng((self.seed, self._index(i), 0)).integers(self.classes))

    def stored(self, i: int) -> np.ndarray:
        """The sample as it would sit on disk: uint8 (3, size/4, size/4), its class prototype plus noise."""
        rng = np.random.default_rng((self.seed, self._index(i), 0))
        label = rng.integers(self.classes)
        noise = rng.integers(-48, 49, size=self._prototypes.shape[1:])
        return np.clip(self._prototypes[label].astype(np.int16) + noise, 0, 255).astype(np.uint8)

    def decode(self, i: int) -> np.ndarray:
        """Decoded float32 image (3, size, size) in [0, 1]: upsampled and smoothed ``work`` times."""
        image = self.stored(i).astype(np.float32) * np.float32(1 / 255)
        image = image.repeat(4, axis=1).repeat(4, axis=2)
        for _ in range(self.work):
            padded = np.pad(image, ((0, 0), (1, 1), (1, 1)), mode="edge")
            image = (padded[:, :-2, 1:-1] + padded[:, 2:, 1:-1] + padded[:, 1:-1, :-2] + padded[:, 1:-1, 2:]
                     + padded[:, 1:-1, 1:-1] * np.float32(4)) * np.float32(1 / 8)
        return image

    def augment(self, image: np.ndarray, i: int) -> np.ndarray:
        """Random crop (4 px padding), flip, brightness/contrast, normalisation: seeded by (seed, i)."""
        rng = np.random.default_rng((self.seed, self._index(i), 1))
        dy, dx = rng.integers(0, 9, size=2)
        flip = rng.random() < 0.5
        brightness, contrast = rng.uniform(-0.1, 0.1), rng.uniform(0.8, 1.2)
        padded = np.pad(image, ((0, 0), (4, 4), (4, 4)), mode="reflect")
        out = padded[:, dy:dy + self.size, dx:dx + self.size]
        if flip:
            out = out[:, :, ::-1]
        mean = out.mean(axis=(1, 2), keepdims=True)
        out = (out - mean) * np.float32(contrast) + mean + np.float32(brightness)
        return np.ascontiguousarray((out - _MEAN) / _STD, dtype=np.float32)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.int64]:
        i = self._index(i)
        return self.augment(self.decode(i), i), self.label(i)

    def batch(self, indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Stacked samples: (float32 (B, 3, size, size), int64 (B,))."""
        samples = [self[i] for i in indices]
        return np.stack([x for x, _ in samples]), np.array([y for _, y in samples], dtype=np.int64)


class NumpyBatches:
    """Re-iterable batches of ``dataset`` in order, made in the calling thread: the simplest loader there is."""

    def __init__(self, dataset: SyntheticImages, batch_size: int) -> None:
        _check_int("batch_size", batch_size, 1)
        self.dataset, self.batch_size = dataset, int(batch_size)

    def __len__(self) -> int:
        return len(self.dataset) // self.batch_size

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for b in range(len(self)):
            yield self.dataset.batch(range(b * self.batch_size, (b + 1) * self.batch_size))


def numpy_collate(samples: Sequence[tuple[np.ndarray, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """DataLoader ``collate_fn`` that keeps NumPy arrays (to feed JAX or TF); module-level, so workers find it."""
    return np.stack([x for x, _ in samples]), np.array([y for _, y in samples], dtype=np.int64)


# ---------------------------------------------------------------------------------------------------------
# Worker processes


def worker_context(preload: Sequence[str] = ("torch", "course_utils.pipeline")) -> Any:
    """The multiprocessing context for DataLoader workers started from a notebook: forkserver, else spawn.

    fork copies a process whose threads (TF, JAX, OpenMP pools) may hold locks, and the child can deadlock;
    forkserver forks each worker from a small single-threaded server that has imported ``preload`` once,
    so a worker starts in milliseconds instead of re-importing torch as spawn does.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(preload))
        return context
    return multiprocessing.get_context("spawn")


def start_forkserver(preload: Sequence[str] = ("torch", "course_utils.pipeline")) -> float:
    """Start the forkserver and fork one trivial process from it; return the seconds (the one-off cost).

    The server imports ``preload`` before its first fork, so this is paid once per kernel; afterwards a
    worker starts with a fork. With spawn there is no server: every worker pays the imports itself.
    """
    context = worker_context(preload)
    start = time.perf_counter()
    process = context.Process(target=time.sleep, args=(0,), daemon=True)
    process.start()
    process.join()
    return time.perf_counter() - start


def unpickles_in_fresh_process(obj: Any, timeout: float = 60.0) -> str:
    """Pickle ``obj`` here and unpickle it in a new Python process, as a spawn/forkserver worker does.

    Returns "ok", or the name of the exception the new process raised (a function defined in a notebook
    pickles as a reference to ``__main__``, which the worker cannot resolve: AttributeError).
    """
    import pickle
    import subprocess
    import sys

    code = ("import pickle, sys\ntry:\n    pickle.loads(sys.stdin.buffer.read())\nexcept Exception as e:\n"
            "    print(type(e).__name__)\nelse:\n    print('ok')")
    result = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(obj), capture_output=True,
                            timeout=timeout, cwd=os.getcwd())
    return result.stdout.decode().strip() or f"exit code {result.returncode}"


def _is_helper(process: Any) -> bool:
    try:
        cmdline = " ".join(process.cmdline())
    except Exception:  # gone, or not ours to read
        return True
    return "multiprocessing.forkserver" in cmdline or "multiprocessing.resource_tracker" in cmdline


def worker_processes(wait: float = 2.0, ignore: Iterable[int] = ()) -> list[int]:
    """PIDs of live worker processes started by this process (multiprocessing's own servers excluded).

    Polls for up to ``wait`` seconds, since a worker told to stop takes a moment to exit. An empty list
    after a loader is gone means no worker was leaked. ``ignore``: PIDs that were there before (for
    example a compiler's worker pool) and are not the loader's.
    """
    import psutil

    ignored = set(ignore)

    me = psutil.Process()
    deadline = time.monotonic() + wait
    while True:
        helpers = {p.pid for p in me.children() if _is_helper(p)}
        found = []
        for p in me.children(recursive=True):
            try:
                alive = p.status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                continue
            if alive and p.pid not in helpers and p.pid not in ignored:
                found.append(p.pid)
        if not found or time.monotonic() >= deadline:
            return sorted(found)
        time.sleep(0.05)


def worker_memory(pids: Iterable[int] | None = None) -> dict[int, int]:
    """Private memory (USS, bytes) of each worker process: what it costs beyond the pages it shares.

    ``pids`` defaults to ``worker_processes(wait=0)``; processes that have exited are left out.
    """
    import psutil

    found = {}
    for pid in worker_processes(wait=0) if pids is None else pids:
        try:
            found[pid] = int(psutil.Process(pid).memory_full_info().uss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def worker_counts(cores: int | None = None) -> list[int]:
    """Worker counts worth measuring on a machine with ``cores`` cores: 0, 1, half, all, and a few too many."""
    cores = cores or os.cpu_count() or 1
    _check_int("cores", cores, 1)
    return sorted({0, 1, max(1, cores // 2), cores, min(2 * cores, cores + 4)})


# ---------------------------------------------------------------------------------------------------------
# A prefetching iterator (background thread)

_DONE = object()


@dataclass
class _Failure:
    error: BaseException


class Prefetch:
    """Re-iterable wrapper: each ``iter()`` starts a thread that runs ``transfer`` on the next ``size`` batches.

    ``transfer`` defaults to ``jax.device_put`` (the copy to the accelerator starts before the step asks for
    the batch). ``size=0`` transfers in the calling thread (no overlap: the baseline). The thread overlaps
    with the step whenever the step releases the GIL, as compiled JAX/XLA computations do.
    """

    def __init__(self, source: Iterable[Any], size: int = 2, transfer: Callable[[Any], Any] | None = None) -> None:
        _check_int("size", size, 0)
        self.source, self.size, self.transfer = source, int(size), transfer

    def __len__(self) -> int:
        return len(self.source)  # type: ignore[arg-type]

    def _transfer(self) -> Callable[[Any], Any]:
        if self.transfer is not None:
            return self.transfer
        import jax

        return jax.device_put

    def __iter__(self) -> Iterator[Any]:
        if self.size == 0:
            transfer = self._transfer()
            return (transfer(item) for item in self.source)
        return PrefetchIterator(iter(self.source), self.size, self._transfer())


class PrefetchIterator:
    """The iterator of ``Prefetch``: yields the source's items in order; ``close()`` stops and joins the thread."""

    def __init__(self, source: Iterator[Any], size: int, transfer: Callable[[Any], Any]) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=size)
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._produce, args=(source, transfer), daemon=True,
                                        name="course-prefetch")
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, source: Iterator[Any], transfer: Callable[[Any], Any]) -> None:
        try:
            for item in source:
                if not self._put(transfer(item)):
                    return
        except BaseException as error:  # handed to the consumer, which raises it
            self._put(_Failure(error))
            return
        self._put(_DONE)

    @property
    def alive(self) -> bool:
        """True while the background thread runs."""
        return self._thread.is_alive()

    def __iter__(self) -> PrefetchIterator:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        item = self._queue.get()
        if item is _DONE:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.error
        return item

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (dropping what it prefetched) and wait for it to end."""
        self._finished = True
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout)

    def __enter__(self) -> PrefetchIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not self._finished:
            self._stop.set()


# ---------------------------------------------------------------------------------------------------------
# The instrumented loop


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # torch
        return value.detach().cpu().numpy()
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):  # TensorFlow
        return value.numpy()
    return np.asarray(value)  # NumPy, JAX


def fingerprint(batch: Any) -> str:
    """A short checksum of a batch's bytes (CRC-32 of each array), equal for equal data in any framework.

    Integer arrays are compared as int64 (JAX stores int64 labels as int32 unless x64 is enabled).
    """
    parts = batch if isinstance(batch, (tuple, list)) else (batch,)
    arrays = [_numpy(p) for p in parts]
    arrays = [a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else a for a in arrays]
    return "-".join(f"{zlib.crc32(np.ascontiguousarray(a).tobytes()):08x}" for a in arrays)


@dataclass(frozen=True)
class Timeline:
    """Per-step times of one loop: when each step began waiting, how long it waited, how long it computed.

    The first step of each epoch holds the loader's start-up (workers, threads, caches), so the steady-state
    numbers (``utilisation``, ``step_time``...) leave it out and ``startups`` reports it.
    """

    label: str
    starts: tuple[float, ...]
    waits: tuple[float, ...]
    computes: tuple[float, ...]
    epochs: tuple[int, ...]
    fingerprints: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.waits or not len(self.starts) == len(self.waits) == len(self.computes) == len(self.epochs):
            raise ValueError("starts, waits, computes and epochs must be non-empty and of equal length")

    @property
    def steps(self) -> int:
        return len(self.waits)

    def _steady(self) -> np.ndarray:
        epochs = np.asarray(self.epochs)
        first = np.r_[True, epochs[1:] != epochs[:-1]]
        return ~first if (~first).any() else np.ones_like(first)

    @property
    def startups(self) -> tuple[float, ...]:
        """Wait of the first step of each epoch (end of the previous epoch, ``iter()``, first batch), seconds."""
        epochs = np.asarray(self.epochs)
        first = np.flatnonzero(np.r_[True, epochs[1:] != epochs[:-1]])
        return tuple(float(self.waits[i]) for i in first)

    @property
    def wait_time(self) -> float:
        """Mean wait per steady step, seconds."""
        return float(np.asarray(self.waits)[self._steady()].mean())

    @property
    def compute_time(self) -> float:
        """Mean compute per steady step, seconds."""
        return float(np.asarray(self.computes)[self._steady()].mean())

    @property
    def step_time(self) -> float:
        """Mean (wait + compute) per steady step, seconds: total steady time / steady steps."""
        steady = self._steady()
        return float((np.asarray(self.waits)[steady] + np.asarray(self.computes)[steady]).mean())

    @property
    def utilisation(self) -> float:
        """Compute time / step time over the steady steps: the share of time the accelerator had work."""
        steady = self._steady()
        compute = float(np.asarray(self.computes)[steady].sum())
        total = compute + float(np.asarray(self.waits)[steady].sum())
        return compute / total if total > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers (seconds) for JSON."""
        return {"label": self.label, "steps": self.steps, "step_time": self.step_time, "wait_time": self.wait_time,
                "compute_time": self.compute_time, "utilisation": self.utilisation,
                "startups": list(self.startups), **self.metadata}

    def summary(self) -> str:
        return (f"{self.label}: step {self.step_time * 1e3:.1f} ms (wait {self.wait_time * 1e3:.1f} ms, "
                f"compute {self.compute_time * 1e3:.1f} ms), utilisation {self.utilisation:.0%}, "
                f"start-up {self.startups[0] * 1e3:.0f} ms")

    def __repr__(self) -> str:
        return f"<Timeline {self.summary()}>"


def run_loop(
    batches: Iterable[Any],
    step: Callable[[Any], Any],
    *,
    epochs: int = 1,
    label: str = "loop",
    record: bool = True,
    **metadata: Any,
) -> Timeline:
    """Run ``step(batch)`` over every batch of ``batches`` for ``epochs`` epochs, timing wait and compute.

    Wait: from asking the iterator for the next batch until it arrives (the first step of an epoch includes
    ``iter()``, i.e. starting workers or threads, and the end of the previous epoch). Compute: ``step(batch)``
    plus ``course_utils.timing.sync`` of its result, so asynchronous frameworks are charged for the work they
    queued. ``record`` keeps a
    fingerprint of each batch (computed outside both timed intervals) to prove variants yield equal data.
    """
    from course_utils.timing import sync

    _check_int("epochs", epochs, 1)
    if not callable(step):
        raise TypeError(f"step must be callable; got {type(step).__name__}")
    clock = time.perf_counter
    starts, waits, computes, epoch_of, prints = [], [], [], [], []
    origin = begin = clock()
    for epoch in range(epochs):  # an epoch's first wait includes the end of the previous epoch (workers stop...)
        iterator = iter(batches)
        try:
            while True:
                try:
                    batch = next(iterator)
                except StopIteration:
                    break
                got = clock()
                sync(step(batch))
                done = clock()
                starts.append(begin - origin)
                waits.append(got - begin)
                computes.append(done - got)
                epoch_of.append(epoch)
                if record:
                    prints.append(fingerprint(batch))
                del batch
                begin = clock()
        finally:
            close = getattr(iterator, "close", None)
            if callable(close):
                close()
            del iterator
    if not waits:
        raise ValueError("batches yielded no batch")
    return Timeline(label, tuple(starts), tuple(waits), tuple(computes), tuple(epoch_of), tuple(prints), metadata)


# ---------------------------------------------------------------------------------------------------------
# Training steps (the same MLP in each framework) and the pipelines' framework glue


def make_train_step(framework: str, sizes: Sequence[int], *, lr: float = 0.05, seed: int = 0) -> Callable[[Any], Any]:
    """A stateful ``step(batch) -> loss`` for one SGD step of ``course_utils.models``'s MLP (images flattened).

    torch takes torch tensors, jax takes arrays (jit-compiled, parameters kept between calls), tensorflow
    takes tensors (a ``tf.function``). Each returns the loss without waiting for it.
    """
    from course_utils import models

    if framework == "torch":
        import torch

        model = models.torch_mlp(sizes, seed=seed)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)

        def torch_step(batch: Any) -> Any:
            x, y = batch
            x = x.to(device, non_blocking=True).flatten(1)
            y = y.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            return loss.detach()

        return torch_step
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        def loss_fn(params: Any, x: Any, y: Any) -> Any:
            logits = models.jax_mlp_apply(params, x.reshape(x.shape[0], -1))
            return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

        @jax.jit
        def update(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

        state = {"params": models.jax_mlp_params(sizes, seed=seed)}

        def jax_step(batch: Any) -> Any:
            state["params"], loss = update(state["params"], *batch)
            return loss

        return jax_step
    if framework == "tensorflow":
        from course_utils import env

        tf = env.import_tensorflow()
        model = models.keras_mlp(sizes, seed=seed)
        variables = model.trainable_variables

        @tf.function(reduce_retracing=True)
        def tf_step(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                logits = model(tf.reshape(x, (tf.shape(x)[0], -1)), training=True)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            for v, g in zip(variables, tape.gradient(loss, variables)):
                v.assign_sub(lr * g)
            return loss

        return lambda batch: tf_step(*batch)
    raise ValueError(f"framework must be one of 'torch', 'jax', 'tensorflow'; got {framework!r}")


def tf_decode(dataset: SyntheticImages) -> Callable[[Any], Any]:
    """For ``tf.data``'s ``map``: index -> (index, decoded image), the NumPy work run by ``tf.numpy_function``."""
    import tensorflow as tf

    shape = (3, dataset.size, dataset.size)

    def decode(i: Any) -> tuple[Any, Any]:
        image = tf.numpy_function(lambda j: dataset.decode(int(j)), [i], tf.float32, stateful=False)
        return i, tf.ensure_shape(image, shape)

    return decode


def tf_augment(dataset: SyntheticImages) -> Callable[[Any, Any], Any]:
    """For ``tf.data``'s ``map``: (index, decoded image) -> (augmented image, label)."""
    import tensorflow as tf

    shape = (3, dataset.size, dataset.size)

    def augment(i: Any, image: Any) -> tuple[Any, Any]:
        x, y = tf.numpy_function(lambda j, im: (dataset.augment(im, int(j)), dataset.label(int(j))),
                                 [i, image], (tf.float32, tf.int64), stateful=False)
        return tf.ensure_shape(x, shape), tf.ensure_shape(y, ())

    return augment


# ---------------------------------------------------------------------------------------------------------
# Plots


def timeline_plot(timelines: Sequence[Timeline], *, title: str | None = None, width: float = 9.0) -> Figure:
    """Gantt chart, one row per timeline: grey bars wait for data, coloured bars compute; utilisation on the right."""
    from matplotlib.patches import Patch

    from course_utils.plotting import color_for, figure

    if not timelines:
        raise ValueError("timelines must not be empty")
    fig, (ax,) = figure(width=width, height=1.7 + 0.42 * len(timelines))
    end = max(t.starts[-1] + t.waits[-1] + t.computes[-1] for t in timelines) * 1e3
    for row, t in enumerate(timelines):
        starts = np.asarray(t.starts) * 1e3
        waits, computes = np.asarray(t.waits) * 1e3, np.asarray(t.computes) * 1e3
        ax.broken_barh(list(zip(starts, waits)), (row - 0.35, 0.7), facecolors="#bbbbbb", edgecolor="none")
        ax.broken_barh(list(zip(starts + waits, computes)), (row - 0.35, 0.7),
                       facecolors=color_for(t.label, row), edgecolor="white", linewidth=0.3)
        ax.text(end * 1.01, row, f"{t.utilisation:.0%}", va="center", ha="left", fontsize=9)
    ax.set_yticks(range(len(timelines)), [t.label for t in timelines])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.08)
    ax.set_xlabel("time since the loop started (ms); right: utilisation = compute / step time (steady steps)")
    ax.grid(axis="y", visible=False)
    fig.legend(handles=[Patch(color="#bbbbbb", label="waiting for data"), Patch(color="#555555", label="computing")],
              loc="outside lower center", ncols=2)
    ax.set_title(title or "Where each step's time goes")
    return fig


def utilisation_plot(before_after: dict[str, tuple[Timeline, Timeline]], *, title: str | None = None) -> Figure:
    """Two panels per framework, before vs after: steady step time (wait + compute stacked) and utilisation."""
    from matplotlib.patches import Patch

    from course_utils.plotting import color_for, figure

    if not before_after:
        raise ValueError("before_after must not be empty")
    fig, (left, right) = figure(2, width=9.5, height=1.4 + 0.75 * len(before_after))
    names, waits, computes, utils, colors = [], [], [], [], []
    for framework, pair in before_after.items():
        for tag, t in zip(("before", "after"), pair):
            names.append(f"{framework} {tag}")
            waits.append(t.wait_time * 1e3)
            computes.append(t.compute_time * 1e3)
            utils.append(t.utilisation * 100)
            colors.append(color_for(framework))
    y = np.arange(len(names))
    left.barh(y, computes, color=colors)
    left.barh(y, waits, left=computes, color="#bbbbbb")
    left.set_yticks(y, names)
    left.invert_yaxis()
    left.set_xlabel("steady step time (ms)")
    fig.legend(handles=[Patch(color="#555555", label="compute (framework colour)"),
                        Patch(color="#bbbbbb", label="waiting for data")], loc="outside lower center", ncols=2)
    for yy, u, c in zip(y, utils, colors):
        right.barh(yy, u, color=c, alpha=0.5 if yy % 2 == 0 else 1.0)
    for yy, u in zip(y, utils):
        right.text(u, yy, f" {u:.0f}%", va="center")
    right.set_yticks(y, [])
    right.invert_yaxis()
    right.set_xlim(0, 115)
    right.set_xlabel("utilisation (%)")
    fig.suptitle(title or "Before and after: step time and utilisation")
    return fig


def limit_compute_threads(threads: int = 1) -> dict[str, int]:
    """On a CPU-only machine, give the model ``threads`` cores (its stand-in accelerator), the rest to the data.

    Sets torch's and TensorFlow's intra-op threads and JAX's XLA CPU flags; call it before JAX starts
    (before ``cu.env.setup_notebook()``, which lists JAX's devices). On a GPU or TPU it does nothing: the
    model runs on the device there. Returns the threads set per framework.
    """
    import sys

    from course_utils import env

    _check_int("threads", threads, 1)
    if env.accelerator() != "cpu":
        return {}
    bridge = sys.modules.get("jax._src.xla_bridge")  # private, so looked up defensively
    if bridge is not None and getattr(bridge, "backends_are_initialized", lambda: False)():
        raise RuntimeError("limit_compute_threads() must run before JAX starts (before setup_notebook)")
    flags = os.environ.get("XLA_FLAGS", "")
    wanted = f"--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads={threads}"
    if wanted not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {wanted}".strip()
    done = {"jax": threads}
    if "torch" in env.installed_frameworks():
        import torch

        torch.set_num_threads(threads)
        done["torch"] = torch.get_num_threads()
    if "tensorflow" in env.installed_frameworks():
        tf = env.import_tensorflow()
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        done["tensorflow"] = tf.config.threading.get_intra_op_parallelism_threads()
    return done
