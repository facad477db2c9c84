"""A small regression model with a custom op written in PyTorch's style: a gated activation
with two outputs, its own backward, checked with torch.autograd.gradcheck before training.
Runs on PyTorch (`python custom_op.py`) and on tinygradx (`python -m tinygradx.compat ...`)."""
import torch
import torch.nn as nn


class SoftplusGate(torch.autograd.Function):
    """(softplus(x) * sigmoid(g), sigmoid(g)) for x, g of one shape."""

    @staticmethod
    def forward(ctx, x, g, beta=1.0):
        sp = torch.log1p(torch.exp(beta * x)) / beta
        gate = torch.sigmoid(g)
        ctx.save_for_backward(x, gate, sp)
        ctx.beta = beta
        return sp * gate, gate

    @staticmethod
    def backward(ctx, grad_out, grad_gate):
        x, gate, sp = ctx.saved_tensors
        grad_x = grad_g = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out * gate * torch.sigmoid(ctx.beta * x)
        if ctx.needs_input_grad[1]:
            grad_g = (grad_out * sp + grad_gate) * gate * (1 - gate)
        return grad_x, grad_g, None


class GatedNet(nn.Module):
    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.value = nn.Linear(d_in, d_hidden)
        self.gate = nn.Linear(d_in, d_hidden)
        self.out = nn.Linear(d_hidden, 1)

    def forward(self, x):
        h, gate = SoftplusGate.apply(self.value(x), self.gate(x), 2.0)
        return self.out(h).squeeze(-1), gate


def data(n=16, d=3):
    x = torch.linspace(-1, 1, n * d, dtype=torch.float64).reshape(n, d)
    y = torch.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2]
    return x, y


def main():
    torch.manual_seed(0)
    a = torch.linspace(-2, 2, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()
    b = torch.linspace(1, -1, 6, dtype=torch.float64).reshape(2, 3).requires_grad_()
    ok = torch.autograd.gradcheck(lambda u, v: SoftplusGate.apply(u, v, 1.5), (a, b))
    print(f"gradcheck {ok}")
    model = GatedNet(3, 8).double()
    with torch.no_grad():                       # the same weights on both sides
        for i, p in enumerate(model.parameters()):
            wave = torch.cos(torch.arange(p.numel(), dtype=torch.float64) + i)
            p.copy_(wave.reshape(p.shape) / 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    for step in range(5):
        pred, gate = model(x)
        loss = ((pred - y) ** 2).mean() + 0.01 * gate.mean()
        opt.zero_grad()
        loss.backward()
        grad_norm = sum((p.grad ** 2).sum() for p in model.parameters()) ** 0.5
        opt.step()
        print(f"step {step} loss {loss:.10f} grad {grad_norm:.10f}")


if __name__ == "__main__":
    main()
