"""tf.data for notebook 04: the map function in TF ops (one call per batch, run by tf.data's C++ threads without the
GIL; equal to the NumPy images up to float rounding) and, for "Going further", the slow path through
``tf.numpy_function``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from course_utils import declare, env
from course_utils.pipeline.dataset import CROP_PAD, MAX_BATCH, MEAN, STD, UPSAMPLE, SyntheticImages


@declare.checked
def tf_decode_augment(dataset: SyntheticImages) -> Callable[[dict[str, Any]], tuple[Any, Any]]:
    """The map function of a batched ``tf.data.Dataset.from_tensor_slices(dataset.records())``: one batch's records
    -> (images (B, 3, size, size) float32, labels (B,) int64): ``SyntheticImages``' decode and augment in TF ops."""
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
    """tf.data's slow path: (images, labels) batches of ``dataset`` in order, its NumPy decode and augment each called
    per sample through ``tf.numpy_function``; nothing overlapped (tf.data's own rewrites off)."""
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
