"""Why a gradient stops, as data: a reason, a finer cause, and the facts of the case.

A :class:`StopReason` says *where* nothing flows (a node or an edge), *why* (a
:class:`Reason`, the eight codes a student learns, refined by a :class:`Cause`), *where
the path was actually cut* (``origin``) and the facts needed to say it in a sentence:
names of the things involved, the op type, the NumPy call that took a value out of
TensorFlow. Sentences in every language are written from these facts by
``tapeviz.messages``; nothing ever parses a sentence back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Reason(str, Enum):
    """Why no gradient flows; compares equal to its code string ("stop_gradient")."""

    STOP_GRADIENT = "stop_gradient"
    NOT_RECORDED = "not_recorded"
    NOT_WATCHED = "not_watched"
    INTEGER_DTYPE = "integer_dtype"
    NO_GRADIENT = "no_gradient"
    STATEFUL = "stateful"
    OUTSIDE_TF = "outside_tf"
    UNCONNECTED = "unconnected"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Cause(str, Enum):
    """The particular case of a reason; picks the sentence and the advice."""

    # stop_gradient
    STOP_EDGE = "stop_edge"  # the edge into a tf.stop_gradient op
    STOP_OUTPUT = "stop_output"  # what comes out of tf.stop_gradient
    # not_recorded
    PAUSED = "paused"  # computed inside tape.stop_recording()
    BEFORE_RESET = "before_reset"  # computed before tape.reset()
    READ_BEFORE_RESET = "read_before_reset"  # a variable read only before tape.reset()
    WATCH_RESET = "watch_reset"  # tape.reset() erased a tape.watch()
    # not_watched
    NON_TRAINABLE = "non_trainable"  # a variable created with trainable=False
    UNWATCHED_VARIABLE = "unwatched_variable"  # watch_accessed_variables=False
    CONSTANT = "constant"  # a constant made inside the block
    PLAIN_TENSOR = "plain_tensor"  # a tensor from outside the block, never watched
    WATCHED_LATE = "watched_late"  # computed before its input was watched
    DERIVED = "derived"  # computed only from unwatched values
    # integer_dtype
    INTEGER = "integer"
    # no_gradient
    NOT_DIFFERENTIABLE = "not_differentiable"  # the op's gradient is None (Round, ...)
    INTEGER_RESULT = "integer_result"  # an op turned floats into integers (ArgMax, Equal)
    SHAPE_ONLY = "shape_only"  # an op read only the shape of a float value (Shape, Size, Rank)
    NOT_REGISTERED = "not_registered"  # no gradient registered for the op: tape.gradient raises LookupError
    # stateful
    ASSIGNED = "assigned"  # written into a variable by assign*
    # outside_tf
    ROUND_TRIP = "round_trip"  # the same value came back as a constant
    LEFT = "left"  # the value left TF (seen); the target depends on a tensor made from NumPy afterwards
    LEFT_UNSEEN = "left_unseen"  # a dead end; the target depends on a tensor made from NumPy afterwards
    # unconnected
    NEVER_USED = "never_used"  # a variable never used while the tape recorded
    NOT_SEEN = "not_seen"  # something the tape never saw at all
    CUSTOM_GRADIENT = "custom_gradient"  # a tf.custom_gradient supplies the gradient instead
    NOT_LEADING = "not_leading"  # the consumer does not lead to the target
    NO_DEPENDENCY = "no_dependency"  # the target does not depend on it

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Facts:
    """What a sentence about a stop may name. Names are as the user knows them
    (Python names, Keras paths); code is written as code (``tf.cast(i, tf.float32)``)."""

    subject: str = ""  # the thing that gets no gradient (or the edge's producer)
    consumer: str = ""  # the edge's consumer
    target: str = ""  # the target's name
    op: str = ""  # an op type: StopGradient, Round, AssignAddVariableOp, ArgMax ...
    variable: str = ""  # the variable an assign writes into
    source: str = ""  # what goes into tf.stop_gradient / whose watch came late / what left TF
    dtype: str = ""  # int32, int64, bool ...
    label: str = ""  # a constant's value as shown
    via: str = ""  # how a value left TF: ".numpy()", "float()", "np.mean(...)"
    expression: str = ""  # the user's code that did it
    line: int = 0
    back: str = ""  # the user's code where a NumPy value became a tensor again
    back_line: int = 0
    tf_equivalent: str = ""  # what keeps it in TF: "tf.reduce_mean"
    watch: str = ""  # the tape.watch(...) call that would help
    keras: bool = False  # the subject is a Keras variable (watch its .value)
    named: bool = False  # the subject has a Python name of its own

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StopReason:
    """Why nothing flows through an edge or into a node."""

    where: Any  # a node id, or an edge (u, v, key)
    reason: Reason
    cause: Cause
    facts: Facts = field(default_factory=Facts)
    origin: Any = None  # the node or edge where the path was actually cut

    @property
    def message(self) -> str:
        """One plain English sentence a student understands."""
        return self.text("en")

    def text(self, lang: str = "en") -> str:
        """The sentence in another language (see tapeviz.messages)."""
        from ..messages import describe

        return describe(self, lang)

    def moved(self, where) -> StopReason:
        """The same stop, reported at another place (a cause propagating downstream)."""
        return StopReason(where, self.reason, self.cause, self.facts, self.origin)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


#: NumPy functions and the TensorFlow ops that do the same on the tape.
TF_EQUIVALENTS = {
    "mean": "tf.reduce_mean",
    "sum": "tf.reduce_sum",
    "prod": "tf.reduce_prod",
    "max": "tf.reduce_max",
    "amax": "tf.reduce_max",
    "min": "tf.reduce_min",
    "amin": "tf.reduce_min",
    "std": "tf.math.reduce_std",
    "var": "tf.math.reduce_variance",
    "exp": "tf.exp",
    "log": "tf.math.log",
    "sqrt": "tf.sqrt",
    "square": "tf.square",
    "abs": "tf.abs",
    "absolute": "tf.abs",
    "tanh": "tf.tanh",
    "sin": "tf.sin",
    "cos": "tf.cos",
    "dot": "tf.tensordot",
    "matmul": "tf.matmul",
    "einsum": "tf.einsum",
    "concatenate": "tf.concat",
    "stack": "tf.stack",
    "where": "tf.where",
    "clip": "tf.clip_by_value",
    "maximum": "tf.maximum",
    "minimum": "tf.minimum",
    "power": "tf.pow",
    "reshape": "tf.reshape",
    "transpose": "tf.transpose",
    "linalg.norm": "tf.norm",
    "norm": "tf.norm",
    "cumsum": "tf.cumsum",
    "average": "tf.reduce_mean",
    "outer": "tf.tensordot(a, b, axes=0)",
}


def tf_equivalent(numpy_function: str | None) -> str:
    """The TensorFlow op that does what a NumPy function did ('' when unknown)."""
    if not numpy_function:
        return ""
    return TF_EQUIVALENTS.get(numpy_function, "")
