"""中文：tv.explain 关于 NaN、Inf 与零梯度的句子（键 ``numeric.*``，与英文目录一一对应）。"""

from __future__ import annotations


def _line(line, code, **_):
    if not line:
        return ""
    return f"（第 {line} 行" + (f"：`{code}`" if code else "") + "）"


def _at(indices, count, size, **_):
    if not indices:
        return ""
    return f"，位置 {indices}" + (f"（共 {size} 个元素中的 {count} 个）" if size and size > 1 else "")


def _lead_non_finite(target, source, value, **f):
    return f"d{target}/d{source} 是 {value}{_at(**f)}。"


def _lead_zero(target, source, size, count, asked, **_):
    if asked:
        part = f"d{target}/d{source} 的第 {asked} {'个元素' if count == 1 else '行'}"
        return f"{part}恰好为零，尽管 {target} 依赖于 {source}。"
    every = f"（全部 {size} 个元素）" if size and size > 1 else ""
    return f"d{target}/d{source} 恰好为零{every}，尽管 {target} 依赖于 {source}。"


def _lead_forward(target, value, **f):
    return f"{target} 本身就是 {value}{_at(**f)}：前向计算已经产生了非有限值，所以梯度不可能正确。"


def _origin_non_finite(op, arriving, local, local_value, variable, forward, result, **f):
    where = f"问题始于 {op}{_line(**f)}"
    if not local:
        return f"{where}：到达那里的梯度是 {arriving}，而 {op} 传回的是 {result}。"
    return (f"{where}：到达那里的梯度是 {arriving}，{op} 的局部导数是 {local}，在 {variable} = {forward} 处等于 "
            f"{local_value}：{arriving} × {local_value} = {result}。")


def _origin_zero(op, arriving, local, local_value, variable, forward, **f):
    where = f"梯度在 {op}{_line(**f)}处变成零"
    comes = f"到达那里的梯度是 {arriving}" if arriving != "?" else "到达那里的梯度不为零"
    if not local or arriving == "?":
        return f"{where}：{comes}，但 {op} 传回的是 0。"
    return (f"{where}：到达那里的梯度是 {arriving}，{op} 的局部导数是 {local}，在 {variable} = {forward} 处等于 "
            f"{local_value}，所以 {op} 传回 0。")


def _origin_forward(op, variable, forward, result, **f):
    value = f"在 {variable} = {forward} 处得到 {result}" if forward != "?" else f"得到 {result}"
    return f"第一个产生非有限值的运算是 {op}{_line(**f)}：{value}。"


def _dead_relu(max, **_):
    return f"这个 ReLU 已经“死亡”：它的每个输入都 ≤ 0（最大的是 {max}），所以它在每个元素上的导数都是 0，梯度无法通过。"


def _saturated(op, min_abs, **_):
    name = "sigmoid" if op == "Sigmoid" else "tanh"
    return f"这个 {name} 已经饱和：它的输入离 0 太远（最近的是 {min_abs}），导数在 float32 中被舍入为 0。"


def _row_not_read(ids, ids_count, asked, indices, **_):
    return (f"查表（tf.gather / Embedding）只读取了第 {ids} 行"
            + (f"（共 {ids_count} 个不同的 id）" if ids_count else "")
            + f"；第 {asked or indices} 行不在其中，所以它的梯度是 0。")


NUMERIC = {
    "numeric.lead.non_finite": _lead_non_finite,
    "numeric.lead.zero": _lead_zero,
    "numeric.lead.forward": _lead_forward,
    "numeric.origin.non_finite": _origin_non_finite,
    "numeric.origin.zero": _origin_zero,
    "numeric.origin.forward": _origin_forward,
    "numeric.origin.none": "tapeviz 没有找到问题开始的单个运算（可能来自路上 +∞ 与 -∞ 相加）。",
    "numeric.join": "",
    "numeric.pattern.where_trap": lambda op, other_line, indices, source, **_: (
        f"这就是 tf.where 陷阱：tf.where{'（第 ' + str(other_line) + ' 行）' if other_line else ''}"
        f"{'在 ' + indices + ' ' if indices else ''}选择了另一个分支，向 {op} 传回 0，但 0 × ∞ 是 NaN 而不是 0，"
        f"NaN 照样到达了 {source}。"),
    "numeric.fix.where_trap": lambda op, make_safe, use_safe, **_: (
        f"在 {op} 之前先把输入变安全，让 tf.where 没有选择的分支也保持有限："
        f"`{make_safe}`，然后 `{use_safe}`（cond 为同一个条件）。"),
    "numeric.pattern.sqrt_at_zero": "sqrt 的导数 1/(2·√x) 在 x = 0 处是无穷大。",
    "numeric.fix.sqrt_at_zero": "在根号内加一个很小的 epsilon（tf.sqrt(x + 1e-12)），或用安全的 tf.where 只在 x > 0 处开方。",
    "numeric.pattern.norm_at_zero": "tf.norm 就是 sqrt(sum(x²))；在零向量处它的导数 x/‖x‖ 是 0/0，TF 算成 0 × ∞ = NaN。",
    "numeric.fix.norm_at_zero": "加一个 epsilon：tf.sqrt(tf.reduce_sum(tf.square(x)) + 1e-12)，或在可以的地方改用范数的平方。",
    "numeric.pattern.sqrt_of_negative": "负数的平方根是 NaN。",
    "numeric.fix.sqrt_of_negative": "让输入保持 ≥ 0（tf.maximum(x, 0.0)）；用 E[x²] - E[x]² 算出的方差可能因舍入略小于 0。",
    "numeric.pattern.log_of_zero": "log(0) 是 -∞，它的导数 1/x 在 0 处是 ∞。",
    "numeric.fix.log_of_zero": "让输入远离 0：tf.math.log(tf.maximum(x, 1e-7)) 或 tf.math.log(x + 1e-7)。",
    "numeric.pattern.log_of_negative": "负数的对数是 NaN。",
    "numeric.fix.log_of_negative": "log 需要正的输入：找出是什么让值变成负数，或使用取值为正的函数（tf.nn.softplus、tf.exp）。",
    "numeric.pattern.log_of_probability": lambda other_op, other_line, **_: (
        f"log 的输入来自 {other_op}{'（第 ' + str(other_line) + ' 行）' if other_line else ''}，它在 float32 中把一个概率"
        "舍入成了恰好为 0：这是用概率而不是 logits 计算交叉熵。"),
    "numeric.fix.log_of_probability": "传入 logits 而不是概率：tf.nn.softmax_cross_entropy_with_logits、tf.nn.sigmoid_cross_entropy_with_logits，或 from_logits=True 的 Keras 损失（之前不要再做 softmax / sigmoid）。",
    "numeric.pattern.probability_clipped": lambda op, other_op, other_line, **_: (
        f"{op} 是损失函数把来自 {other_op}{'（第 ' + str(other_line) + ' 行）' if other_line else ''}的概率裁剪到 "
        "[ε, 1 - ε]：这些概率已经饱和（在 float32 中恰好为 0 或 1），落在这个范围之外，而裁剪在那里传回 0。"
        "这是用概率而不是 logits 计算损失。"),
    "numeric.fix.probability_clipped": "传入 logits 而不是概率：使用 from_logits=True 的 Keras 损失（去掉最后的 softmax / sigmoid），或 tf.nn.softmax_cross_entropy_with_logits、tf.nn.sigmoid_cross_entropy_with_logits。",
    "numeric.pattern.division_by_zero": "这是除以零。",
    "numeric.fix.division_by_zero": "保护分母：tf.math.divide_no_nan(x, y)、x / (y + 1e-7)，或在除法外用安全的 tf.where。",
    "numeric.pattern.exp_overflow": "当 x > 88.7 时，exp(x) 在 float32 中溢出为 ∞。",
    "numeric.fix.exp_overflow": "先减去最大值（tf.reduce_logsumexp、tf.nn.softmax 和 tf.nn.log_softmax 都这样做），或在 tf.exp 之前裁剪 x。",
    "numeric.pattern.dead_relu": _dead_relu,
    "numeric.fix.dead_relu": "改用 LeakyReLU、ELU 或 GELU，降低学习率或使用 He 初始化，并检查偏置：很大的负偏置会让单元死亡。",
    "numeric.pattern.saturated": _saturated,
    "numeric.fix.saturated": "对输入做归一化（BatchNormalization / LayerNormalization）或缩小初始权重；如果损失作用在 sigmoid 上，请传入 logits（from_logits=True）。",
    "numeric.pattern.step_function": "{op} 几乎处处平坦：它的导数是 0。",
    "numeric.fix.step_function": "使用平滑的替代（用 tf.tanh(k * x) 代替 tf.sign），或直通估计：x + tf.stop_gradient(tf.round(x) - x)。",
    "numeric.pattern.clipped": "每个值都在 {op} 保留的范围之外，而那里的导数是 0。",
    "numeric.fix.clipped": "检查范围；若想限制更新幅度，请裁剪梯度（tf.clip_by_norm）而不是值。",
    "numeric.pattern.where_unselected": "tf.where 在每个元素上都选择了另一个分支，所以没有梯度流回这个分支。",
    "numeric.fix.where_unselected": "检查 tf.where 的条件：对这个分支来说它从未满足。",
    "numeric.pattern.row_not_read": _row_not_read,
    "numeric.fix.row_not_read": "如果这一行不在本批数据中，就没有问题；从未被读取的行永远不会被训练：检查 id（差一错误、填充 id、过大的词表）。",
    "numeric.pattern.multiplied_by_zero": "{op} 的另一个因子在那里是 0，所以乘积的导数是 0。",
    "numeric.fix.multiplied_by_zero": "检查这个零因子从哪里来（掩码，或初始化为零的权重）。",
    "numeric.pattern.other": "",
    "numeric.fix.other": "查看 {op} 在这些元素上的输入：把它们打印出来，或在 tv.explore 中跳到它。",
    "numeric.fix.none": "查看路上相加的各个部分（tv.flow(tape, target).contributions(...)）：+∞ 与 -∞ 相加得到 NaN。",
    "numeric.origin.seed": "它在反向传播的起点就已经存在：也就是为 {target} 给出的 output_gradients。",
    "numeric.fix.seed": "检查传给 tape.gradient 的 output_gradients（以及计算它们的代码）。",
}
