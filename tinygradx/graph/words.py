"""The strings the graph tools print, English -> Chinese (`--lang zh`): one table, `STRINGS`,
read by `translate` for the trace's formulas and headers, the picture's labels and legend, and
the page's words. tests/graph/test_zh.py holds every string the tools print in Chinese to it.
"""
from __future__ import annotations

__all__ = ["STRINGS", "translate"]

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
}}


def translate(text, lang="en"):
    """`text` with each English phrase of STRINGS[lang] replaced (longest phrases first); an exact
    match of a whole table entry wins. lang "en" returns `text` itself."""
    table = STRINGS.get(lang)
    if not table or not text:
        return text
    if text in table:
        return table[text]
    for en in sorted((k for k in table if k.startswith("(") or " " in k), key=len, reverse=True):
        if en in text:
            text = text.replace(en, table[en])
    return text


