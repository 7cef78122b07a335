"""The options of a picture, one set for tv.view / draw / save / explore / interact /
export_html and the command line: each option's name, its one default and its meaning.

Why one object: keywords repeated in each function drift apart (one default of ``theme``
None, another "auto", a third "light"). Every function takes the options as keywords
(``tv.save(tape, y, "a.png", theme="dark")``) or as one ``options=tv.Options(...)``
(keywords win over it), and what an option left out means is decided here only.

Adding an option is one line: a field below, with its default and a help text. Every
function above then accepts it as a keyword, ``tapeviz export`` as a flag (``--name``),
and it reaches the picture inside this one value: :class:`~tapeviz.output.view.GraphView`,
the scene, :func:`~tapeviz.picture.visibility.decide` and the explorer's state take an
``Options`` whole, and the code that reads the field is where the option does its work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..messages import DEFAULT, LANGUAGES, check_lang
from .themes import THEMES, Theme

__all__ = ["AUTO", "Collapsed", "Options", "option_names", "option_help"]

#: The default of the options whose value depends on where the picture goes.
AUTO = "auto"
#: What a picture collapses: "auto", True (every group), False (none) or the group names.
Collapsed: TypeAlias = bool | str | Iterable[str]


def _yes_no_auto(text: str) -> bool | str:
    """A command-line value: yes / no / auto."""
    values: dict[str, bool | str] = {"yes": True, "no": False, AUTO: AUTO}
    if text.lower() not in values:
        raise ValueError(f"{text!r}: use yes, no or auto")
    return values[text.lower()]


def _collapsed(text: str) -> Collapsed:
    """A command-line value: yes / no / auto, or group names separated by commas."""
    try:
        return _yes_no_auto(text)
    except ValueError:
        return tuple(name.strip() for name in text.split(",") if name.strip())


def _names(text: str) -> tuple[str, ...]:
    """A command-line value: group names separated by commas."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _option(default: Any, help: str, parse: Callable[[str], Any] | None = None, choices: Any = None) -> Any:
    return field(default=default, metadata={"help": help, "parse": parse, "choices": choices})


@dataclass(frozen=True)
class Options:
    """How a picture is drawn. Every field has one default, the same in every function."""

    theme: str | Theme = _option(
        AUTO,
        "light, dark (JupyterLab's dark colours) or projector (large text, thick lines); "
        "auto: the page's theme in a notebook, light in files",
        choices=(AUTO, *THEMES),
    )
    lang: str = _option(DEFAULT, "language of the picture's words", choices=LANGUAGES)
    show_all: bool = _option(False, "draw every recorded op: nothing hidden, no constant folded into a chip")
    collapsed: Collapsed = _option(
        AUTO,
        "groups drawn as one box: auto (the groups opened down to the deepest level that shows at "
        "most 30 boxes; TF API calls and losses as one box each), yes (every innermost group), no, "
        "or the group names (comma-separated)",
        parse=_collapsed,
    )
    depth: int | None = _option(
        None,
        "levels of groups to open (1: the outermost groups, e.g. the model, are boxes); "
        "unset: the deepest level that shows at most 30 boxes",
        int,
    )
    expand: tuple[str, ...] = _option(
        (),
        "groups to open, with the groups holding them (comma-separated; a group is named by its "
        "path or a unique end of it: conv3_block2)",
        parse=_names,
    )
    repeat_step: int = _option(
        0,
        "the step drawn opened when a model called once per step of a loop (an RL episode) is "
        "opened (expand=, depth=, a click): the steps before and after it stay one box each",
        int,
    )
    magnitude: bool | str = _option(
        AUTO,
        "boxes coloured by ||g|| / ||w||: yes, no, or auto (on in a training run's explorer, off elsewhere)",
        parse=_yes_no_auto,
    )
    wrap: int | None = _option(
        None, "rows of at most this many boxes (a page, a slide); unset: rows that fit a 1,600 px page", int
    )

    def __post_init__(self) -> None:
        for name in ("theme", "magnitude"):  # None means auto too: it is what "not given" reads as
            if getattr(self, name) is None:
                object.__setattr__(self, name, AUTO)
        if not isinstance(self.theme, Theme) and self.theme != AUTO and self.theme not in THEMES:
            raise ValueError(f"Unknown theme {self.theme!r}; use one of 'auto', {', '.join(map(repr, THEMES))}.")
        check_lang(self.lang)
        if isinstance(self.expand, str):  # one group name
            object.__setattr__(self, "expand", (self.expand,))
        elif not isinstance(self.expand, tuple):
            object.__setattr__(self, "expand", tuple(self.expand))
        if isinstance(self.repeat_step, bool) or not isinstance(self.repeat_step, int) or self.repeat_step < 0:
            raise ValueError(f"repeat_step={self.repeat_step!r}: pass a step number >= 0 (0 is the loop's first step)")
        if self.magnitude not in (True, False, AUTO):
            raise ValueError(f"magnitude={self.magnitude!r}: use True, False or 'auto'.")

    @classmethod
    def of(cls, options: Options | None = None, /, **keywords: Any) -> Options:
        """``options`` (default: every default) with the options given as keywords put in;
        an unknown keyword is a TypeError that lists the options."""
        unknown = sorted(set(keywords) - set(option_names()))
        if unknown:
            raise TypeError(
                f"Unknown option {unknown[0]!r}; the options are: {', '.join(option_names())} (see tv.Options)."
            )
        if options is not None and not isinstance(options, Options):
            raise TypeError(f"options= takes a tv.Options, got {type(options).__name__}.")
        return dataclasses.replace(options or cls(), **keywords)

    def in_file(self) -> Options:
        """The options of a picture with no page around it (a file, a Figure, an SVG view):
        the light theme, no magnitude colours unless asked for."""
        return dataclasses.replace(
            self,
            theme="light" if self.theme == AUTO else self.theme,
            magnitude=self.magnitude is True,
        )

    def in_explorer(self, training: bool = False) -> Options:
        """The options of an explorer: theme auto follows the page; magnitude auto is on for
        a training run's explorer (its boxes coloured by how much each layer learns)."""
        return dataclasses.replace(self, magnitude=training if self.magnitude == AUTO else self.magnitude)

    def closing(self, groups: Iterable[str]) -> Options:
        """The options of a picture with exactly these groups closed: ``depth`` and
        ``expand`` chose them (the explorer keeps the groups a state shows, and a view
        opened or closed by hand starts from its groups), so they choose nothing more."""
        return dataclasses.replace(self, collapsed=frozenset(groups), depth=None, expand=())

    def keywords(self) -> dict[str, Any]:
        """Every option as a keyword argument (for GraphView and the explorer's state)."""
        return {name: getattr(self, name) for name in option_names()}


def option_names() -> tuple[str, ...]:
    """The names of the options, in the order of :class:`Options`."""
    return tuple(f.name for f in dataclasses.fields(Options))


def option_help() -> Mapping[str, Mapping[str, Any]]:
    """Each option's default, help text, command-line parser and choices (for ``tapeviz export``)."""
    return {f.name: {"default": f.default, **f.metadata} for f in dataclasses.fields(Options)}
