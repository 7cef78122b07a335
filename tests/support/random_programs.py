"""Random small programs for the property tests: 1-3 variables / watched tensors, then up
to seven steps drawn from element-wise ops, reductions, matmuls and the op families that once
broke capture or flow on real models (multi-output ops, eager tf.while_loop / tf.cond, Keras
recurrent cells stepped in a Python loop, tf.py_function). ``programs()`` draws one with
hypothesis, ``build`` runs it on a tape. Used by record/test_properties.py,
record/test_never_disturb.py and picture/test_placement.py."""

import keras
import numpy as np
import tensorflow as tf
from hypothesis import strategies as st

SHAPES = [(), (2,), (3,), (2, 2), (2, 3), (3, 2)]

UNARY = [
    "square",
    "pow2",
    "pow3",
    "tanh",
    "sigmoid",
    "reduce_sum",
    "reduce_mean",
    "reduce_sum_last",
    "stop_gradient",
    "int_cast",
    "clip_by_value",
    "clip_by_norm",
    "self_mul",
    "neg_exp_tanh",
    "relu",
    "abs",
    "reduce_max",
    "transpose",
    "reshape",
    "softmax",
    "gather",
    "safe_div",
    "paused",
    "concat_self",
    "watch",
    "reset",
]
BINARY = ["add", "sub", "mul", "matmul", "maximum", "where"]
# Ops with several outputs; "_one" uses one of them, so the others get no gradient.
MULTI_OUTPUT = ["unstack_one", "unstack_all", "split_one", "split_all", "top_k"]
CONTROL_FLOW = ["while_loop", "cond"]  # eager: TF runs them as Python control flow
CELLS = ["lstm_cell", "gru_cell", "rnn_cell"]  # Keras cells stepped twice in a Python loop
NEW_FAMILIES = MULTI_OUTPUT + CONTROL_FLOW + CELLS
OPS = UNARY + BINARY + NEW_FAMILIES
# tf.py_function: its registered gradient pops the call's entry from script_ops.tape_cache
# (and runs the call's non-persistent inner tape), so a second backward pass over it fails.
# Kept out of OPS (and of test_never_disturb, where plain TF itself fails the second
# gradient() call of a persistent tape) and tested on its own below.
PY_FUNCTION = "py_function"


@st.composite
def leaves(draw):
    n = draw(st.integers(1, 3))
    out = []
    for _ in range(n):
        shape = draw(st.sampled_from(SHAPES))
        size = int(np.prod(shape, dtype=np.int64))
        vals = draw(st.lists(st.floats(-2.0, 2.0, width=32, allow_nan=False), min_size=size, max_size=size))
        # constants are only watched if a later "watch" step picks them
        kind = draw(st.sampled_from(["variable", "variable", "watched", "constant"]))
        out.append((kind, shape, np.array(vals, dtype=np.float32).reshape(shape)))
    return out


@st.composite
def programs(draw, ops=OPS, must=None):
    """(leaves, steps, extra targets, use tv.GradientTape); `must`: ops of which at least one step is."""
    ls = draw(leaves())
    step = st.tuples(st.sampled_from(ops), st.integers(0, 99), st.integers(0, 99))
    steps = draw(st.lists(step, min_size=1, max_size=7))
    if must is not None:
        forced = (draw(st.sampled_from(must)), draw(st.integers(0, 99)), draw(st.integers(0, 99)))
        steps.insert(draw(st.integers(0, len(steps))), forced)
    extra_targets = draw(st.lists(st.integers(0, 99), max_size=2))
    use_tv_tape = draw(st.booleans())
    return ls, steps, extra_targets, use_tv_tape


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        return True
    except ValueError:
        return False


def _apply(op, a, pool, j):
    """One step; `a` is the first operand, j picks the second among the compatible ones."""
    if op == "square":
        return tf.square(a)
    if op == "pow2":
        return a**2
    if op == "pow3":
        return tf.pow(a, 3.0)
    if op == "tanh":
        return tf.tanh(a)
    if op == "sigmoid":
        return tf.sigmoid(a)
    if op == "neg_exp_tanh":  # exp of a bounded value: never overflows
        return tf.exp(-tf.tanh(a))
    if op == "reduce_sum":
        return tf.reduce_sum(a)
    if op == "reduce_mean":
        return tf.reduce_mean(a)
    if op == "reduce_sum_last":
        return tf.reduce_sum(a, axis=-1) if len(a.shape) else tf.reduce_sum(a)
    if op == "stop_gradient":
        return tf.stop_gradient(a)
    if op == "int_cast":
        return tf.cast(tf.cast(a * 3.0, tf.int32), tf.float32)
    if op == "clip_by_value":
        return tf.clip_by_value(a, -0.5, 0.5)
    if op == "clip_by_norm":
        return tf.clip_by_norm(a, 1.0)
    if op == "self_mul":
        return a * a
    if op == "relu":
        return tf.nn.relu(a)
    if op == "abs":
        return tf.abs(a)
    if op == "reduce_max":  # ties share the gradient
        return tf.reduce_max(a)
    if op == "transpose":
        return tf.transpose(a)
    if op == "reshape":
        return tf.reshape(a, [-1])
    if op == "softmax":
        return tf.nn.softmax(tf.reshape(a, [-1]))
    if op == "gather":  # IndexedSlices gradients for a variable
        flat = tf.reshape(a, [-1]) if len(a.shape) != 1 else a
        return tf.gather(flat, [0, 0])
    if op == "safe_div":
        return a / (1.0 + tf.square(a))
    if op == "paused":  # computed while the tape is paused: no gradient through it
        with TAPE[0].stop_recording():
            return a * 2.0
    if op == "watch":  # watching late: only later ops are recorded for it
        if not isinstance(a, tf.Variable):
            TAPE[0].watch(a)
        return a * 1.5
    if op == "reset":  # forget everything recorded so far
        TAPE[0].reset()
        return a + 1.0
    if op == "concat_self":
        flat = tf.reshape(a, [-1])
        return tf.concat([flat, flat * 2.0], axis=0)
    if op in ("add", "sub", "mul"):
        cands = [b for b in pool if _broadcastable(a, b)]  # always contains a itself
        b = cands[j % len(cands)]
        return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b}[op]()
    if op in ("maximum", "where"):
        cands = [b for b in pool if tuple(b.shape) == tuple(a.shape)]
        b = cands[j % len(cands)]
        if op == "maximum":
            return tf.maximum(a, b)
        return tf.where(a > 0.0, a, b * 2.0)
    if op == "matmul":
        if len(a.shape) != 2:
            m = tf.reshape(a, [1, -1])
            return tf.matmul(m, m, transpose_b=True)
        cands = [b for b in pool if len(b.shape) == 2 and b.shape[0] == a.shape[1]]
        if cands:
            return tf.matmul(a, cands[j % len(cands)])
        return tf.matmul(a, a, transpose_b=True)
    if op in MULTI_OUTPUT:
        return _multi_output(op, a, j)
    if op == "while_loop":
        return tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, tf.sin(y) * 0.5 + y), (tf.constant(0), a))[1]
    if op == "cond":
        return tf.cond(tf.reduce_sum(a) > 0.0, lambda: a * 2.0, lambda: tf.square(a))
    if op in CELLS:
        return _cell_steps(op, a, j)
    if op == PY_FUNCTION:
        return tf.py_function(lambda t: tf.sin(t) * 2.0, [a], tf.float32)
    raise AssertionError(op)


def _multi_output(op, a, j):
    if op.startswith("unstack"):  # Unpack
        parts = tf.unstack(a if len(a.shape) else tf.stack([a, -a]))
        return parts[j % len(parts)] if op == "unstack_one" else tf.stack(parts[::-1])
    flat = tf.reshape(a, [-1])
    n = int(flat.shape[0])
    if op == "top_k":  # TopKV2: values and (integer) indices
        return tf.math.top_k(flat, k=min(2, n)).values
    if n == 1:
        flat, n = tf.concat([flat, flat * 3.0], 0), 2
    parts = tf.split(flat, 2) if n % 2 == 0 else tf.split(flat, [1, n - 1])  # Split, SplitV
    return parts[j % 2] if op == "split_one" else tf.concat(parts[::-1], 0)


def _cell_steps(op, a, j):
    """A Keras recurrent cell, built inside the tape, stepped twice over `a` as a batch."""
    x = a if len(a.shape) == 2 else tf.reshape(a, [1, -1])
    cls = {
        "lstm_cell": keras.layers.LSTMCell,
        "gru_cell": keras.layers.GRUCell,
        "rnn_cell": keras.layers.SimpleRNNCell,
    }[op]
    # Seeded initializers: every run of a program gets the same weights.
    cell = cls(
        2,
        kernel_initializer=keras.initializers.GlorotUniform(seed=j),
        recurrent_initializer=keras.initializers.Orthogonal(seed=j + 1),
        seed=j,
    )
    states = cell.get_initial_state(batch_size=int(x.shape[0]))
    h = None
    for t in range(2):
        h, states = cell(x * (0.5**t), states)
    return h


TAPE = [None]  # the tape being recorded, for the "paused" step


def build(tape, leaves_, steps, extra_targets):
    """Run the program; return the scalar target."""
    TAPE[0] = tape
    pool = [obj for _, obj in leaves_]
    for kind, obj in leaves_:
        if kind == "watched":
            tape.watch(obj)
    for op, i, j in steps:
        pool.append(_apply(op, pool[i % len(pool)], pool, j))
    chosen = [pool[-1]] + [pool[k % len(pool)] for k in extra_targets]
    return tf.add_n([tf.reduce_sum(c) for c in chosen])
