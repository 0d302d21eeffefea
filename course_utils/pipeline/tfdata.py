"""tf.data pipelines of notebook 04, in two flavours that compute the same images:

- ``ops="tf"``: decode and augment written in TensorFlow ops, which tf.data runs in C++ on its own threads
  (no GIL); with ``vectorized=True`` the map runs once per *batch* (batch before map), not once per sample;
- ``ops="numpy"``: the dataset's NumPy code called through ``tf.numpy_function``, once per sample: every call
  leaves the C++ runtime, takes the GIL, converts tensors to arrays and back. That is tf.data's slow path, and
  the notebook measures it as a lesson of its own;
- ``ops="crossing"``: the same two ``tf.numpy_function`` calls per sample, but the Python functions do no NumPy
  work (they hand back a stored image and the label): what the crossing itself costs, measured apart.

The TF-ops images equal the NumPy ones up to float rounding (the per-image mean is summed in another order);
labels are identical.
"""

from __future__ import annotations

from typing import Any

from course_utils import env, validate
from course_utils.pipeline.dataset import CROP_PAD, MEAN, STD, UPSAMPLE, SyntheticImages

OPS = ("tf", "numpy", "crossing")


def tf_decode_ops(stored: Any, work: int) -> Any:
    """Decoded float32 images (B, 3, size, size) from stored uint8 (B, 3, size/4, size/4), in TF ops: the same
    upsampling and ``work`` smoothing passes as ``SyntheticImages.decode`` (SYMMETRIC padding of 1 = edge)."""
    import tensorflow as tf  # already imported by tf_pipeline; a plain import keeps AutoGraph quiet when traced

    validate.non_negative("work", work, integer=True)
    x = tf.cast(stored, tf.float32) * tf.constant(1 / 255, tf.float32)
    x = tf.repeat(tf.repeat(x, UPSAMPLE, axis=2), UPSAMPLE, axis=3)
    for _ in range(work):
        p = tf.pad(x, [[0, 0], [0, 0], [1, 1], [1, 1]], mode="SYMMETRIC")
        x = (p[:, :, :-2, 1:-1] + p[:, :, 2:, 1:-1] + p[:, :, 1:-1, :-2] + p[:, :, 1:-1, 2:]
             + p[:, :, 1:-1, 1:-1] * 4.0) * 0.125
    return x


def tf_augment_ops(images: Any, dy: Any, dx: Any, flip: Any, brightness: Any, contrast: Any) -> Any:
    """Augmented images (B, 3, S, S) in TF ops: per-sample crop offsets by a batched gather, flip by a select,
    brightness/contrast and normalisation elementwise; the same choices as ``SyntheticImages.augment``."""
    import tensorflow as tf
    size = images.shape[-1]
    p = tf.pad(images, [[0, 0], [0, 0], [CROP_PAD, CROP_PAD], [CROP_PAD, CROP_PAD]], mode="REFLECT")
    offsets = tf.range(size, dtype=tf.int32)
    p = tf.gather(p, dy[:, None] + offsets, axis=2, batch_dims=1)
    p = tf.gather(p, dx[:, None] + offsets, axis=3, batch_dims=1)
    p = tf.where(flip[:, None, None, None], tf.reverse(p, axis=[3]), p)
    mean = tf.reduce_mean(p, axis=[2, 3], keepdims=True)
    out = (p - mean) * contrast[:, None, None, None] + mean + brightness[:, None, None, None]
    return (out - float(MEAN)) / float(STD)


def _tf_map(dataset: SyntheticImages, batched: bool) -> Any:
    tf = env.import_tensorflow()
    work = dataset.work

    def decode_augment(r: dict[str, Any]) -> tuple[Any, Any]:
        if not batched:  # one sample: give it a batch axis of 1 and take it off again
            r = {k: tf.expand_dims(v, 0) for k, v in r.items()}
        x = tf_augment_ops(tf_decode_ops(r["stored"], work), r["dy"], r["dx"], r["flip"], r["brightness"],
                           r["contrast"])
        return (x, r["label"]) if batched else (x[0], r["label"][0])

    return decode_augment


def _numpy_maps(dataset: SyntheticImages) -> tuple[Any, Any]:
    tf = env.import_tensorflow()
    shape = (3, dataset.size, dataset.size)

    def decode(i: Any) -> tuple[Any, Any]:
        image = tf.numpy_function(lambda j: dataset.decode(int(j)), [i], tf.float32, stateful=False)
        return i, tf.ensure_shape(image, shape)

    def augment(i: Any, image: Any) -> tuple[Any, Any]:
        x, y = tf.numpy_function(lambda j, im: (dataset.augment(im, int(j)), dataset.label(int(j))),
                                 [i, image], (tf.float32, tf.int64), stateful=False)
        return tf.ensure_shape(x, shape), tf.ensure_shape(y, ())

    return decode, augment


def _crossing_maps(dataset: SyntheticImages) -> tuple[Any, Any]:
    """``_numpy_maps`` with the NumPy work taken out: the same calls, conversions and GIL, no decode or augment."""
    tf = env.import_tensorflow()
    shape = (3, dataset.size, dataset.size)
    stored = dataset.decode(0)  # computed once, outside the pipeline

    def decode(i: Any) -> tuple[Any, Any]:
        image = tf.numpy_function(lambda j: stored, [i], tf.float32, stateful=False)
        return i, tf.ensure_shape(image, shape)

    def augment(i: Any, image: Any) -> tuple[Any, Any]:
        x, y = tf.numpy_function(lambda j, im: (im, dataset.label(int(j))), [i, image], (tf.float32, tf.int64),
                                 stateful=False)
        return tf.ensure_shape(x, shape), tf.ensure_shape(y, ())

    return decode, augment


def tf_pipeline(dataset: SyntheticImages, batch_size: int, *, ops: str = "tf", vectorized: bool = False,
                parallel: bool = False, prefetch: bool = False, cache: bool = False) -> Any:
    """A ``tf.data.Dataset`` of (images, labels) batches of ``dataset``, in order, built only as asked.

    ``ops``: 'tf' (TF ops), 'numpy' (``tf.numpy_function``, per sample) or 'crossing' (the same calls doing no
    work: the images are all one stored image, the labels right); ``vectorized``: batch before map
    (TF ops only); ``parallel``: ``map(num_parallel_calls=AUTOTUNE)``; ``prefetch``: ``prefetch(AUTOTUNE)``;
    ``cache``: keep decoded images after the first epoch (per-sample pipelines only: what is cached must come
    before the random augmentation). tf.data's default rewrites (which parallelise and prefetch on their own)
    are switched off, so each variant measures only what it names.
    """
    tf = env.import_tensorflow()
    validate.instance("dataset", dataset, SyntheticImages)
    validate.positive("batch_size", batch_size, integer=True)
    if batch_size > len(dataset):
        raise ValueError(f"batch_size must be <= len(dataset) = {len(dataset)}; got {batch_size!r}")
    validate.choice("ops", ops, OPS)
    for name, value in (("vectorized", vectorized), ("parallel", parallel), ("prefetch", prefetch),
                        ("cache", cache)):
        validate.instance(name, value, bool)
    if vectorized and ops != "tf":
        raise ValueError(f"vectorized must be False with ops={ops!r} (numpy_function runs per sample here)")
    if cache and vectorized:
        raise ValueError("cache must be False with vectorized=True (decode and augment run in one map)")
    calls = tf.data.AUTOTUNE if parallel else None
    if ops != "tf":
        decode, augment = (_numpy_maps if ops == "numpy" else _crossing_maps)(dataset)
        ds = tf.data.Dataset.range(len(dataset)).map(decode, num_parallel_calls=calls)
        ds = (ds.cache() if cache else ds).map(augment, num_parallel_calls=calls)
        ds = ds.batch(batch_size, drop_remainder=True)
    else:
        ds = tf.data.Dataset.from_tensor_slices(dataset.records())
        if vectorized:
            ds = ds.batch(batch_size, drop_remainder=True).map(_tf_map(dataset, True), num_parallel_calls=calls)
        else:
            ds = _cached_tf_ops(ds, dataset, calls) if cache else ds.map(_tf_map(dataset, False),
                                                                          num_parallel_calls=calls)
            ds = ds.batch(batch_size, drop_remainder=True)
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return ds.with_options(options)


def _cached_tf_ops(ds: Any, dataset: SyntheticImages, calls: Any) -> Any:
    """Per-sample TF ops with ``cache()`` between decode (deterministic, cached) and augmentation (random)."""
    tf = env.import_tensorflow()
    work = dataset.work

    def decode(r: dict[str, Any]) -> dict[str, Any]:
        image = tf_decode_ops(tf.expand_dims(r["stored"], 0), work)[0]
        return {**{k: v for k, v in r.items() if k != "stored"}, "image": image}

    def augment(r: dict[str, Any]) -> tuple[Any, Any]:
        one = {k: tf.expand_dims(v, 0) for k, v in r.items()}
        x = tf_augment_ops(one["image"], one["dy"], one["dx"], one["flip"], one["brightness"], one["contrast"])
        return x[0], r["label"]

    return ds.map(decode, num_parallel_calls=calls).cache().map(augment, num_parallel_calls=calls)
