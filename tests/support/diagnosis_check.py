"""The no-false-diagnosis rule, shared by the corpora (random programs, Keras layers and
models, the seed examples): tv.explain diagnoses a gradient that arrives exactly when it
is NaN or Inf, exactly zero everywhere, or the target itself is not finite."""

from __future__ import annotations

import numpy as np

from tapeviz.gradients.diagnose import explain_flow


def check_no_false_diagnosis(fl, source, want, what: str = "") -> bool:
    """Assert the rule for one source whose gradient ``want`` TF computed (not None);
    return whether the gradient is healthy (finite, some element not zero)."""
    want = np.asarray(want)
    d = explain_flow(fl, source)
    target = fl.graph.value_of(fl.target_nodes[0])
    healthy = bool(np.all(np.isfinite(want)) and np.any(want != 0))
    if target is not None and np.asarray(target).dtype.kind == "f" and not np.all(np.isfinite(target)):
        healthy = False
    assert (d is None) == healthy, (what, d)
    return healthy
