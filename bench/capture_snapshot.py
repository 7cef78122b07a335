"""What tapeviz records, dumped as text for a byte-for-byte comparison of two versions: a change
meant to make recording cheaper must leave every file equal.

For each program (bench_core's programs, the seed examples, every guide program of
tests/support/guide_programs.py, PINN and WGAN-GP with helpers, the gallery and MORE models of
tests/support/gallery_models.py) it writes ``<name>.txt``: every OpRecord, function and
derivative record, loss and layer scope, export, re-entry, variable, name, and every graph
node and edge with its attributes (values as dtype, shape and a hash); and ``<name>.svg``:
the default picture of the flow. A guide program that records in graph mode has no tape and
is listed as skipped.

Run from a checkout (its tapeviz is the one dumped):
    PYTHONPATH=$PWD .venv/bin/python bench/capture_snapshot.py OUT_DIR [NAME_SUBSTRING]
then ``diff -r OUT_BEFORE OUT_AFTER``. Tensor ids (in node names and records) count every
tensor the process made before, so compare runs over the same programs: a NAME_SUBSTRING
filter gives other ids than a full run. A file name of the checkout itself (the seed examples
live in tapeviz/examples.py) differs between two checkouts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.picture.scene import Scene

_ROOT = Path(__file__).resolve().parent.parent


def _text(v: Any) -> str:
    """A stable text for a recorded value: arrays by dtype, shape and hash; no addresses."""
    if isinstance(v, np.ndarray):
        digest = hashlib.sha1(np.ascontiguousarray(v).tobytes()).hexdigest()[:12]
        return f"nd{v.dtype}{v.shape}:{digest}"
    if isinstance(v, (tf.Tensor, tf.Variable)):
        try:
            return "T:" + _text(np.asarray(v))
        except Exception:  # noqa: BLE001 - a resource or symbolic tensor
            return "T?" + type(v).__name__
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = (f for f in dataclasses.fields(v) if f.name != "variable")
        return type(v).__name__ + "(" + ", ".join(f"{f.name}={_text(getattr(v, f.name))}" for f in fields) + ")"
    if isinstance(v, dict):
        items = sorted(v.items(), key=lambda kv: repr(kv[0]))
        return "{" + ", ".join(f"{_text(k)}: {_text(x)}" for k, x in items) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_text(x) for x in v) + ")"
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(sorted(_text(x) for x in v)) + "}"
    if callable(v) and not isinstance(v, type):
        return "fn:" + getattr(v, "__qualname__", type(v).__name__)
    r = repr(v)
    return r.split(" at 0x")[0] + ">" if " at 0x" in r else r


def dump(out: Path, name: str, tape: Any, target: Any) -> None:
    """Write ``<name>.txt`` and ``<name>.svg`` for one recorded tape."""
    g = tape.graph
    cap = g.capture
    lines = ["op " + _text(op) for op in cap.ops]
    lines += [
        "functions " + _text(cap.functions),
        "derivatives " + _text(cap.derivatives),
        "loss_scopes " + _text(cap.loss_scopes),
        "layer_scopes " + _text(cap.layer_scopes),
        "exported " + _text(cap.exported),
        "reentries " + _text(cap.reentries),
        "variables " + _text(cap.variables),
        "unread " + _text(cap.unread),
        "names " + _text(sorted(cap._names.values())),  # keyed by id(): only the names compare
    ]
    lines += [f"node {n} " + _text(dict(g.nx.nodes[n])) for n in sorted(g.nx.nodes, key=str)]
    edges = sorted(g.nx.edges(keys=True, data=True), key=lambda e: (str(e[0]), str(e[1]), e[2]))
    lines += [f"edge {u} {v} {k} " + _text(d) for u, v, k, d in edges]
    svg = ""
    if target is not None:
        try:
            svg = tv.to_svg(Scene(g, tv.flow(tape, target)))
        except Exception as e:  # noqa: BLE001 - the failure itself is what is compared
            lines.append("flow error " + repr(e)[:300])
    safe = "".join(c if c.isalnum() else "_" for c in name)
    (out / f"{safe}.txt").write_text("\n".join(lines) + "\n")
    (out / f"{safe}.svg").write_text(svg)


def programs() -> dict[str, Callable[[], tuple[Any, Any]]]:
    """name -> a function recording the program and returning (tape, target)."""
    for folder in (_ROOT / "bench", _ROOT / "tests", _ROOT / "tests" / "support"):
        sys.path.insert(0, str(folder))
    import bench_core
    from support import gallery_models, guide_programs
    from support import higher_order_models as hom

    from tapeviz import examples

    found: dict[str, Callable[[], tuple[Any, Any]]] = {}
    for name, (prog, _) in bench_core.programs().items():

        def bench(prog=prog):
            with tv.GradientTape(persistent=True) as t:
                loss = prog()
            return t, loss

        found["bench " + name] = bench
    for name, ex in examples.EXAMPLES.items():
        found["example " + name] = lambda ex=ex: (lambda r: (r.tape, r.target))(ex.run())
    for name, fn in guide_programs.PROGRAMS.items():
        found["guide " + name] = lambda fn=fn: (lambda r: (r.tape, r.target))(fn(tv.GradientTape))
    found["pinn"] = lambda: (lambda p: (p.tape, p.loss))(hom.pinn())
    found["pinn tv inner"] = lambda: (lambda p: (p.tape, p.loss))(hom.pinn(tv.GradientTape))
    found["wgan helpers"] = lambda: (lambda p: (p.tape, p.loss))(hom.wgan_gp(helpers=True))
    for name, fn in {**gallery_models.GALLERY, **gallery_models.MORE}.items():
        found["gallery " + name] = lambda fn=fn: (lambda s: (s.tape, s.loss))(fn())
    return found


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        raise SystemExit("usage: capture_snapshot.py OUT_DIR [NAME_SUBSTRING]")
    out, only = Path(args[0]), (args[1] if len(args) > 1 else "")
    out.mkdir(parents=True, exist_ok=True)
    for name, record in programs().items():
        if only not in name:
            continue
        try:
            tape, target = record()
            if tape is None:
                print("skipped (no tape: graph mode)", name, flush=True)
                continue
            dump(out, name, tape, target)
            print("ok", name, flush=True)
        except Exception:  # noqa: BLE001 - report and go on with the others
            print("FAIL", name, traceback.format_exc()[-800:], flush=True)


if __name__ == "__main__":
    main()
