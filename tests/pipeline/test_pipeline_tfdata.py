"""course_utils.pipeline.tfdata: every tf.data flavour yields the NumPy pipeline's batches."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import pipeline

N, BATCH = 16, 4


@pytest.fixture(scope="module")
def data() -> pipeline.SyntheticImages:
    pytest.importorskip("tensorflow")
    return pipeline.SyntheticImages(N, size=16, work=2, seed=3)


def test_numpy_function_pipeline_is_bit_identical(data: pipeline.SyntheticImages) -> None:
    reference = [pipeline.fingerprint(b) for b in pipeline.NumpyBatches(data, BATCH)]
    ds = pipeline.tf_pipeline(data, BATCH, ops="numpy", parallel=True, prefetch=True, cache=True)
    for _ in range(2):  # the second epoch reads decoded images from the cache
        assert [pipeline.fingerprint(b) for b in ds] == reference


@pytest.mark.parametrize("kwargs", [{}, {"vectorized": True}, {"vectorized": True, "parallel": True, "prefetch": True},
                                    {"cache": True}])
def test_tf_ops_pipelines_match_up_to_rounding(data: pipeline.SyntheticImages, kwargs: dict) -> None:
    reference = list(pipeline.NumpyBatches(data, BATCH))
    got = list(pipeline.tf_pipeline(data, BATCH, **kwargs))
    assert len(got) == len(reference)
    for (x, y), (rx, ry) in zip(got, reference):
        assert np.array_equal(y.numpy(), ry)
        assert pipeline.max_difference(x, rx) < 1e-5


def test_incompatible_options(data: pipeline.SyntheticImages) -> None:
    with pytest.raises(ValueError, match="vectorized"):
        pipeline.tf_pipeline(data, BATCH, ops="numpy", vectorized=True)
    with pytest.raises(ValueError, match="cache"):
        pipeline.tf_pipeline(data, BATCH, vectorized=True, cache=True)


def test_crossing_pipeline_makes_the_calls_without_the_work(data: pipeline.SyntheticImages) -> None:
    reference = list(pipeline.NumpyBatches(data, BATCH))
    got = list(pipeline.tf_pipeline(data, BATCH, ops="crossing"))
    assert len(got) == len(reference)
    stored = data.decode(0)
    for (x, y), (_, ry) in zip(got, reference):
        assert np.array_equal(y.numpy(), ry)  # the labels are right
        assert all(np.array_equal(image, stored) for image in x.numpy())  # the images are one stored image
    with pytest.raises(ValueError, match="vectorized"):
        pipeline.tf_pipeline(data, BATCH, ops="crossing", vectorized=True)
