"""English: tv.explain's sentences for NaN, Inf and zero gradients (keys ``numeric.*``).

Every template takes the facts of a Finding as text (numbers already written as
"NaN", "∞", "0.5"); ``where`` is the line and the code on it, when known.
"""

from __future__ import annotations


def _line(line, code, **_):
    if not line:
        return ""
    return f" on line {line}" + (f" (`{code}`)" if code else "")


def _at(indices, count, size, **_):
    if not indices:
        return ""
    return f" at {indices}" + (f" ({count} of {size} elements)" if size and size > 1 else "")


def _lead_non_finite(target, source, value, **f):
    return f"d{target}/d{source} is {value}{_at(**f)}."


def _lead_zero(target, source, size, count, asked, **_):
    if asked:
        part = f"{'Element' if count == 1 else 'Row'} {asked} of d{target}/d{source}"
        return f"{part} is exactly zero, although {target} depends on {source}."
    every = f" (all {size} elements)" if size and size > 1 else ""
    return f"d{target}/d{source} is exactly zero{every}, although {target} depends on {source}."


def _lead_forward(target, value, **f):
    return f"{target} itself is {value}{_at(**f)}: the forward pass already made a non-finite value, so the gradient cannot be right."


def _origin_non_finite(op, arriving, local, local_value, variable, forward, result, **f):
    where = f"It starts at {op}{_line(**f)}"
    if not local:
        return f"{where}: the gradient arriving there is {arriving}, and {op} passes back {result}."
    return (f"{where}: the gradient arriving there is {arriving}, {op}'s local derivative is {local}, and at "
            f"{variable} = {forward} that is {local_value}: {arriving} × {local_value} = {result}.")


def _origin_zero(op, arriving, local, local_value, variable, forward, **f):
    where = f"It becomes zero at {op}{_line(**f)}"
    comes = f"the gradient arriving there is {arriving}" if arriving != "?" else "a gradient that is not zero arrives there"
    if not local or arriving == "?":
        return f"{where}: {comes}, yet {op} passes back 0."
    return (f"{where}: the gradient arriving there is {arriving}, {op}'s local derivative is {local}, which is "
            f"{local_value} at {variable} = {forward}, so {op} passes back 0.")


def _origin_forward(op, variable, forward, result, **f):
    value = f"at {variable} = {forward} it gives {result}" if forward != "?" else f"it gives {result}"
    return f"The first op that made a non-finite value is {op}{_line(**f)}: {value}."


def _dead_relu(max, **_):
    return (f"The ReLU is dead: every one of its inputs is ≤ 0 (the largest is {max}), so its derivative is 0 "
            "at every element and no gradient gets through.")


def _saturated(op, min_abs, **_):
    name = "sigmoid" if op == "Sigmoid" else "tanh"
    return (f"The {name} is saturated: its inputs are so far from 0 (the closest is {min_abs}) that its derivative "
            "rounds to 0 in float32.")


def _row_not_read(ids, ids_count, asked, indices, **_):
    return (f"The lookup (tf.gather / Embedding) reads only rows {ids}"
            + (f" ({ids_count} different ids)" if ids_count else "")
            + f"; row {asked or indices} is not among them, so its gradient is 0.")


NUMERIC = {
    "numeric.lead.non_finite": _lead_non_finite,
    "numeric.lead.zero": _lead_zero,
    "numeric.lead.forward": _lead_forward,
    "numeric.origin.non_finite": _origin_non_finite,
    "numeric.origin.zero": _origin_zero,
    "numeric.origin.forward": _origin_forward,
    "numeric.origin.none": "tapeviz found no single op where it starts (it may come from adding +∞ and -∞ on the way).",
    "numeric.join": " ",
    "numeric.pattern.where_trap": lambda op, other_line, indices, source, **_: (
        f"This is the tf.where trap: tf.where{' (line ' + str(other_line) + ')' if other_line else ''} picks the other "
        f"branch{' at ' + indices if indices else ''} and sends 0 back into {op}, but 0 × ∞ is NaN, not 0, "
        f"and the NaN reaches {source} all the same."),
    "numeric.fix.where_trap": lambda op, make_safe, use_safe, **_: (
        f"Make the input safe before {op}, so that the branch tf.where does not pick stays finite too: "
        f"`{make_safe}`, then `{use_safe}` (cond: the same condition)."),
    "numeric.pattern.sqrt_at_zero": "The derivative of sqrt, 1/(2·√x), is infinite at x = 0.",
    "numeric.fix.sqrt_at_zero": "Add a small epsilon inside the root (tf.sqrt(x + 1e-12)), or take the root only where x > 0 with a safe tf.where.",
    "numeric.pattern.norm_at_zero": "tf.norm is sqrt(sum(x²)); at the zero vector its derivative x/‖x‖ is 0/0, which TF computes as 0 × ∞ = NaN.",
    "numeric.fix.norm_at_zero": "Add an epsilon: tf.sqrt(tf.reduce_sum(tf.square(x)) + 1e-12), or use the squared norm where that does as well.",
    "numeric.pattern.sqrt_of_negative": "The square root of a negative number is NaN.",
    "numeric.fix.sqrt_of_negative": "Keep the input ≥ 0 (tf.maximum(x, 0.0)); a variance computed as E[x²] - E[x]² can round below 0.",
    "numeric.pattern.log_of_zero": "log(0) is -∞, and its derivative 1/x is ∞ at 0.",
    "numeric.fix.log_of_zero": "Keep the input away from 0: tf.math.log(tf.maximum(x, 1e-7)) or tf.math.log(x + 1e-7).",
    "numeric.pattern.log_of_negative": "The logarithm of a negative number is NaN.",
    "numeric.fix.log_of_negative": "Log needs positive inputs: find what makes the value negative, or use a positive map (tf.nn.softplus, tf.exp).",
    "numeric.pattern.log_of_probability": lambda other_op, other_line, **_: (
        f"The log's input comes from {other_op}{' (line ' + str(other_line) + ')' if other_line else ''}, which rounded a "
        "probability to exactly 0 in float32: a cross-entropy computed from probabilities instead of logits."),
    "numeric.fix.log_of_probability": "Pass logits, not probabilities: tf.nn.softmax_cross_entropy_with_logits, tf.nn.sigmoid_cross_entropy_with_logits, or a Keras loss with from_logits=True (and no softmax / sigmoid before it).",
    "numeric.pattern.probability_clipped": lambda op, other_op, other_line, **_: (
        f"{op} is the loss clipping the probabilities from {other_op}"
        f"{' (line ' + str(other_line) + ')' if other_line else ''} into [ε, 1 - ε]: they are saturated (exactly 0 "
        "or 1 in float32), outside that range, where the clip passes back 0. The loss is computed from probabilities "
        "instead of logits."),
    "numeric.fix.probability_clipped": "Pass logits, not probabilities: a Keras loss with from_logits=True (drop the final softmax / sigmoid), tf.nn.softmax_cross_entropy_with_logits or tf.nn.sigmoid_cross_entropy_with_logits.",
    "numeric.pattern.division_by_zero": "It is a division by zero.",
    "numeric.fix.division_by_zero": "Guard the denominator: tf.math.divide_no_nan(x, y), x / (y + 1e-7), or a safe tf.where around the division.",
    "numeric.pattern.exp_overflow": "exp(x) overflows float32 to ∞ for x > 88.7.",
    "numeric.fix.exp_overflow": "Subtract the maximum first (tf.reduce_logsumexp, tf.nn.softmax and tf.nn.log_softmax do), or clip x before tf.exp.",
    "numeric.pattern.dead_relu": _dead_relu,
    "numeric.fix.dead_relu": "Use LeakyReLU, ELU or GELU, a smaller learning rate or He initialisation, and check the bias: a large negative bias kills the unit.",
    "numeric.pattern.saturated": _saturated,
    "numeric.fix.saturated": "Normalise the inputs (BatchNormalization / LayerNormalization) or scale down the initial weights; for a loss on a sigmoid, pass logits (from_logits=True).",
    "numeric.pattern.step_function": "{op} is flat almost everywhere: its derivative is 0.",
    "numeric.fix.step_function": "Use a smooth stand-in (tf.tanh(k * x) for tf.sign) or a straight-through estimator: x + tf.stop_gradient(tf.round(x) - x).",
    "numeric.pattern.clipped": "Every value is outside the range {op} keeps, where its derivative is 0.",
    "numeric.fix.clipped": "Check the limits; to bound the update, clip the gradient (tf.clip_by_norm) instead of the value.",
    "numeric.pattern.where_unselected": "tf.where picks the other branch at every element, so nothing flows back into this one.",
    "numeric.fix.where_unselected": "Check the condition of tf.where: for this branch it is never met.",
    "numeric.pattern.row_not_read": _row_not_read,
    "numeric.fix.row_not_read": "Nothing is wrong if the row was not in this batch; a row that is never read never trains: check the ids (off by one, a padding id, a vocabulary larger than needed).",
    "numeric.pattern.multiplied_by_zero": "The other factor of {op} is 0 there, so the product's derivative is 0.",
    "numeric.fix.multiplied_by_zero": "Check where the zero factor comes from (a mask, a weight initialised to zeros).",
    "numeric.pattern.other": "",
    "numeric.fix.other": "Look at the inputs of {op} at those elements: print them, or step to it in tv.explore.",
    "numeric.fix.none": "Look at the parts added together on the way (tv.flow(tape, target).contributions(...)): +∞ and -∞ add up to NaN.",
    "numeric.origin.seed": "It is already in the gradient the backward pass starts from: the output_gradients given for {target}.",
    "numeric.fix.seed": "Check the output_gradients you pass to tape.gradient (and what computed them).",
}
