"""tf.data for notebook 04. The notebook writes the pipeline itself (``from_tensor_slices`` ... ``map`` ...
``prefetch``); this module gives it the map function and, for "Going further", tf.data's slow path:

- ``tf_decode_augment``: decode and augment written in TensorFlow ops, one call per *batch* (batch before map),
  which tf.data runs in C++ on its own threads, without the GIL;
- ``tf_pipeline(ops="numpy")``: the dataset's NumPy code called through ``tf.numpy_function``, once per sample:
  every call leaves the C++ runtime, takes the GIL, converts tensors to arrays and back.

The TF-ops images equal the NumPy ones up to float rounding (the per-image mean is summed in another order);
labels are identical.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from course_utils import env, validate
from course_utils.pipeline.dataset import CROP_PAD, MEAN, STD, UPSAMPLE, SyntheticImages

OPS = ("tf", "numpy")


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


def tf_decode_augment(dataset: SyntheticImages) -> Callable[[dict[str, Any]], tuple[Any, Any]]:
    """The map function of a batched ``tf.data.Dataset.from_tensor_slices(dataset.records())``: a dict of
    records of one batch -> (images (B, 3, size, size) float32, labels (B,) int64), in TF ops."""
    validate.instance("dataset", dataset, SyntheticImages)
    work = dataset.work

    def decode_augment(r: dict[str, Any]) -> tuple[Any, Any]:
        x = tf_augment_ops(tf_decode_ops(r["stored"], work), r["dy"], r["dx"], r["flip"], r["brightness"],
                           r["contrast"])
        return x, r["label"]

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


def tf_pipeline(dataset: SyntheticImages, batch_size: int, *, ops: str = "tf") -> Any:
    """A ``tf.data.Dataset`` of (images, labels) batches of ``dataset``, in order, nothing overlapped.

    ``ops``: 'tf' (``tf_decode_augment``, batch before map) or 'numpy' (the NumPy code through
    ``tf.numpy_function``, per sample). tf.data's default rewrites (which parallelise the map and add a prefetch
    on their own) are switched off, so each pipeline measures only what it names.
    """
    tf = env.import_tensorflow()
    validate.instance("dataset", dataset, SyntheticImages)
    validate.number("batch_size", batch_size, low=1, high=len(dataset), integer=True)
    validate.choice("ops", ops, OPS)
    if ops == "numpy":
        decode, augment = _numpy_maps(dataset)
        ds = tf.data.Dataset.range(len(dataset)).map(decode).map(augment).batch(batch_size, drop_remainder=True)
    else:
        ds = tf.data.Dataset.from_tensor_slices(dataset.records()).batch(batch_size, drop_remainder=True)
        ds = ds.map(tf_decode_augment(dataset))
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return ds.with_options(options)
