"""L-BFGS, PyTorch's `torch.optim.LBFGS`: a quasi-Newton method that keeps the last
`history_size` steps s and gradient changes y, and turns the gradient into a search direction
with the two-loop recursion (Nocedal & Wright, Algorithm 7.4). `step(closure)` runs up to
`max_iter` iterations, each calling the closure (which recomputes the loss and its gradients);
the step length is lr (the first iteration's scaled by 1 / sum |g|), or, with
line_search_fn="strong_wolfe", found by a line search that brackets then zooms with cubic
interpolation until the strong Wolfe conditions hold (Algorithms 3.5 and 3.6).

It works on every parameter as one flat vector (the parameters' arrays read and written in
order), in the parameters' dtype: the dot products are numpy scalars of that dtype, as
PyTorch's are 0-d tensors, so float32 runs round alike. One parameter group only, as in
PyTorch. The state (under the first parameter, as PyTorch keeps it) holds the counts, the
direction d, the step t, the history and the previous gradient and loss.
"""
from __future__ import annotations

import numpy as np

from ..autograd import enable_grad
from ..tensor import Tensor
from .optimizer import Optimizer, hyper_value

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), kept in
    bounds (default: between x1 and x2); their midpoint when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    square = d1 ** 2 - g1 * g2
    if square < 0:
        return (lo + hi) / 2.0
    d2 = np.sqrt(square)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """(loss, gradient, t, evaluations) at a step t along d satisfying the strong Wolfe
    conditions: f(t) <= f + c1 t g.d (enough decrease), |g(t).d| <= c2 |g.d| (flat enough).
    `evaluate(t)` gives (loss, flat gradient) at x + t d."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = evaluate(t)
    evals, gtd_new = 1, g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done, it = False, 0
    bracket = None
    while it < max_ls:                          # bracketing: grow t until a minimum is inside
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):   # overshot: bracketed
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.copy(), gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:                                  # both conditions hold
            bracket, done = [[t, f_new, g_new, gtd_new]], True
            break
        if gtd_new >= 0:                                               # the slope turned
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.copy(), gtd_new]]
            break
        step_lo, step_hi = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                      (step_lo, step_hi))
        f_prev, g_prev, gtd_prev = f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t)
        evals, gtd_new, it = evals + 1, g_new.dot(d), it + 1
    if it == max_ls:
        bracket = [[0, f, g, None], [t, f_new, g_new, None]]
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    stuck = False
    while not done and it < max_ls:             # zoom: shrink the bracket around the minimum
        ts = [b[0] for b in bracket]
        if abs(ts[1] - ts[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(*bracket[0][:2], bracket[0][3], *bracket[1][:2], bracket[1][3])
        eps = 0.1 * (max(ts) - min(ts))
        if min(max(ts) - t, t - min(ts)) < eps:     # too close to an end: move it inside
            if stuck or t >= max(ts) or t <= min(ts):
                t = max(ts) - eps if abs(t - max(ts)) < abs(t - min(ts)) else min(ts) + eps
                stuck = False
            else:
                stuck = True
        else:
            stuck = False
        f_new, g_new = evaluate(t)
        evals, gtd_new, it = evals + 1, g_new.dot(d), it + 1
        if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
            bracket[high] = [t, f_new, g_new.copy(), gtd_new]
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = list(bracket[low])
            bracket[low] = [t, f_new, g_new.copy(), gtd_new]
    t, f_new, g_new = bracket[low][:3]
    return f_new, g_new, t, evals


class LBFGS(Optimizer):
    """L-BFGS, PyTorch's: `opt.step(closure)` with a closure that zeroes the gradients,
    computes the loss, calls backward and returns the loss."""

    _state_keys = ("func_evals", "n_iter")
    _array_keys = ()

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: one parameter group only (per-group options are not "
                             "supported, as in PyTorch)")
        self._params = self.param_groups[0]["params"]

    def _check_hyper(self, group, gi):
        super()._check_hyper(group, gi)
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{group['line_search_fn']!r}")

    def add_param_group(self, param_group):
        if self.param_groups:
            raise ValueError("LBFGS: one parameter group only (per-group options are not "
                             "supported, as in PyTorch)")
        super().add_param_group(param_group)

    def _allowed_state(self):
        return {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                "prev_flat_grad", "prev_loss", "al"}

    def _load_entry(self, key, p, st):
        return dict(st)          # lists and numbers: the state is the algorithm's own

    # -- the parameters as one flat vector ---------------------------------------------------
    def _flat_grad(self):
        return np.concatenate([np.zeros(p._data.size, p._data.dtype) if p.grad is None
                               else self._grad_of(p).reshape(-1) for p in self._params])

    def _add(self, t, d):
        i = 0
        for p in self._params:
            n = p._data.size
            p._data += t * d[i:i + n].reshape(p._data.shape)
            i += n

    def _evaluate(self, closure, t, d):
        """(loss, flat gradient) at x + t d, the parameters put back after."""
        saved = [p._data.copy() for p in self._params]
        self._add(t, d)
        loss = float(closure())
        grad = self._flat_grad()
        for p, a in zip(self._params, saved, strict=True):
            p._data[...] = a
        return loss, grad

    def step(self, closure):
        """Up to max_iter L-BFGS iterations; returns the closure's first loss."""
        if closure is None:
            raise TypeError("LBFGS.step needs a closure that recomputes the loss (it evaluates "
                            "the model several times a step)")
        args, kwargs = self._run_pre_hooks((closure,), {})
        closure = kwargs.get("closure", args[0])

        def run():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr, max_iter, max_eval = hyper_value(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        first = run()
        loss, evals = float(first), 1
        state["func_evals"] += 1
        g = self._flat_grad()
        done = np.abs(g).max() <= tol_grad if g.size else True
        if done:
            self._finish(args, kwargs)
            return first
        d, t = _array(state.get("d")), _number(state.get("t"))
        old_dirs = [_array(v) for v in state.get("old_dirs") or []]
        old_stps = [_array(v) for v in state.get("old_stps") or []]
        ro = [_number(v) for v in state.get("ro") or []]
        h_diag, prev_g = _number(state.get("H_diag")), _array(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        n = 0
        while n < max_iter:
            n += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:                # steepest descent to start
                d, old_dirs, old_stps, ro, h_diag = -g, [], [], [], 1
            else:                                   # the two-loop recursion
                y, s = g - prev_g, d * t
                ys = y.dot(s)
                if ys > 1e-10:                      # curvature: keep the pair
                    if len(old_dirs) == history:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                al = [None] * len(old_dirs)
                q = -g
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be) * old_stps[i]
                state["al"] = al + [None] * (history - len(al))
            prev_g = g.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = g.dot(d)
            if gtd > -tol_change:                   # not a descent direction any more
                break
            found = 0
            if group["line_search_fn"] == "strong_wolfe":
                loss, g, t, found = _strong_wolfe(
                    lambda step, d=d: self._evaluate(run, step, d), t, d, loss, g, gtd,
                    max_ls=max_eval - evals)
                self._add(t, d)
                done = np.abs(g).max() <= tol_grad
            else:
                self._add(t, d)
                if n != max_iter:
                    loss = float(run())
                    g = self._flat_grad()
                    done = np.abs(g).max() <= tol_grad
                    found = 1
            evals += found
            state["func_evals"] += found
            if n == max_iter or evals >= max_eval or done:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        state.update(d=Tensor(d), t=t, old_dirs=[Tensor(v) for v in old_dirs],
                     old_stps=[Tensor(v) for v in old_stps], ro=ro, H_diag=h_diag,
                     prev_flat_grad=Tensor(prev_g), prev_loss=prev_loss)
        self._finish(args, kwargs)
        return first

    def _finish(self, args, kwargs):
        self._opt_called = True
        for hook in list(self._hooks["step_post"].values()):
            hook(self, args, kwargs)


def _array(v):
    if v is None:
        return None
    return v.detach().numpy() if isinstance(v, Tensor) else np.asarray(v)


def _number(v):
    if isinstance(v, Tensor):
        return v.detach().numpy()[()]
    return v
