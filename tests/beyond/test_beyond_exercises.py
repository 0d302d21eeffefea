"""Notebook 06's checkers: right, wrong and malformed answers."""

from __future__ import annotations

import json

from course_utils import exercises
from course_utils.beyond import exercises as _exercises  # noqa: F401  (registers 06.k)

HOSTS = ["h0:1", "h1:1", "h2:1"]


def test_fsdp_prediction_scored_against_measurement() -> None:
    assert exercises.evaluate("06.1", 8000, measured=8010).correct
    assert exercises.evaluate("06.1", 16000, measured=8010).status == "not yet"
    assert exercises.evaluate("06.1", "lots", measured=8010).status == "not yet"
    assert exercises.evaluate("06.1", None, measured=8010).status == "not attempted"


def test_lost_steps() -> None:
    assert exercises.evaluate("06.2", 2, measured=2).correct
    assert exercises.evaluate("06.2", 8, measured=2).status == "not yet"
    assert exercises.evaluate("06.2", 2, measured=3).status == "not yet"  # scored against the run, not the formula


def test_tf_config() -> None:
    good = json.dumps({"cluster": {"worker": HOSTS}, "task": {"type": "worker", "index": 2}})
    assert exercises.evaluate("06.3", good, hosts=HOSTS, index=2).correct
    wrong = json.dumps({"cluster": {"worker": HOSTS[::-1]}, "task": {"type": "worker", "index": 2}})
    assert exercises.evaluate("06.3", wrong, hosts=HOSTS, index=2).status == "not yet"
    assert exercises.evaluate("06.3", "{not json", hosts=HOSTS, index=2).status == "not yet"
    assert exercises.evaluate("06.3", 3, hosts=HOSTS, index=2).status == "not yet"
