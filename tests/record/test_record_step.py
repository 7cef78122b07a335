"""tv.record_step on every form a Keras user writes a training step in: a Model whose
train_step is decorated with @tf.function (keras.io's Forward-Forward), a GAN subclass with
two tapes, a dict batch, a DDPG-style agent whose update is a @tf.function method, a plain
step calling compiled helpers. Each is checked against the gradients TensorFlow computes for
the same step (the step run again eagerly, from the restored state, with TF's own tapes)
and against the bit-exact restore of every variable and optimizer slot. A call that opens
no tape is refused with the reason, never answered with 0 tapes."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import tapeviz as tv
from tapeviz.record import hooks


def _values(*objects) -> list[np.ndarray]:
    """Every variable of the objects (models, optimizers, seed generators), copied."""
    out = []
    for obj in objects:
        variables = obj.variables if hasattr(obj, "variables") else [obj.state]
        out += [np.array(v.numpy(), copy=True) for v in variables]
    return out


def _assert_same(before, after) -> None:
    assert len(before) == len(after)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def _tf_run(step, *args):
    """The step once more, eagerly, with TF's own tapes (tapeviz not involved): what the
    step's grads were. Functions run eagerly only for this call."""
    tf.config.run_functions_eagerly(True)
    try:
        return step(*args)
    finally:
        tf.config.run_functions_eagerly(False)


def _assert_flows(rec, variables, grads) -> None:
    fl = tv.flow(rec, rec.target)
    for v, g in zip(variables, grads, strict=True):
        np.testing.assert_array_equal(fl.grad(v), g.numpy())


# --------------------------------------------------------------------------- a decorated train_step


class DecoratedStep(keras.Model):
    """keras.io's Forward-Forward example decorates train_step itself with @tf.function."""

    def __init__(self):
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation="relu")
        self.out = keras.layers.Dense(1)
        self.grads = None

    def call(self, x, training=False):
        return self.out(self.hidden(x))

    @tf.function
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        self.grads = grads
        return {"loss": loss}


def test_a_train_step_decorated_with_tf_function_is_recorded():
    keras.utils.set_random_seed(1)
    model = DecoratedStep()
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    x = np.random.default_rng(0).normal(size=(8, 3)).astype("float32")
    y = np.random.default_rng(1).normal(size=(8, 1)).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    before = _values(model, model.optimizer)
    steps = tv.record_step(model, x[:4], y[:4])
    _assert_same(before, _values(model, model.optimizer))  # weights, slots and iterations
    assert len(steps) == 1 and steps.restored and "1 tapes" in repr(steps)
    assert not tf.config.functions_run_eagerly() and not hooks.hooks_installed()
    _tf_run(model.train_step, (x[:4], y[:4]))
    _assert_flows(steps[0], model.trainable_variables, model.grads)
    assert tv.view(steps[0], steps[0].target).scene.boxes


# --------------------------------------------------------------------------- a GAN subclass, two tapes


class TwoTapeGAN(keras.Model):
    """keras.io's DCGAN shape: the discriminator's step, then new noise and the generator's
    step (whose loss sees the discriminator after its update), noise from a SeedGenerator."""

    def __init__(self, latent: int = 2):
        super().__init__()
        self.latent = latent
        self.generator = keras.Sequential(
            [keras.Input((latent,)), keras.layers.Dense(3, "relu"), keras.layers.Dense(2)]
        )
        self.discriminator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, "relu"), keras.layers.Dense(1)])
        self.seed_generator = keras.random.SeedGenerator(7)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
        self.grads: list = []

    def compile(self, d_optimizer, g_optimizer):
        super().compile()
        self.d_optimizer, self.g_optimizer = d_optimizer, g_optimizer

    def call(self, z):
        return self.generator(z)

    def train_step(self, real):
        n = tf.shape(real)[0]
        noise = keras.random.normal((n, self.latent), seed=self.seed_generator)
        fake = self.generator(noise)
        images = tf.concat([fake, real], axis=0)
        labels = tf.concat([tf.ones((n, 1)), tf.zeros((n, 1))], axis=0)
        with tf.GradientTape() as d_tape:
            d_loss = self.loss_fn(labels, self.discriminator(images))
        d_grads = d_tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(d_grads, self.discriminator.trainable_weights, strict=True))
        noise = keras.random.normal((n, self.latent), seed=self.seed_generator)
        with tf.GradientTape() as g_tape:
            g_loss = self.loss_fn(tf.zeros((n, 1)), self.discriminator(self.generator(noise)))
        g_grads = g_tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(g_grads, self.generator.trainable_weights, strict=True))
        self.grads = [d_grads, g_grads]
        return {"d_loss": d_loss, "g_loss": g_loss}


def _gan():
    keras.utils.set_random_seed(3)
    gan = TwoTapeGAN()
    gan.compile(keras.optimizers.Adam(1e-2), keras.optimizers.Adam(1e-2, beta_1=0.5))
    real = np.random.default_rng(2).normal(size=(12, 2)).astype("float32")
    return gan, real


def _gan_state(gan):
    return _values(gan.generator, gan.discriminator, gan.d_optimizer, gan.g_optimizer, gan.seed_generator)


def test_a_gan_subclass_with_two_tapes():
    gan, real = _gan()
    gan.fit(real, batch_size=4, epochs=1, verbose=0)
    before = _gan_state(gan)
    steps = tv.record_step(gan, tf.constant(real[:4]))
    _assert_same(before, _gan_state(gan))
    assert len(steps) == 2 and set(steps.result) == {"d_loss", "g_loss"}
    _tf_run(gan.train_step, tf.constant(real[:4]))  # from the same weights and seed state
    d_grads, g_grads = gan.grads
    _assert_flows(steps[0], gan.discriminator.trainable_weights, d_grads)
    _assert_flows(steps[1], gan.generator.trainable_weights, g_grads)


# --------------------------------------------------------------------------- a dict batch


class DictBatchModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.grads = None

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        with tf.GradientTape() as tape:
            pred = self(data["features"], training=True)
            loss = tf.reduce_mean(tf.square(pred - data["label"]) * data["weight"])
        self.grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(self.grads, self.trainable_variables, strict=True))
        return {"loss": loss}


def test_a_dict_batch_is_passed_as_it_is():
    keras.utils.set_random_seed(4)
    model = DictBatchModel()
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9))
    rng = np.random.default_rng(3)
    batch = {
        "features": tf.constant(rng.normal(size=(5, 3)).astype("float32")),
        "label": tf.constant(rng.normal(size=(5, 1)).astype("float32")),
        "weight": tf.constant(rng.uniform(size=(5, 1)).astype("float32")),
    }
    model.fit(tf.data.Dataset.from_tensors(batch), epochs=1, verbose=0, shuffle=False)
    before = _values(model, model.optimizer)
    steps = tv.record_step(model, batch)
    _assert_same(before, _values(model, model.optimizer))
    _tf_run(model.train_step, batch)
    _assert_flows(steps[0], model.trainable_variables, model.grads)


def test_keyword_arguments_to_a_model_are_refused_with_the_form_to_use():
    model = DictBatchModel()
    with pytest.raises(TypeError, match=r"tv.record_step\(model, x, y\)"):
        tv.record_step(model, x=np.ones((2, 3)))


# --------------------------------------------------------------------------- a DDPG-style agent


class _Agent:
    """keras.io's DDPG: the buffer's learn() calls a @tf.function update() method, which
    trains the critic, then the actor through the critic."""

    def __init__(self):
        keras.utils.set_random_seed(5)
        self.actor = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, "relu"), keras.layers.Dense(1, "tanh")])
        self.critic = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, "relu"), keras.layers.Dense(1)])
        self.target_critic = keras.models.clone_model(self.critic)
        self.target_actor = keras.models.clone_model(self.actor)
        self.actor_opt, self.critic_opt = keras.optimizers.Adam(1e-2), keras.optimizers.Adam(2e-2)
        self.grads: list = []

    @tf.function
    def update(self, state, action, reward, next_state):
        target_actions = self.target_actor(next_state, training=True)
        y = reward + 0.99 * self.target_critic(tf.concat([next_state, target_actions], 1), training=True)
        with tf.GradientTape() as tape:
            critic_value = self.critic(tf.concat([state, action], 1), training=True)
            critic_loss = tf.reduce_mean(tf.square(y - critic_value))
        critic_grad = tape.gradient(critic_loss, self.critic.trainable_variables)
        self.critic_opt.apply_gradients(zip(critic_grad, self.critic.trainable_variables, strict=True))
        with tf.GradientTape() as tape:
            actions = self.actor(state, training=True)
            actor_loss = -tf.reduce_mean(self.critic(tf.concat([state, actions], 1), training=True))
        actor_grad = tape.gradient(actor_loss, self.actor.trainable_variables)
        self.actor_opt.apply_gradients(zip(actor_grad, self.actor.trainable_variables, strict=True))
        self.grads = [critic_grad, actor_grad]

    def learn(self, batch):  # a plain method calling the compiled one
        self.update(*batch)


def test_a_ddpg_agent_with_a_tf_function_method():
    agent = _Agent()
    rng = np.random.default_rng(4)
    batch = [tf.constant(rng.normal(size=(6, k)).astype("float32")) for k in (3, 1, 1, 3)]
    agent.update(*batch)  # the run has started: slots exist
    state = (agent.actor, agent.critic, agent.actor_opt, agent.critic_opt)
    before = _values(*state)
    for steps in (tv.record_step(agent.update, *batch), tv.record_step(agent.learn, batch)):
        _assert_same(before, _values(*state))
        assert len(steps) == 2
    _tf_run(agent.update, *batch)
    critic_grad, actor_grad = agent.grads
    _assert_flows(steps[0], agent.critic.trainable_variables, critic_grad)
    _assert_flows(steps[1], agent.actor.trainable_variables, actor_grad)


def test_a_jit_compiled_step_runs_eagerly_and_is_recorded():
    w = tf.Variable([1.0, -2.0])
    opt = keras.optimizers.SGD(0.1)

    @tf.function(jit_compile=True)
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w * x))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    step(tf.constant([3.0, 4.0]))
    before = w.numpy().copy()
    steps = tv.record_step(step, tf.constant([3.0, 4.0]))
    np.testing.assert_array_equal(w.numpy(), before)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(w * tf.constant([3.0, 4.0])))
    np.testing.assert_array_equal(tv.flow(steps[0], steps[0].target).grad(w), tape.gradient(loss, w).numpy())


# --------------------------------------------------------------------------- refusals


def test_a_call_that_opens_no_tape_is_refused_and_undone():
    w = tf.Variable(2.0)

    @tf.function
    def predict_and_count(x):
        w.assign_add(1.0)
        return w * x

    with pytest.raises(ValueError, match=r"opened no tf.GradientTape.*Fix: pass the function"):
        tv.record_step(predict_and_count, tf.constant(3.0))
    assert w.numpy() == 2.0 and not tf.config.functions_run_eagerly() and not hooks.hooks_installed()


def test_the_users_run_functions_eagerly_setting_is_kept():
    w = tf.Variable(1.0)

    def step():
        with tf.GradientTape() as tape:
            loss = w * w
        w.assign_sub(0.1 * tape.gradient(loss, w))

    tf.config.run_functions_eagerly(True)
    try:
        assert len(tv.record_step(step)) == 1
        assert tf.config.functions_run_eagerly()
    finally:
        tf.config.run_functions_eagerly(False)
    assert w.numpy() == 1.0


def test_record_step_inside_a_traced_function_is_refused():
    @tf.function
    def outer():
        tv.record_step(lambda: None)

    with pytest.raises(RuntimeError, match=r"tracing a tf\.function"):
        outer()


# --------------------------------------------------------------------------- hist.callback on a custom train_step


def _all_state(gan) -> list:
    return [
        *gan.generator.variables,
        *gan.discriminator.variables,
        *gan.d_optimizer.variables,
        *gan.g_optimizer.variables,
        gan.seed_generator.state,
    ]


class _TFAtBatch(keras.callbacks.Callback):
    """What TF computes for the GAN's step on the probe batch at the end of batch ``at``:
    the step run eagerly with TF's own tapes, then every variable assigned back."""

    def __init__(self, probe, at: int):
        super().__init__()
        self.probe, self.at, self.grads = probe, at, None
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        if self.batches == self.at:
            state = _all_state(self.model)
            saved = [np.array(v.numpy(), copy=True) for v in state]
            _tf_run(self.model.train_step, self.probe)
            self.grads = [[g.numpy() for g in gs] for gs in self.model.grads]
            for v, value in zip(state, saved, strict=True):
                v.assign(value)
        self.batches += 1


def test_hist_callback_records_a_gan_subclass_own_train_step():
    probe = np.random.default_rng(9).normal(size=(4, 2)).astype("float32")
    gan, real = _gan()
    plain, _ = _gan()
    for v, w in zip(_all_state(plain), _all_state(gan), strict=True):
        np.testing.assert_array_equal(v.numpy(), w.numpy())  # the same start
    hist = tv.History()
    tf_at_2 = _TFAtBatch(tf.constant(probe), at=2)
    gan.fit(real, batch_size=4, epochs=2, verbose=0, shuffle=False, callbacks=[tf_at_2, hist.callback(probe, every=2)])
    plain.fit(real, batch_size=4, epochs=2, verbose=0, shuffle=False)
    for v, w in zip(_all_state(plain), _all_state(gan), strict=True):
        np.testing.assert_array_equal(v.numpy(), w.numpy())  # the callback changed nothing
    assert hist.recorded_steps() == [0, 2, 4] and len(hist) == 3
    assert not tf.config.functions_run_eagerly()
    graph, flow = hist.picture(2)  # the discriminator's tape, the first the step opened
    d_grads, g_grads = tf_at_2.grads
    for v, g in zip(gan.discriminator.trainable_weights, d_grads, strict=True):
        np.testing.assert_array_equal(flow.grad(v), g)
    names = hist.variables()
    assert len(names) == len(gan.discriminator.trainable_weights) + len(gan.generator.trainable_weights)
    for name, g in zip(names, d_grads + g_grads, strict=True):  # the discriminator's, then the generator's
        norm = hist.norms(name, kind="grad")[1]  # stored point 1 = step 2
        np.testing.assert_allclose(norm, np.linalg.norm(g.astype(np.float64)), rtol=1e-6)


def test_hist_callback_refuses_a_train_step_that_opens_no_tape():
    class NoTape(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            return {"out": tf.reduce_sum(self(data))}

    model = NoTape()
    model.compile()
    x = np.ones((4, 2), "float32")
    with pytest.raises(ValueError, match=r"NoTape.train_step.*opened no tf.GradientTape.*Fix"):
        model.fit(x, epochs=1, verbose=0, callbacks=[tv.History().callback(x[:2], every=1)])


def test_hist_callback_explains_a_probe_batch_in_the_wrong_form():
    gan, real = _gan()
    before = _gan_state(gan)
    cb = tv.History().callback(real[:4], np.ones((4, 1), "float32"), every=1)  # a GAN's step takes images alone
    cb.set_model(gan)
    with pytest.raises(ValueError, match=r"TwoTapeGAN.train_step on the probe batch.*raised.*hist.callback\(x\)"):
        cb.record(0)
    _assert_same(before, _gan_state(gan))
