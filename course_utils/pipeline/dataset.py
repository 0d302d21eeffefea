"""The dataset of notebook 04: seeded image-like samples whose decode and augmentation cost real CPU time.

It lives in a module (not in the notebook) so that DataLoader workers started with spawn or forkserver can
unpickle it: a class defined in a notebook pickles as a reference to ``__main__``, which a worker cannot find.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from course_utils import declare, validate

MEAN = np.float32(0.5)
STD = np.float32(0.25)
CROP_PAD = 4  # pixels of reflected border the random crop chooses from
UPSAMPLE = 4  # stored pictures are 1/4 of the side; decoding repeats each pixel 4 x 4
MAX_SAMPLES = 1_000_000  # samples are made on demand, but records() and an epoch grow with n
MAX_SIZE = 512  # pixels per side: one decoded float32 image is then 3 MiB
MAX_WORK = 64  # smoothing passes per decode
MAX_BATCH = 4096
MAX_BYTES = 2**30  # one batch, or all stored records, at most 1 GiB: a learner's typo must not fill the memory


@declare.checked
class AugmentParams(NamedTuple):
    """The random choices of one sample's augmentation, drawn from (seed, index): crop offsets, flip,
    brightness shift and contrast factor."""

    dy: int
    dx: int
    flip: bool
    brightness: float
    contrast: float


class SyntheticImages:
    """``n`` seeded image-like samples: ``ds[i]`` -> (float32 image (3, size, size), int64 label).

    Each sample is "stored" as a small uint8 picture (a class prototype plus noise), then decoded
    (upsampled to ``size`` and smoothed ``work`` times: the stand-in for a codec's per-pixel work) and
    augmented (random crop from a padded copy, horizontal flip, brightness and contrast, normalisation).
    Everything depends only on (seed, i), so every loader, worker count or framework yields identical data.
    """

    def __init__(self, n: int, *, size: int = 64, classes: int = 10, work: int = 8, seed: int = 0) -> None:
        validate.number("n", n, low=1, high=MAX_SAMPLES, integer=True)
        validate.number("size", size, low=8, high=MAX_SIZE, integer=True)
        if size % UPSAMPLE:
            raise ValueError(f"size must be a multiple of {UPSAMPLE}; got {size!r}")
        validate.number("classes", classes, low=2, high=1000, integer=True)
        validate.number("work", work, low=0, high=MAX_WORK, integer=True)
        validate.number("seed", seed, low=0, high=2**32 - 1, integer=True)
        self.n, self.size, self.classes, self.work, self.seed = int(n), int(size), int(classes), int(work), int(seed)
        rng = np.random.default_rng(self.seed)
        side = self.size // UPSAMPLE
        self._prototypes = rng.integers(0, 256, size=(self.classes, 3, side, side), dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return (f"SyntheticImages(n={self.n}, size={self.size}, classes={self.classes}, work={self.work}, "
                f"seed={self.seed})")

    @property
    def features(self) -> int:
        """Numbers per sample once flattened (3 * size * size)."""
        return 3 * self.size * self.size

    @property
    def sample_bytes(self) -> int:
        """Bytes of one decoded float32 image."""
        return 4 * self.features

    def _index(self, i: Any) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"index must be an integer; got {type(i).__name__} {i!r}")
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
        image = image.repeat(UPSAMPLE, axis=1).repeat(UPSAMPLE, axis=2)
        for _ in range(self.work):
            padded = np.pad(image, ((0, 0), (1, 1), (1, 1)), mode="edge")
            image = (padded[:, :-2, 1:-1] + padded[:, 2:, 1:-1] + padded[:, 1:-1, :-2] + padded[:, 1:-1, 2:]
                     + padded[:, 1:-1, 1:-1] * np.float32(4)) * np.float32(1 / 8)
        return image

    def augment_params(self, i: int) -> AugmentParams:
        """The random choices of sample ``i``'s augmentation (seeded by (seed, i), so every loader agrees)."""
        rng = np.random.default_rng((self.seed, self._index(i), 1))
        dy, dx = rng.integers(0, 2 * CROP_PAD + 1, size=2)
        flip = rng.random() < 0.5
        brightness, contrast = rng.uniform(-0.1, 0.1), rng.uniform(0.8, 1.2)
        return AugmentParams(int(dy), int(dx), bool(flip), float(brightness), float(contrast))

    def augment(self, image: np.ndarray, i: int) -> np.ndarray:
        """Random crop (4 px reflected padding), flip, brightness/contrast, normalisation: seeded by (seed, i)."""
        p = self.augment_params(i)
        padded = np.pad(image, ((0, 0), (CROP_PAD, CROP_PAD), (CROP_PAD, CROP_PAD)), mode="reflect")
        out = padded[:, p.dy:p.dy + self.size, p.dx:p.dx + self.size]
        if p.flip:
            out = out[:, :, ::-1]
        mean = out.mean(axis=(1, 2), keepdims=True)
        out = (out - mean) * np.float32(p.contrast) + mean + np.float32(p.brightness)
        return np.ascontiguousarray((out - MEAN) / STD, dtype=np.float32)

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.int64]:
        i = self._index(i)
        return self.augment(self.decode(i), i), self.label(i)

    def batch(self, indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Stacked samples: (float32 (B, 3, size, size), int64 (B,))."""
        if isinstance(indices, (str, bytes)):
            raise TypeError(f"indices must be a sequence of sample indices; got {type(indices).__name__} {indices!r}")
        validate.non_empty("indices", indices)
        _batch_fits(self, len(indices), "indices")
        return numpy_collate([self[i] for i in indices])

    def records(self) -> dict[str, np.ndarray]:
        """Everything a framework-native pipeline needs, as arrays over all samples (the "files on disk"):
        ``stored`` uint8 (n, 3, size/4, size/4), ``label`` int64, and the augmentation choices ``dy``, ``dx``
        (int32), ``flip`` (bool), ``brightness``, ``contrast`` (float32)."""
        params = [self.augment_params(i) for i in range(self.n)]
        return {
            "stored": np.stack([self.stored(i) for i in range(self.n)]),
            "label": np.array([self.label(i) for i in range(self.n)], dtype=np.int64),
            "dy": np.array([p.dy for p in params], dtype=np.int32),
            "dx": np.array([p.dx for p in params], dtype=np.int32),
            "flip": np.array([p.flip for p in params], dtype=bool),
            "brightness": np.array([p.brightness for p in params], dtype=np.float32),
            "contrast": np.array([p.contrast for p in params], dtype=np.float32),
        }


class NumpyBatches:
    """Re-iterable batches of ``dataset`` in order, made in the calling thread: the simplest loader there is."""

    def __init__(self, dataset: SyntheticImages, batch_size: int) -> None:
        validate.instance("dataset", dataset, SyntheticImages)
        validate.number("batch_size", batch_size, low=1, high=min(len(dataset), MAX_BATCH), integer=True)
        _batch_fits(dataset, batch_size, "batch_size")
        self.dataset, self.batch_size = dataset, int(batch_size)

    def __len__(self) -> int:
        return len(self.dataset) // self.batch_size

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for b in range(len(self)):
            yield self.dataset.batch(range(b * self.batch_size, (b + 1) * self.batch_size))


def _batch_fits(dataset: SyntheticImages, count: int, name: str) -> None:
    if count > MAX_BATCH or count * dataset.sample_bytes > MAX_BYTES:
        raise ValueError(f"{name}: a batch of {count} samples of {dataset.sample_bytes} bytes is over this notebook's "
                         f"limits ({MAX_BATCH} samples, {MAX_BYTES / 2**30:.0f} GiB)")


def numpy_collate(samples: Sequence[tuple[np.ndarray, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """DataLoader ``collate_fn`` that keeps NumPy arrays (to feed JAX or TF); module-level, so workers find it."""
    validate.non_empty("samples", samples)
    for sample in samples:
        if not isinstance(sample, (tuple, list)) or len(sample) != 2:
            raise TypeError(f"samples must hold (image, label) pairs; got {type(sample).__name__} {sample!r:.60}")
    return np.stack([x for x, _ in samples]), np.array([y for _, y in samples], dtype=np.int64)


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
    if batch is None or isinstance(batch, (str, bytes)):
        raise TypeError(f"batch must be an array or a tuple of arrays; got {type(batch).__name__} {batch!r:.40}")
    parts = batch if isinstance(batch, (tuple, list)) else (batch,)
    validate.non_empty("batch", parts)
    arrays = [_numpy(p) for p in parts]
    if any(a.dtype == object for a in arrays):
        raise TypeError(f"batch must hold arrays of numbers, as a loader's batches do; got {type(batch).__name__} "
                        f"{batch!r:.40}")
    arrays = [a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else a for a in arrays]
    return "-".join(f"{zlib.crc32(np.ascontiguousarray(a).tobytes()):08x}" for a in arrays)


def max_difference(a: Any, b: Any) -> float:
    """Largest absolute difference between two batches' images (first arrays), for pipelines that compute
    the same images with different rounding (e.g. a mean summed in another order)."""
    x, y = (_numpy(v[0] if isinstance(v, (tuple, list)) else v) for v in (a, b))
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same shape; got {x.shape} and {y.shape}")
    return float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
