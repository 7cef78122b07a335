// tapeviz: hover tips, zoom and pan on the exported page's pictures (no kernel here).
/* global tvFrame, tvNavigate, tvTips -- canvas.js, inlined before this file in the same script */
(function () {
  const style = document.createElement("style");
  const settings = window.TAPEVIZ_PAGE;
  style.textContent = settings.css;
  document.head.appendChild(style);
  const done = new WeakSet();
  const setup = () => {
    document.querySelectorAll(".tv-frames").forEach((stack, i) => {
      if (done.has(stack)) return;
      done.add(stack);
      const parent = stack.parentElement;
      const { viewport, content, tip, reset } = tvFrame(document.createElement("div"), settings.resetLabel);
      const holder = viewport.parentElement;
      parent.insertBefore(holder, stack);
      content.appendChild(stack);
      const nav = tvNavigate(viewport, content, null);
      reset.addEventListener("click", () => nav.reset());
      const tips = settings.tips[i] || {};
      tvTips(
        viewport,
        tip,
        () => stack.querySelector("svg:not([style*='display: none'])"),
        () => tips,
      );
    });
  };
  new MutationObserver(setup).observe(document.documentElement, { childList: true, subtree: true });
  setup();
})();
