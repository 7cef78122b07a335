"""Bad input gets an error that says what to do (issue: reliability, clear errors)."""

import pytest
import tensorflow as tf
from tensorflow.python.eager import backprop

import tapeviz as tv


@pytest.fixture
def recorded():
    x = tf.Variable(2.0)
    with tv.GradientTape(persistent=True) as tape:
        y = x * x
    return tape, x, y


def test_target_not_made_in_the_block(recorded):
    tape, x, y = recorded
    outside = tf.constant(3.0) * 2.0
    with pytest.raises(ValueError, match=r"not produced while this tape recorded.*inside the `with"):
        tv.flow(tape, outside)


def test_target_not_a_tensor(recorded):
    tape, x, y = recorded
    with pytest.raises(TypeError, match=r"must be a tensor computed inside.*got float"):
        tv.flow(tape, 3.0)
    with pytest.raises(ValueError, match="needs a target"):
        tv.flow(tape, [])


def test_source_the_tape_never_saw(recorded):
    tape, x, y = recorded
    other = tf.Variable(1.0)
    with pytest.raises(ValueError, match="neither a variable read nor a tensor seen"):
        tv.flow(tape, y, sources=[other])


def test_tape_that_recorded_nothing():
    with tv.GradientTape() as tape:
        pass
    with pytest.raises(ValueError, match=r"recorded no operations.*inside the `with` block"):
        tv.flow(tape, tf.constant(1.0))


def test_plain_tape_and_wrong_objects():
    with tf.GradientTape() as plain:
        tf.constant(1.0) * 2.0
    with pytest.raises(TypeError, match=r"Use tv\.GradientTape"):
        tv.flow(plain, tf.constant(1.0))
    with pytest.raises(TypeError, match=r"needs a tf\.GradientTape"):
        tv.record("not a tape")
    with pytest.raises(TypeError, match=r"Expected a tv\.GradientTape"):
        tv.flow(42, tf.constant(1.0))


def test_record_outside_the_block():
    tape = tf.GradientTape()
    with pytest.raises(RuntimeError, match="inside the tape's `with` block"):
        with tv.record(tape):
            pass


def test_export_suffix_and_folder(recorded, tmp_path):
    tape, x, y = recorded
    with pytest.raises(ValueError, match=r"ending in \.png, \.svg or \.gif"):
        tv.save(tape, y, tmp_path / "y.pdf")
    with pytest.raises(FileNotFoundError, match=r"does not exist\. Create it first"):
        tv.save(tape, y, tmp_path / "missing" / "y.png")
    with pytest.raises(ValueError, match=r"ending in \.html"):
        tv.export_html(tape, y, tmp_path / "y.png")


def test_clip_settings_refused_in_the_api():
    from tapeviz.gradients import clipping

    with pytest.raises(ValueError, match="clip_norm must be a positive number"):
        clipping.clip({"x": tf.constant(1.0)}, "by_norm", clip_norm=-0.5)
    with pytest.raises(ValueError, match=r"min 2\.0 is greater than max 1\.0"):
        clipping.clip({"x": tf.constant(1.0)}, "by_value", clip_value=(2.0, 1.0))


def test_watching_non_float_tensors_logs_what_tf_logs(monkeypatch):
    messages = {}
    for T in (tf.GradientTape, tv.GradientTape):
        seen = []
        monkeypatch.setattr(
            backprop.logging, "log_first_n", lambda level, msg, n, *args, _seen=seen: _seen.append(msg % args)
        )
        with T() as tape:
            tape.watch(tf.constant(3))
            tape.watch(tf.constant([True, False]))
        messages[T] = seen
    assert messages[tf.GradientTape] and messages[tf.GradientTape] == messages[tv.GradientTape]
