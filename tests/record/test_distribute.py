"""tf.distribute: a tapeviz tape inside ``MirroredStrategy.run`` on two logical CPUs gives
each replica its own exact flow. The check runs in a subprocess
(tests/support/distribute_replicas.py) because the two logical devices must be configured
before TensorFlow's runtime starts."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SUPPORT = REPO / "tests" / "support"


@functools.lru_cache(maxsize=1)
def _run() -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    proc = subprocess.run(
        [sys.executable, str(SUPPORT / "distribute_replicas.py")], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_each_replica_gets_its_own_exact_flow():
    out = _run()
    assert out["replicas"] == 2
    seen = out["tapeviz"]
    assert sorted(seen) == ["0", "1"]
    assert seen["0"]["thread"] != seen["1"]["thread"]  # eager replicas run in threads of their own
    assert seen["0"]["loss"] != seen["1"]["loss"]  # each replica saw its own half of the batch
    for rid, r in seen.items():
        assert r["ops"] > 0
        for got, tape_grad, plain_grad in zip(r["flow"], r["tape"], out["plain"][rid], strict=True):
            # the flow is that replica's tape.gradient, bit for bit ...
            assert np.array_equal(np.array(got, np.float32), np.array(tape_grad, np.float32)), rid
            # ... and the user's tape.gradient is what a plain tape gives on that replica
            assert np.array_equal(np.array(tape_grad, np.float32), np.array(plain_grad, np.float32)), rid
    # The replicas' gradients differ: neither capture picked up the other's ops.
    assert not all(np.array_equal(a, b) for a, b in zip(seen["0"]["flow"], seen["1"]["flow"], strict=True))
    assert seen["0"]["ops"] == seen["1"]["ops"]
    for r in seen.values():  # every replica names the variables by Keras path, not replica_1 TF names
        assert r["names"] == r["paths"], r["names"]
    assert not out["hooks_left"] and out["callbacks_left"] == 0


def test_all_reduce_inside_the_tape_is_refused_clearly_and_nothing_leaks():
    """MirroredStrategy's replica threads share one op-callback list, and all_reduce makes
    them interleave mid-block: each capture must still hold only its own thread's ops, the
    user's gradients must be a plain tape's, and tv.flow must say why it cannot replay a
    cross-replica gradient (replaying it on one replica would wait for the others)."""
    out = _run()
    red = out["all_reduce"]
    plain, tapeviz = red["tensorflow"], red["tapeviz"]
    for rid in ("0", "1"):
        assert tapeviz[rid]["grads"] == plain[rid]["grads"]
        assert "all_reduce" in tapeviz[rid]["flow"] and "every replica" in tapeviz[rid]["flow"]
    assert tapeviz["0"]["ops"] == tapeviz["1"]["ops"], "a capture recorded the other replica's ops"
    assert not out["hooks_left"] and out["callbacks_left"] == 0
