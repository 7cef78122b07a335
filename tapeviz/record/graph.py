"""TapeGraph: what the tape saw, as a networkx.MultiDiGraph plus a tensor store.

Nodes are the things a student would point at: variables, constants, watched tensors and
ops. A variable read (``ReadVariableOp``) is folded into its variable's node, so ``x``
appears once however often it is read. Edges are tensors flowing from producer to
consumer, keyed by the consumer's input position: ``x * x`` gives two parallel edges.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import networkx as nx
import numpy as np

from ..messages import Phrase
from .capture import Capture, function_body
from .numpy_exports import Export
from .records import OpRecord, is_trainable
from .values import format_bytes, format_value, summarize

_Flow = TypeVar("_Flow")  # what flow_of keeps: a GradientFlow (flow.py comes later in the pipeline)
#: Tensors up to this many bytes keep their full value; larger ones keep a summary.
DEFAULT_MAX_VALUE_BYTES = 1 << 20
#: Total bytes of values one capture keeps before it falls back to summaries only.
DEFAULT_BUDGET_BYTES = 64 << 20

STATEFUL_OPS = frozenset(
    {
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "ResourceScatterAdd",
        "ResourceScatterSub",
        "ResourceScatterUpdate",
        "ResourceScatterMul",
        "ResourceScatterDiv",
        "ResourceScatterMin",
        "ResourceScatterMax",
        "ResourceScatterNdUpdate",
        "ResourceScatterNdAdd",
        "ResourceScatterNdSub",
    }
)


@dataclass
class TensorInfo:
    """One tensor the tape saw: where it came from and what it held."""

    id: int
    dtype: str
    shape: tuple
    node: Any  # producing node id
    index: int  # output position at the producer
    value: np.ndarray | None  # full value, or None when only a summary is kept
    name: str | None = None  # the Python name the user bound it to, if any
    source: Capture | None = field(default=None, repr=False)  # where its value can be read again
    _summary: dict | None = field(default=None, repr=False)

    @property
    def trainable(self) -> bool:
        return is_trainable(self.dtype)

    @property
    def ref(self):
        """The EagerTensor itself (e.g. to ask tape.gradient about it)."""
        return self.source.tensor(self.id) if self.source is not None else None

    @property
    def summary(self) -> dict:
        """Shape, dtype and statistics (min, max, mean, norm, nan, inf), computed on first use."""
        if self._summary is None:
            arr = self.value
            if arr is None and self.source is not None:
                arr = self.source.value_view(self.id)  # a view, not a copy
            self._summary = summarize(arr) if arr is not None else {"shape": self.shape, "dtype": self.dtype}
        return self._summary


_FUNCTION_PREFIXES = ("__forward_", "__inference_", "__backward_")


def _custom_kind(op: OpRecord) -> dict:
    """How an op with its own backward function got on the tape, and a readable name:
    a tf.function call ('__forward_f_27' -> f) or a tf.custom_gradient function."""
    if not op.custom:
        return {}
    name = op.op_type
    for prefix in _FUNCTION_PREFIXES:
        if name.startswith(prefix):
            base = name[len(prefix) :]
            head, _, tail = base.rpartition("_")
            return {"via": "tf.function", "function": head if tail.isdigit() and head else base}
    return {"via": "tf.custom_gradient", "function": name}


_NO_KEY = object()


def _equality_key(value: np.ndarray):
    """Bytes that are equal exactly when two arrays of one shape and dtype are
    ``np.array_equal``: None when the array holds a NaN (equal to nothing), _NO_KEY
    for dtypes without such bytes (those are compared one by one)."""
    kind, size = value.dtype.kind, value.dtype.itemsize
    if not ((kind == "f" and size in (2, 4, 8)) or (kind == "c" and size in (8, 16))):
        return _NO_KEY
    if np.isnan(value).any():
        return None
    # -0.0 == 0.0 but their bytes differ: adding zero turns every -0.0 into 0.0.
    return np.add(value, value.dtype.type(0)).tobytes()


class TapeGraph:
    """The captured program: ``nx`` is the graph, ``tensors`` the values on its edges."""

    def __init__(
        self,
        capture: Capture,
        *,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
    ):
        self.capture = capture.settle()
        self.nx = nx.MultiDiGraph()
        self.tensors: dict[int, TensorInfo] = {}
        self.max_value_bytes = max_value_bytes
        self.budget_bytes = budget_bytes
        self.kept_bytes = 0  # bytes of tensor values this graph holds (never above budget_bytes)
        self.truncated = 0  # tensors whose value was dropped because the budget ran out
        self.oversized = 0  # tensors above max_value_bytes: only their summary is kept
        self.op_node: dict[int, Any] = {}  # op index -> node id
        self._build()

    # -- construction ------------------------------------------------------------------
    def _build(self) -> None:
        cap = self.capture
        g = self.nx
        for op in cap.ops:
            handle = cap.variable_reads(op)
            if handle is not None:
                node = self._variable_node(handle)
                self.op_node[op.index] = node
                self._add_tensor(op.outputs[0], node, 0)
                g.nodes[node]["reads"].append(op.index)
                continue
            if op.op_type == "VarHandleOp" and op.outputs and cap.handle_of(op.outputs[0]) is not None:
                # A variable created in the block (a Keras layer built by its first call):
                # the handle this op makes *is* the variable, so it is the variable's node,
                # not a second node holding the same tensor (and the variable's gradient).
                node = self._variable_node(op.outputs[0])
                self.op_node[op.index] = node
                self._add_tensor(op.outputs[0], node, 0)
                continue
            node = f"op{op.index}"
            self.op_node[op.index] = node
            g.add_node(
                node,
                kind="op",
                op_type=op.op_type,
                scope=op.scope,
                recorded=op.recorded,
                op_index=op.index,
                name=None,
                outputs=list(op.outputs),
                **_custom_kind(op),
            )
            for k, t in enumerate(op.inputs):
                src = self._producer(t)
                g.add_edge(src, node, key=k, tensor=t, kind="data", dst_index=k, src_index=self.tensors[t].index)
            for i, o in enumerate(op.outputs):
                self._add_tensor(o, node, i)
                info = self.tensors[o]
                if op.custom and info.node != node:
                    # tf.custom_gradient re-declares what other ops computed: the tape
                    # differentiates this entry, so later uses hang off it.
                    g.nodes[info.node]["replaced_by"] = node
                    info.node, info.index = node, i
        for handle in cap.unread:  # named by the block, never read: an untaken branch
            self._variable_node(handle)
        self._link_outside_values()
        self._unique_variable_names()
        for n, d in g.nodes(data=True):
            d["label"] = self._label(n, d)

    def _unique_variable_names(self) -> None:
        """Unnamed tf.Variables are all called "Variable": number the repeats (Variable,
        Variable_2, ...) so names can key dictionaries and tell boxes apart."""
        seen: dict[str, int] = {}
        for _, d in self.nx.nodes(data=True):
            if d["kind"] != "variable":
                continue
            base = d["name"]
            seen[base] = seen.get(base, 0) + 1
            if seen[base] > 1:
                d["name"] = f"{base}_{seen[base]}"

    def _variable_node(self, handle: int) -> str:
        node = f"var{handle}"
        if node not in self.nx:
            var = self.capture.variables.get(handle) or self.capture.unread[handle]
            self.nx.add_node(
                node,
                kind="variable",
                name=var.name,
                path=var.path,  # the Keras variable path, if it is one
                trainable=var.trainable,
                watched=handle in self.capture.watched_variable_ids,
                handle=handle,
                variable=var.variable,
                reads=[],
                outputs=[],
                scope="",
                recorded=True,
                unread=handle in self.capture.unread,
            )
        return node

    def variable_node(self, var: Any) -> str:
        """The node of a tf.Variable (or Keras variable), added now if the tape never saw it
        read: ``tape.gradient(v, [v, w])`` asks about v as a target even then. The graph
        grows by that one unconnected node (nothing recorded changes)."""
        node = self.node_of(var)
        if node is not None:
            return node
        inner = var if hasattr(var, "handle") and not isinstance(getattr(var, "path", None), str) else var.value
        record = self.capture.note_unread(inner)
        node = self._variable_node(record.handle)
        self.nx.nodes[node]["label"] = self._label(node, self.nx.nodes[node])
        self.__dict__.pop("forward_order", None)  # computed again with the new node
        return node

    def _producer(self, t: int):
        info = self.tensors.get(t)
        if info is not None:
            return info.node
        cap = self.capture
        if cap.handle_of(t) is not None:  # a resource handle (assign ops)
            node = self._variable_node(t)
            # Every edge names a tensor in self.tensors, the handle included.
            self._add_tensor(t, node, 0)
            return node
        node = f"t{t}"
        if cap.is_watched_tensor(t):
            kind = "watched"
        elif cap.created_in_block(t):
            kind = "constant"
        else:
            kind = "input"
        self.nx.add_node(node, kind=kind, name=cap.python_name(t), outputs=[t], scope="", recorded=kind == "watched")
        self._add_tensor(t, node, 0)
        return node

    def _add_tensor(self, t: int, node, index: int) -> None:
        if t in self.tensors:
            return
        cap = self.capture
        facts = cap.facts(t)
        value, shape = None, facts.shape
        arr = cap.value_view(t)
        if arr is not None:
            shape = arr.shape
            nbytes = arr.nbytes
            if nbytes > self.max_value_bytes:
                self.oversized += 1
            elif self.kept_bytes + nbytes <= self.budget_bytes:
                value = np.array(arr, copy=True)
                self.kept_bytes += nbytes
            else:
                self.truncated += 1
        name = cap.python_name(t)
        self.tensors[t] = TensorInfo(
            id=t, dtype=facts.dtype, shape=shape, node=node, index=index, value=value, name=name, source=cap
        )
        if name and self.nx.nodes[node].get("name") is None:
            self.nx.nodes[node]["name"] = name
        listed = cap.list_name(t)
        if listed:  # not its name: one of a list's values (a loop's), which what gathers them is named by
            self.nx.nodes[node]["listed"] = listed

    def _link_outside_values(self) -> None:
        """A constant made in the block that equals a value exported by .numpy() came back
        from outside TensorFlow: draw that round trip as an 'outside' edge.

        Each constant is linked to the first exported value (in export order) that equals
        it. Exported values are indexed by shape, dtype and contents, so a program that
        exports a value per step and makes a constant per step costs linear time, not
        (exports x constants) comparisons."""
        exported = [
            self.tensors[tid]
            for tid in self.capture.exported
            if tid in self.tensors and self.tensors[tid].value is not None and self.tensors[tid].trainable
        ]
        if not exported:
            return
        # (shape, dtype) -> (contents key -> [(position, exported)]) or, for dtypes without
        # an exact key, a plain list [(position, exported)] compared one by one.
        index: dict[tuple, Any] = {}
        for pos, e in enumerate(exported):
            assert e.value is not None  # (kept above: values only)
            bucket_key = (e.shape, e.value.dtype)
            key = _equality_key(e.value)
            if key is _NO_KEY:
                index.setdefault(bucket_key, []).append((pos, e))
            elif key is not None:  # None: holds a NaN, equal to nothing
                index.setdefault(bucket_key, {}).setdefault(key, []).append((pos, e))
        by_shape: dict[tuple, list] = {}
        for shape, dtype in index:
            by_shape.setdefault(shape, []).append(dtype)
        for n, d in list(self.nx.nodes(data=True)):
            if d["kind"] != "constant":
                continue
            c = self.tensors[d["outputs"][0]]
            if c.value is None or c.shape not in by_shape:
                continue
            best = None
            for dtype in by_shape[c.shape]:
                bucket = index[(c.shape, dtype)]
                try:
                    cv = c.value.astype(dtype, copy=False)
                except (TypeError, ValueError):  # e.g. a string constant that is no number
                    continue
                if isinstance(bucket, dict):
                    key = _equality_key(cv)
                    candidates = bucket.get(key, ()) if key is not None and key is not _NO_KEY else ()
                else:
                    candidates = bucket
                for pos, e in candidates:
                    if best is not None and pos >= best[0]:
                        break
                    if e.node != n and np.array_equal(e.value, cv):
                        best = (pos, e)
                        break
            if best is not None:
                e = best[1]
                self.nx.add_edge(e.node, n, key="outside", tensor=e.id, kind="outside", dst_index=None)
                d["came_from"] = e.node

    def export_of(self, tid: int) -> Export | None:
        """How tensor `tid`'s value left TensorFlow (.numpy(), float(), a NumPy call), if it did."""
        return self.capture.exported.get(tid)

    def _label(self, n, d) -> str:
        kind = d["kind"]
        if kind == "variable":
            return d["name"]
        if kind == "op":
            return d["op_type"]
        if kind == "constant":
            return format_value(self.tensors[d["outputs"][0]].value, self.tensors[d["outputs"][0]].summary)
        return d.get("name") or kind

    # -- queries -------------------------------------------------------------------------
    @property
    def budget_note(self) -> str | None:
        """A sentence for the picture when values were dropped to stay within budget_bytes."""
        if not self.truncated:
            return None
        n = self.truncated
        what = "value of 1 tensor" if n == 1 else f"values of {n} tensors"
        return f"{what} not kept: over the {format_bytes(self.budget_bytes)} budget"

    def node_of(self, obj: Any) -> str | None:
        """The node for a tf.Variable (or Keras variable), a tensor seen by the tape, or a node id."""
        if isinstance(obj, str) and obj in self.nx:
            return obj
        key = self.capture.key_of(obj)
        if key is None:
            return None
        node = f"var{key}"
        if node in self.nx and self.nx.nodes[node]["kind"] == "variable":
            return node
        info = self.tensors.get(key)
        return info.node if info is not None else None

    def key_of(self, obj: Any) -> int | None:
        """The id the graph uses for a tensor or variable (its handle id), or None."""
        return self.capture.key_of(obj)

    def value_of(self, node: str) -> np.ndarray | None:
        """The node's forward value: the first read for a variable, output 0 otherwise."""
        info = self.output_info(node)
        return None if info is None else info.value

    def output_info(self, node: str) -> TensorInfo | None:
        """What the tape kept of the node's output 0 (a variable's: its first read), or None."""
        d = self.nx.nodes[node]
        if d["kind"] == "variable":
            reads = d["reads"]
            if not reads:
                return None
            return self.tensors[self.capture.ops[reads[0]].outputs[0]]
        outs = d.get("outputs") or []
        return self.tensors[outs[0]] if outs else None

    def display_name(self, node: str) -> str:
        """How messages refer to a node: its Python name, else its label."""
        d = self.nx.nodes[node]
        if d.get("name"):
            return d["name"]
        if d["kind"] == "op":
            return Phrase("name.op", op=d["op_type"])
        if d["kind"] == "constant":
            return Phrase("name.constant", label=d["label"])
        return d["label"]

    def data_edges(self, node: str | None = None, out: bool = True) -> list[tuple[str, str, int, dict[str, Any]]]:
        """(producer, consumer, key, data) of the edges that carry a tensor out of (``out``)
        or into ``node`` (every node's when None)."""
        edges = self.nx.out_edges(node, keys=True, data=True) if out else self.nx.in_edges(node, keys=True, data=True)
        return [(u, v, k, d) for u, v, k, d in edges if d["kind"] == "data"]

    @functools.cached_property
    def forward_order(self) -> list:
        """The nodes in topological order (inputs first). Computed once, as the flow's
        classification and the shown stage both walk it: the graph does not change after
        its block."""
        return list(nx.topological_sort(self.nx))

    def flow_of(self, target: Any, sources: Any, make: Callable[[], _Flow]) -> _Flow:
        """The flow of ``target`` (and ``sources``) over this graph: made by ``make()`` once,
        then kept (a graph does not change after its block; see tv.flow)."""
        cache = self.__dict__.setdefault("_flows", {})
        flat = (
            [target]
            if not isinstance(target, (list, tuple, dict))
            else list(target.values() if isinstance(target, dict) else target)
        )
        keys = tuple(self.key_of(t) for t in flat)
        if None in keys:  # not something the graph names: let the flow say what is wrong
            return make()
        src = (
            None
            if sources is None
            else tuple(self.key_of(s) for s in (sources if isinstance(sources, (list, tuple)) else [sources]))
        )
        key = (keys, src)
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def assigned_variable(self, node: str) -> str | None:
        """The variable an assign op (AssignVariableOp, ...) writes into, or None."""
        for u, _, _, d in self.data_edges(node, out=False):
            if self.nx.nodes[u]["kind"] == "variable" and self.tensors[d["tensor"]].dtype == "resource":
                return u
        return None

    def function_body(self, node: str) -> dict | None:
        """The inner ops of a tf.function call node (see capture.function_body), or None."""
        d = self.nx.nodes[node]
        if d.get("via") != "tf.function":
            return None
        if "body" not in d:
            d["body"] = function_body(d["op_type"])
        return d["body"]

    def functions(self) -> list[str]:
        """Nodes that are tf.function calls (each can be expanded into its body)."""
        return [n for n, d in self.nx.nodes(data=True) if d.get("via") == "tf.function"]

    def __len__(self) -> int:
        return self.nx.number_of_nodes()

    def __repr__(self) -> str:
        return f"TapeGraph({self.nx.number_of_nodes()} nodes, {self.nx.number_of_edges()} edges)"
