"""The strings the graph tools print, English -> Chinese (`--lang zh`): one table, `STRINGS`,
read by `translate` for the trace's formulas and headers, the picture's labels and legend, and
the page's words. tests/graph/test_zh.py holds every string the tools print in Chinese to it.
"""
from __future__ import annotations

__all__ = ["STRINGS", "FORMATS", "translate", "say"]

# One table of the strings the tools print, English -> Chinese. `translate` replaces each
# English phrase in a formula, a label or a header (longest first), so a formula such as
# "x + Sublayer(x)  (residual)" becomes "x + Sublayer(x)  (残差连接)".
STRINGS = {"zh": {
    "(residual)": "(残差连接)",
    "(mask)": "(掩码)",
    "(token embedding)": "(词嵌入)",
    "(position embedding)": "(位置嵌入)",
    "(rows of the sinusoid table)": "(正弦位置编码表的行)",
    "(positional encoding)": "(位置编码)",
    "LayerNorm(x)": "层归一化 LayerNorm(x)",
    "split Q into h heads": "把 Q 拆成 h 个头",
    "split K into h heads": "把 K 拆成 h 个头",
    "split V into h heads": "把 V 拆成 h 个头",
    "Q_i per head": "每个头的 Q_i",
    "K_i per head": "每个头的 K_i",
    "V_i per head": "每个头的 V_i",
    "heads side by side": "各头并排",
    "(scaled dot-product attention)": "(缩放点积注意力)",
    "(multi-head attention)": "(多头注意力)",
    "(feed-forward network)": "(前馈网络)",
    "(encoder output)": "(编码器输出)",
    "(H: the encoder output)": "(H：编码器输出)",
    "(log-probabilities)": "(对数概率)",
    "(the target's log-prob)": "(目标词的对数概率)",
    "(each token's loss)": "(每个词的损失)",
    "(block output)": "(块输出)",
    "(Add & Norm)": "(残差连接 + 层归一化)",
    "log softmax(logits)": "对数 softmax(logits)",
    "(weights or padding mask)": "(权重或填充掩码)",
    "(rows of log-probs)": "(对数概率的各行)",
    "(rows of logits)": "(logits 的各行)",
    "(rotary position embedding)": "(旋转位置编码)",
    "(grouped-query attention)": "(分组查询注意力)",
    "(K, V: h_kv heads)": "(K、V 只有 h_kv 个头)",
    "(first of each rotated pair)": "(每个旋转对的第一个分量)",
    "(second of each rotated pair)": "(每个旋转对的第二个分量)",
    # headers and labels
    "dims": "维度",
    "module": "模块",
    "formula": "公式",
    "shapes": "形状",
    "named shape": "命名形状",
    "shape": "形状",
    "node": "节点",
    "name": "名称",
    "op": "算子",
    "grad": "梯度",
    "max grad": "最大梯度",
    "ops": "个算子",
    "out": "输出",
    "legend": "图例",
    "parameter": "参数",
    "input": "输入",
    "constant": "常数",
    "residual path": "残差路径",
    "module (collapsed)": "模块（折叠）",
    "saved for backward": "为反向传播保存",
    "edge width ~ log10 ||grad||": "边宽 ~ log10 ||梯度||",
    "layer_norm": "layer_norm 层归一化",
    "add": "add 加法",
    "click a row to find its node; hover a node for its formula":
        "点击一行找到它的节点；鼠标悬停节点查看公式",
    "collapse all": "全部折叠",
    "backward, step by step": "逐步反向传播",
    "prev": "上一步",
    "next": "下一步",
    "step": "步骤",
    "gradient arriving": "到达的梯度",
    "expand all": "全部展开",
    "the trace": "形状追踪",
    "the graph": "计算图",
    # the formulas' remarks and words (phrases: replaced inside a formula, longest first)
    "(causal multi-head attention)": "(因果多头注意力)",
    "(each head's head_i)": "(每个头的 head_i)",
    "(positional encoding; the paper's X)": "(位置编码；即论文中的 X)",
    "(token embedding; the paper's X)": "(词嵌入；即论文中的 X)",
    "(token embedding; the first block's input)": "(词嵌入；第一个块的输入)",
    "(encoder output: the last layer's Y_next)": "(编码器输出：最后一层的 Y_next)",
    "(feed-forward network": "(前馈网络",
    "(feed-forward network: ": "(前馈网络：",
    "(rows of log p)": "(log p 的各行)",
    "(pairs (x_i, x_{i+d_k/2}))": "(成对旋转 (x_i, x_{i+d_k/2}))",
    "split([Q K V])": "拆分([Q K V])",
    "split K into h_kv heads": "把 K 拆成 h_kv 个头",
    "split V into h_kv heads": "把 V 拆成 h_kv 个头",
    "repeated: each of h_kv heads serves h/h_kv query heads":
        "重复：每个 K/V 头供 h/h_kv 个查询头共用",
    "mean(": "均值(",
    "loss = mean −log p(y)": "损失 = 均值 −log p(y)",
    "loss = CE(logits, y)": "损失 = 交叉熵(logits, y)",
    # names, labels and the page's words
    "loss": "损失",
    "<top>": "<顶层>",
    "scalar": "标量",
    "requires grad": "需要梯度",
    "leaf": "叶子节点",
    "M (mask)": "M（掩码）",
    "PE (positional encoding)": "PE（位置编码）",
    "PE table": "PE 表",
    "w (target weights)": "w（目标权重）",
    "1 op": "1 个算子",
    "all inf/nan": "全为 inf/nan",
    "name (named shape)": "名称（命名形状）",
    "(shape)": "（形状）",
    "op · module": "算子 · 模块",
    "no graph: the trace kept no graph": "没有计算图：这次追踪没有保留计算图",
    "(residual path)": "(残差路径)",
    "VJP": "反向传播公式",
}}

# words placed around numbers: (English, Chinese) formats
FORMATS = {"zh": {
    "{n} ops": "{n} 个算子", "out {shapes}": "输出 {shapes}",
    "mean {mean} std {std}": "均值 {mean} 标准差 {std}",
    " ({k} of {n} ±inf)": "（{n} 个中有 {k} 个为 ±inf）", "= input {k}": "= 输入 {k}",
    "x{n}": "×{n}"}}


def say(fmt, lang="en", **values):
    """The English format `fmt` (a key of FORMATS) in `lang`, filled with `values`."""
    return FORMATS.get(lang, {}).get(fmt, fmt).format(**values)


def translate(text, lang="en"):
    """`text` with each English phrase of STRINGS[lang] replaced (longest phrases first); an exact
    match of a whole table entry wins. lang "en" returns `text` itself."""
    table = STRINGS.get(lang)
    if not table or not text:
        return text
    if text in table:
        return table[text]
    # phrases (a remark in parentheses, several words, a function's name and its "(") are
    # replaced inside a text; a single word only where it is the whole text
    for en in sorted((k for k in table if k.startswith("(") or " " in k or k.endswith("(")),
                     key=len, reverse=True):
        if en in text:
            text = text.replace(en, table[en])
    return text


