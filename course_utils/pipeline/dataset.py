"""The dataset of notebook 04, whose decode and augmentation cost real CPU time, in a module so that
spawn/forkserver workers can unpickle it; also its decode and augment for tf.data, and tf.data's slow path."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, NamedTuple

import numpy as np

from course_utils import declare, env, interop

MEAN, STD = np.float32(0.5), np.float32(0.25)
CROP_PAD = 4  # pixels of reflected border the random crop chooses from
UPSAMPLE = 4  # stored pictures are 1/4 of the side; decoding repeats each pixel 4 x 4
MAX_SAMPLES = 1_000_000
MAX_BATCH = 4096
MAX_BYTES = 2**30  # one batch, or all stored records, at most 1 GiB: a learner's typo must not fill the memory


@declare.checked
class AugmentParams(NamedTuple):
    """One sample's augmentation choices, drawn from (seed, index): crop offsets, flip, brightness, contrast."""

    dy: Annotated[int, declare.Range(0, 2 * CROP_PAD)]
    dx: Annotated[int, declare.Range(0, 2 * CROP_PAD)]
    flip: bool
    brightness: Annotated[float, declare.Range(-1, 1)]
    contrast: Annotated[float, declare.Range(0, 10)]


def _fits(name: str, count: int, each: int) -> None:
    if count * each > MAX_BYTES:
        raise ValueError(f"{name}: {count} samples of {each} bytes are over this notebook's {MAX_BYTES >> 30} GiB")


@declare.checked
class SyntheticImages:
    """``n`` seeded samples: ``ds[i]`` -> (float32 image (3, size, size), int64 label), a stored uint8 picture
    decoded (upsampled, smoothed ``work`` times: a codec's stand-in) and augmented, all from (seed, i) alone."""

    def __init__(self, n: Annotated[int, declare.Range(1, MAX_SAMPLES)], *,
                 size: Annotated[int, declare.Range(8, 512)] = 64, classes: Annotated[int, declare.Range(2, 1000)] = 10,
                 work: Annotated[int, declare.Range(0, 64)] = 8, seed: Annotated[int, declare.Range(0, 2**32 - 1)] = 0,
                 ) -> None:
        if size % UPSAMPLE:
            raise ValueError(f"size must be a multiple of {UPSAMPLE}; got {size!r}")
        self.n, self.size, self.classes, self.work, self.seed = n, size, classes, work, seed
        side = size // UPSAMPLE
        self._prototypes = np.random.default_rng(seed).integers(0, 256, size=(classes, 3, side, side), dtype=np.uint8)

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
        if not 0 <= i < self.n:
            raise IndexError(f"index must be in [0, {self.n}); got {i}")
        return int(i)

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
            p = np.pad(image, ((0, 0), (1, 1), (1, 1)), mode="edge")
            image = (p[:, :-2, 1:-1] + p[:, 2:, 1:-1] + p[:, 1:-1, :-2] + p[:, 1:-1, 2:]
                     + p[:, 1:-1, 1:-1] * np.float32(4)) * np.float32(1 / 8)
        return image

    def augment_params(self, i: int) -> AugmentParams:
        """The random choices of sample ``i``'s augmentation (seeded by (seed, i), so every loader agrees)."""
        rng = np.random.default_rng((self.seed, self._index(i), 1))
        dy, dx = rng.integers(0, 2 * CROP_PAD + 1, size=2)
        flip = rng.random() < 0.5
        return AugmentParams(int(dy), int(dx), bool(flip), float(rng.uniform(-0.1, 0.1)), float(rng.uniform(0.8, 1.2)))

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
        if isinstance(indices, (str, bytes)) or not isinstance(indices, Sequence) or not indices:
            raise TypeError(f"indices must be a non-empty sequence of sample indices; got {indices!r:.60}")
        _fits("indices", len(indices), self.sample_bytes)
        return numpy_collate([self[i] for i in indices])

    def records(self) -> dict[str, np.ndarray]:
        """All samples as arrays (the "files on disk" of a framework-native pipeline): stored pictures, labels and
        augmentation choices."""
        _fits("n", self.n, self.sample_bytes // UPSAMPLE**2 // 4)
        params = [self.augment_params(i) for i in range(self.n)]
        columns = {name: [getattr(p, name) for p in params] for name in AugmentParams._fields}
        types = {"dy": np.int32, "dx": np.int32, "flip": bool, "brightness": np.float32, "contrast": np.float32}
        return {"stored": np.stack([self.stored(i) for i in range(self.n)]),
                "label": np.array([self.label(i) for i in range(self.n)], dtype=np.int64),
                **{name: np.array(values, dtype=types[name]) for name, values in columns.items()}}


@declare.checked
class NumpyBatches:
    """Re-iterable batches of ``dataset`` in order, made in the calling thread: the simplest loader there is."""

    def __init__(self, dataset: SyntheticImages, batch_size: Annotated[int, declare.Range(1, MAX_BATCH)]) -> None:
        if batch_size > len(dataset):
            raise ValueError(f"batch_size must be at most len(dataset) = {len(dataset)}; got {batch_size}")
        _fits("batch_size", batch_size, dataset.sample_bytes)
        self.dataset, self.batch_size = dataset, batch_size

    def __len__(self) -> int:
        return len(self.dataset) // self.batch_size

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for b in range(len(self)):
            yield self.dataset.batch(range(b * self.batch_size, (b + 1) * self.batch_size))


@declare.checked
def numpy_collate(samples: Annotated[Sequence[tuple[Any, Any]], declare.NonEmpty]) -> tuple[np.ndarray, np.ndarray]:
    """DataLoader ``collate_fn`` that keeps NumPy arrays (to feed JAX or TF); module-level, so workers find it."""
    return np.stack([x for x, _ in samples]), np.array([y for _, y in samples], dtype=np.int64)


@declare.checked
def fingerprint(batch: Any) -> str:
    """CRC-32 of each array of a batch, equal for equal data in any framework (integers compared as int64)."""
    try:
        arrays = [interop.to_numpy(p) for p in (batch if isinstance(batch, (tuple, list)) else (batch,))]
    except TypeError:
        arrays = []
    if not arrays:
        raise TypeError(f"batch must be an array or a tuple of arrays of numbers; got {type(batch).__name__} "
                        f"{batch!r:.40}")
    arrays = [a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else a for a in arrays]
    return "-".join(f"{zlib.crc32(np.ascontiguousarray(a).tobytes()):08x}" for a in arrays)


@declare.checked
def max_difference(a: Any, b: Any) -> float:
    """Largest absolute difference between two batches' images (first arrays): pipelines that round differently."""
    x, y = (interop.to_numpy(v[0] if isinstance(v, (tuple, list)) else v) for v in (a, b))
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same shape; got {x.shape} and {y.shape}")
    return float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0


@declare.checked
def tf_decode_augment(dataset: SyntheticImages) -> Callable[[dict[str, Any]], tuple[Any, Any]]:
    """The map function of a batched ``tf.data.Dataset.from_tensor_slices(dataset.records())``: ``SyntheticImages``'
    decode and augment in TF ops, one batch's records -> (images, labels)."""
    work = dataset.work

    def decode_augment(r: dict[str, Any]) -> tuple[Any, Any]:
        import tensorflow as tf  # already imported by the caller; a plain import keeps AutoGraph quiet when traced

        x = tf.cast(r["stored"], tf.float32) * tf.constant(1 / 255, tf.float32)
        x = tf.repeat(tf.repeat(x, UPSAMPLE, axis=2), UPSAMPLE, axis=3)
        for _ in range(work):  # smoothing passes; SYMMETRIC padding of 1 is NumPy's "edge"
            p = tf.pad(x, [[0, 0], [0, 0], [1, 1], [1, 1]], mode="SYMMETRIC")
            x = (p[:, :, :-2, 1:-1] + p[:, :, 2:, 1:-1] + p[:, :, 1:-1, :-2] + p[:, :, 1:-1, 2:]
                 + p[:, :, 1:-1, 1:-1] * 4.0) * 0.125
        p = tf.pad(x, [[0, 0], [0, 0], [CROP_PAD, CROP_PAD], [CROP_PAD, CROP_PAD]], mode="REFLECT")
        offsets = tf.range(x.shape[-1], dtype=tf.int32)  # crops by a batched gather, flips by a select
        p = tf.gather(p, r["dy"][:, None] + offsets, axis=2, batch_dims=1)
        p = tf.gather(p, r["dx"][:, None] + offsets, axis=3, batch_dims=1)
        p = tf.where(r["flip"][:, None, None, None], tf.reverse(p, axis=[3]), p)
        mean = tf.reduce_mean(p, axis=[2, 3], keepdims=True)
        out = (p - mean) * r["contrast"][:, None, None, None] + mean + r["brightness"][:, None, None, None]
        return (out - float(MEAN)) / float(STD), r["label"]

    return decode_augment


@declare.checked
def numpy_function_pipeline(dataset: SyntheticImages, batch_size: Annotated[int, declare.Range(1, MAX_BATCH)]) -> Any:
    """tf.data's slow path: ``dataset``'s NumPy decode and augment called per sample through
    ``tf.numpy_function``, batched in order; tf.data's own rewrites off."""
    if batch_size > len(dataset):
        raise ValueError(f"batch_size must be at most len(dataset) = {len(dataset)}; got {batch_size}")
    tf = env.import_tensorflow()
    shape = (3, dataset.size, dataset.size)

    def decode(i: Any) -> tuple[Any, Any]:
        image = tf.numpy_function(lambda j: dataset.decode(int(j)), [i], tf.float32, stateful=False)
        return i, tf.ensure_shape(image, shape)

    def augment(i: Any, image: Any) -> tuple[Any, Any]:
        x, y = tf.numpy_function(lambda j, im: (dataset.augment(im, int(j)), dataset.label(int(j))),
                                 [i, image], (tf.float32, tf.int64), stateful=False)
        return tf.ensure_shape(x, shape), tf.ensure_shape(y, ())

    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    ds = tf.data.Dataset.range(len(dataset)).map(decode).map(augment).batch(batch_size, drop_remainder=True)
    return ds.with_options(options)
