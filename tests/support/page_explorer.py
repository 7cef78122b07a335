"""The explorer's parts on a page (step slider, readout, play button, canvas), found under
the front end's notebook element; used by the browser tests of the explorer and its canvas."""

from __future__ import annotations

import re

from browser import canvas_svg, canvas_title, notebook_root, wait_title_matching


class ExplorerOnPage:
    """The explorer's parts on a page, scoped to the front end's notebook element."""

    def __init__(self, page, server):
        self.page = page
        self.root = f"{notebook_root(server)} .tv-explorer"
        self.canvas = f"{self.root} .tv-canvas"
        self.step = page.locator(f"{self.root} .tv-step .noUi-handle")
        self.readout = page.locator(f"{self.root} .tv-step .widget-readout")
        self.play_icon = page.locator(f"{self.root} .tv-play button i").first

    def svg(self) -> str | None:
        return canvas_svg(self.page, self.canvas)

    def title(self) -> str | None:
        return canvas_title(self.page, self.canvas)

    def wait_shown(self) -> None:
        from playwright.sync_api import expect

        expect(self.page.locator(self.root)).to_be_visible()
        expect(self.page.locator(f"{self.canvas} svg")).to_be_visible()
        self.page.locator(self.root).scroll_into_view_if_needed()

    def expect_step(self, k: int) -> None:
        """The slider's handle and its readout (the model's value) both say ``k``."""
        from playwright.sync_api import expect

        expect(self.step).to_have_attribute("aria-valuetext", str(k))
        expect(self.readout).to_have_text(str(k))

    def expect_picture_of_step(self, k: int, last: int, old_svg: str) -> str:
        """Wait until the picture shows step ``k`` of ``last`` (the slider's max: the
        finished pass), then check it was repainted; returns its SVG."""
        from tapeviz.picture.style import C_ACTIVE

        # Steps are numbered 0..last; the last one finishes the pass and says so.
        pattern = rf"^Step {k}/{last}\b" + (r".*\(backward pass of .* done\)$" if k == last else "")
        wait_title_matching(self.page, self.canvas, pattern)
        svg = self.svg()
        assert svg != old_svg, "the canvas was repainted"
        assert C_ACTIVE in svg, "the step's edge is highlighted in amber (the last one too)"
        return svg

    def expect_finished_title(self) -> str:
        """The title at the last step: 'Step n/n: ... (backward pass of <target> done)'."""
        last = int(self.step.get_attribute("aria-valuetext"))
        title = self.title()
        assert title and re.match(rf"^Step {last}/{last}\b.*\(backward pass of .* done\)$", title), title
        return title
