"""Every sentence tapeviz shows, one catalogue per language.

A catalogue is a module ``tapeviz.messages.<lang>`` with a dict ``MESSAGES`` from a
message key to a ``str.format`` template. Keys name what is said, not how:
``stop.<reason>.<cause>`` is the one-liner for a stop reason, ``explain.*`` and
``fix.*`` are tv.explain's diagnosis and advice, ``ui.*`` the pictures' and the
explorer's words. Adding a language means adding a catalogue with the same keys (a
test checks every catalogue has every key, with the same placeholders).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

#: Languages with a catalogue.
LANGUAGES = ("en", "zh")
DEFAULT = "en"


def check_lang(lang: str) -> str:
    """``lang`` if a catalogue exists for it, else a clear error."""
    if lang not in LANGUAGES:
        raise ValueError(f"No messages in language {lang!r}; use one of {', '.join(repr(x) for x in LANGUAGES)}.")
    return lang


@cache
def catalogue(lang: str) -> dict[str, str]:
    """The message templates of one language."""
    return importlib.import_module(f"{__name__}.{check_lang(lang)}").MESSAGES


class Phrase(str):
    """A piece of a sentence that has words of its own ("the Pow op"): it reads as its
    English text wherever a plain string is expected, and is said again in the language
    of any sentence it is put into."""

    __slots__ = ("key", "facts")
    key: str
    facts: dict[str, Any]

    def __new__(cls, key: str, **facts: Any) -> Phrase:
        obj = super().__new__(cls, say(key, DEFAULT, **facts))
        obj.key, obj.facts = key, facts
        return obj

    def __reduce__(self):
        return (_phrase, (self.key, self.facts))


def localize(text: str, lang: str = DEFAULT) -> str:
    """A Phrase said in ``lang``; any other string as it is."""
    return say(text.key, lang, **text.facts) if isinstance(text, Phrase) else text


def _phrase(key: str, facts: dict) -> Phrase:
    return Phrase(key, **facts)


def say(key: str, lang: str = DEFAULT, /, **facts: Any) -> str:
    """The sentence for ``key`` in ``lang``, filled in with ``facts``."""
    template = catalogue(lang)[key]
    if lang != DEFAULT:
        facts = {k: localize(v, lang) for k, v in facts.items()}
    return template(**facts) if callable(template) else template.format(**facts)


def describe(stop, lang: str = DEFAULT) -> str:
    """The one-line sentence for a StopReason."""
    return say(f"stop.{stop.reason.value}.{stop.cause.value}", lang, **stop.facts.as_dict())
