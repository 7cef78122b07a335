"""The gallery's models: the architectures people bring to tapeviz after the tutorial, each
as one training step recorded on a tapeviz tape.

Used by tests/picture/test_gallery.py (every default picture fits a page, names whole, numbers
exact), bench/bench_gallery.py (ResNet50's cold render) and notebooks/img/regenerate.py
(the README's and docs/gallery.md's pictures). Inputs are small (32x32 images, batches of
2) so that a step takes well under a second on a 2-core machine; no pretrained weights.

``GALLERY[name]()`` returns a :class:`Step`: the tape, the loss it was recorded for, and
the variables the loss is differentiated with respect to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.picture.scene import Scene

__all__ = ["GALLERY", "MORE", "Step", "recorder"]

IMAGE = (32, 32, 3)
CLASSES = 10
BATCH = 2


class Step(NamedTuple):
    tape: Any  # a tv.GradientTape (persistent: the test asks tape.gradient after the picture)
    loss: Any
    variables: list  # what tape.gradient(loss, variables) is compared against


def _fresh() -> None:
    """Keras's name counters and seeds as in a new process: a picture names dense, not
    dense_7, whichever models were built before it."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)


def _images(seed: int = 0) -> tuple[tf.Tensor, tf.Tensor]:
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(BATCH, *IMAGE)).astype("float32"))
    return x, tf.constant(rng.integers(0, CLASSES, size=BATCH))


def _step(model: keras.Model, x, y, loss_fn=None) -> Step:
    """One training step of ``model`` on (x, y): its weights built before the tape, then the
    loss (sparse cross-entropy on logits unless given) recorded on a persistent tapeviz tape."""
    loss_fn = loss_fn or keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model(x)
    with tv.GradientTape(persistent=True) as tape:
        loss = loss_fn(y, model(x, training=True))
    return Step(tape, loss, list(model.trainable_variables))


def _application(cls: Callable) -> Callable[[], Step]:
    def make() -> Step:
        _fresh()
        model = cls(weights=None, input_shape=IMAGE, classes=CLASSES, classifier_activation=None)
        return _step(model, *_images())

    make.__name__ = cls.__name__
    return make


# ----------------------------------------------------------------------------- Transformer


class TransformerBlock(keras.layers.Layer):
    """Self-attention and a feed-forward net, each with a residual add and LayerNorm."""

    def __init__(self, dim: int, heads: int, hidden: int, named: bool = False, **kw):
        super().__init__(**kw)

        # unless ``named``, the inner layers keep the names Keras gives them
        # (multi_head_attention_1, dense_4, ...), as most people's code leaves them
        def called(name: str) -> dict:
            return {"name": name} if named else {}

        self.attention = keras.layers.MultiHeadAttention(heads, dim // heads, **called("attention"))
        self.norm1 = keras.layers.LayerNormalization(**called("norm1"))
        self.ffn_in = keras.layers.Dense(hidden, activation="relu", **called("ffn_in"))
        self.ffn_out = keras.layers.Dense(dim, **called("ffn_out"))
        self.norm2 = keras.layers.LayerNormalization(**called("norm2"))

    def call(self, x, training=False):
        x = self.norm1(x + self.attention(x, x, training=training))
        return self.norm2(x + self.ffn_out(self.ffn_in(x)))


class TransformerEncoder(keras.Model):
    """Token and position embeddings, three Transformer blocks, mean pooling, a classifier."""

    def __init__(self, vocab: int = 50, length: int = 8, dim: int = 16, blocks: int = 3, named: bool = False, **kw):
        super().__init__(**kw)
        self.tokens = keras.layers.Embedding(vocab, dim, name="tokens")
        self.positions = keras.layers.Embedding(length, dim, name="positions")
        first = 1 if named else 0
        self.blocks = [TransformerBlock(dim, 2, 2 * dim, named, name=f"block{i + first}") for i in range(blocks)]
        self.head = keras.layers.Dense(CLASSES, name="head")
        self.length = length

    def call(self, ids, training=False):
        x = self.tokens(ids) + self.positions(tf.range(self.length))
        for block in self.blocks:
            x = block(x, training=training)
        return self.head(tf.reduce_mean(x, axis=1))


def transformer(named: bool = False) -> Step:
    """The encoder's step: blocks block0-2 with Keras-named layers inside, or (``named``)
    blocks block1-3 whose layers are named by hand (attention, norm1, ffn_in, ...)."""
    _fresh()
    model = TransformerEncoder(named=named, name="encoder")
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(0, 50, size=(BATCH, 8)))
    return _step(model, ids, tf.constant(rng.integers(0, CLASSES, size=BATCH)))


# ----------------------------------------------------------------------------- U-Net


def unet() -> Step:
    """Two levels down, a bottleneck, two levels up with skip concatenations: a mask per pixel."""
    _fresh()
    L = keras.layers
    inp = keras.Input((32, 32, 1))
    d1 = L.Conv2D(8, 3, padding="same", activation="relu", name="down1_conv")(inp)
    p1 = L.MaxPooling2D(name="down1_pool")(d1)
    d2 = L.Conv2D(16, 3, padding="same", activation="relu", name="down2_conv")(p1)
    p2 = L.MaxPooling2D(name="down2_pool")(d2)
    b = L.Conv2D(32, 3, padding="same", activation="relu", name="bottleneck")(p2)
    u2 = L.Conv2DTranspose(16, 2, strides=2, name="up2_upsample")(b)
    c2 = L.Conv2D(16, 3, padding="same", activation="relu", name="up2_conv")(L.Concatenate(name="up2_skip")([u2, d2]))
    u1 = L.Conv2DTranspose(8, 2, strides=2, name="up1_upsample")(c2)
    c1 = L.Conv2D(8, 3, padding="same", activation="relu", name="up1_conv")(L.Concatenate(name="up1_skip")([u1, d1]))
    out = L.Conv2D(1, 1, name="mask")(c1)
    model = keras.Model(inp, out, name="unet")
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(BATCH, 32, 32, 1)).astype("float32"))
    y = tf.constant((rng.random(size=(BATCH, 32, 32, 1)) > 0.5).astype("float32"))
    return _step(model, x, y, keras.losses.BinaryCrossentropy(from_logits=True))


# ----------------------------------------------------------------------------- seq2seq


def seq2seq() -> Step:
    """An LSTM encoder whose final state starts an LSTM decoder (teacher forcing)."""
    _fresh()
    L = keras.layers
    source = keras.Input((6,), dtype="int32", name="source")
    target_in = keras.Input((5,), dtype="int32", name="target_in")
    _, h, c = L.LSTM(16, return_state=True, name="encoder")(L.Embedding(30, 8, name="source_embed")(source))
    seq = L.LSTM(16, return_sequences=True, name="decoder")(
        L.Embedding(30, 8, name="target_embed")(target_in), initial_state=[h, c]
    )
    model = keras.Model([source, target_in], L.Dense(30, name="vocab")(seq), name="seq2seq")
    rng = np.random.default_rng(0)
    src = tf.constant(rng.integers(0, 30, size=(BATCH, 6)).astype("int32"))
    tgt = tf.constant(rng.integers(0, 30, size=(BATCH, 6)).astype("int32"))
    return _step(model, [src, tgt[:, :-1]], tgt[:, 1:])


# ----------------------------------------------------------------------------- GAN


def gan() -> Step:
    """A generator's step: the discriminator's verdict on its fakes, scored as if real."""
    _fresh()
    L = keras.layers
    # two Sequential models whose layers Keras names (dense, dense_1, ...): only the
    # models' names, gen and disc, say which layer is whose
    generator = keras.Sequential(
        [keras.Input((8,)), L.Dense(32, activation="relu"), L.Dense(64, activation="tanh")], name="gen"
    )
    discriminator = keras.Sequential([keras.Input((64,)), L.Dense(32, activation="relu"), L.Dense(1)], name="disc")
    z = tf.constant(np.random.default_rng(0).normal(size=(BATCH, 8)).astype("float32"))
    discriminator(generator(z))
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    with tv.GradientTape(persistent=True) as tape:
        verdict = discriminator(generator(z, training=True), training=True)
        loss = bce(tf.ones_like(verdict), verdict)
    return Step(tape, loss, list(generator.trainable_variables))


# ----------------------------------------------------------------------------- VAE


class VAE(keras.Model):
    """Encoder to a Gaussian, a reparameterised sample, decoder; loss = reconstruction + KL."""

    def __init__(self, latent: int = 4, **kw):
        super().__init__(**kw)
        L = keras.layers
        self.encoder = keras.Sequential([L.Flatten(), L.Dense(32, activation="relu")], name="encoder")
        self.z_mean = L.Dense(latent, name="z_mean")
        self.z_log_var = L.Dense(latent, name="z_log_var")
        self.decoder = keras.Sequential(
            [L.Dense(32, activation="relu"), L.Dense(64), L.Reshape((8, 8))], name="decoder"
        )

    def call(self, x, eps):
        h = self.encoder(x)
        mean, log_var = self.z_mean(h), self.z_log_var(h)
        z = mean + tf.exp(0.5 * log_var) * eps
        return self.decoder(z), mean, log_var


def vae() -> Step:
    _fresh()
    model = VAE(name="vae")
    rng = np.random.default_rng(0)
    x = tf.constant((rng.random(size=(BATCH, 8, 8)) > 0.5).astype("float32"))
    eps = tf.constant(rng.normal(size=(BATCH, 4)).astype("float32"))
    model(x, eps)
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    with tv.GradientTape(persistent=True) as tape:
        logits, mean, log_var = model(x, eps, training=True)
        reconstruction = bce(x, logits)
        kl = -0.5 * tf.reduce_mean(1 + log_var - tf.square(mean) - tf.exp(log_var))
        loss = reconstruction + kl
    return Step(tape, loss, list(model.trainable_variables))


# ----------------------------------------------------------------------------- GPT


class GPTBlock(keras.layers.Layer):
    """A pre-norm decoder block: causal self-attention and an MLP, each with a residual add."""

    def __init__(self, dim: int, **kw):
        super().__init__(**kw)
        self.ln_1 = keras.layers.LayerNormalization(name="ln_1")
        self.attn = keras.layers.MultiHeadAttention(2, dim // 2, name="attn")
        self.ln_2 = keras.layers.LayerNormalization(name="ln_2")
        self.mlp_fc = keras.layers.Dense(2 * dim, activation="gelu", name="mlp_fc")
        self.mlp_proj = keras.layers.Dense(dim, name="mlp_proj")

    def call(self, x):
        h = self.ln_1(x)
        x = x + self.attn(h, h, use_causal_mask=True)
        return x + self.mlp_proj(self.mlp_fc(self.ln_2(x)))


class GPT(keras.Model):
    """Token and position embeddings, ``layers`` alike decoder blocks h0, h1, ..., a final norm
    and the tied-free language-model head."""

    def __init__(self, layers: int = 48, vocab: int = 40, length: int = 6, dim: int = 8, **kw):
        super().__init__(**kw)
        self.wte = keras.layers.Embedding(vocab, dim, name="wte")
        self.wpe = keras.layers.Embedding(length, dim, name="wpe")
        self.h = [GPTBlock(dim, name=f"h{i}") for i in range(layers)]
        self.ln_f = keras.layers.LayerNormalization(name="ln_f")
        self.lm_head = keras.layers.Dense(vocab, name="lm_head")
        self.length = length

    def call(self, ids):
        x = self.wte(ids) + self.wpe(tf.range(self.length))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt(layers: int = 48) -> Step:
    """One next-token step of a GPT-shaped decoder of ``layers`` blocks."""
    _fresh()
    model = GPT(layers, name="gpt")
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(0, 40, size=(BATCH, 7)))
    return _step(model, ids[:, :-1], ids[:, 1:])


# ----------------------------------------------------------------------------- actor-critic


class ActorCritic(keras.Model):
    """A shared torso, a policy head (logits over actions) and a value head."""

    def __init__(self, actions: int = 3, **kw):
        super().__init__(**kw)
        self.torso = keras.layers.Dense(16, activation="relu", name="torso")
        self.policy = keras.layers.Dense(actions, name="policy")
        self.value = keras.layers.Dense(1, name="value")

    def call(self, state):
        h = self.torso(state)
        return self.policy(h), self.value(h)


def actor_critic(steps: int = 20) -> Step:
    """One episode of ``steps`` environment steps in one tape, the usual policy-gradient loop:
    the model is called once per step; log-probs and values are collected, and the loss
    is the advantage-weighted log-probs plus the value error."""
    _fresh()
    model = ActorCritic(name="ac")
    rng = np.random.default_rng(0)
    states = rng.normal(size=(steps, 1, 4)).astype("float32")
    rewards = rng.normal(size=steps).astype("float32")
    model(tf.constant(states[0]))
    log_probs, values = [], []
    with tv.GradientTape(persistent=True) as tape:
        for t in range(steps):
            logits, value = model(tf.constant(states[t]))
            action = int(rng.integers(0, 3))  # the environment's step, outside TensorFlow
            log_probs.append(tf.nn.log_softmax(logits)[0, action])
            values.append(value[0, 0])
        returns = tf.constant(np.cumsum(rewards[::-1])[::-1].copy())
        advantage = returns - tf.stack(values)
        actor = -tf.reduce_sum(tf.stack(log_probs) * tf.stop_gradient(advantage))
        critic = tf.reduce_sum(tf.square(advantage))
        loss = actor + 0.5 * critic
    return Step(tape, loss, list(model.trainable_variables))


# ----------------------------------------------------------------------------- WGAN-GP


def wgan_gp() -> Step:
    """The critic loss of WGAN-GP written with helpers (tests/higher_order_models.py)."""
    from higher_order_models import wgan_gp as program

    _fresh()
    made = program(helpers=True)
    return Step(made.tape, made.loss, made.variables)


GALLERY: dict[str, Callable[[], Step]] = {
    "ResNet50": _application(keras.applications.ResNet50),
    "MobileNetV2": _application(keras.applications.MobileNetV2),
    "DenseNet121": _application(keras.applications.DenseNet121),
    "EfficientNetB0": _application(keras.applications.EfficientNetB0),
    "Transformer": transformer,
    "U-Net": unet,
    "seq2seq LSTM": seq2seq,
    "GAN": gan,
    "VAE": vae,
    "WGAN-GP": wgan_gp,
}

#: Models the tests use beside the gallery's.
MORE: dict[str, Callable[[], Step]] = {
    "Transformer (named layers)": lambda: transformer(named=True),
    "GPT-48": gpt,
    "actor-critic": actor_critic,
}


def recorder() -> Callable[[str], tuple[Step, Any, Any]]:
    """``get(name) -> (Step, GradientFlow, default Scene)`` of a gallery model (or one of MORE), each made the
    first time it is asked for and kept (the picture tests' ``recorded`` fixture)."""
    made: dict[str, tuple[Step, Any, Any]] = {}

    def get(name: str) -> tuple[Step, Any, Any]:
        if name not in made:
            step = (GALLERY[name] if name in GALLERY else MORE[name])()
            fl = tv.flow(step.tape, step.loss)
            made[name] = (step, fl, Scene(step.tape.graph, fl))
        return made[name]

    return get
