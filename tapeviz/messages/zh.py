"""中文：tapeviz 写出的每一句话（键的约定见 tapeviz.messages）。

术语与教程一致：梯度磁带（GradientTape）、变量、张量、常量、运算（op）、监视（watch）、
记录（record）、反向传播、裁剪（clip）。代码（tf.stop_gradient、tape.watch(x)）保持原样。
"""

from __future__ import annotations

from .numeric_zh import NUMERIC


def _where(expression, line):
    return f"`{expression}`" + (f"（第 {line} 行）" if line else "")


def _left(source, via, expression, line, target, back, back_line, **_):
    where = f"，在 {_where(expression, line)}" if expression else ""
    came = f"（在 {_where(back, back_line)}）" if back else ""
    return (f"{source} 通过 {via} 离开了 TensorFlow{where}；之后 {target} 依赖一个由 NumPy 值新建的张量{came}，"
            f"它很可能就是返回的结果，磁带无法把它追溯到 {source}。")


def _left_unseen(source, target, back, back_line, **_):
    came = f"（在 {_where(back, back_line)}）" if back else ""
    return (f"TensorFlow 中没有运算使用 {source}，而 {target} 依赖其后由 NumPy 值新建的张量{came}："
            f"{source} 很可能经过了 NumPy（np.asarray、np.array 或 NumPy 通用函数，tapeviz 看不到这些调用），"
            "磁带无法追溯返回的值。")


def _explain_left(name, source, via, expression, line, target, back, back_line, **_):
    where = _where(expression, line) if expression else via
    came = f"（在 {_where(back, back_line)}）" if back else ""
    to = "NumPy" if via.startswith("np.") else "Python"
    return (f"从 {name} 到 {target} 的路径在 {where} 离开了 TensorFlow：{source} 被交给 {to}，"
            f"返回的{came}是一个新张量，磁带无法追溯它。")


def _explain_left_unseen(name, source, target, back, back_line, **_):
    came = f"（在 {_where(back, back_line)}）" if back else ""
    return (f"从 {name} 到 {target} 的路径止于 {source}，TensorFlow 中没有运算使用它；{target} 依赖的是一个"
            f"由 NumPy 值新建的张量{came}。{source} 很可能经过了 NumPy（np.asarray、np.array 或通用函数），"
            "在磁带看不到的地方返回。")


def _fix_left(via, tf_equivalent, **_):
    if tf_equivalent:
        return f"用 {tf_equivalent} 代替 {via.removesuffix('()')}，让值留在磁带上。"
    if via in (".numpy()", "float()"):
        return f"直接使用张量本身，不要调用 {via}；用 TensorFlow 运算来计算。"
    return "用 TensorFlow 运算完成计算，不要经过 NumPy 或 Python 数值。"


def _watch_call(subject, keras, **_):
    return f"tape.watch(v.value)（v 为 Keras 变量 {subject}）" if keras else f"tape.watch({subject})"


def _hidden_note(hidden, folded, target, **_):
    parts = []
    if hidden:
        what = f"对 {target} 没有贡献" if target else "不通向任何输出"
        parts.append(f"隐藏了 {hidden} 个{what}的运算")
    if folded:
        parts.append(f"{folded} 个常量和形状运算折叠进使用它们的运算")
    return "；".join(parts) + "（show_all=True 可全部显示）"


# 图例中每种折叠分组框的名称（picture.groups.Group.kind）
_GROUP_KINDS = {
    "function": "你的函数",
    "block": "模块",
    "layer": "层",
    "loss": "损失",
    "api": "tf 函数调用",
    "derivative": "内层求导",
}


def _collapsed_note(layers, calls, total, blocks=0, losses=0, derivatives=0, functions=0, **_):
    parts = (
        [f"{functions} 个你的函数"] * bool(functions)
        + [f"{blocks} 个模块"] * bool(blocks)
        + [f"{layers} 个层"] * bool(layers)
        + [f"{losses} 个损失"] * bool(losses)
        + [f"{calls} 个 tf 函数调用"] * bool(calls)
        + [f"{derivatives} 个内层求导"] * bool(derivatives)
    )
    return "和".join(parts) + f"已折叠（共 {total} 个节点）；展开即可看到其中的运算"


def _graph_change(added, removed, **_):
    parts = [f"新增运算：{added}"] * bool(added) + [f"消失的运算：{removed}"] * bool(removed)
    return "；".join(parts)


MESSAGES = {
    # ---- 一句话的停止原因：stop.<原因>.<情形> ---------------------------------------------
    "stop.stop_gradient.stop_edge": "{subject} 经过 tf.stop_gradient，它告诉磁带不要把梯度传回给它。",
    "stop.stop_gradient.stop_output": lambda subject, source, named, **_: (
        f"{subject} 来自 tf.stop_gradient({source})，它告诉磁带不要把梯度传回去。" if named
        else f"tf.stop_gradient({source}) 告诉磁带不要通过它把梯度传回去。"),
    "stop.not_recorded.paused": "{subject} 是在磁带暂停时（tape.stop_recording()）计算的，所以从未被记录。",
    "stop.not_recorded.before_reset": "{subject} 是在 tape.reset() 之前计算的，而 reset 清除了此前记录的一切。",
    "stop.not_recorded.read_before_reset": "{subject} 是在 tape.reset() 之前读取的，而 reset 清除了此前记录的一切。",
    "stop.not_recorded.watch_reset": "tape.reset() 清除了对 {subject} 的监视；reset 之后请再次调用 tape.watch({subject})。",
    "stop.not_watched.non_trainable": lambda **f: (
        f"{f['subject']} 是不可训练的变量（trainable=False），磁带不会监视它；调用 {_watch_call(**f)} 才能得到它的梯度。"),
    "stop.not_watched.unwatched_variable": lambda **f: (
        f"{f['subject']} 没有被监视：磁带创建时设置了 watch_accessed_variables=False；请调用 {_watch_call(**f)}。"),
    "stop.not_watched.constant": "{subject} 不是变量，所以磁带不跟踪它（磁带只跟踪变量和传给 tape.watch() 的张量）。",
    "stop.not_watched.plain_tensor": "{subject} 是普通张量，不是变量；只有调用 tape.watch({subject}) 之后磁带才会跟踪它。",
    "stop.not_watched.watched_late": "{subject} 是在 tape.watch({source}) 之前计算的，所以磁带没有记录它。",
    "stop.not_watched.derived": "{subject} 只由磁带未监视的值计算而来，所以不在磁带上。",
    "stop.integer_dtype.integer": "{subject} 是 {dtype} 张量；梯度只能流过浮点张量（请先转换为 tf.float32）。",
    "stop.no_gradient.not_differentiable": "{op} 在 TensorFlow 中没有梯度（不可微），所以没有梯度流回 {subject}。",
    "stop.no_gradient.shape_only": "{op} 只读取 {subject} 的形状，不读取它的值：{target} 只通过这个形状依赖 {subject}，因此没有梯度传回。",
    "stop.no_gradient.integer_result": "{subject} 来自 {op}，它在 TensorFlow 中没有梯度：其 {dtype} 结果不可微，转换回浮点数也无济于事。",
    "stop.no_gradient.not_registered": "TensorFlow 没有为 {op} 注册梯度（tape.gradient 会抛出 LookupError: gradient registry has no entry for: {op}），所以没有梯度流回 {subject}。",
    "stop.stateful.assigned": lambda subject, variable, op, **_: (
        f"{subject} 被 {op} 写入了{variable or '一个变量'}；给变量赋值是副作用，不是可微的计算步骤。"),
    "stop.outside_tf.round_trip": "{source} 通过 {via} 离开了 TensorFlow，又以常量 {label} 的形式回来；磁带无法跟踪经过 Python 或 NumPy 的值。",
    "stop.outside_tf.left": _left,
    "stop.outside_tf.left_unseen": _left_unseen,
    "stop.unconnected.never_used": "磁带记录期间从未使用过 {subject}，所以目标不可能依赖它。",
    "stop.unconnected.not_seen": "磁带从未见过 {subject}：它没有在 `with` 代码块中被使用。",
    "stop.unconnected.custom_gradient": "{op}（tf.custom_gradient）提供了 {consumer} 计算结果的梯度，所以磁带不对 {consumer} 求导，{subject} 从中得不到任何梯度。",
    "stop.unconnected.not_leading": "{consumer} 通不到 {target}，所以 {subject} 从中得不到梯度。",
    "stop.unconnected.no_dependency": "{target} 不依赖 {subject}。",
    # ---- 图例的短标签 ---------------------------------------------------------------------
    "legend.stop_gradient": "tf.stop_gradient",
    "legend.not_recorded": "磁带没有记录",
    "legend.not_watched": "磁带没有监视",
    "legend.integer_dtype": "整数 / 非浮点张量",
    "legend.no_gradient": "运算没有梯度",
    "legend.stateful": "被写入变量",
    "legend.outside_tf": "值离开了 TensorFlow",
    "legend.unconnected": "通不到目标",
    # ---- tv.explain：explain.<情形> 与 fix.<情形> ------------------------------------------
    "explain.stop_gradient": "{name} 在通往 {target} 的路上经过 tf.stop_gradient，所以磁带不会把梯度传回给它。",
    "fix.stop_gradient": "去掉那里的 tf.stop_gradient，才能得到 d{target}/d{name}。",
    "explain.before_reset": "{name} 与 {target} 之间的运算发生在 tape.reset() 之前，已被清除。",
    "fix.before_reset": "在 reset 之后再计算 {target}，或者去掉 reset。",
    "explain.paused": "从 {name} 到 {target} 的路径在 tape.stop_recording() 内执行（{at} 没有被记录）。",
    "fix.paused": "把这段计算移出 stop_recording() 代码块。",
    "explain.non_trainable": "{name} 是不可训练的变量（trainable=False），磁带不会监视它。",
    "fix.non_trainable": "创建时设置 trainable=True，或在代码块内调用 tape.watch({name})。",
    "explain.unwatched_variable": "磁带创建时设置了 watch_accessed_variables=False，所以除非明确要求，它会忽略 {name}。",
    "fix.unwatched_variable": "在代码块内调用 tape.watch({name})。",
    "explain.plain_tensor": "{name} 是在磁带之前创建的普通 tf.Tensor，不是 tf.Variable，而磁带只跟踪被要求监视的张量。",
    "fix.plain_tensor": "在代码块内调用 tape.watch({name})。如果 {name} 原本是变量，`{name} = {name} + 1` 已把它替换成了张量：请改用 {name}.assign_add(1) 原地更新。",
    "explain.constant": "{name} 是在代码块内创建的常量，磁带不监视常量。",
    "fix.constant": "把它定义为 tf.Variable，或在创建后立即调用 tape.watch({name})。",
    "explain.derived": lambda name, origin, **_: (
        f"{name} 只由磁带未监视的值计算而来{'（起点是 ' + origin + '）' if origin else ''}，所以不在磁带上。"),
    "fix.derived": "监视它所依赖的输入（tape.watch），或把它们定义为 tf.Variable。",
    "explain.integer": "{name} 是 {dtype} 张量；只有浮点张量才有梯度。",
    "fix.integer": "在磁带之前把它转换为 float32（tf.cast({name}, tf.float32)），再用它计算 {target}。",
    "explain.integer_on_path": "从 {name} 到 {target} 的路上，值变成了整数（{detail}）",
    "fix.integer_on_path": "保持浮点计算（例如用 tf.round，而不是转换为整数）。",
    "explain.no_gradient": "从 {name} 到 {target} 的路径经过 {at}，它在 TensorFlow 中没有梯度。",
    "fix.no_gradient": "在这条路径上用可微运算（或直通估计技巧）替换 {at}。",
    "explain.not_registered": "从 {name} 到 {target} 的路径经过 {at}，TensorFlow 没有为它注册梯度：tape.gradient 会抛出 LookupError（gradient registry has no entry for: {at}）。",
    "fix.not_registered": "用 @tf.custom_gradient 为 {at} 定义梯度，或者用可微的 TensorFlow 运算写出同样的计算；如果 {at} 本来就该当作常数，就让它的输入先经过 tf.stop_gradient，这样磁带不会去求它的梯度。",
    "explain.not_registered_elsewhere": "梯度确实能到达 {name}，但 {target} 的反向传播还经过 {at}，TensorFlow 没有为它注册梯度：tape.gradient 对每个源（包括 {name}）都会抛出 LookupError（gradient registry has no entry for: {at}）。",
    "fix.not_registered_elsewhere": "用 @tf.custom_gradient 为 {at} 定义梯度，或者用可微的 TensorFlow 运算写出同样的计算；如果 {at} 本来就该当作常数，就让它的输入先经过 tf.stop_gradient，这样磁带不会去求它的梯度。",
    "explain.assigned": "{name} 只能通过变量更新到达 {target}：{at} 把它写入了 {variable}。",
    "fix.assigned": "磁带不会对 assign/assign_add 求导：请在计算中直接使用这个张量。",
    "explain.round_trip": "{name} 通过 {via} 离开了 TensorFlow，又以常量形式回来，所以磁带失去了通往 {target} 的路径。",
    "fix.round_trip": "用 TensorFlow 运算完成计算，不要经过 NumPy 或 Python 数值。",
    "explain.left": _explain_left,
    "fix.left": _fix_left,
    "explain.left_unseen": _explain_left_unseen,
    "fix.left_unseen": "用 TensorFlow 运算（tf.reduce_mean、tf.exp 等）代替 NumPy 完成这一步，让值留在磁带上。",
    "explain.never_used": "磁带记录期间从未使用过 {name}，所以 {target} 不依赖它。",
    "fix.never_used": "检查代码路径：某个 if/else 或循环可能跳过了它，或者它是在 `with` 代码块之外使用的。",
    "explain.not_seen": "磁带从未见过 {name}：它没有在 `with` 代码块中被使用。",
    "fix.not_seen": "在代码块内用它参与计算（如果是普通张量，还要调用 tape.watch）。",
    "explain.unconnected": "{target} 不依赖 {name}：没有任何记录下的路径从 {name} 通往 {target}。",
    "fix.unconnected": "检查 {target} 是否在代码块内由 {name} 计算而来（某个分支或循环可能跳过了它）。",
    # ---- 图片 ------------------------------------------------------------------------------
    "ui.step.start": "第 {k}/{n} 步：从 {target} 开始，d{target}/d{target} = {value}",
    "ui.step.passes": "第 {k}/{n} 步：{node} 收到 {value}，并把梯度传回给 {to}",
    "ui.step.received": "第 {k}/{n} 步：{node} 收到了它的梯度 {value}",
    "ui.step.part": "第 {k}/{n} 步：{node} 通过它的 {reads} 次读取之一收到 {value}",
    "ui.step.in_group": "{node}（在 {group} 中）",
    "ui.step.done": "（{target} 的反向传播完成）",
    "ui.note.collapsed": _collapsed_note,
    "ui.note.hidden": _hidden_note,
    "ui.note.unregistered": "{op} 没有注册梯度：tape.gradient 会抛出 LookupError，它之前的运算收不到梯度",
    # ---- 图片里的词 ------------------------------------------------------------------------
    "ui.kind.variable": "变量",
    "ui.kind.watched": "被监视的张量",
    "ui.kind.constant": "常量",
    "ui.kind.input": "外部张量",
    "ui.kind.op": "运算",
    "ui.kind.layer": lambda kinds=("layer",), **_: "、".join(_GROUP_KINDS[k] for k in kinds) + "（已折叠）",
    "ui.kind.inner": "tf.function 内部的运算",
    "ui.group.layer": "层 · {n} 个运算",
    "ui.group.block": "模块 · {n} 个运算",
    "ui.group.loss": "损失 · {n} 个运算",
    "ui.group.alike": "{name}（{n} 个相同）",
    "ui.group.api": "tf 函数 · {n} 个运算",
    "ui.group.derivative": "{call} · {n} 个运算",
    "ui.group.function": lambda n, call="", **_: f"含 {call}" if call else f"你的函数 · {n} 个运算",
    "ui.group.repeat_title": "{name} ×{n}",
    "ui.group.repeat": "每步一个 · {n} 个运算",
    "ui.group.steps": lambda n, **_: f" ×{n}（第 0–{n - 1} 步）",
    "ui.group.inner": "在 tf.function {function} 中",
    "ui.gathered.stack": "{n} 个 {name} 的堆叠",
    "ui.gathered.sum": "Σ {n} 个 {name}",
    "ui.group.step_range": " ×{n}（第 {first}–{last} 步）",
    "ui.group.one_step": "（第 {k} 步）",
    "ui.group.step_frame": "{name} · 第 {k} 步",
    "ui.group.grad_total": "‖g‖ {norm}（{n} 个变量合计）",
    "ui.compare.side": "{name}：第 {k} 步，共 {n} 步",
    "ui.compare.title": "梯度从 a 到 b 的变化：每条边和每个方框上的 ‖g_b‖ / ‖g_a‖（b：{b}，a：{a}）",
    "ui.compare.title_plain": "梯度从 a 到 b 的变化：每条边和每个方框上的 ‖g_b‖ / ‖g_a‖",
    "ui.compare.clip": "b 的变量梯度按 {mode} 裁剪，与优化器收到的一致",
    "ui.compare.largest": "变化最大的（‖g_a‖ → ‖g_b‖，b / a）：",
    "ui.compare.row": "{name}：{a} → {b}（{ratio}）",
    "ui.compare.none": "没有梯度发生变化。",
    "ui.compare.lost": "丢失",
    "ui.compare.zeroed": "→ 0",
    "ui.compare.gained": "新增",
    "ui.legend.ratio": "‖g_b‖ / ‖g_a‖（对数刻度：蓝色变小，灰色不变，橙色变大）",
    "ui.legend.lost": "丢失：a 在这里有梯度，b 没有",
    "ui.legend.zeroed": "归零：a 在这里的梯度不为零，b 的为零",
    "ui.legend.gained": "新增：b 在这里有梯度，a 没有",
    "ui.group.more": "另 {n} 个",
    "ui.group.clipped_n": "‖g‖ {n} 个已裁剪：见表",
    "ui.legend.forward": "→ 前向计算",
    "ui.legend.flowing": "已经传回的梯度",
    "ui.legend.active": "‹ 当前步：梯度向后传",
    "ui.legend.origin": "⚠ {value} 开始出现的运算",
    "ui.legend.origin_zero": "⚠ 梯度变成 0 的运算",
    "ui.legend.origin_path": "它传回 {source} 的路径",
    "ui.origin.non_finite": "⚠ {value} 从这里开始",
    "ui.origin.zero": "⚠ 梯度在这里变成 0",
    "ui.origin.forward": "⚠ {value} 在这里产生",
    "inspect.diagnosis": "梯度为什么是 {value}：",
    "inspect.jump": "跳到第 {step} 步，问题从这里开始",
    "ui.legend.bad": "⚠ NaN / Inf 梯度",
    "ui.legend.magnitude": "‖g‖/‖w‖（对数刻度）",
    "ui.legend.stopped": "没有梯度：{reason}",
    "ui.legend.notation": "= 形状 4×3、范数 0.884 的梯度（‖·‖：前向值的范数）",
    "ui.chip.value": "折叠的常量 / 形状",
    "ui.chip.input": "有名字的输入",
    "ui.chip.random": "随机值",
    # 折叠输入的标签：TF 参数的中文名（中文图片里除了运算名和变量名不出现英文单词）。
    "ui.chip.random_mask": "随机掩码",
    "ui.chip.random_value": "随机",
    "ui.chip.role.exponent": "指数 {value}",
    "ui.chip.role.axis": "轴 {value}",
    "ui.chip.role.shape": "形状 {value}",
    "ui.chip.role.perm": "维度顺序 {value}",
    "ui.chip.role.multiples": "重复次数 {value}",
    "ui.chip.role.paddings": "填充 {value}",
    "ui.chip.role.depth": "深度 {value}",
    "ui.edge.stop_gradient": "stop_gradient",
    "ui.edge.not_recorded": "未记录",
    "ui.edge.not_watched": "未监视",
    "ui.edge.integer_dtype": "整数类型",
    "ui.edge.no_gradient": "无梯度",
    "ui.edge.not_registered": "未注册梯度",
    "ui.edge.never_used": "从未使用",
    "ui.node.none_because": "∂ None：{code}",
    "ui.edge.stateful": "写入变量",
    "ui.edge.outside_tf": "离开 TensorFlow",
    "ui.edge.unconnected": "未连通",
    "ui.edge.stopped_n": "{code}（{n}）",
    "ui.edge.parts": "{n} 个梯度",
    "ui.edge.sum": "Σ ",
    "ui.edge.arriving": "已到 {got}/{n}",
    # ---- 探索器 ----------------------------------------------------------------------------
    "ui.control.step": "步骤",
    "ui.control.play": "播放",
    "ui.control.pause": "暂停",
    "ui.control.stop": "停止",
    "ui.control.repeat": "循环",
    "ui.control.prev": "上一步",
    "ui.control.next": "下一步",
    "ui.control.target": "目标",
    "ui.control.clip": "裁剪",
    "ui.clip.none": "不裁剪",
    "ui.control.clip_norm": "clip_norm",
    "ui.control.clip_value": "clip_value",
    "ui.control.lr": "学习率",
    "ui.control.node": "查看",
    "ui.control.layers": "展开",
    "ui.control.show_all": "显示全部运算",
    "ui.control.show_all_tip": "画出每个记录下的运算：不隐藏、不折叠常量",
    "ui.control.train_step": "训练步",
    "ui.canvas.reset": "重置缩放和平移",
    "ui.canvas.fallback": ("tapeviz：Jupyter 的扩展目录里没有 anywidget 的前端，探索器以普通 HTML 显示图片"
                           "（不能点击、悬停提示、缩放，也不能局部更新）。请在 Jupyter 服务器的环境中安装 anywidget。"),
    "ui.canvas.open": "点击：展开",
    "ui.canvas.open_step": "点击：展开第 {k} 步",
    "ui.canvas.close": "点击边框：收起",
    "ui.canvas.select": "点击：查看",
    "ui.canvas.value": "值 {summary}",
    "ui.canvas.grad": "梯度 {summary}",
    "ui.canvas.shape": "{dtype} {shape}",
    "ui.keys.off": "点击图片，然后用 ← / → 单步，空格键播放",
    "ui.keys.on": "按键已启用：← / → 单步，空格键播放 / 暂停",
    "a11y.box": lambda name, kind, value, grad, **_: (
        f"{name}{'，' + kind if kind and kind not in name else ''}"
        f"{'，值 ' + value if value else ''}，梯度 {grad}"),
    "a11y.group": lambda text, name, **_: f"{text}，已收起的组{' ' + name if name else ''}",
    "a11y.frame": "{name}，已展开的组",
    "a11y.no_grad": "尚未到达",
    "ui.history.flags": "第 {step} 步的标记：",
    "ui.history.no_flags": "第 {step} 步没有标记。",
    "ui.history.since": "（第 {first} 步发出，这一步条件仍然成立）",
    "ui.history.no_picture": "第 {step} 步没有保存反向传播的图；保存了图的步：{steps}。",
    "ui.history.norms_only": "这次训练只记录了范数（在你自己的 tf.GradientTape 循环里调用 hist.add）。想同时看到某一步的反向传播，请用 tv.GradientTape 记录那一步并传入：hist.add(step, ..., tape=tape)。",
    "panel.head.variable": "变量",
    "panel.head.raw": "原始 g",
    "panel.head.clipped": "裁剪后 g",
    "panel.head.norms": "‖g‖ 裁剪前 → 后",
    "panel.head.bars": "对比",
    "panel.head.sgd": "SGD 预览 w − lr·g",
    "panel.none": "梯度为 None",
    "panel.none_advice": "tf.clip_by_norm(None, ...) 会抛出 ValueError；只保留有梯度的配对："
                         "[(g, v) for g, v in zip(grads, variables) if g is not None]。",
    "panel.more": "显示 {total} 个变量中的 {shown} 个（先是 None 梯度，再按范数从大到小）；ex.gradients() 包含全部",
    "panel.global": "全局范数：",
    "panel.global_mixed": "无：tf.linalg.global_norm 不能混合 float32 与 float64 梯度",
    "inspect.scope": "作用域：",
    "inspect.value": "值（{dtype}，形状 {shape}）：",
    "inspect.grad": "d{target}/d·：",
    "inspect.no_gradient": "没有梯度（{reason}）：",
    "inspect.chain": "它在第 {k} 步的链式法则：",
    "fallback.text": "tapeviz 探索器（交互控件）：重新运行这个单元格即可使用。",
    "lessons.index": "tapeviz 课程",
    "lessons.previous": "上一课",
    "lessons.next": "下一课",
    "lessons.offline": "每个页面都可以离线使用：用浏览器打开即可，不需要 Python，也不需要网络。",
    "page.title": "tapeviz：{target} 的反向传播",
    "page.head": "目标：{target} · 裁剪：{clip} · 学习率：{lr} · 共 {n} 张图；滑块在浏览器中运行，无需 Python",
    "page.targets": "目标",
    "page.clip_positions": "clip_norm（每个位置的面板都由 TensorFlow 计算）",
    "name.op": "{op} 运算",
    "name.constant": "常量 {label}",
    # ---- 训练历史的标记 --------------------------------------------------------------------
    "flag.vanishing.ratio": "{name}：梯度只有权重的 {ratio}（低于 {threshold}），几乎学不动；{fix}。",
    "flag.vanishing.gap": "{name}：梯度与权重之比（{ratio}）比最后一层（{last}）低 {orders} 个数量级，学得慢得多；{fix}。",
    "flag.exploding.jump": "{name}：梯度范数跳到 {norm}，是其滑动中位数（{median}）的 {times} 倍；{fix}。",
    "flag.exploding.growth": "{name}：梯度范数在最近 {steps} 步中每步增长至少 {factor} 倍（现在是 {norm}）；{fix}。",
    "flag.nan.nan": "{name}：这一步的梯度范数是 NaN；{fix}。",
    "flag.nan.inf": "{name}：这一步的梯度范数是 Inf（或大到平方超出 float32 范围）；{fix}。",
    "flag.nan.loss": "这一步的损失是 {what}；{fix}。",
    "flag.no_gradient.none": "{name}：梯度为 None（损失不依赖它）；用 tv.GradientTape 记录这一步，tv.explain(tape, loss, variable) 会说明原因。",
    "flagfix.vanishing": "改用 ReLU 类激活函数并配合 He 初始化，加入归一化层（BatchNormalization / LayerNormalization）或残差连接",
    "flagfix.exploding": "用 tf.clip_by_global_norm(grads, 1.0) 裁剪，或降低学习率",
    "flagfix.clipped": "裁剪把这一步的梯度缩放到 {scale} 倍，更新仍然有界；如果损失仍然跳变，请降低学习率",
    "flagfix.nan": "检查损失中的 log(0)、sqrt(0) 或除以零，降低学习率，并用 tf.clip_by_global_norm(grads, 1.0) 裁剪",
    "ui.printed": "TensorFlow 输出：{what}",
    "word.a_variable": "一个变量",
    "word.an_op": "一个运算",
    "word.this_tensor": "这个张量",
    # ---- tv.interact -----------------------------------------------------------------
    "ui.control.slope": "斜率图",
    "ui.interact.changed": "计算图在 {where} 处改变了形状（{what}）：{fn} 中的 Python if 或循环读取了输入的值并走了"
                           "另一条路径，所以重新排布了方框。",
    "ui.interact.ops": _graph_change,
    "ui.interact.rewired": "运算相同，但连接方式不同",
    "ui.interact.stops": "运算相同，但梯度在别的地方停止",
    "ui.interact.raised": "{call} 抛出了 {error}。请修改 {fn}，或把滑块移回去。",
    "ui.interact.returned": "{call} 返回了 {got}：请返回目标张量，或由张量组成的字典，例如 {{'loss': loss}}。",
    "ui.interact.renamed": "{call} 返回的目标是 {got}，但第一次调用返回的是 {first}：每次都请返回相同的名字（目标菜单由它们生成）。",
    "ui.interact.empty_range": "{name} 的范围为空（最小值 {lo} ≥ 最大值 {hi}）：请把最小值设得比最大值小。",
    "ui.interact.kept": "图中仍显示 {good} 时的结果。",
    "ui.slope.title": "{y} 随 {x} 的变化",
    "ui.slope.tangent": "{x} = {x0} 处的切线：斜率 d{y}/d{x} = {slope}（TensorFlow 算出的梯度）",
    "ui.slope.none": "d{y}/d{x} 为 None（{reason}）：没有切线，即使曲线在变化",
    "ui.slope.sum": "{y} 的形状是 {shape}：曲线画的是它的和（TensorFlow 对非标量目标求的梯度就是其和的梯度）",
    "ui.slope.failed": "函数在 {total} 个采样点中的 {n} 个上失败（曲线上的空缺）",
    "ui.slope.legend": "切线，斜率 {slope}",
    # ---- 测验：先预测，再揭晓 ------------------------------------------------------------
    "quiz.title": "第 {k}/{n} 步：{node}：先预测标着 ? 的数",
    "quiz.q.seed": "反向传播从 {target} 开始。d{target}/d{target} 是多少？",
    "quiz.q.edge": "{node} 收到了 {value}。它传回给 {to} 的梯度是多少？",
    "quiz.q.node": "{target} 对 {node} 的梯度是多少？",
    "quiz.q.local": "这一步的链式法则：局部导数 {d} = {formula}，在 {at} 处。这里的 {d} 等于多少？",
    "quiz.q.product": "链式法则：{left} = {dp} · {d} = {g} × ? = {result}。缺少的因子 {d} 等于多少？",
    "quiz.q.registered": "TF 为 {op} 注册的梯度函数",
    "quiz.hint.number": "请输入一个数。",
    "quiz.hint.tensor": "请输入它的 {size} 个数；如果全都相等，输入一个数即可。",
    "quiz.hint.norm": "它是一个 {shape} 的张量：请输入它的范数 ‖·‖。",
    "quiz.right": "答对了！你输入的是 {typed}，TensorFlow 算出的是 {value}。",
    "quiz.wrong": "不对：你输入的是 {typed}，TensorFlow 算出的是 {value}。",
    "quiz.revealed": "已揭晓：TensorFlow 算出的是 {value}。",
    "quiz.unreadable": "请先输入一个数（或题目要求的全部数），或者按“揭晓”。",
    "quiz.score": "得分：答对 {right}，答错 {wrong}，揭晓 {revealed}（共 {steps} 步）",
    "quiz.check": "检查",
    "quiz.reveal": "揭晓",
    "quiz.reset": "重置得分",
    "quiz.placeholder": "你的预测",
    "quiz.table": "梯度表格（会泄露答案）",
    "quiz.hidden_panel": "回答完最后一步后，梯度表格才会出现。",
    # ---- hist.plot ---------------------------------------------------------------------
    "plot.loss": "损失",
    "plot.no_loss": "没有记录损失",
    "plot.title": "训练历史：{n} 步{note}",
    "plot.merged": "（{points} 个点，带最小–最大范围）",
    "plot.grad_log": "‖g‖（对数）",
    "plot.rel_log": "‖g‖ / ‖w‖（对数）",
    "plot.by.layer": "层",
    "plot.by.variable": "变量",
    "plot.colorbar": "{by}（0 = 第一个，{last} = 最后一个）",
    "plot.raw": "原始",
    "plot.clipped": "裁剪后",
    "plot.nan": "NaN / Inf 梯度",
    "plot.flag": "标记：{label}",
    "plot.kind.vanishing": "梯度消失",
    "plot.kind.exploding": "梯度爆炸",
    "plot.kind.nan": "NaN / Inf",
    "plot.kind.no_gradient": "没有梯度",
    "layers.title": "第 {step} 步各{by}的梯度范数{loss}",
    "layers.loss": "，损失 {loss}",
    "layers.axis": "层",
    "layers.axis_of": "{prefix} 下的层",
    "layers.bar": "梯度范数",
    "compare.title": "各{by}的梯度范数：第 {a} 步对比第 {b} 步",
    "compare.step": "第 {step} 步",
    "compare.grew": "‖g‖ 变大",
    "compare.shrank": "‖g‖ 变小",
    "compare.ratio_axis": "第 {b} 步的 ‖g‖ / 第 {a} 步的 ‖g‖（对数刻度）",
    "plot.norms": "每个{by}的梯度范数",
    "plot.norms_rel": "每个{by}的梯度范数 / 权重范数",
    "plot.clip_global": "梯度裁剪：所有梯度共用一个全局比例，{steps} 步中有 {engaged} 步起作用（{fraction}），最强 ×{scale}",
    "plot.clip_each": "梯度裁剪：每个{by}裁剪后 / 原始的范数（图例：裁剪的步数 / 记录的步数）",
    "plot.every": "所有梯度",
    "plot.clip_axis": "裁剪后 / 原始",
    "plot.step": "步骤",
    "compare.col.layer": "层",
    "compare.col.grad_at": "第 {step} 步 ‖g‖",
    "compare.col.grad_ratio": "‖g‖ 之比 b/a",
    "compare.col.rel_at": "第 {step} 步 ‖g‖/‖w‖",
    "compare.col.rel_ratio": "‖g‖/‖w‖ 之比 b/a",
    "compare.col.weight_ratio": "‖w‖ 之比 b/a",
    # ---- tv.explore(hist) 的训练面板 ----------------------------------------------------
    "run.loss": "损失{scale}：第 {step} 步为 {loss}",
    "run.no_loss": "损失{scale}：第 {step} 步无值",
    "run.log_scale": "（对数刻度）",
    "run.norms": "第 {step} 步{of}各层的梯度范数 ‖g‖（对数刻度）",
    "run.of": " {prefix} 中",
    "run.absent": "这一步没有记录",
    "run.flag": "标记：{kind}（这一步条件成立）",
    # ---- the chain rule at each step (gradients.chain_rule) ---------------------------
    "chain.seed": "从 {target} 开始：∂{target}/∂{target} = {seed}",
    "chain.seed_value": "从 {target} = {value} 开始：∂{target}/∂{target} = {seed}",
    "chain.sum": lambda left, parts, total, n, consumers, **_: (
        f"{left} = 来自 {n} 处使用（{consumers}）的梯度之和 = {parts}" + (f" = {total}" if total else "")),
    "chain.total": "{d} = {value}",
    "chain.read_part": "{d} 的第 {i}/{n} 部分（变量的一次读取）：{value}",
    "chain.read_total": "{d} = 它的 {n} 次读取之和 = {value}",
    "chain.stopped": "{d} = None：{reason}",
    "chain.registered": "（∂ 由 TF 为 {op} 注册的梯度函数算出）",
    "chain.registered_of": "TF 为 {op} 注册的梯度函数作用于 {g}",
    "chain.unbroadcast": "（沿广播过的轴求和）",
    "chain.group": "{name} 在输出处（{outputs}）收到 ‖g‖ {norm_in}，向输入（{inputs}）传出 ‖g‖ {norm_out}",
    "chain.group_nothing_in": "{name} 还没有收到梯度",
    "chain.group_nothing_out_yet": "{name} 在输出处（{outputs}）收到 ‖g‖ {norm_in}，还没有向输入传出梯度",
    "chain.group_nothing_out": "{name} 在输出处（{outputs}）收到 ‖g‖ {norm_in}，不向输入传出任何梯度",
    "chain.as_arg": "作为 {arg}：{line}",
    "chain.custom": "（∂ 由 {via} 为 {op} 提供的反向函数算出）",
    "chain.custom_of": "{via} 为 {op} 提供的反向函数作用于 {g}",
    "chain.scalar": "标量",  # a shape of no axes, in a vector–Jacobian line
    "chain.vjp": "{g} = {product}：{shapes} → {shape}，‖{g}‖ {norm}{values}",
    "chain.where": "({test} 时为 {then}，否则为 {otherwise})",
    "chain.and": "{a} 且 {b}",
    "chain.or": "{a} 或 {b}",
}
MESSAGES.update(NUMERIC)
