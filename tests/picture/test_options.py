"""tv.Options: one set of picture options for tv.view / draw / save / explore / interact /
export_html and the command line, each option with one default, given as keywords or as
one object, and reaching every one of those functions."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz import cli
from tapeviz.explorer import html_page
from tapeviz.output.svg import to_svg
from tapeviz.picture.options import AUTO, Options, option_help, option_names
from tapeviz.picture.themes import DARK, LIGHT, PROJECTOR

FUNCTIONS = [tv.view, tv.draw, tv.save, tv.explore, tv.interact.options, tv.export_html, cli.export_example]


def _tape():
    x = tf.Variable(2.0, name="x")
    with tv.GradientTape(persistent=True) as tape:
        y = x * x + 3.0
    return tape, y


def _f(x=1.0):
    return x * x + 3.0


def _every_default() -> dict:
    return {f.name: f.default for f in dataclasses.fields(Options)}


def test_the_options_and_their_one_default():
    assert option_names() == (
        "theme",
        "lang",
        "show_all",
        "collapsed",
        "depth",
        "expand",
        "repeat_step",
        "magnitude",
        "wrap",
    )
    assert Options() == Options(
        theme=AUTO,
        lang="en",
        show_all=False,
        collapsed=AUTO,
        depth=None,
        expand=(),
        repeat_step=0,
        magnitude=AUTO,
        wrap=None,
    )
    assert Options(expand="conv3_block2").expand == Options(expand=["conv3_block2"]).expand == ("conv3_block2",)
    assert all(o["help"] for o in option_help().values()), "every option says what it does (CLI --help)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Options().theme = "dark"  # type: ignore[misc]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_no_function_gives_an_option_a_default_of_its_own(fn):
    """The options reach each function through **keywords (and options=): no signature
    spells one out with a default that could drift from tv.Options'."""
    params = inspect.signature(fn).parameters
    assert not set(params) & set(option_names()), fn.__name__
    assert any(p.kind is p.VAR_KEYWORD for p in params.values()), fn.__name__


def test_the_option_goes_down_as_one_value():
    """On its way from tv.view to the groups it opens an option is never a parameter again:
    the view, the scene, the decision of what is shown and the explorer's state take one
    Options value (and keywords read by Options.of), so its name and default live in
    tv.Options only."""
    from tapeviz.explorer.state import ExplorerState
    from tapeviz.picture import opening, visibility
    from tapeviz.picture.scene import Scene

    for fn in (tv.GraphView.__init__, Scene.__init__, visibility.decide, visibility.collapse, opening.choose_closed):
        params = inspect.signature(fn).parameters
        assert not set(params) & set(option_names()), fn.__qualname__
        assert "options" in params, fn.__qualname__
    fields = {f.name for f in dataclasses.fields(ExplorerState)}
    assert not fields & set(option_names()) and "options" in fields


def test_an_explorer_state_reads_and_changes_its_options_as_its_own():
    from tapeviz.explorer.state import ExplorerState

    s = ExplorerState(target="t")
    assert (s.theme, s.magnitude, s.lang, s.collapsed) == ("light", False, "en", None)
    t = s.replace(lang="zh", collapsed=frozenset({"a"}), step=2)
    assert (t.lang, t.collapsed, t.step, t.options.collapsed) == ("zh", frozenset({"a"}), 2, frozenset({"a"}))
    assert t.replace(collapsed=None).options.collapsed == AUTO and s.lang == "en", "replace makes a new state"
    with pytest.raises(ValueError, match="No messages in language"):
        s.replace(lang="xx")
    with pytest.raises(AttributeError):
        s.nothing  # noqa: B018


def test_the_command_line_leaves_every_default_to_options(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(cli, "export_example", lambda name, path, step=None, **options: seen.append(options) or path)
    assert cli.main(["export", "basic", "-o", str(tmp_path / "a.svg")]) == 0
    assert seen[-1] == {}, "a flag left out is tv.Options' default, not one of the CLI's own"
    flags = ["--theme", "dark", "--lang", "zh", "--show-all", "--collapsed", "no", "--magnitude", "yes", "--wrap", "3"]
    assert cli.main(["export", "basic", "-o", str(tmp_path / "a.svg"), *flags]) == 0
    assert seen[-1] == dict(theme="dark", lang="zh", show_all=True, collapsed=False, magnitude=True, wrap=3)
    assert cli.main(["export", "basic", "-o", str(tmp_path / "a.svg"), "--collapsed", "dense,clip_by_norm"]) == 0
    assert seen[-1] == dict(collapsed=("dense", "clip_by_norm"))
    assert cli.main(["export", "basic", "-o", str(tmp_path / "a.svg"), "--depth", "2", "--expand", "a,b/c"]) == 0
    assert seen[-1] == dict(depth=2, expand=("a", "b/c"))


def test_left_out_or_given_as_their_defaults_the_pictures_are_the_same(tmp_path):
    tape, y = _tape()
    defaults = _every_default()
    assert (
        to_svg(tv.view(tape, y)) == to_svg(tv.view(tape, y, **defaults)) == to_svg(tv.view(tape, y, options=Options()))
    )
    a = tv.save(tape, y, tmp_path / "a.svg", progress=False)
    b = tv.save(tape, y, tmp_path / "b.svg", progress=False, **defaults)
    assert a.read_bytes() == b.read_bytes()
    assert tv.explore(tape, y).state == tv.explore(tape, y, **defaults).state
    assert tv.interact(_f, x=(0.0, 2.0)).state == tv.interact.options(**defaults)(_f, x=(0.0, 2.0)).state


def test_theme_auto_is_light_in_files_and_the_pages_theme_in_explorers(monkeypatch, tmp_path):
    tape, y = _tape()
    assert LIGHT.background in to_svg(tv.view(tape, y))
    assert tv.view(tape, y).scene.theme is LIGHT
    for ex in (tv.explore(tape, y), tv.interact(_f, x=(0.0, 2.0))):
        assert ex.auto_theme and ex.state.theme == "light", "light until the page says it is dark"
    states = []
    monkeypatch.setattr(html_page, "write_page", lambda ex, state, path, **kw: states.append(state) or path)
    tv.export_html(tape, y, tmp_path / "p.html")
    assert states[-1].theme == "light"
    tv.export_html(tape, y, tmp_path / "p.html", theme="dark")
    assert states[-1].theme == "dark"


def test_keywords_and_the_options_object_agree_and_keywords_win():
    tape, y = _tape()
    dark = Options(theme="dark", lang="zh")
    assert tv.view(tape, y, options=dark).scene.theme is DARK
    view = tv.view(tape, y, options=dark, theme="projector")
    assert view.scene.theme is PROJECTOR and view.scene.lang == "zh"
    ex = tv.explore(tape, y, options=dark)
    assert (ex.state.theme, ex.state.lang, ex.auto_theme) == ("dark", "zh", False)
    assert tv.interact.options(dark)(_f, x=(0.0, 2.0)).state.lang == "zh"


# what an explorer's state holds for GIVEN (collapsed=False: no group collapsed)
HELD = ("projector", "zh", True, frozenset(), True, 2)


def _held(state) -> tuple:
    return (state.theme, state.lang, state.show_all, state.collapsed, state.magnitude, state.wrap)


def test_every_option_reaches_the_explorer_and_the_exported_page(monkeypatch, tmp_path):
    tape, y = _tape()
    given = dict(theme="projector", lang="zh", show_all=True, collapsed=False, magnitude=True, wrap=2)
    ex = tv.explore(tape, y, **given)
    assert _held(ex.state) == HELD
    assert ex.view.scene.wrap == 2
    states = []
    monkeypatch.setattr(html_page, "write_page", lambda ex, state, path, **kw: states.append(state) or path)
    tv.export_html(tape, y, tmp_path / "p.html", **given)
    assert _held(states[-1]) == HELD


def test_none_still_means_auto_where_it_was_the_default():
    """theme=None (view / draw / save) and magnitude=None (explore) were defaults before
    tv.Options: a call that passes them keeps working, as auto."""
    assert Options(theme=None, magnitude=None) == Options()
    tape, y = _tape()
    assert tv.view(tape, y, theme=None).scene.theme is LIGHT


def test_magnitude_auto_is_on_only_in_a_training_runs_explorer():
    assert Options().in_file().magnitude is False
    assert Options().in_explorer().magnitude is False
    assert Options().in_explorer(training=True).magnitude is True
    assert Options(magnitude=False).in_explorer(training=True).magnitude is False


@pytest.mark.parametrize(
    "keywords, error, match",
    [
        (dict(colour="red"), TypeError, "Unknown option 'colour'; the options are: theme, lang, show_all"),
        (dict(theme="neon"), ValueError, "Unknown theme 'neon'"),
        (dict(lang="fr"), ValueError, "No messages in language 'fr'"),
        (dict(magnitude="sometimes"), ValueError, "magnitude='sometimes': use True, False or 'auto'"),
        (dict(options={"theme": "dark"}), TypeError, "options= takes a tv.Options, got dict"),
    ],
)
def test_bad_options_are_refused_with_the_fix(keywords, error, match):
    tape, y = _tape()
    for call in (lambda: tv.view(tape, y, **keywords), lambda: tv.explore(tape, y, **keywords)):
        with pytest.raises(error, match=match):
            call()
