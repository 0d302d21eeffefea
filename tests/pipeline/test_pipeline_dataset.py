"""course_utils.pipeline.dataset: seeded samples, identical batches, fingerprints."""

from __future__ import annotations

import numpy as np
import pytest

from course_utils import pipeline
from course_utils.pipeline import dataset

N, BATCH, SIZE = 24, 4, 16


@pytest.fixture(scope="module")
def data() -> pipeline.SyntheticImages:
    return pipeline.SyntheticImages(N, size=SIZE, work=1, seed=3)


def test_samples_are_seeded_and_typed(data: pipeline.SyntheticImages) -> None:
    x, y = data[5]
    assert x.shape == (3, SIZE, SIZE) and x.dtype == np.float32 and x.flags.c_contiguous
    assert isinstance(y, np.int64) and 0 <= y < data.classes
    twin = pipeline.SyntheticImages(N, size=SIZE, work=1, seed=3)
    assert np.array_equal(twin[5][0], x) and twin[5][1] == y
    other = pipeline.SyntheticImages(N, size=SIZE, work=1, seed=4)
    assert not np.array_equal(other[5][0], x)
    assert not np.array_equal(data[6][0], x)


def test_decode_and_augment_compose_to_a_sample(data: pipeline.SyntheticImages) -> None:
    decoded = data.decode(2)
    assert decoded.shape == (3, SIZE, SIZE) and 0.0 <= decoded.min() and decoded.max() <= 1.0
    assert np.array_equal(data.augment(decoded, 2), data[2][0])
    assert data.stored(2).dtype == np.uint8 and data.stored(2).shape == (3, SIZE // 4, SIZE // 4)
    p = data.augment_params(2)
    assert 0 <= p.dy <= 8 and 0 <= p.dx <= 8 and 0.8 <= p.contrast <= 1.2 and -0.1 <= p.brightness <= 0.1


def test_more_work_smooths_more_without_changing_the_shape() -> None:
    """work is real per-pixel work: each smoothing pass lowers the image's high-frequency energy."""
    cheap = pipeline.SyntheticImages(8, size=32, work=0)
    costly = pipeline.SyntheticImages(8, size=32, work=6)
    a, b = cheap.decode(0), costly.decode(0)
    assert a.shape == b.shape
    assert np.abs(np.diff(b, axis=2)).mean() < np.abs(np.diff(a, axis=2)).mean()


def test_records_hold_what_the_samples_are_made_of(data: pipeline.SyntheticImages) -> None:
    r = data.records()
    assert r["stored"].shape == (N, 3, SIZE // 4, SIZE // 4)
    assert np.array_equal(r["stored"][7], data.stored(7)) and r["label"][7] == data.label(7)
    p = data.augment_params(7)
    assert (r["dy"][7], r["dx"][7], bool(r["flip"][7])) == (p.dy, p.dx, p.flip)


def test_batches_stack_in_order(data: pipeline.SyntheticImages) -> None:
    batches = list(pipeline.NumpyBatches(data, BATCH))
    assert len(batches) == N // BATCH
    x, y = batches[1]
    assert x.shape == (BATCH, 3, SIZE, SIZE) and y.dtype == np.int64
    assert np.array_equal(x[0], data[BATCH][0])
    x2, y2 = pipeline.numpy_collate([data[i] for i in range(BATCH, 2 * BATCH)])
    assert np.array_equal(x, x2) and np.array_equal(y, y2)


def test_bad_indices(data: pipeline.SyntheticImages) -> None:
    with pytest.raises(IndexError, match="index"):
        data[N]
    with pytest.raises(IndexError, match="index"):
        data[-1]
    with pytest.raises(TypeError, match="index"):
        data[1.5]


def test_fingerprint_ignores_integer_width_and_sees_changes() -> None:
    x = np.arange(6, dtype=np.float32)
    assert dataset.fingerprint((x, np.arange(3, dtype=np.int64))) == dataset.fingerprint(
        (x, np.arange(3, dtype=np.int32)))
    assert dataset.fingerprint((x, np.arange(3))) != dataset.fingerprint((x + 1, np.arange(3)))


def test_max_difference() -> None:
    x = np.zeros((2, 3), np.float32)
    assert pipeline.max_difference((x, 0), (x + 0.5, 0)) == pytest.approx(0.5)
    assert pipeline.max_difference(x, x) == 0.0
