"""Every function and method of the public surface (tapeviz.__all__) has type hints on all
its parameters and its return: they are what an editor shows a user, and what mypy
checks callers against (`make lint` runs mypy on the package)."""

from __future__ import annotations

import inspect

import tapeviz

# The protocol methods Python calls for the user; other dunders are not public surface.
_DUNDERS = {"__init__", "__call__", "__enter__", "__exit__"}


def _public_callables():
    for name in tapeviz.__all__:
        obj = getattr(tapeviz, name)
        if not obj.__module__.startswith("tapeviz"):  # re-exported as it is (tv.fixed is ipywidgets.fixed)
            continue
        if not inspect.isclass(obj):
            yield name, obj
            if inspect.isroutine(obj):
                continue
            obj = type(obj)  # an object called like a function (tv.interact): its methods too
            name = f"{name}:{obj.__name__}"
        # defined by tapeviz (the class or a tapeviz base: History's add is Intake's), not
        # inherited from TF or ipywidgets
        ours = [c for c in obj.__mro__ if c.__module__.startswith("tapeviz")]
        members = {attr: member for c in reversed(ours) for attr, member in vars(c).items()}
        for attr, member in members.items():
            if attr.startswith("_") and attr not in _DUNDERS:
                continue
            if isinstance(member, property):
                yield f"{name}.{attr}", member.fget
            elif isinstance(member, (staticmethod, classmethod)):
                yield f"{name}.{attr}", member.__func__
            elif inspect.isfunction(member):
                yield f"{name}.{attr}", member


def _missing_hints(fn) -> list[str]:
    sig = inspect.signature(fn)
    missing = [
        p
        for p, param in sig.parameters.items()
        if p not in ("self", "cls") and param.annotation is inspect.Parameter.empty
    ]
    if sig.return_annotation is inspect.Signature.empty and fn.__name__ != "__init__":
        missing.append("return")
    return missing


PUBLIC = dict(_public_callables())


def test_the_walk_finds_the_public_surface():
    assert {
        "flow",
        "view",
        "GradientFlow.grad",
        "GraphView.figure",
        "History.add",
        "TapeGraph.node_of",
        "GradientTape.watch",
        "Recording.__exit__",
        "interact:InteractFactory.options",
    } <= set(PUBLIC)


def test_every_public_callable_is_fully_annotated():
    missing = {name: m for name, fn in sorted(PUBLIC.items()) if (m := _missing_hints(fn))}
    assert missing == {}, "add type hints for these parameters / returns"
