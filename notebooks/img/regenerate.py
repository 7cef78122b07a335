"""Regenerate the pictures of README.md and docs/pictures.md: python notebooks/img/regenerate.py (from the repo root).

"before" is every recorded op (show_all=True), "after" the default picture (what carries
nothing to the target hidden, constants folded into chips, TF API calls collapsed).
gallery/ holds the default picture of each architecture in tests/support/gallery_models.py (the
README shows three, docs/gallery.md all).
"""

import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz import cli, examples

HERE = Path(__file__).resolve().parent
SUPPORT = HERE.parents[1] / "tests" / "support"
# "after" pictures in rows of at most 4 boxes: ~1,100 px wide, so a page column (~880 px)
# shows their text at a readable size ("before" pictures stay as wide as they are).
README_ROW = 4


def small_cnn_model():
    """The small CNN of docs/pictures.md and a batch for it: (model, (x,), labels)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(3),
        ],
        name="cnn",
    )
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(4, 8, 8, 1)).astype("float32"))
    return model, (x,), tf.constant([0, 1, 2, 1])


def small_cnn():
    """One training step's tape of the small CNN, and its loss."""
    model, (x,), y = small_cnn_model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with tv.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    return tape, loss


def export_both(name: str, stem: str) -> None:
    """One run of a built-in example (Keras names layers by how many were made before),
    saved before and after, with the caption `tapeviz export` writes."""
    ex = examples.get(name)
    run = ex.run()
    caption = f"{ex.title}\n{cli._printed(run.printed)}"
    for show_all, when in ((True, "before"), (False, "after")):
        wrap = None if show_all else README_ROW
        tv.save(run.tape, run.target, HERE / f"{stem}_{when}.png", caption=caption, show_all=show_all, wrap=wrap)


def higher_order() -> None:
    """docs/higher-order.md's pictures: the PINN and WGAN-GP default pictures (the test
    programs of tests/support/higher_order_models.py; WGAN-GP written with helpers and inline)
    and a Hessian's heatmap."""
    sys.path.insert(0, str(SUPPORT))
    from higher_order_models import hessian_program, pinn, wgan_gp

    for stem, program in (("pinn", pinn()), ("wgan_gp", wgan_gp(helpers=True)), ("wgan_gp_inline", wgan_gp())):
        tv.save(program.tape, program.loss, HERE / f"{stem}_default.png")
    outer, _, g, hessian = hessian_program()
    hessian.figure(row=1).savefig(HERE / "hessian_heatmap.png")
    tv.save(outer, g, HERE / "hessian_row1.png", output_gradients=hessian.seed(1))


def gallery_models():
    """tests/support/gallery_models.py (the pictures and the gallery test share it)."""
    sys.path.insert(0, str(SUPPORT))
    import gallery_models

    return gallery_models


def slug(name: str) -> str:
    """'seq2seq LSTM' -> 'seq2seq_lstm' (a file name)."""
    return "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")


def gallery(names=None) -> None:
    """The default picture of one training step of each gallery architecture, as tv.save
    draws it (no option given): gallery/<slug>.png."""
    models = gallery_models()
    out = HERE / "gallery"
    out.mkdir(exist_ok=True)
    for name in names or models.GALLERY:
        step = models.GALLERY[name]()
        tv.save(step.tape, step.loss, out / f"{slug(name)}.png", progress=False)


def main() -> None:
    export_both("clip_in_training", "mlp")
    export_both("clip_by_norm", "clip_by_norm")
    cli.export_example("stop_gradient", HERE / "stop_gradient.png")
    tape, loss = small_cnn()
    caption = "a small CNN: Conv2D, BatchNormalization, MaxPooling2D, Conv2D, GlobalAveragePooling2D, Dropout, Dense"
    for show_all, when in ((True, "before"), (False, "after")):
        wrap = None if show_all else README_ROW
        tv.save(tape, loss, HERE / f"cnn_{when}.png", caption=caption, show_all=show_all, wrap=wrap)
    gallery()
    higher_order()


if __name__ == "__main__":
    main()
