"""The backward formula of every op the pictures can draw, for the page's step-through.

    vjp_text(ctx)            # "y = x·Wᵀ + b: dx = g·W, dW = gᵀ·x, db = Σ g" for a Linear node
    vjp_text(ctx, "zh")      # the same, its words in Chinese

Each op's vector-Jacobian product is its `backward` (docs/design.md, invariant 11); this table
says in one line what that backward computes, g being the gradient arriving at the op's output.
It is written here, per op class, rather than read from the op's docstring, whose first line is
sometimes the forward (LayerNorm, GELU, cross-entropy). tests/graph/test_vjps.py holds it to the
ops: every op class of tinygradx has its line, no line names a class that is gone, and the
formulas of the ops a Transformer draws (LayerNorm as docs/walkthrough.md §10 derives it,
softmax, GELU, cross-entropy, linear, attention) are checked numerically against the ops'
own backward.
"""
from __future__ import annotations

from ..autograd import backprop, custom_function, function_ctx, hooks
from ..core import elementwise as ew
from ..core import linalg, movement as mv, reduce, rows
from ..ops import Abs, Clamp, Erf, Maximum, Minimum, Pow, Rsqrt, Sigmoid
from ..ops import attention as att, einsum, fused, ieee, index, math_ops as mo, movement as omv
from ..ops import scans, scatter_reduce as sr, special, trig

__all__ = ["VJPS", "vjp_text"]

# class -> (English, Chinese). Symbols: g the gradient arriving at the output, ⊙ element-wise,
# Σ a sum (over the reduced or broadcast axes), ᵀ a transpose.
VJPS = {
    # the core's element-wise ops
    ew.Add: ("d(a + b) = (g, g)", "d(a + b) = (g, g)"),
    ew.Sub: ("d(a − b) = (g, −g)", "d(a − b) = (g, −g)"),
    ew.Mul: ("d(a ⊙ b) = (g ⊙ b, g ⊙ a)", "d(a ⊙ b) = (g ⊙ b, g ⊙ a)"),
    ew.Div: ("d(a / b) = (g / b, −g ⊙ a / b²)", "d(a / b) = (g / b, −g ⊙ a / b²)"),
    ew.PowScalar: ("d(xᵖ) = g ⊙ p·xᵖ⁻¹ (p a constant)", "d(xᵖ) = g ⊙ p·xᵖ⁻¹（p 为常数）"),
    ew.Neg: ("d(−x) = −g", "d(−x) = −g"),
    ew.Exp: ("d exp(x) = g ⊙ exp(x)", "d exp(x) = g ⊙ exp(x)"),
    ew.Log: ("d log(x) = g / x", "d log(x) = g / x"),
    ew.Sqrt: ("d √x = g / (2√x)", "d √x = g / (2√x)"),
    ew.Tanh: ("d tanh(x) = g ⊙ (1 − tanh²(x))", "d tanh(x) = g ⊙ (1 − tanh²(x))"),
    ew.Relu: ("d ReLU(x) = g where x > 0, else 0", "d ReLU(x) = g（x > 0 处），其余为 0"),
    ew.Cast: ("dx = g cast back to x's dtype", "dx = g 转换回 x 的数据类型"),
    ew.Where: ("where(c, a, b): da = g where c, db = g where not c; c gets none",
               "where(c, a, b)：c 为真处 da = g，其余处 db = g；c 没有梯度"),
    ew.MaskedFill: ("dx = g, 0 at the filled (masked) positions",
                    "dx = g，被填充（掩码）的位置为 0"),
    # the core's products and lookups
    linalg.MatMul: ("d(a·b) = (g·bᵀ, aᵀ·g)", "d(a·b) = (g·bᵀ, aᵀ·g)"),
    linalg.Linear: ("y = x·Wᵀ + b: dx = g·W, dW = gᵀ·x, db = Σ g",
                    "y = x·Wᵀ + b：dx = g·W，dW = gᵀ·x，db = Σ g"),
    linalg.Embedding: ("y = W[ids]: dW = g added into the rows ids (a repeated id sums)",
                       "y = W[ids]：dW = 把 g 累加到第 ids 行（重复的下标相加）"),
    linalg.EmbeddingBackward: ("u = g added into the rows ids: dg = u'[ids]",
                               "u = 把 g 累加到第 ids 行：dg = u'[ids]"),
    # the core's movement ops
    mv.Reshape: ("dx = g reshaped to x's shape", "dx = 把 g 变回 x 的形状"),
    mv.Permute: ("dx = g permuted back (the inverse order)", "dx = 按逆顺序把 g 转置回去"),
    mv.Expand: ("dx = g summed over the broadcast axes", "dx = g 在广播出的轴上求和 Σ"),
    mv.Getitem: ("y = x[i]: dx = zeros with g added at i (repeated indices sum)",
                 "y = x[i]：dx = 全零张量在 i 处加上 g（重复的下标相加）"),
    mv.IndexPut: ("y = zeros with g added at i: dg = y'[i]",
                  "y = 全零张量在 i 处加上 g：dg = y'[i]"),
    # the core's reductions
    reduce.Sum: ("d Σx = g broadcast over the summed axes", "d Σx = g 沿求和的轴广播"),
    reduce.Mean: ("d mean(x) = g / N broadcast over the averaged axes",
                  "d 均值(x) = g / N 沿取均值的轴广播"),
    reduce.Max: ("d max(x) = g shared equally by the positions that attain the max",
                 "d max(x) = g 平均分给取到最大值的位置"),
    reduce.Var: ("d var(x) = g ⊙ 2(x − μ) / (N − correction)",
                 "d var(x) = g ⊙ 2(x − μ) / (N − correction)"),
    reduce.LogSumExp: ("d logsumexp(x) = g ⊙ softmax(x)", "d logsumexp(x) = g ⊙ softmax(x)"),
    # the core's row ops: softmax and LayerNorm
    rows.Softmax: ("s = softmax(x): dx = s ⊙ (g − Σ g ⊙ s) over the row",
                   "s = softmax(x)：dx = s ⊙ (g − Σ g ⊙ s)（沿这一行求和）"),
    rows.LayerNorm: ("x̂ = (x − μ)/σ, h = γ ⊙ g: dx = (h − mean(h) − mean(h ⊙ x̂) ⊙ x̂)/σ, "
                     "dγ = Σ g ⊙ x̂, dβ = Σ g",
                     "x̂ = (x − μ)/σ，h = γ ⊙ g：dx = (h − 均值(h) − 均值(h ⊙ x̂) ⊙ x̂)/σ，"
                     "dγ = Σ g ⊙ x̂，dβ = Σ g"),
    # ops beyond the core's
    Pow: ("d(aᵇ) = (g ⊙ b·aᵇ⁻¹, g ⊙ aᵇ·log a)", "d(aᵇ) = (g ⊙ b·aᵇ⁻¹, g ⊙ aᵇ·log a)"),
    Maximum: ("the larger input gets g (ties: g/2 each)", "较大的输入得到 g（相等时各得 g/2）"),
    Minimum: ("the smaller input gets g (ties: g/2 each)", "较小的输入得到 g（相等时各得 g/2）"),
    Rsqrt: ("d x^(−1/2) = −g ⊙ x^(−3/2) / 2", "d x^(−1/2) = −g ⊙ x^(−3/2) / 2"),
    Sigmoid: ("σ = sigmoid(x): dx = g ⊙ σ ⊙ (1 − σ)", "σ = sigmoid(x)：dx = g ⊙ σ ⊙ (1 − σ)"),
    Abs: ("d|x| = g ⊙ sign(x)", "d|x| = g ⊙ sign(x)"),
    Erf: ("d erf(x) = g ⊙ 2/√π · exp(−x²)", "d erf(x) = g ⊙ 2/√π · exp(−x²)"),
    Clamp: ("dx = g where min ≤ x ≤ max, else 0", "dx = g（min ≤ x ≤ max 处），其余为 0"),
    fused.Gelu: ("GELU(x) = x·Φ(x): dx = g ⊙ (Φ(x) + x·φ(x)) (tanh form: its derivative)",
                 "GELU(x) = x·Φ(x)：dx = g ⊙ (Φ(x) + x·φ(x))（tanh 近似时用它的导数）"),
    fused.LogSoftmax: ("y = x − logsumexp(x): dx = g − softmax(x) ⊙ Σ g",
                       "y = x − logsumexp(x)：dx = g − softmax(x) ⊙ Σ g"),
    fused.CrossEntropy: ("loss = −log softmax(x)[y]: dx = (softmax(x) − onehot(y)) ⊙ g, "
                         "÷ N for the mean (smoothing: onehot → q)",
                         "损失 = −log softmax(x)[y]：dx = (softmax(x) − e_y) ⊙ g，"
                         "取均值时再除以 N（e_y 为 y 的独热向量；标签平滑时换成 q）"),
    fused.Dropout: ("y = x ⊙ D/(1 − p): dx = g ⊙ D/(1 − p) (D the keep-mask)",
                    "y = x ⊙ D/(1 − p)：dx = g ⊙ D/(1 − p)（D 为保留掩码）"),
    att.Attention: ("Z = A·V, A = softmax(S): dV = Aᵀ·g, dA = g·Vᵀ, dS = A ⊙ (dA − Σ dA ⊙ A), "
                    "dQ = dS·K/√d_k, dK = dSᵀ·Q/√d_k",
                    "Z = A·V，A = softmax(S)：dV = Aᵀ·g，dA = g·Vᵀ，dS = A ⊙ (dA − Σ dA ⊙ A)，"
                    "dQ = dS·K/√d_k，dK = dSᵀ·Q/√d_k"),
    att.PackedAttention: ("per head, Z = A·V: dV = Aᵀ·g, dS = A ⊙ (g·Vᵀ − Σ g·Vᵀ ⊙ A), "
                          "dQ = dS·K/√d_k, dK = dSᵀ·Q/√d_k, written into one d[Q K V]",
                          "每个头 Z = A·V：dV = Aᵀ·g，dS = A ⊙ (g·Vᵀ − Σ g·Vᵀ ⊙ A)，"
                          "dQ = dS·K/√d_k，dK = dSᵀ·Q/√d_k，写入同一个 d[Q K V]"),
    # movement beyond the core's
    omv.Cat: ("dxᵢ = the slice of g that xᵢ filled", "dxᵢ = g 中由 xᵢ 填入的那一段"),
    omv.Stack: ("dxᵢ = g[i] along the new axis", "dxᵢ = g 沿新轴的第 i 片"),
    omv.Tri: ("dx = g on the kept triangle, 0 elsewhere", "dx = g 在保留的三角上，其余为 0"),
    omv.Fill: ("dx = 0, dvalue = Σ g", "dx = 0，dvalue = Σ g"),
    omv.Copy: ("dx = 0, dsrc = g", "dx = 0，dsrc = g"),
    omv.Setitem: ("x[i] = v: dv = g[i], dx = g with 0 at i",
                  "x[i] = v：dv = g[i]，dx = g 且 i 处为 0"),
    omv.Contiguous: ("dx = g", "dx = g"),
    # math beyond the core's
    mo.Sin: ("d sin(x) = g ⊙ cos(x)", "d sin(x) = g ⊙ cos(x)"),
    mo.Cos: ("d cos(x) = −g ⊙ sin(x)", "d cos(x) = −g ⊙ sin(x)"),
    mo.Log2: ("d log₂(x) = g / (x ln 2)", "d log₂(x) = g / (x ln 2)"),
    mo.Log10: ("d log₁₀(x) = g / (x ln 10)", "d log₁₀(x) = g / (x ln 10)"),
    mo.Exp2: ("d 2ˣ = g ⊙ 2ˣ ln 2", "d 2ˣ = g ⊙ 2ˣ ln 2"),
    mo.LogAddExp: ("d log(eᵃ + eᵇ) = (g ⊙ σ(a − b), g ⊙ σ(b − a))",
                   "d log(eᵃ + eᵇ) = (g ⊙ σ(a − b), g ⊙ σ(b − a))"),
    mo.Floor: ("d floor(x) = 0", "d floor(x) = 0"),
    mo.Ceil: ("d ceil(x) = 0", "d ceil(x) = 0"),
    mo.Trunc: ("d trunc(x) = 0", "d trunc(x) = 0"),
    mo.Round: ("d round(x) = 0", "d round(x) = 0"),
    mo.Sign: ("d sign(x) = 0", "d sign(x) = 0"),
    mo.Lerp: ("a + w(b − a): d = (g ⊙ (1 − w), g ⊙ w, g ⊙ (b − a))",
              "a + w(b − a)：d = (g ⊙ (1 − w), g ⊙ w, g ⊙ (b − a))"),
    mo.FloorDivide: ("no gradient: a backward through a // b is an error",
                     "没有梯度：对 a // b 反向传播会报错"),
    mo.DivRounded: ("d(a / b rounded) = (0, 0)", "d(a / b 取整) = (0, 0)"),
    mo.Remainder: ("d(a mod b) = (g, −g ⊙ floor(a / b))", "d(a mod b) = (g, −g ⊙ floor(a / b))"),
    mo.Fmod: ("d fmod(a, b) = (g, −g ⊙ trunc(a / b))", "d fmod(a, b) = (g, −g ⊙ trunc(a / b))"),
    mo.Silu: ("σ = sigmoid(x): d(x·σ) = g ⊙ σ ⊙ (1 + x(1 − σ))",
              "σ = sigmoid(x)：d(x·σ) = g ⊙ σ ⊙ (1 + x(1 − σ))"),
    mo.Softplus: ("d softplus(x) = g ⊙ σ(βx) (g above the threshold)",
                  "d softplus(x) = g ⊙ σ(βx)（超过阈值处为 g）"),
    mo.LogSigmoid: ("d log σ(x) = g ⊙ σ(−x)", "d log σ(x) = g ⊙ σ(−x)"),
    mo.LeakyRelu: ("dx = g where x > 0, g ⊙ slope elsewhere",
                   "dx = g（x > 0 处），其余为 g ⊙ slope"),
    mo.Elu: ("dx = g ⊙ scale where x > 0, g ⊙ scale·α·eˣ elsewhere",
             "dx = g ⊙ scale（x > 0 处），其余为 g ⊙ scale·α·eˣ"),
    mo.Hardtanh: ("dx = g where min < x < max, else 0", "dx = g（min < x < max 处），其余为 0"),
    mo.Hardswish: ("d hardswish(x) = 0 below −3, g ⊙ (x/3 + 1/2) between, g above 3",
                   "d hardswish(x) = 0（x < −3），g ⊙ (x/3 + 1/2)（中间），g（x > 3）"),
    mo.Log1p: ("d log(1 + x) = g / (1 + x)", "d log(1 + x) = g / (1 + x)"),
    mo.Expm1: ("d(eˣ − 1) = g ⊙ eˣ", "d(eˣ − 1) = g ⊙ eˣ"),
    # trigonometric and hyperbolic
    trig.Tan: ("d tan(x) = g ⊙ (1 + tan²(x))", "d tan(x) = g ⊙ (1 + tan²(x))"),
    trig.Asin: ("d asin(x) = g / √(1 − x²)", "d asin(x) = g / √(1 − x²)"),
    trig.Acos: ("d acos(x) = −g / √(1 − x²)", "d acos(x) = −g / √(1 − x²)"),
    trig.Atan: ("d atan(x) = g / (1 + x²)", "d atan(x) = g / (1 + x²)"),
    trig.Atan2: ("atan2(a, b), r² = a² + b²: d = (g ⊙ b/r², −g ⊙ a/r²)",
                 "atan2(a, b)，r² = a² + b²：d = (g ⊙ b/r², −g ⊙ a/r²)"),
    trig.Sinh: ("d sinh(x) = g ⊙ cosh(x)", "d sinh(x) = g ⊙ cosh(x)"),
    trig.Cosh: ("d cosh(x) = g ⊙ sinh(x)", "d cosh(x) = g ⊙ sinh(x)"),
    trig.Asinh: ("d asinh(x) = g / √(x² + 1)", "d asinh(x) = g / √(x² + 1)"),
    trig.Acosh: ("d acosh(x) = g / √(x² − 1)", "d acosh(x) = g / √(x² − 1)"),
    trig.Atanh: ("d atanh(x) = g / (1 − x²)", "d atanh(x) = g / (1 − x²)"),
    trig.Hypot: ("y = √(a² + b²): d = (g ⊙ a/y, g ⊙ b/y)",
                 "y = √(a² + b²)：d = (g ⊙ a/y, g ⊙ b/y)"),
    trig.Sinc: ("d sinc(x) = g ⊙ (cos(πx)·πx − sin(πx)) / (πx²), 0 at x = 0",
                "d sinc(x) = g ⊙ (cos(πx)·πx − sin(πx)) / (πx²)，x = 0 处为 0"),
    # special functions
    special.Erfc: ("d erfc(x) = −g ⊙ 2/√π · exp(−x²)", "d erfc(x) = −g ⊙ 2/√π · exp(−x²)"),
    special.Erfinv: ("y = erfinv(x): dx = g ⊙ √π/2 · exp(y²)",
                     "y = erfinv(x)：dx = g ⊙ √π/2 · exp(y²)"),
    special.Lgamma: ("d lgamma(x) = g ⊙ digamma(x)", "d lgamma(x) = g ⊙ digamma(x)"),
    special.Polygamma: ("d ψ⁽ⁿ⁾(x) = g ⊙ ψ⁽ⁿ⁺¹⁾(x)", "d ψ⁽ⁿ⁾(x) = g ⊙ ψ⁽ⁿ⁺¹⁾(x)"),
    special.Logit: ("d logit(x) = g / (x(1 − x))", "d logit(x) = g / (x(1 − x))"),
    special.Xlogy: ("d(x·log y) = (g ⊙ log y, g ⊙ x/y), 0 for x where x = 0",
                    "d(x·log y) = (g ⊙ log y, g ⊙ x/y)，x = 0 处 x 的梯度为 0"),
    # floats bit by bit
    ieee.Copysign: ("y = |a| with b's sign: d = (g ⊙ y/a, 0)",
                    "y = |a| 取 b 的符号：d = (g ⊙ y/a, 0)"),
    ieee.Fmax: ("the larger input gets g (a NaN ignored; ties: a)",
                "较大的输入得到 g（忽略 NaN；相等时给 a）"),
    ieee.Fmin: ("the smaller input gets g (a NaN ignored; ties: a)",
                "较小的输入得到 g（忽略 NaN；相等时给 a）"),
    ieee.FrexpMantissa: ("x = m·2ᵉ: dm/dx = g / 2ᵉ", "x = m·2ᵉ：dm/dx = g / 2ᵉ"),
    ieee.Heaviside: ("d heaviside(x) = 0", "d heaviside(x) = 0"),
    ieee.NanToNum: ("dx = g where x is finite, 0 where a value was replaced",
                    "dx = g（x 有限处），被替换的位置为 0"),
    ieee.Nextafter: ("d nextafter(a, b) = (g, 0)", "d nextafter(a, b) = (g, 0)"),
    # indexing, scans and products
    index.Shift: ("yᵢ = xᵢ₋ₖ: dx = g shifted back by k", "yᵢ = xᵢ₋ₖ：dx = 把 g 反向平移 k"),
    index.Scan: ("h = scan(b, a): db = the same recurrence run backward over g, "
                 "da = db ⊙ h of the step before",
                 "h = scan(b, a)：db = 对 g 反向运行同一递推，da = db ⊙ 上一步的 h"),
    scans.LogCumSumExp: ("yᵢ = log Σ_{j ≤ i} exp(xⱼ): dxⱼ = Σ_{i ≥ j} gᵢ ⊙ exp(xⱼ − yᵢ)",
                         "yᵢ = log Σ_{j ≤ i} exp(xⱼ)：dxⱼ = Σ_{i ≥ j} gᵢ ⊙ exp(xⱼ − yᵢ)"),
    index.CumSum: ("dxᵢ = Σ_{j ≥ i} gⱼ", "dxᵢ = Σ_{j ≥ i} gⱼ"),
    index.CumProd: ("dxᵢ = Σ_{j ≥ i} gⱼ ⊙ Π_{k ≤ j, k ≠ i} xₖ",
                    "dxᵢ = Σ_{j ≥ i} gⱼ ⊙ Π_{k ≤ j, k ≠ i} xₖ"),
    index.Prod: ("dxᵢ = g ⊙ Π_{j ≠ i} xⱼ", "dxᵢ = g ⊙ Π_{j ≠ i} xⱼ"),
    index.Flip: ("dx = g flipped back", "dx = 把 g 翻转回去"),
    index.Roll: ("dx = g rolled back", "dx = 把 g 反向循环平移"),
    index.Repeat: ("dx = Σ of g's tiles", "dx = g 的各个平铺块之和 Σ"),
    index.RepeatInterleave: ("dxᵢ = Σ of the copies of slice i in g",
                             "dxᵢ = g 中第 i 片的各个副本之和 Σ"),
    index.SumRepeats: ("dg = u repeated as the copies were", "dg = 按原来的副本把 u 重复"),
    index.Diagonal: ("dx = zeros with g written on the diagonal", "dx = 全零张量，对角线上写入 g"),
    index.DiagonalAdjoint: ("du = the diagonal of the gradient", "du = 梯度的对角线"),
    index.Gather: ("y = x[index along dim]: dx = zeros with g added at index",
                   "y = 沿 dim 按 index 取 x：dx = 全零张量在 index 处加上 g"),
    index.Scatter: ("dx = g, 0 where overwritten; dsrc = g at index",
                    "dx = g，被覆盖处为 0；dsrc = g 在 index 处的值"),
    sr.ScatterReduce: ("y = x with src reduced in at index: g goes to the entries each output "
                       "reduced (sum: all; mean: ÷ count; prod: the product of the others; "
                       "amax/amin: the extremes, shared on ties)",
                       "y = 在 index 处把 src 归约进 x：g 流向每个输出归约的那些元素（sum：全部；"
                       "mean：除以个数；prod：其余元素之积；amax/amin：极值处，相等时平分）"),
    sr.ScatterReduceNoGrad: ("no gradient: a backward through scatter with reduce= is an error",
                             "没有梯度：对带 reduce= 的 scatter 反向传播会报错"),
    einsum.Einsum: ("input k: einsum of g with the other inputs onto k's subscripts",
                    "第 k 个输入：g 与其余输入做 einsum，得到 k 的下标"),
    einsum.OnDiagonal: ("dvalues = the diagonal of g", "dvalues = g 的对角线"),
    # the engine's own nodes
    custom_function.Output: ("the output's g placed at its slot of the node's flat gradient",
                             "把这个输出的 g 放到节点扁平梯度中它的位置"),
    custom_function.Place: ("dg = the slice it was placed at", "dg = 它被放入的那一段"),
    backprop.Restore: ("g passes to the input unchanged", "g 原样传给输入"),
    function_ctx.DelayedError: ("g passes on as it is; differentiating it again is an error "
                                   "(@once_differentiable)",
                                   "g 原样传下去；再对它求导会报错（@once_differentiable）"),
    hooks.BackwardHookFunction: ("dx = g, after the module's backward hooks have seen (and may "
                                 "have replaced) it",
                                 "dx = g，先交给模块的反向钩子查看（钩子可以替换它）"),
}

_CUSTOM = ("a user's Function: its own backward()", "用户自定义的 Function：它自己的 backward()")
_LEAF = ("a leaf: g is added to its .grad", "叶子节点：g 累加到它的 .grad")


def vjp_text(ctx, lang="en"):
    """The backward formula of the op node `ctx` (None: a leaf), in `lang` ("en" or "zh"): the
    table's line for its class or the nearest base class that has one; a user's op without one
    says that its own backward runs."""
    k = 1 if lang == "zh" else 0
    if ctx is None:
        return _LEAF[k]
    # a PyTorch-style Function's node names its Function class (`fn`): its line, if it has one
    for cls in getattr(getattr(ctx, "fn", None), "__mro__", ()) + type(ctx).__mro__:
        if cls in VJPS:
            return VJPS[cls][k]
    return _CUSTOM[k]
