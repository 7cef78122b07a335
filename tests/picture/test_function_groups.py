"""Function groups: the ops a call of the user's own function ran while the tape recorded
are a group named after it ("gradient_penalty()"); closed by default when it holds an
inner gradient, opened like any level otherwise; never hiding a path that carries no
gradient."""

import keras
import numpy as np
import tensorflow as tf

import tapeviz as tv
from tapeviz.gradients.stop_reasons import Reason
from tapeviz.picture.visibility import decide
from tapeviz.picture.wording import box_names
from tapeviz.record import hooks


def _shown(tape, target, **options):
    fl = tv.flow(tape, target)
    return fl, decide(tape.graph, fl, **options)


def _titles(tape, shown) -> list[str]:
    return sorted(title for title, _ in box_names(tape.graph, shown).values())


def _group_kinds(shown) -> dict[str, str]:
    return {d["name"]: d["group_kind"] for _, d in shown.nx.nodes(data=True) if d.get("kind") == "layer"}


def _penalty(w, x):
    """A helper holding an inner gradient: the derivative's context."""
    with tf.GradientTape() as inner:
        inner.watch(x)
        y = w * x**2
    g = inner.gradient(y, x)
    return tf.reduce_sum(g**2)


def _scaled(w, x):
    return w * (x * 2.0)


def test_calls_are_recorded_with_their_nesting():
    w = tf.Variable(1.5)
    x = tf.constant([1.0, 2.0])

    def outer_fn(v):
        return _scaled(w, v) + 1.0

    with tv.GradientTape() as tape:
        a = outer_fn(x)
        b = outer_fn(a)  # a second call: a group of its own
        c = [tf.sin(t) for t in (a, b)]  # a comprehension is no group of its own
        loss = tf.reduce_sum(c[0] + c[1])
    records = tape.graph.capture.functions
    assert [(r.name, r.parent) for r in records] == [
        ("outer_fn", None),
        ("_scaled", 0),
        ("outer_fn", None),
        ("_scaled", 2),
    ]
    ops = tape.graph.capture.ops
    assert {ops[i].function for i in range(records[1].start, records[1].end)} == {1}
    sines = [op for op in ops if op.op_type == "Sin"]
    assert [op.function for op in sines] == [None, None]
    assert ops[-1].function is None and ops[-1].op_type == "Sum"
    assert not hooks.hooks_installed()
    # the numbers are TF's
    fl = tv.flow(tape, loss)
    with tf.GradientTape() as plain:
        pa = outer_fn(x)
        pb = outer_fn(pa)
        pl = tf.reduce_sum(tf.sin(pa) + tf.sin(pb))
    np.testing.assert_array_equal(fl.grad(w), plain.gradient(pl, w).numpy())


def test_keras_layer_code_is_not_a_function_group():
    class Doubling(keras.layers.Layer):
        def call(self, x):  # the user's code, but called by Keras: the layer is its group
            return _twice(x)

    def _twice(x):
        return x * 2.0 + 1.0

    layer = Doubling(name="doubling")
    x = tf.Variable([1.0, 2.0])
    with tv.GradientTape() as tape:
        y = tf.reduce_sum(layer(x))
    assert not tape.graph.capture.functions
    assert {op.scope for op in tape.graph.capture.ops if op.op_type in ("Mul", "AddV2")} == {"doubling"}
    assert y is not None


def test_a_function_holding_the_whole_loss_keeps_the_seeds_picture():
    """The seed's some_loss_function(): the whole loss in one helper. Its picture is the
    same as the same code written in the block: one box for everything would tell nothing."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    xb = tf.constant([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]])
    yb = tf.constant([[1.0], [0.0]])

    def some_loss_function():
        return tf.reduce_mean(tf.square(model(xb) - yb))

    with tv.GradientTape() as helper_tape:
        loss = some_loss_function()
    helper_loss = loss
    with tv.GradientTape() as inline_tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    _, helper = _shown(helper_tape, helper_loss)
    _, inline = _shown(inline_tape, loss)
    assert "some_loss_function()" in helper.tree  # grouped, and opened by default
    assert "some_loss_function()" not in _group_kinds(helper)
    assert _titles(helper_tape, helper) == _titles(inline_tape, inline)
    # closing it by name works like any group
    _, closed = _shown(helper_tape, helper_loss, collapsed=["some_loss_function()"])
    assert _group_kinds(closed) == {"some_loss_function()": "function"}


def test_a_function_holding_an_inner_gradient_is_closed_and_opens():
    w = tf.Variable(3.0)
    x = tf.Variable([1.0, -2.0])
    with tv.GradientTape() as tape:
        h = tf.reduce_sum(w * x)
        loss = h + 0.5 * _penalty(w, x)
    fl, shown = _shown(tape, loss)
    assert _group_kinds(shown) == {"_penalty()": "function"}
    with tf.GradientTape() as plain:
        pl = tf.reduce_sum(w * x) + 0.5 * _penalty(w, x)
    for v, g in zip((w, x), plain.gradient(pl, [w, x]), strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())  # bit for bit
    _, opened = _shown(tape, loss, expand=["_penalty()"])
    kinds = _group_kinds(opened)
    assert kinds == {"g = ∂y/∂x": "derivative"}
    ops = {d.get("op_type") for _, d in opened.nx.nodes(data=True) if d.get("kind") == "op"}
    assert {"Pow", "Sum"} <= ops  # the helper's own ops, drawn
    _, everything = _shown(tape, loss, collapsed=False)
    ops = {d.get("op_type") for _, d in everything.nx.nodes(data=True) if d.get("kind") == "op"}
    assert "Mul" in ops and not _group_kinds(everything)


def test_a_forgotten_watch_stays_visible_into_a_closed_function():
    """x is never watched by the outer tape: its path into the closed helper's box is a
    grey edge that says why, and x is a box of its own."""
    w = tf.Variable(3.0)
    x = tf.constant([1.0, -2.0])  # forgotten: tape.watch(x)
    with tv.GradientTape() as tape:
        h = tf.reduce_sum(w * 2.0)
        loss = h + _penalty(w, x * 2.0)
    fl, shown = _shown(tape, loss)
    assert fl.grad(x) is None  # what tape.gradient says
    assert _group_kinds(shown) == {"_penalty()": "function"}
    x_node = tape.graph.tensors[x._id].node
    assert x_node in shown.nx
    into = [d for _, v, d in shown.nx.out_edges(x_node, data=True)]
    path = [(u, v, d) for u, v, d in shown.nx.edges(data=True) if v == "layer:_penalty()"]
    reasons = {fl.edge_reason.get(m).reason for _, _, d in path for m in d["members"] if fl.edge_reason.get(m)}
    assert into and Reason.NOT_WATCHED in reasons


def test_a_forgotten_watch_behind_an_op_in_a_helper_stays_visible():
    """y = w * (x * 2) with x unwatched, written as a helper holding the whole target:
    x and the grey path from it are drawn, as in the same code written inline."""
    w = tf.Variable(3.0)
    x = tf.constant(1.0)
    with tv.GradientTape() as tape:
        y = _scaled(w, x)
    fl, shown = _shown(tape, y)
    x_node = tape.graph.tensors[x._id].node
    assert x_node in shown.nx and not _group_kinds(shown)
    (edge,) = [d for _, _, d in shown.nx.out_edges(x_node, data=True)]
    assert {fl.edge_reason[m].reason for m in edge["members"]} == {Reason.NOT_WATCHED}


def test_eager_slices_are_their_op_not_a_strided_slice_group():
    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tv.GradientTape() as tape:
        a = x[:, 0:1]
        b = x[:, 1:2]
        loss = tf.reduce_sum(a * b)
    slices = [op for op in tape.graph.capture.ops if op.op_type == "StridedSlice"]
    assert len(slices) == 2 and all(op.scope == "" for op in slices)
    _, shown = _shown(tape, loss)
    assert "strided_slice" not in shown.tree
    assert _titles(tape, shown).count("a") == 1 and "b" in _titles(tape, shown)
    assert loss is not None


def test_a_helper_holding_the_whole_nested_tape_loss_stays_open():
    """``loss = residual(net, pts)``: the PINN residual written as one helper. Closed it
    would be the whole picture; it opens, and its inner gradients are boxes of their own."""
    from higher_order_models import pinn_net

    net = pinn_net()
    pts = tf.constant([[0.1, 0.0], [0.5, 0.3], [-0.4, 0.8]])

    def residual(net, pts):
        with tf.GradientTape() as t1:
            t1.watch(pts)
            u = net(pts)
        du = t1.gradient(u, pts)
        return tf.reduce_mean((du[:, 1:2] - 0.1 * du[:, 0:1]) ** 2)

    with tv.GradientTape() as tape:
        loss = residual(net, pts)
    fl, shown = _shown(tape, loss)
    kinds = _group_kinds(shown)
    assert "residual()" in shown.tree and "residual()" not in kinds
    assert kinds.get("du = ∂u/∂pts") == "derivative" and kinds.get("pinn") == "block"
    with tf.GradientTape() as plain:
        plain_loss = residual(net, pts)
    for v, g in zip(net.trainable_variables, plain.gradient(plain_loss, net.trainable_variables), strict=True):
        if g is None:
            assert fl.grad(v) is None
        else:
            np.testing.assert_array_equal(fl.grad(v), g.numpy())
    # however small the fit, a picture is never one box holding everything
    _, tight = _shown(tape, loss, fit=2)
    assert "residual()" not in _group_kinds(tight)


def test_record_step_groups_the_users_helpers_and_not_keras_own():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    x = tf.constant([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]])
    y = tf.constant([[1.0, 0.0], [0.0, 1.0]])
    keras_steps = tv.record_step(model, x, y)  # Keras's train_step and compute_loss are Keras's
    assert keras_steps[0].graph.capture.functions == []

    def penalty(w):
        return 0.01 * tf.reduce_sum(w**2)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2) + penalty(model.trainable_variables[0])
        return tape.gradient(loss, model.trainable_variables)

    steps = tv.record_step(train_step, x, y)
    assert [f.title for f in steps[0].graph.capture.functions] == ["penalty()"]


def test_a_helper_called_in_a_loop_is_one_group_per_call():
    w = tf.Variable([0.5, -0.5])

    def term(k):
        return tf.reduce_sum(tf.sin(w * k))

    with tv.GradientTape() as tape:
        total = tf.constant(0.0)
        for k in (1.0, 2.0, 3.0):
            total = total + term(k)
    fl, shown = _shown(tape, total, collapsed=True)
    assert sorted(_group_kinds(shown)) == ["term()", "term() #2", "term() #3"]
    with tf.GradientTape() as plain:
        plain_total = tf.constant(0.0)
        for k in (1.0, 2.0, 3.0):
            plain_total = plain_total + term(k)
    np.testing.assert_array_equal(fl.grad(w), plain.gradient(plain_total, w).numpy())


class _WGAN(keras.Model):
    """keras.io's WGAN-GP shape (Dense nets instead of convolutions): the penalty is a
    method, called from the user's train_step inside the critic's tape."""

    def __init__(self, discriminator, generator, latent_dim, gp_weight=10.0):
        super().__init__()
        self.discriminator, self.generator = discriminator, generator
        self.latent_dim, self.gp_weight = latent_dim, gp_weight
        self.last_d_gradient = None

    def compile(self, d_optimizer, g_optimizer, d_loss_fn, g_loss_fn):
        super().compile()
        self.d_optimizer, self.g_optimizer = d_optimizer, g_optimizer
        self.d_loss_fn, self.g_loss_fn = d_loss_fn, g_loss_fn

    def gradient_penalty(self, batch_size, real_images, fake_images):
        alpha = tf.random.uniform([batch_size, 1], 0.0, 1.0)
        interpolated = real_images + alpha * (fake_images - real_images)
        with tf.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = self.discriminator(interpolated, training=True)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1]))
        return tf.reduce_mean((norm - 1.0) ** 2)

    def train_step(self, real_images):
        batch_size = tf.shape(real_images)[0]
        z = tf.random.normal(shape=(batch_size, self.latent_dim))
        with tf.GradientTape() as tape:
            fake_images = self.generator(z, training=True)
            fake_logits = self.discriminator(fake_images, training=True)
            real_logits = self.discriminator(real_images, training=True)
            d_cost = self.d_loss_fn(real_img=real_logits, fake_img=fake_logits)
            gp = self.gradient_penalty(batch_size, real_images, fake_images)
            d_loss = d_cost + gp * self.gp_weight
        d_gradient = tape.gradient(d_loss, self.discriminator.trainable_variables)
        self.d_optimizer.apply_gradients(zip(d_gradient, self.discriminator.trainable_variables, strict=True))
        self.last_d_gradient = d_gradient
        z = tf.random.normal(shape=(batch_size, self.latent_dim))
        with tf.GradientTape() as tape:
            g_loss = self.g_loss_fn(self.discriminator(self.generator(z, training=True), training=True))
        g_gradient = tape.gradient(g_loss, self.generator.trainable_variables)
        self.g_optimizer.apply_gradients(zip(g_gradient, self.generator.trainable_variables, strict=True))
        return {"d_loss": d_loss, "g_loss": g_loss}


def _wasserstein(real_img, fake_img):
    return tf.reduce_mean(fake_img) - tf.reduce_mean(real_img)


def _keras_wgan():
    keras.utils.set_random_seed(3)
    critic = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)], name="critic"
    )
    generator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh")], name="generator")
    wgan = _WGAN(critic, generator, latent_dim=3)
    wgan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3), _wasserstein, lambda f: -tf.reduce_mean(f))
    real = tf.constant(np.random.default_rng(0).normal(size=(5, 4)).astype("float32"))
    return wgan, real


def _assert_penalty_method_closed(tape, target):
    fl, shown = _shown(tape, target)
    kinds = _group_kinds(shown)
    assert kinds["gradient_penalty()"] == "function" and kinds["_wasserstein()"] == "function"
    notes = {d["name"]: d.get("note") for _, d in shown.nx.nodes(data=True) if d.get("kind") == "layer"}
    assert notes["gradient_penalty()"] == "∂pred/∂interpolated"  # gradient(pred, [interpolated])[0]
    assert len(shown.nx) <= 14
    assert not {"ReluGrad", "AddN", "BroadcastGradientArgs"} & {d.get("op_type") for _, d in shown.nx.nodes(data=True)}
    return fl


def test_keras_wgan_gp_penalty_method_is_a_closed_group():
    """keras.io's WGAN-GP: gradient_penalty is a method of the keras.Model subclass, called
    from the user's train_step (tv.record_step) or a custom loop; grouped and closed like a
    plain helper, with flows equal to the gradients the step applied."""
    wgan, real = _keras_wgan()
    steps = tv.record_step(wgan, real)  # Keras's fit is not in the way: train_step is the user's
    first = steps[0]
    assert [f.qualname for f in first.graph.capture.functions] == ["_wasserstein", "_WGAN.gradient_penalty"]
    fl = _assert_penalty_method_closed(first, first.target)
    for v, g in zip(wgan.discriminator.trainable_variables, wgan.last_d_gradient, strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())
    # a custom loop calling the same method inside a tv tape
    z = tf.random.normal((5, 3))
    with tv.GradientTape(persistent=True) as tape:
        fake = wgan.generator(z)
        d_cost = wgan.d_loss_fn(real_img=wgan.discriminator(real), fake_img=wgan.discriminator(fake))
        d_loss = d_cost + wgan.gp_weight * wgan.gradient_penalty(5, real, fake)
    fl = _assert_penalty_method_closed(tape, d_loss)
    critic_vars = wgan.discriminator.trainable_variables
    for v, g in zip(critic_vars, tape.gradient(d_loss, critic_vars), strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())


def test_legend_names_the_kinds_of_closed_groups_drawn():
    """Every closed group box has one colour; its legend entry names the kinds drawn (it
    said "layer (collapsed)" of a function, a block or an inner gradient too)."""
    from tapeviz.picture.legend import legend_entries

    def group_entry(view):
        texts = [text for kind, style, text in legend_entries(view.scene) if kind == "box"]
        return [t for t in texts if "collapsed" in t or "折叠" in t]

    wgan, real = _keras_wgan()
    first = tv.record_step(wgan, real)[0]
    assert group_entry(tv.view(first, first.target)) == ["your function / block / layer (collapsed)"]
    assert group_entry(tv.view(first, first.target, lang="zh")) == ["你的函数、模块、层（已折叠）"]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d")])
    with tv.GradientTape() as tape:
        loss = tf.reduce_sum(model(tf.ones((1, 3))))
    assert group_entry(tv.view(tape, loss, collapsed=True)) == ["layer (collapsed)"]  # as before
    assert group_entry(tv.view(tape, loss, collapsed=False)) == []


def test_remembered_anchor_depths_give_the_walks_answer(monkeypatch):
    """An op deep in a Keras layer finds the user's call it ran in by the depth where it
    was found before (UserCalls.below); the answer is the walk's, call for call."""
    from tapeviz.record import user_calls
    from tapeviz.record.hookstate import call_site_memo

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    x = tf.constant([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]])

    def head(v):
        return model(v)

    def body(v):
        return tf.reduce_sum(head(v) ** 2) + tf.reduce_sum(model(v))

    def step():
        with tv.GradientTape() as tape:
            loss = body(x) + tf.reduce_sum(model(x))
        capture = tape.graph.capture
        ops = [(op.op_type, op.function) for op in capture.ops]
        return ops, [(f.name, f.parent, f.start, f.end) for f in capture.functions], tape, loss

    walks = []
    current = user_calls.UserCalls.current
    monkeypatch.setattr(user_calls.UserCalls, "current", lambda self, f, i: walks.append(i) or current(self, f, i))

    class Forgetful(dict):
        def __setitem__(self, key, value):  # remembers nothing: every op walks
            pass

    monkeypatch.setattr(call_site_memo, "anchor_depths", Forgetful())
    walked = step()
    walks_cold = len(walks)
    monkeypatch.setattr(call_site_memo, "anchor_depths", {})
    step()
    walks.clear()
    remembered = step()
    assert walks_cold > 0 and len(walks) < walks_cold  # the depths were used
    assert remembered[:2] == walked[:2]
    assert [name for name, *_ in walked[1]] == ["body", "head"]
    assert not hooks.hooks_installed()
    fl = tv.flow(remembered[2], remembered[3])
    with tf.GradientTape() as plain:
        plain_loss = body(x) + tf.reduce_sum(model(x))
    for v, want in zip(model.trainable_variables, plain.gradient(plain_loss, model.trainable_variables), strict=True):
        np.testing.assert_array_equal(fl.grad(v), want.numpy())
