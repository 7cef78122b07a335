"""A picture's caption made of its step's chain rule (``caption="chain"``).

The lines are :class:`~tapeviz.gradients.chain_rule.ChainRule`'s (every number TF's, the
words the message catalogues'): the step's own lines, or, when the step's op is drawn
inside a collapsed group's box, the group's line as of that step ("the block takes in ‖g‖
… and passes out ‖g‖ …"), as the explorer shows it.
"""

from __future__ import annotations

from ..gradients.chain_rule import ChainRule
from ..picture.wording import node_title
from .view import GraphView

__all__ = ["CHAIN", "chain_lines", "is_chain"]

#: The caption that asks for each step's chain rule.
CHAIN = "chain"


def is_chain(caption: object) -> bool:
    """Whether ``caption`` asks for the chain rule (``caption="chain"``)."""
    return isinstance(caption, str) and caption == CHAIN


def chain_lines(view: GraphView, step: int, rule: ChainRule | None = None) -> list[str]:
    """The chain rule of ``step`` of the view's backward pass, as lines in the view's language."""
    fl = view.flow
    if fl is None:
        raise ValueError(
            'caption="chain" needs a target: the chain rule is the backward pass\'s; give tv.save a target.'
        )
    rule = rule if rule is not None else ChainRule(fl, view.lang)
    k = fl.check_step(step)
    display = view.display
    box = display.of.get(fl.steps[k].node)
    if k > 0 and box is not None and display.nx.nodes[box].get("kind") == "layer":
        members = [str(m) for m in display.members.get(box, ()) if m in fl.graph.nx]
        name = node_title(fl.graph, box, display, view.lang)
        return rule.group(members, step=k, name=name).lines(view.lang)
    return rule[k].lines(view.lang)
