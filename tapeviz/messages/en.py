"""English: every sentence tapeviz writes (see tapeviz.messages for the key scheme).

A value is a ``str.format`` template; where the sentence depends on which facts are
known, a function of the facts (keyword arguments) that returns the sentence.
"""

from __future__ import annotations

from .numeric_en import NUMERIC


def _where(expression, line):
    return f"`{expression}`" + (f" (line {line})" if line else "")


def _left(source, via, expression, line, target, back, back_line, **_):
    where = f" in {_where(expression, line)}" if expression else ""
    came = f" at {_where(back, back_line)}" if back else ""
    return (f"{source} left TensorFlow through {via}{where}; {target} depends on a tensor made from a NumPy value "
            f"after that{came}, most likely what came back, which the tape cannot trace to {source}.")


def _left_unseen(source, target, back, back_line, **_):
    came = f" at {_where(back, back_line)}" if back else ""
    return (f"Nothing in TensorFlow uses {source}, and {target} depends on a tensor made from a NumPy value after it"
            f"{came}: {source} most likely went through NumPy (np.asarray, np.array or a NumPy ufunc, which "
            "tapeviz cannot see) and the tape cannot trace what came back.")


def _explain_left(name, source, via, expression, line, target, back, back_line, **_):
    where = _where(expression, line) if expression else via
    came = f" at {_where(back, back_line)}" if back else ""
    return (f"The path from {name} to {target} leaves TensorFlow at {where}: {source} is handed to "
            f"{'NumPy' if via.startswith('np.') else 'Python'}, and what comes back{came} is a new tensor "
            "the tape cannot trace.")


def _explain_left_unseen(name, source, target, back, back_line, **_):
    came = f" at {_where(back, back_line)}" if back else ""
    return (f"The path from {name} to {target} ends at {source}, which nothing in TensorFlow uses; {target} "
            f"depends instead on a tensor made from a NumPy value{came}. Most likely {source} went through NumPy "
            "(np.asarray, np.array or a ufunc) and came back there, out of the tape's sight.")


def _fix_left(via, tf_equivalent, **_):
    if tf_equivalent:
        return f"Use {tf_equivalent} instead of {via.removesuffix('()')} so the value stays on the tape."
    if via in (".numpy()", "float()"):
        return f"Keep the tensor itself instead of calling {via}; compute with TensorFlow ops."
    return "Keep the computation in TensorFlow ops instead of going through NumPy or Python numbers."


def _watch_call(subject, keras, **_):
    return f"tape.watch(v.value) with v the Keras variable {subject}" if keras else f"tape.watch({subject})"


# What the legend calls each kind of closed group box (picture.groups.Group.kind).
_GROUP_KINDS = {
    "function": "your function",
    "block": "block",
    "layer": "layer",
    "loss": "loss",
    "api": "TF API call",
    "derivative": "inner gradient",
}


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return word if n == 1 else plural or word + "s"


def _hidden_note(hidden, folded, target, **_):
    parts = []
    if hidden:
        verb = ("carries", "leads") if hidden == 1 else ("carry", "lead")  # "1 op that carries", "2 ops that carry"
        what = f"{verb[0]} nothing to {target}" if target else f"{verb[1]} to no output"
        parts.append(f"{hidden} {_plural(hidden, 'op')} that {what} hidden")
    if folded:
        parts.append(f"{folded} {_plural(folded, 'constant')} and shape {_plural(folded, 'op')} folded into the ops "
                     "that use them")
    return "; ".join(parts) + " (show_all=True shows them)"


def _graph_change(added, removed, **_):
    parts = [f"new ops: {added}"] * bool(added) + [f"ops gone: {removed}"] * bool(removed)
    return "; ".join(parts)


MESSAGES = {
    # ---- one-line stop reasons: stop.<reason>.<cause> --------------------------------
    "stop.stop_gradient.stop_edge": "{subject} goes through tf.stop_gradient, which tells the tape to pass no gradient back to it.",
    "stop.stop_gradient.stop_output": lambda subject, source, named, **_: (
        f"{subject} comes out of tf.stop_gradient({source}), which tells the tape to pass no gradient back." if named
        else f"tf.stop_gradient({source}) tells the tape to pass no gradient back through it."),
    "stop.not_recorded.paused": "{subject} was computed while the tape was paused (tape.stop_recording()), so it was never recorded.",
    "stop.not_recorded.before_reset": "{subject} was computed before tape.reset(), which erased everything recorded so far.",
    "stop.not_recorded.read_before_reset": "{subject} was read before tape.reset(), which erased everything recorded so far.",
    "stop.not_recorded.watch_reset": "tape.reset() erased the watch on {subject}; call tape.watch({subject}) again after the reset.",
    "stop.not_watched.non_trainable": lambda **f: (
        f"{f['subject']} is a non-trainable variable (trainable=False), so the tape does not watch it; "
        f"call {_watch_call(**f)} to get its gradient."),
    "stop.not_watched.unwatched_variable": lambda **f: (
        f"{f['subject']} was not watched: the tape was created with watch_accessed_variables=False; call {_watch_call(**f)}."),
    "stop.not_watched.constant": "{subject} is not a variable, so the tape does not track it (it tracks variables and tensors passed to tape.watch()).",
    "stop.not_watched.plain_tensor": "{subject} is a plain tensor, not a variable; the tape only tracks it after tape.watch({subject}).",
    "stop.not_watched.watched_late": "{subject} was computed before tape.watch({source}), so the tape did not record it.",
    "stop.not_watched.derived": "{subject} was computed only from values the tape does not watch, so it is not on the tape.",
    "stop.integer_dtype.integer": "{subject} is a {dtype} tensor; gradients only flow through floating-point tensors (cast to tf.float32 first).",
    "stop.no_gradient.not_differentiable": "{op} has no gradient in TensorFlow (it is not differentiable), so nothing flows back to {subject}.",
    "stop.no_gradient.shape_only": "{op} reads only the shape of {subject}, not its values: {target} depends on {subject} only through that shape, so no gradient flows back.",
    "stop.no_gradient.integer_result": "{subject} comes from {op}, which has no gradient in TensorFlow: its {dtype} result is not differentiable, and casting it to float does not change that.",
    "stop.no_gradient.not_registered": "{op} has no gradient registered in TensorFlow (tape.gradient raises LookupError: gradient registry has no entry for: {op}), so nothing flows back to {subject}.",
    "stop.stateful.assigned": lambda subject, variable, op, **_: (
        f"{subject} was written into {variable or 'a variable'} by {op}; assigning to a variable is a side effect, "
        "not a differentiable step."),
    "stop.outside_tf.round_trip": "{source} left TensorFlow through {via} and came back as the constant {label}; the tape cannot follow values through Python or NumPy.",
    "stop.outside_tf.left": _left,
    "stop.outside_tf.left_unseen": _left_unseen,
    "stop.unconnected.never_used": "{subject} was never used while the tape was recording, so the target cannot depend on it.",
    "stop.unconnected.not_seen": "{subject} is not something the tape saw: it was not used inside the `with` block.",
    "stop.unconnected.custom_gradient": "{op} (tf.custom_gradient) supplies the gradient of what {consumer} computed, so the tape does not differentiate {consumer} and {subject} gets nothing through it.",
    "stop.unconnected.not_leading": "{consumer} does not lead to {target}, so {subject} gets no gradient through it.",
    "stop.unconnected.no_dependency": "{target} does not depend on {subject}.",
    # ---- the legend's short labels ------------------------------------------------------
    "legend.stop_gradient": "tf.stop_gradient",
    "legend.not_recorded": "not recorded by the tape",
    "legend.not_watched": "not watched by the tape",
    "legend.integer_dtype": "integer / non-float tensor",
    "legend.no_gradient": "op has no gradient",
    "legend.stateful": "written into a variable",
    "legend.outside_tf": "value left TensorFlow",
    "legend.unconnected": "does not lead to the target",
    # ---- tv.explain: explain.<case> and fix.<case> ---------------------------------------
    "explain.stop_gradient": "{name} is read through tf.stop_gradient on its way to {target}, so the tape sends no gradient back to it.",
    "fix.stop_gradient": "Remove tf.stop_gradient there to get d{target}/d{name}.",
    "explain.before_reset": "The ops between {name} and {target} ran before tape.reset(), which erased them.",
    "fix.before_reset": "Compute {target} after the reset, or drop the reset.",
    "explain.paused": "The path from {name} to {target} ran inside tape.stop_recording() ({at} was not recorded).",
    "fix.paused": "Move that computation out of the stop_recording() block.",
    "explain.non_trainable": "{name} is a non-trainable variable (trainable=False), so the tape does not watch it.",
    "fix.non_trainable": "Create it with trainable=True, or call tape.watch({name}) inside the block.",
    "explain.unwatched_variable": "The tape was created with watch_accessed_variables=False, so it ignores {name} unless told.",
    "fix.unwatched_variable": "Call tape.watch({name}) inside the block.",
    "explain.plain_tensor": "{name} is a plain tf.Tensor made before the tape, not a tf.Variable, and the tape only tracks tensors it was told to watch.",
    "fix.plain_tensor": "Call tape.watch({name}) inside the block. If {name} used to be a variable, `{name} = {name} + 1` replaced it by a tensor: update it in place with {name}.assign_add(1) instead.",
    "explain.constant": "{name} is a constant created inside the block, and the tape does not watch constants.",
    "fix.constant": "Make it a tf.Variable or call tape.watch({name}) right after creating it.",
    "explain.derived": lambda name, origin, **_: (
        f"{name} was computed only from values the tape does not watch"
        f"{' (starting at ' + origin + ')' if origin else ''}, so it is not on the tape."),
    "fix.derived": "Watch the inputs it comes from (tape.watch) or make them tf.Variables.",
    "explain.integer": lambda name, dtype, **_: (
        f"{name} is {'an' if dtype[:1] in 'aeiou' else 'a'} {dtype} tensor; gradients only exist for floating-point tensors."),
    "fix.integer": "Cast it to float32 before the tape (tf.cast({name}, tf.float32)) and compute {target} from that.",
    "explain.integer_on_path": "On the way from {name} to {target} the value becomes an integer ({detail})",
    "fix.integer_on_path": "Keep the computation in floating point (e.g. tf.round instead of casting to int).",
    "explain.no_gradient": "The path from {name} to {target} goes through {at}, which has no gradient in TensorFlow.",
    "fix.no_gradient": "Replace {at} with a differentiable op (or a straight-through trick) on that path.",
    "explain.not_registered": "The path from {name} to {target} goes through {at}, which has no gradient registered in TensorFlow: tape.gradient raises LookupError (gradient registry has no entry for: {at}).",
    "fix.not_registered": "Give {at} a gradient with @tf.custom_gradient, or compute the same thing with differentiable TensorFlow ops, or, if {at} is meant as a constant, pass its inputs through tf.stop_gradient so the tape never asks for its gradient.",
    "explain.not_registered_elsewhere": "A gradient does reach {name}, but the backward pass of {target} also goes through {at}, which has no gradient registered in TensorFlow: tape.gradient raises LookupError (gradient registry has no entry for: {at}) for every source, {name} included.",
    "fix.not_registered_elsewhere": "Give {at} a gradient with @tf.custom_gradient, or compute the same thing with differentiable TensorFlow ops, or, if {at} is meant as a constant, pass its inputs through tf.stop_gradient so the tape never asks for its gradient.",
    "explain.assigned": "{name} reaches {target} only through a variable update: {at} writes it into {variable}.",
    "fix.assigned": "The tape does not differentiate through assign/assign_add: use the tensor itself in the computation.",
    "explain.round_trip": "{name} left TensorFlow through {via} and came back as a constant, so the tape lost the path to {target}.",
    "fix.round_trip": "Keep the computation in TensorFlow ops instead of going through NumPy or Python numbers.",
    "explain.left": _explain_left,
    "fix.left": _fix_left,
    "explain.left_unseen": _explain_left_unseen,
    "fix.left_unseen": "Do that step with TensorFlow ops (tf.reduce_mean, tf.exp, ...) instead of NumPy, so the value stays on the tape.",
    "explain.never_used": "{name} was never used while the tape was recording, so {target} does not depend on it.",
    "fix.never_used": "Check the code path: an if/else or loop may have skipped it, or it was used outside the `with` block.",
    "explain.not_seen": "{name} is not something the tape saw: it was not used inside the `with` block.",
    "fix.not_seen": "Compute with it inside the block (and tape.watch it if it is a plain tensor).",
    "explain.unconnected": "{target} does not depend on {name}: no recorded path leads from {name} to {target}.",
    "fix.unconnected": "Check that {target} is computed from {name} inside the block (a branch or loop may have skipped it).",
    # ---- pictures ----------------------------------------------------------------------
    "ui.step.start": "Step {k}/{n}: start at {target} with d{target}/d{target} = {value}",
    "ui.step.passes": "Step {k}/{n}: {node} got {value} and passes gradient back to {to}",
    "ui.step.received": "Step {k}/{n}: {node} has received its gradient {value}",
    "ui.step.part": "Step {k}/{n}: {node} receives {value} through one of its {reads} reads",
    "ui.step.in_group": "{node} (in {group})",
    "ui.step.done": " (backward pass of {target} done)",
    "ui.note.collapsed": lambda layers, calls, total, blocks=0, losses=0, derivatives=0, functions=0, **_: ", ".join(
        [f"{functions} {_plural(functions, 'function')} of yours"] * bool(functions)
        + [f"{blocks} {_plural(blocks, 'block')}"] * bool(blocks)
        + [f"{layers} {_plural(layers, 'layer')}"] * bool(layers)
        + [f"{losses} {_plural(losses, 'loss', 'losses')}"] * bool(losses)
        + [f"{calls} TF API {_plural(calls, 'call')}"] * bool(calls)
        + [f"{derivatives} inner {_plural(derivatives, 'gradient')}"] * bool(derivatives))
        + f" collapsed ({total} nodes in all); expand them to see their ops",
    "ui.note.hidden": _hidden_note,
    "ui.note.unregistered": "No gradient registered for {op}: tape.gradient raises LookupError, and nothing reaches the ops before it",
    # ---- the explorer ------------------------------------------------------------------
    "ui.control.step": "step",
    "ui.control.play": "play",
    "ui.control.pause": "pause",
    "ui.control.stop": "stop",
    "ui.control.repeat": "repeat",
    "ui.control.prev": "previous step",
    "ui.control.next": "next step",
    "ui.control.target": "target",
    "ui.control.clip": "clip",
    "ui.clip.none": "no clipping",
    "ui.control.clip_norm": "clip_norm",
    "ui.control.clip_value": "clip_value",
    "ui.control.lr": "lr",
    "ui.control.node": "inspect",
    "ui.control.layers": "expanded",
    "ui.control.show_all": "show every op",
    "ui.control.show_all_tip": "draw every recorded op: nothing hidden, no constant folded",
    "ui.control.train_step": "train step",
    "ui.canvas.reset": "reset zoom and pan",
    "ui.canvas.fallback": ("tapeviz: anywidget's front end is not installed where Jupyter looks for extensions, "
                           "so the explorer shows its picture as plain HTML (no clicks, hover tips, zoom or patches). "
                           "Install anywidget into the Jupyter server's environment to get the canvas."),
    "ui.canvas.open": "click: open",
    "ui.canvas.open_step": "click: open step {k}",
    "ui.canvas.close": "click the frame: close",
    "ui.canvas.select": "click: inspect",
    "ui.canvas.value": "value {summary}",
    "ui.canvas.grad": "gradient {summary}",
    "ui.canvas.shape": "{dtype} {shape}",
    "ui.keys.off": "click the picture, then ← / → step, space plays",
    "ui.keys.on": "keys on: ← / → step, space plays / pauses",
    # ---- what a screen reader says of a box (picture/access.py) -------------------------
    "a11y.box": lambda name, kind, value, grad, **_: (
        f"{name}{', ' + kind if kind and kind not in name else ''}"
        f"{', value ' + value if value else ''}, gradient {grad}"),
    # a group's box is a button: its name starts with its drawn words, as a screen reader's user sees them
    "a11y.group": lambda text, name, **_: f"{text}, closed group{' ' + name if name else ''}",
    "a11y.frame": "{name}, open group",
    "a11y.no_grad": "not arrived yet",
    "ui.history.flags": "Flags at step {step}:",
    "ui.history.no_flags": "No flag at step {step}.",
    "ui.history.since": "(raised at step {first}; its condition still holds here)",
    "ui.history.no_picture": "Step {step} kept no picture of its backward pass; steps with one: {steps}.",
    "ui.history.norms_only": "This run kept norms only (hist.add from your own tf.GradientTape loop). To see a step's backward pass too, record that step with a tv.GradientTape and pass it: hist.add(step, ..., tape=tape).",
    "panel.head.variable": "variable",
    "panel.head.raw": "raw g",
    "panel.head.clipped": "clipped g",
    "panel.head.norms": "‖g‖ before → after",
    "panel.head.bars": "bars",
    "panel.head.sgd": "SGD preview w − lr·g",
    "panel.none": "gradient is None",
    "panel.none_advice": "tf.clip_by_norm(None, ...) raises ValueError; keep only the pairs with a gradient: "
                         "[(g, v) for g, v in zip(grads, variables) if g is not None].",
    "panel.more": "showing {shown} of {total} variables (None gradients, then the largest norms); ex.gradients() has them all",
    "panel.global": "global norm:",
    "panel.global_mixed": "none: tf.linalg.global_norm does not mix float32 and float64 gradients",
    "inspect.scope": "scope:",
    "inspect.value": "value ({dtype}, shape {shape}):",
    "inspect.grad": "d{target}/d·:",
    "inspect.no_gradient": "no gradient ({reason}):",
    "inspect.chain": "the chain rule at its step {k}:",
    "fallback.text": "tapeviz explorer (a live widget): run this cell to use it.",
    "lessons.index": "tapeviz lessons",
    "lessons.previous": "previous",
    "lessons.next": "next",
    "lessons.offline": "Every page works offline: open it in a browser, no Python or network needed.",
    "page.title": "tapeviz: backward pass of {target}",
    "page.head": "target: {target} · clipping: {clip} · lr: {lr} · {n} pictures; the slider runs in the browser, no Python needed",
    "page.targets": "target",
    "page.clip_positions": "clip_norm (panel computed by TensorFlow for each position)",
    "name.op": "the {op} op",
    "name.constant": "the constant {label}",
    # ---- training history flags --------------------------------------------------------
    "flag.vanishing.ratio": "{name}: its gradient is {ratio} of its weights (below {threshold}), so it barely learns; {fix}.",
    "flag.vanishing.gap": "{name}: its gradient relative to its weights ({ratio}) is {orders} orders of magnitude below the last layer's ({last}), so it learns far more slowly; {fix}.",
    "flag.exploding.jump": "{name}: its gradient norm jumped to {norm}, {times}x its running median ({median}); {fix}.",
    "flag.exploding.growth": "{name}: its gradient norm grew {factor}x or more at each of the last {steps} steps (now {norm}); {fix}.",
    "flag.nan.nan": "{name}: its gradient norm is NaN at this step; {fix}.",
    "flag.nan.inf": "{name}: its gradient norm is Inf (or so large its square overflows float32) at this step; {fix}.",
    "flag.nan.loss": "the loss is {what} at this step; {fix}.",
    "flag.no_gradient.none": "{name}: its gradient is None (the loss does not depend on it); record the step with a tv.GradientTape and tv.explain(tape, loss, variable) says why.",
    "flagfix.vanishing": "use ReLU-family activations with He initialisation, add normalisation (BatchNormalization / LayerNormalization) or residual connections",
    "flagfix.exploding": "clip with tf.clip_by_global_norm(grads, 1.0) or lower the learning rate",
    "flagfix.clipped": "clipping scaled this step's gradients by {scale}, so the update stayed bounded; if the loss still jumps, lower the learning rate",
    "flagfix.nan": "look for log(0), sqrt(0) or division by zero in the loss, lower the learning rate and clip with tf.clip_by_global_norm(grads, 1.0)",
    "ui.kind.variable": "variable",
    "ui.kind.watched": "watched tensor",
    "ui.kind.constant": "constant",
    "ui.kind.input": "tensor from outside",
    "ui.kind.op": "op",
    # one swatch for every closed group box, naming the kinds drawn (scene.group_kinds)
    "ui.kind.layer": lambda kinds=("layer",), **_: " / ".join(_GROUP_KINDS[k] for k in kinds) + " (collapsed)",
    "ui.kind.inner": "op inside a tf.function",
    "ui.group.layer": lambda n, **_: f"layer · {n} {_plural(n, 'op')}",
    "ui.group.block": lambda n, **_: f"block · {n} {_plural(n, 'op')}",
    "ui.group.loss": lambda n, **_: f"loss · {n} {_plural(n, 'op')}",
    "ui.group.alike": "{name} ({n}\u00a0alike)",  # a no-break space: a second line starts at "("
    "ui.group.api": lambda n, **_: f"tf API · {n} {_plural(n, 'op')}",
    "ui.group.derivative": lambda n, call, **_: f"{call} · {n} {_plural(n, 'op')}",
    # a function of the user's holding inner gradients names them instead (a subtitle has no room for both)
    "ui.group.function": lambda n, call="", **_: f"with {call}" if call else f"your function · {n} {_plural(n, 'op')}",
    "ui.group.repeat_title": "{name} ×{n}",
    "ui.group.repeat": lambda n, **_: f"one per step · {n} {_plural(n, 'op')}",
    "ui.group.steps": lambda n, **_: f" ×{n} (steps 0–{n - 1})",
    "ui.group.inner": "in tf.function {function}",
    # A collapsed group's variables, too many to list under its box: their gradient's norm taken together.
    "ui.gathered.stack": "stack of {n} {name}",
    "ui.gathered.sum": "Σ {n} {name}",
    "ui.group.step_range": " ×{n} (steps {first}–{last})",
    "ui.group.one_step": " (step {k})",
    "ui.group.step_frame": "{name} · step {k}",
    "ui.group.grad_total": "‖g‖ {norm} over {n} variables",
    "ui.compare.side": "{name}: step {k} of {n}",
    "ui.compare.title": "How the gradient changed from a to b: ‖g_b‖ / ‖g_a‖ on every edge and box (b: {b}, a: {a})",
    "ui.compare.title_plain": "How the gradient changed from a to b: ‖g_b‖ / ‖g_a‖ on every edge and box",
    "ui.compare.clip": "b's variable gradients clipped {mode}, as the optimizer receives them",
    "ui.compare.largest": "Largest changes (‖g_a‖ → ‖g_b‖, b / a):",
    "ui.compare.row": "{name}: {a} → {b} ({ratio})",
    "ui.compare.none": "No gradient changed.",
    "ui.compare.lost": "lost",
    "ui.compare.zeroed": "→ 0",
    "ui.compare.gained": "gained",
    "ui.legend.ratio": "‖g_b‖ / ‖g_a‖ (log scale: blue shrunk, grey unchanged, orange grown)",
    "ui.legend.lost": "lost: a has a gradient here, b none",
    "ui.legend.zeroed": "zeroed: a's gradient here is not zero, b's is",
    "ui.legend.gained": "gained: b has a gradient here, a none",
    "ui.group.more": "+{n} more",
    "ui.group.clipped_n": "‖g‖ of {n} clipped: table",
    "ui.legend.forward": "→ forward computation",
    "ui.legend.flowing": "gradient that has flowed back",
    "ui.legend.active": "‹ this step: the gradient moves backward",
    "ui.legend.origin": "⚠ the op where the {value} starts",
    "ui.legend.origin_zero": "⚠ the op where the gradient becomes 0",
    "ui.legend.origin_path": "its way back to {source}",
    "ui.origin.non_finite": "⚠ {value} starts here",
    "ui.origin.zero": "⚠ gradient becomes 0 here",
    "ui.origin.forward": "⚠ {value} made here",
    "inspect.diagnosis": "Why the gradient is {value}:",
    "inspect.jump": "Go to step {step}, where it starts",
    "ui.legend.bad": "⚠ NaN / Inf gradient",
    "ui.legend.magnitude": "‖g‖/‖w‖ (log scale)",
    "ui.legend.stopped": "no gradient: {reason}",
    # The notation of big tensors, shown once: a sample ("4×3 ‖g‖ 0.884"), then this.
    "ui.legend.notation": "= a 4×3 gradient, norm 0.884 (‖·‖: a value's norm)",
    "ui.chip.value": "folded constant / shape",
    "ui.chip.input": "named input",
    "ui.chip.random": "random values",
    # A folded input's tag: its role for the op using it (TF's own argument names), then its value.
    "ui.chip.random_mask": "random mask",
    "ui.chip.random_value": "random",
    "ui.chip.role.exponent": "exponent {value}",
    "ui.chip.role.axis": "axis {value}",
    "ui.chip.role.shape": "shape {value}",
    "ui.chip.role.perm": "perm {value}",
    "ui.chip.role.multiples": "multiples {value}",
    "ui.chip.role.paddings": "paddings {value}",
    "ui.chip.role.depth": "depth {value}",
    "ui.edge.stop_gradient": "stop_gradient",
    "ui.edge.not_recorded": "not_recorded",
    "ui.edge.not_watched": "not_watched",
    "ui.edge.integer_dtype": "integer_dtype",
    "ui.edge.no_gradient": "no_gradient",
    "ui.edge.not_registered": "not registered",
    "ui.edge.never_used": "never used",
    "ui.node.none_because": "∂ None: {code}",
    "ui.edge.stateful": "stateful",
    "ui.edge.outside_tf": "outside_tf",
    "ui.edge.unconnected": "unconnected",
    "ui.edge.stopped_n": "{code} ({n})",
    "ui.edge.parts": lambda n, **_: f"{n} gradient{'' if n == 1 else 's'}",
    "ui.edge.sum": "Σ ",
    "ui.edge.arriving": "{got} of {n} arrived",
    "ui.printed": "TensorFlow printed: {what}",
    "word.a_variable": "a variable",
    "word.an_op": "an op",
    "word.this_tensor": "this tensor",
    # ---- tv.interact -----------------------------------------------------------------
    "ui.control.slope": "slope of",
    "ui.interact.changed": "The graph changed shape at {where} ({what}): a Python if or loop in {fn} read an "
                           "input's value and took another path, so the boxes were laid out again.",
    "ui.interact.ops": _graph_change,
    "ui.interact.rewired": "the same ops, wired differently",
    "ui.interact.stops": "the same ops, but the gradient stops at other places",
    "ui.interact.raised": "{call} raised {error}. Fix {fn}, or move the slider back.",
    "ui.interact.returned": "{call} returned {got}: return the target tensor, or a dict of them such as "
                            "{{'loss': loss}}.",
    "ui.interact.renamed": "{call} returned the targets {got}, but its first call returned {first}: return the same "
                           "names every time (the target menu is made from them).",
    "ui.interact.empty_range": "The range of {name} is empty (min {lo} ≥ max {hi}): set its min below its max.",
    "ui.interact.kept": "The picture still shows {good}.",
    "ui.slope.title": "{y} against {x}",
    "ui.slope.tangent": "tangent at {x} = {x0}: slope d{y}/d{x} = {slope} (TensorFlow's gradient)",
    "ui.slope.none": "d{y}/d{x} is None ({reason}): no tangent, even where the curve moves",
    "ui.slope.sum": "{y} has shape {shape}: the curve is its sum (TF's gradient of a non-scalar target is the "
                    "gradient of its sum)",
    "ui.slope.failed": "the function failed at {n} of {total} sample points (gaps in the curve)",
    "ui.slope.legend": "tangent, slope {slope}",
    # ---- quiz: predict, then reveal ----------------------------------------------------
    "quiz.title": "Step {k}/{n}: {node}: predict the number marked ?",
    "quiz.q.seed": "The backward pass starts at {target}. What is d{target}/d{target}?",
    "quiz.q.edge": "{node} received {value}. What gradient does it pass back to {to}?",
    "quiz.q.node": "What is the gradient of {target} with respect to {node}?",
    "quiz.q.local": "The chain rule at this step: its local derivative {d} = {formula}, at {at}. What is {d} here?",
    "quiz.q.product": "The chain rule: {left} = {dp} · {d} = {g} × ? = {result}. What is the missing factor {d}?",
    "quiz.q.registered": "TF's registered gradient for {op}",
    "quiz.hint.number": "Type a number.",
    "quiz.hint.tensor": "Type its {size} numbers, or one number if they are all equal.",
    "quiz.hint.norm": "It is a {shape} tensor: type its norm ‖·‖.",
    "quiz.right": "Right! You typed {typed}; TensorFlow computed {value}.",
    "quiz.wrong": "Not quite: you typed {typed}; TensorFlow computed {value}.",
    "quiz.revealed": "Revealed: TensorFlow computed {value}.",
    "quiz.unreadable": "Type a number first (or all the numbers asked for), or press reveal.",
    "quiz.score": "Score: {right} right, {wrong} wrong, {revealed} revealed ({steps} steps)",
    "quiz.check": "check",
    "quiz.reveal": "reveal",
    "quiz.reset": "reset score",
    "quiz.placeholder": "your prediction",
    "quiz.table": "the table of gradients (it gives the answers away)",
    "quiz.hidden_panel": "The table of gradients appears once the last step is answered.",
    # ---- hist.plot ---------------------------------------------------------------------
    "plot.loss": "loss",
    "plot.no_loss": "no loss recorded",
    "plot.title": "Training history: {n} steps{note}",
    "plot.merged": " ({points} points, min-max bands)",
    "plot.grad_log": "‖g‖ (log)",
    "plot.rel_log": "‖g‖ / ‖w‖ (log)",
    "plot.by.layer": "layer",
    "plot.by.variable": "variable",
    "plot.colorbar": "{by} (0 = first, {last} = last)",
    "plot.raw": "raw",
    "plot.clipped": "clipped",
    "plot.nan": "NaN / Inf gradients",
    "plot.flag": "flag: {label}",
    "plot.kind.vanishing": "vanishing",
    "plot.kind.exploding": "exploding",
    "plot.kind.nan": "NaN / Inf",
    "plot.kind.no_gradient": "no gradient",
    "layers.title": "Gradient norm by {by} at step {step}{loss}",
    "layers.loss": ", loss {loss}",
    "layers.axis": "layer",
    "layers.axis_of": "layer of {prefix}",
    "layers.bar": "gradient norm",
    "compare.title": "Gradient norm by {by}: step {a} against step {b}",
    "compare.step": "step {step}",
    "compare.grew": "‖g‖ grew",
    "compare.shrank": "‖g‖ shrank",
    "compare.ratio_axis": "‖g‖ at step {b} / ‖g‖ at step {a} (log scale)",
    "plot.norms": "gradient norm per {by}",
    "plot.norms_rel": "gradient norm / weight norm per {by}",
    "plot.clip_global": "clipping: one global scale for every gradient, engaged {engaged}/{steps} steps ({fraction}), "
                        "strongest ×{scale}",
    "plot.clip_each": "clipping: clipped / raw norm per {by} (legend: steps clipped / recorded)",
    "plot.every": "every gradient",
    "plot.clip_axis": "clipped / raw",
    "plot.step": "step",
    "compare.col.layer": "layer",
    "compare.col.grad_at": "‖g‖ at {step}",
    "compare.col.grad_ratio": "‖g‖ b/a",
    "compare.col.rel_at": "‖g‖/‖w‖ at {step}",
    "compare.col.rel_ratio": "‖g‖/‖w‖ b/a",
    "compare.col.weight_ratio": "‖w‖ b/a",
    # ---- the run panel of tv.explore(hist) ---------------------------------------------
    "run.loss": "loss{scale}: {loss} at step {step}",
    "run.no_loss": "loss{scale}: none at step {step}",
    "run.log_scale": " (log scale)",
    "run.norms": "gradient norm ‖g‖ by layer{of} at step {step} (log scale)",
    "run.of": " of {prefix}",
    "run.absent": "not in this step",
    "run.flag": "flag: {kind} (condition holds at this step)",
    # ---- the chain rule at each step (gradients.chain_rule) ---------------------------
    "chain.seed": "start at {target}: ∂{target}/∂{target} = {seed}",
    "chain.seed_value": "start at {target} = {value}: ∂{target}/∂{target} = {seed}",
    "chain.sum": lambda left, parts, total, n, consumers, **_: (
        f"{left} = Σ over its {n} uses ({consumers}) = {parts}" + (f" = {total}" if total else "")),
    "chain.total": "{d} = {value}",
    "chain.read_part": "{d}, part {i} of {n} (one read of the variable): {value}",
    "chain.read_total": "{d} = Σ over its {n} reads = {value}",
    "chain.stopped": "{d} = None: {reason}",
    "chain.registered": "(∂ by TF's registered gradient for {op})",
    "chain.registered_of": "TF's registered gradient for {op} applied to {g}",
    "chain.unbroadcast": "(summed over the axes it was broadcast along)",
    "chain.group": "{name} takes in ‖g‖ {norm_in} at its outputs ({outputs}) and passes out ‖g‖ {norm_out} to its inputs ({inputs})",
    "chain.group_nothing_in": "nothing has reached {name} yet",
    "chain.group_nothing_out_yet": "{name} takes in ‖g‖ {norm_in} at its outputs ({outputs}); nothing has left it for its inputs yet",
    "chain.group_nothing_out": "{name} takes in ‖g‖ {norm_in} at its outputs ({outputs}) and passes nothing out to its inputs",
    "chain.as_arg": "as {arg}: {line}",
    "chain.custom": "(∂ by the backward function {via} was given for {op})",
    "chain.custom_of": "the backward function {via} was given for {op}, applied to {g}",
    "chain.scalar": "scalar",  # a shape of no axes, in a vector–Jacobian line
    "chain.vjp": "{g} = {product}: {shapes} → {shape}, ‖{g}‖ {norm}{values}",
    "chain.where": "({then} if {test} else {otherwise})",
    "chain.and": "{a} and {b}",
    "chain.or": "{a} or {b}",
}
MESSAGES.update(NUMERIC)
