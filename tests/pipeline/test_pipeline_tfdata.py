"""course_utils.pipeline.dataset, tf.data: every tf.data flavour yields the NumPy pipeline's batches."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import pipeline
from course_utils.pipeline import dataset

N, BATCH = 16, 4


@pytest.fixture(scope="module")
def data() -> pipeline.SyntheticImages:
    pytest.importorskip("tensorflow")
    return pipeline.SyntheticImages(N, size=16, work=2, seed=3)


def test_numpy_function_pipeline_is_bit_identical(data: pipeline.SyntheticImages) -> None:
    reference = [dataset.fingerprint(b) for b in pipeline.NumpyBatches(data, BATCH)]
    assert [dataset.fingerprint(b) for b in pipeline.numpy_function_pipeline(data, BATCH)] == reference


def test_tf_ops_match_up_to_rounding_in_the_learners_chain(data: pipeline.SyntheticImages) -> None:
    import tensorflow as tf

    reference = list(pipeline.NumpyBatches(data, BATCH))
    chain = (tf.data.Dataset.from_tensor_slices(data.records()).batch(BATCH, drop_remainder=True)
             .map(pipeline.tf_decode_augment(data), num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
    got = list(chain)
    assert len(got) == len(reference)
    for (x, y), (rx, ry) in zip(got, reference):
        assert np.array_equal(y.numpy(), ry)
        assert pipeline.max_difference(x, rx) < 1e-5


def test_the_pipeline_switches_off_tf_datas_own_rewrites(data: pipeline.SyntheticImages) -> None:
    options = pipeline.numpy_function_pipeline(data, BATCH).options()
    assert options.experimental_optimization.apply_default_optimizations is False
