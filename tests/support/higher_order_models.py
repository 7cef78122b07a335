"""Nested-tape programs as users write them: a PINN residual and a WGAN-GP critic loss.

Each builder records its program under an outer tv.GradientTape and returns what a test
needs: the outer tape, the loss, the variables, and the same program run with plain
tf.GradientTape for comparison (identical numbers, no tapeviz anywhere)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tensorflow as tf

import tapeviz as tv


@dataclass
class Program:
    tape: Any
    loss: Any
    variables: list
    plain_grads: list  # the outer gradients computed without tapeviz


def pinn_net(seed: int = 0) -> tf.keras.Model:
    """u(x, t): a 3-layer tanh network (2 -> 16 -> 16 -> 1)."""
    tf.keras.utils.set_random_seed(seed)
    return tf.keras.Sequential(
        [
            tf.keras.Input((2,)),
            tf.keras.layers.Dense(16, activation="tanh", name="hidden1"),
            tf.keras.layers.Dense(16, activation="tanh", name="hidden2"),
            tf.keras.layers.Dense(1, name="u_out"),
        ],
        name="pinn",
    )


def pinn_loss(net, pts, outer_tape_type=tf.GradientTape, inner_tape_type=tf.GradientTape):
    """The heat-equation residual u_t - 0.1 u_xx at collocation points (x, t)."""
    with outer_tape_type() as tape:
        with inner_tape_type(persistent=True) as t2:
            t2.watch(pts)
            with inner_tape_type() as t1:
                t1.watch(pts)
                u = net(pts)
            du = t1.gradient(u, pts)
            u_x = du[:, 0:1]
            u_t = du[:, 1:2]
        u_xx = t2.gradient(u_x, pts)[:, 0:1]
        loss = tf.reduce_mean((u_t - 0.1 * u_xx) ** 2)
    return tape, loss


def pinn(inner_tape_type=tf.GradientTape) -> Program:
    net = pinn_net()
    pts = tf.constant([[0.1, 0.0], [0.5, 0.3], [-0.4, 0.8], [0.9, 0.5]])
    plain_tape, plain_loss = pinn_loss(net, pts)
    plain = plain_tape.gradient(plain_loss, net.trainable_variables)
    tape, loss = pinn_loss(net, pts, tv.GradientTape, inner_tape_type)
    return Program(tape, loss, list(net.trainable_variables), plain)


def wgan_nets(seed: int = 1):
    tf.keras.utils.set_random_seed(seed)
    critic = tf.keras.Sequential(
        [
            tf.keras.Input((4,)),
            tf.keras.layers.Dense(8, activation="relu", name="c1"),
            tf.keras.layers.Dense(8, activation="relu", name="c2"),
            tf.keras.layers.Dense(1, name="score"),
        ],
        name="critic",
    )
    generator = tf.keras.Sequential(
        [tf.keras.Input((3,)), tf.keras.layers.Dense(4, activation="tanh", name="g1")], name="generator"
    )
    return critic, generator


def wgan_gp_loss(critic, generator, real, z, eps, outer_tape_type=tf.GradientTape, inner_tape_type=tf.GradientTape):
    """The WGAN-GP critic loss: E[D(fake)] - E[D(real)] + 10 E[(||dD/dx_hat|| - 1)^2]."""
    with outer_tape_type() as tape:
        fake = generator(z)
        x_hat = eps * real + (1.0 - eps) * fake
        with inner_tape_type() as gp_tape:
            gp_tape.watch(x_hat)
            d_hat = critic(x_hat)
        grads = gp_tape.gradient(d_hat, x_hat)
        penalty = tf.reduce_mean((tf.norm(grads, axis=1) - 1.0) ** 2)
        loss = tf.reduce_mean(critic(fake)) - tf.reduce_mean(critic(real)) + 10.0 * penalty
    return tape, loss


def gradient_penalty(critic, real, fake, eps, inner_tape_type=tf.GradientTape):
    """E[(||dD/dx_hat|| - 1)^2] at points x_hat between real and fake samples (Gulrajani
    et al. 2017, Algorithm 1; keras.io's WGAN-GP example has it as a method too)."""
    x_hat = eps * real + (1.0 - eps) * fake
    with inner_tape_type() as gp_tape:
        gp_tape.watch(x_hat)
        d_hat = critic(x_hat)
    grads = gp_tape.gradient(d_hat, x_hat)
    return tf.reduce_mean((tf.norm(grads, axis=1) - 1.0) ** 2)


def critic_loss(real_score, fake_score):
    """The Wasserstein estimate the critic minimises: E[D(fake)] - E[D(real)]."""
    return tf.reduce_mean(fake_score) - tf.reduce_mean(real_score)


def wgan_gp_step_loss(
    critic, generator, real, z, eps, outer_tape_type=tf.GradientTape, inner_tape_type=tf.GradientTape
):
    """The same critic loss written the way WGAN-GP code usually is: helpers for the
    Wasserstein estimate and the penalty, called while the outer tape records."""
    with outer_tape_type() as tape:
        fake = generator(z)
        d_cost = critic_loss(critic(real), critic(fake))
        gp = gradient_penalty(critic, real, fake, eps, inner_tape_type)
        loss = d_cost + 10.0 * gp
    return tape, loss


def wgan_gp(inner_tape_type=tf.GradientTape, helpers: bool = False) -> Program:
    """The WGAN-GP critic loss, written inline in the tape's block or (``helpers``) with
    a ``critic_loss`` and a ``gradient_penalty`` function."""
    critic, generator = wgan_nets()
    real = tf.constant([[0.5, -0.2, 0.1, 0.9], [1.0, 0.3, -0.7, 0.2], [-0.3, 0.8, 0.4, -0.1]])
    z = tf.constant([[0.1, 0.2, 0.3], [-0.5, 0.4, 0.0], [0.9, -0.1, 0.2]])
    eps = tf.constant([[0.3], [0.6], [0.9]])
    write = wgan_gp_step_loss if helpers else wgan_gp_loss
    plain_tape, plain_loss = write(critic, generator, real, z, eps)
    plain = plain_tape.gradient(plain_loss, critic.trainable_variables)
    tape, loss = write(critic, generator, real, z, eps, tv.GradientTape, inner_tape_type)
    return Program(tape, loss, list(critic.trainable_variables), plain)


def hessian_program():
    """h(w) = Σ w³ + w0·w1·w2 with its gradient g recorded by a persistent outer tv tape:
    (outer, w, g, tv.jacobian(outer, g, w)), the Hessian as the Jacobian of the gradient."""
    w = tf.Variable([0.5, -1.0, 2.0])
    with tv.GradientTape(persistent=True) as outer:
        with tf.GradientTape() as inner:
            h = tf.reduce_sum(w**3) + w[0] * w[1] * w[2]
        g = inner.gradient(h, w)
    return outer, w, g, tv.jacobian(outer, g, w)
