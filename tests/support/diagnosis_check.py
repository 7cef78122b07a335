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


#: The "Go to step k, where it starts" button's words, per language (messages en / zh).
JUMP_WORDS = (("en", "Go to step {k}, where it starts"), ("zh", "跳到第 {k} 步，问题从这里开始"))


def log_of_zero():
    """A persistent tape with two targets: ``y`` sums log(x) where x > 0, so the log of the
    0 gives -inf and its gradient NaN (tf.where's trap); ``healthy`` is finite. Returns
    ``(tape, {"y": y, "healthy": healthy}, lg)``, ``lg`` the log op's output."""
    import tensorflow as tf

    import tapeviz as tv

    x = tf.Variable([0.0, 1.0])
    with tv.GradientTape(persistent=True) as tape:
        lg = tf.math.log(x)
        y = tf.reduce_sum(tf.where(x > 0, lg, tf.zeros_like(x)))
        healthy = tf.reduce_sum(x * 2.0)
    return tape, {"y": y, "healthy": healthy}, lg
