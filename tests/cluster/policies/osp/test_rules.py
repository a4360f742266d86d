"""OSP: importance, GIB budget fill, Algorithm 1, LGP (Eq. 6), correction (Eq. 7), equivalences."""

from __future__ import annotations

import numpy as np
import pytest

from fl_r2sp.cluster.policies.osp.params import OSPParams
from fl_r2sp.cluster.policies.osp.reference import run_bsp_reference, run_osp_reference
from fl_r2sp.cluster.policies.osp.rules import (
    BudgetSchedule,
    ics_correction,
    layer_importance,
    layer_scores,
    lgp_step,
    select_ics_layers,
    u_max,
)

# quadratic f_w(x) = 0.5 * sum_l a_wl * |x_l - c_wl|^2 over 3 "layers" of sizes 2, 3, 1
A = [[1.0, 2.0, 0.5], [3.0, 1.0, 1.5], [2.0, 0.5, 1.0]]
C = [[1.0, -2.0, 0.5], [0.0, 1.0, -1.0], [2.0, 0.0, 3.0]]
SHAPES = [(2,), (3,), (1,)]
X0 = [np.zeros(s) for s in SHAPES]


def quad_grad(w, j, params):
    return [A[w][k] * (p - C[w][k]) for k, p in enumerate(params)]


def same_grad(w, j, params):  # every worker has worker 0's objective
    return quad_grad(0, j, params)


def test_importance_bitmap_budget_by_hand():
    grads = [np.array([1.0, -2.0]), np.array([0.5, 0.5, 0.5]), np.array([-4.0])]
    params = [np.array([1.0, 1.0]), np.array([2.0, -2.0, 0.0]), np.array([0.25])]
    imp = layer_importance(grads, params)
    np.testing.assert_allclose(imp, [3.0, 2.0, 1.0])
    sizes = [8.0, 12.0, 4.0]
    # least important first: layer 2 (4 B), then layer 1 (12 B) -> 16 B, then layer 0 (8 B)
    assert select_ics_layers(imp, sizes, 0.0).tolist() == [False, False, False]
    assert select_ics_layers(imp, sizes, 15.0).tolist() == [False, False, True]
    assert select_ics_layers(imp, sizes, 16.0).tolist() == [False, True, True]
    # a prefix: layer 0 would fit in 20 B but layer 1 does not, so the fill stops at layer 1
    assert select_ics_layers([2.0, 3.0, 1.0], [8.0, 12.0, 4.0], 15.0).tolist() == [
        True,
        False,
        True,
    ]
    assert select_ics_layers([2.0, 1.0, 3.0], [12.0, 4.0, 8.0], 15.0).tolist() == [
        False,
        True,
        False,
    ]
    # ties go to the lower index
    assert select_ics_layers([1.0, 1.0], [4.0, 4.0], 4.0).tolist() == [True, False]


def test_ablation_scores():
    grads = [np.array([1.0, -2.0]), np.array([0.5])]
    params = [np.array([0.0, 0.0]), np.array([10.0])]
    np.testing.assert_allclose(layer_scores(grads, params, "importance"), [0.0, 5.0])
    np.testing.assert_allclose(layer_scores(grads, params, "topk"), [3.0, 0.5])
    r1 = layer_scores(grads, params, "random", np.random.default_rng(3))
    r2 = layer_scores(grads, params, "random", np.random.default_rng(3))
    assert sorted(r1.tolist()) == [0.0, 1.0] and r1.tolist() == r2.tolist()
    with pytest.raises(ValueError, match="rng"):
        layer_scores(grads, params, "random")


def test_u_max_formula_cap_and_schedule_by_hand():
    # b = 1e9 B/s, lr = 0.25, T_C = 0.2 s, N = 8: printed 1e9 * 1.25 * 0.2 / 8 = 31.25e6 B
    assert u_max(1e9, 0.25, 0.2, 8, 1e9, 0.8, "printed") == pytest.approx(31.25e6)
    assert u_max(1e9, 0.25, 0.2, 8, 1e9, 0.8, "divided") == pytest.approx(20e6)
    # cap: 80% of a 10 MB model
    assert u_max(1e9, 0.25, 0.2, 8, 10e6, 0.8, "printed") == pytest.approx(8e6)
    sched = BudgetSchedule(100.0)
    assert sched.update(1, 2.0) == 0.0  # epoch 1: S = 0, L = 2
    assert sched.update(2, 1.5) == pytest.approx(25.0)  # (1 - 1.5/2) * 100
    assert sched.update(3, 0.5) == pytest.approx(75.0)
    assert sched.update(4, 3.0) == 0.0  # loss above L: clamped at 0
    assert sched.update(5, 0.0) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="expected epoch 6"):
        sched.update(7, 1.0)


def test_lgp_step_and_correction_restore_all_routine():
    # dyadic values: every sum is exact in binary floating point
    p = [np.array([1.0, 2.0]), np.array([0.5]), np.array([-1.25, 4.0])]
    g_global = [np.array([0.25, -0.5]), np.array([0.125]), np.array([1.0, -2.0])]
    g_local = [np.array([0.5, -0.25]), np.array([-0.375]), np.array([0.75, -1.5])]
    bitmap = np.array([False, True, True])
    rs = [g_global[0], None, None]
    partial = lgp_step(p, rs, g_local, bitmap)
    np.testing.assert_array_equal(partial[0], p[0] + g_global[0])
    np.testing.assert_array_equal(partial[1], p[1] + g_local[1])  # Eq. 6: local, not global
    corrected = ics_correction(partial, g_global, g_local, bitmap)
    routine = [a + b for a, b in zip(p, g_global, strict=True)]
    for got, want in zip(corrected, routine, strict=True):
        np.testing.assert_array_equal(got, want)
    # LGP off: unimportant layers stay stale, then take the global update
    stale = lgp_step(p, rs, g_local, bitmap, lgp=False)
    np.testing.assert_array_equal(stale[2], p[2])
    fixed = ics_correction(stale, g_global, g_local, bitmap, lgp=False)
    for got, want in zip(fixed, routine, strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="important"):
        lgp_step(p, [None, None, None], g_local, bitmap)


@pytest.mark.parametrize("lgp", [True, False])
def test_all_routine_is_bsp(lgp):
    history, ps = run_osp_reference(quad_grad, 3, X0, 0.1, 6, lambda j: np.zeros(3, bool), lgp)
    bsp = run_bsp_reference(quad_grad, 3, X0, 0.1, 6)
    for j in range(6):
        for w in range(3):
            for got, want in zip(history[j][w], bsp[j], strict=True):
                np.testing.assert_array_equal(got, want)
    for got, want in zip(ps, bsp[6], strict=True):
        np.testing.assert_array_equal(got, want)


def test_all_ics_with_lgp_is_stale_ps_model_plus_own_local_step():
    lr, n, iters = 0.1, 3, 6
    history, ps = run_osp_reference(quad_grad, n, X0, lr, iters, lambda j: np.ones(3, bool))
    # by hand: P_w^{j+1} = x_j + u_w^j and x_{j+1} = x_j + mean_w u_w^j, with
    # u_w^j = -lr * grad_w(P_w^j) and x_0 = P_w^0 = X0
    x = [p.copy() for p in X0]
    pts = [[p.copy() for p in X0] for _ in range(n)]
    for j in range(iters):
        for w in range(n):
            for got, want in zip(history[j][w], pts[w], strict=True):
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        u = [[-lr * g for g in quad_grad(w, j, pts[w])] for w in range(n)]
        pts = [[xk + uk for xk, uk in zip(x, u[w], strict=True)] for w in range(n)]
        x = [xk + np.mean([u[w][k] for w in range(n)], axis=0) for k, xk in enumerate(x)]
    for got, want in zip(ps, x, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # and it is not BSP when the workers differ
    bsp = run_bsp_reference(quad_grad, n, X0, lr, iters)
    assert not np.allclose(history[3][0][0], bsp[3][0])


def test_all_ics_with_lgp_and_identical_workers_is_bsp():
    history, _ = run_osp_reference(same_grad, 3, X0, 0.1, 6, lambda j: np.ones(3, bool))
    bsp = run_bsp_reference(same_grad, 3, X0, 0.1, 6)
    for j in range(6):
        for got, want in zip(history[j][1], bsp[j], strict=True):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_all_ics_without_lgp_is_one_step_stale_sgd():
    lr, n, iters = 0.1, 3, 6
    history, ps = run_osp_reference(
        quad_grad, n, X0, lr, iters, lambda j: np.ones(3, bool), lgp=False
    )
    # x_{j+1} = x_j - lr * mean_w grad_w(x_{j-1}), x_{-1} = x_0; workers compute on x_{j-1}
    xs = [[p.copy() for p in X0], [p.copy() for p in X0]]  # x_{-1}, x_0
    for j in range(iters):
        for got, want in zip(history[j][2], xs[-2], strict=True):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        g = [quad_grad(w, j, xs[-2]) for w in range(n)]
        mean = [np.mean([g[w][k] for w in range(n)], axis=0) for k in range(len(SHAPES))]
        xs.append([xk - lr * mk for xk, mk in zip(xs[-1], mean, strict=True)])
    for got, want in zip(ps, xs[-1], strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "kw",
    [
        {"selection": "magnitude"},
        {"budget": "auto"},
        {"fixed_mb": -1.0},
        {"cap": 0.0},
        {"loss_form": "x"},
        {"loss_rate": 1.0},
        {"epoch_iterations": -1},
        {"lgp": 1},
        {"scheme": "osp-x"},
    ],
)
def test_params_validate(kw):
    with pytest.raises(ValueError):
        OSPParams(**kw).validate()
    assert OSPParams().validate().selection == "importance"


def test_osp_c_is_colocated_and_needs_no_momentum_and_a_worker_per_server():
    assert OSPParams(scheme="osp-c").colocated and not OSPParams(scheme="osp-s").colocated
    OSPParams(scheme="osp-c").check_job(workers=2, servers=2, momentum=0.0)
    with pytest.raises(ValueError, match="servers 3 > workers 2"):
        OSPParams(scheme="osp-c").check_job(workers=2, servers=3, momentum=0.0)
    with pytest.raises(ValueError, match="momentum"):
        OSPParams().check_job(workers=2, servers=1, momentum=0.9)
