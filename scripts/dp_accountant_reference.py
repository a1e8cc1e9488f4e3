#!/usr/bin/env python3
"""Reference values for tests/unit/test_dp_accountant.c (train/dp_accountant.c), from
implementations independent of it:

- exact: the RDP of the Poisson-subsampled Gaussian from its definition in mpmath at 30 digits,
  rdp = log1p(A - 1) / (alpha - 1) with A - 1 = E_{z~N(0,s^2)}[(1+X)^alpha - 1 - alpha X],
  X = q (exp((2z - 1) / (2 s^2)) - 1): the finite binomial sum for integer orders, adaptive
  tanh-sinh quadrature for fractional ones (not the series train/dp_accountant.c sums);
- Opacus (opacus/accountants/analysis/rdp.py, the TF Privacy code ported): compute_rdp and
  get_privacy_spent (the tight conversion), with Opacus' default orders;
- Google's dp_accounting: RdpAccountant with its default orders (the same 156 as axmem's), and
  its conversions compute_epsilon / compute_delta applied to Opacus' RDP at those orders (its
  own RDP at fractional orders sums |terms| of the series, an upper bound, so its epsilon can
  sit slightly above the exact one).

Usage: python3 scripts/dp_accountant_reference.py > tests/unit/test_dp_accountant_ref.h &&
       clang-format -i tests/unit/test_dp_accountant_ref.h
Needs: pip install dp-accounting mpmath (numpy, scipy come with it), and Opacus' rdp.py: either
`pip install opacus` (pulls torch) or `pip download opacus --no-deps`, unzip the wheel and set
OPACUS_RDP=path/to/opacus/accountants/analysis/rdp.py. Not run by CI (~10 min on one core)."""
import importlib.util
import math
import os
import sys
import warnings

import mpmath as mp
import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as gdp

warnings.filterwarnings('ignore')


def load_opacus_rdp():
    path = os.environ.get('OPACUS_RDP')
    if not path:
        from opacus.accountants.analysis import rdp
        return rdp
    spec = importlib.util.spec_from_file_location('opacus_rdp', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ORP = load_opacus_rdp()
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
DEFAULT_ORDERS = gdp.DEFAULT_RDP_ORDERS


def exact_rdp(q, s, a):
    with mp.workdps(30):
        q, s, a = mp.mpf(q), mp.mpf(s), mp.mpf(a)
        if a == mp.floor(a):
            n = int(a)
            am1 = mp.fsum(mp.binomial(n, i) * q**i * (1 - q)**(n - i) *
                          mp.expm1((i * i - i) / (2 * s * s)) for i in range(2, n + 1))
        else:
            def f(z):
                x = q * mp.expm1((2 * z - 1) / (2 * s * s))
                return mp.npdf(z, 0, s) * ((1 + x)**a - 1 - a * x)
            z0 = s * s * mp.log(1 / q - 1) + mp.mpf(1) / 2
            # the mass sits near 0 and near alpha (where mu0 L^alpha peaks), each of width s
            pts = {-mp.inf, -40 * s, -10 * s, -2 * s, 0, 2 * s, z0, a / 2, a - 10 * s, a - 2 * s,
                   a, a + 2 * s, a + 10 * s, a + 40 * s, mp.inf}
            am1 = mp.quad(f, sorted(pts, key=float), maxdegree=10)
        return float(mp.log1p(am1) / (a - 1))


def opacus_eps(q, s, steps, delta, orders=OPACUS_ORDERS):
    rdp = ORP.compute_rdp(q=q, noise_multiplier=s, steps=steps, orders=orders)
    eps, order = ORP.get_privacy_spent(orders=orders, rdp=rdp, delta=delta)
    return float(eps), float(order)


def dpacc_eps(q, s, steps, delta):
    acc = gdp.RdpAccountant()
    acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(s)), steps)
    eps, order = acc.get_epsilon_and_optimal_order(delta)
    return float(eps), float(order)


def opacus_rdp_default(q, s, steps):
    return ORP.compute_rdp(q=q, noise_multiplier=s, steps=steps, orders=DEFAULT_ORDERS)


def c(x):  # a C literal; dp_accounting gives inf for an order whose series it cannot sum
    return 'INFINITY' if math.isinf(x) else repr(float(x))


RDP_CASES = [(q, s, a) for q, s in [(1e-5, 1.0), (1e-3, 0.8), (256 / 60000, 1.1), (0.01, 4.0),
                                     (0.01, 0.5), (0.1, 2.0), (0.5, 10.0), (0.9, 1.0)]
             for a in (1.1, 1.5, 2.0, 3.3, 8.0, 10.9, 20.0, 63.0, 256.0)]
EPS_CASES = [  # q, sigma, steps, delta
    (256 / 60000, 1.1, 14063, 1e-5), (0.01, 4.0, 10000, 1e-5), (0.01, 1.0, 300, 1e-5),
    (1e-4, 0.5, 100000, 1e-6), (1e-3, 0.8, 50000, 1e-7), (0.001, 2.0, 1, 1e-5),
    (0.01, 10.0, 100000, 1e-8), (0.05, 1.5, 2000, 1e-6), (0.1, 3.0, 1000, 1e-5),
    (0.2, 0.7, 100, 1e-5), (0.5, 5.0, 500, 1e-8), (1.0, 10.0, 100, 1e-5),
    (0.003, 0.6, 20000, 1e-5), (2e-5, 1.2, 100000, 1e-8), (0.02, 1.0, 1, 1e-6),
    (0.3, 8.0, 3000, 1e-7)]
SIGMA_CASES = [  # q, steps, delta, epsilon
    (256 / 60000, 14063, 1e-5, 3.0), (0.01, 10000, 1e-5, 1.0), (0.001, 100000, 1e-6, 8.0),
    (0.1, 1000, 1e-5, 0.5), (0.5, 100, 1e-8, 2.0), (1e-4, 1, 1e-5, 0.1)]


def sigma_ref(q, steps, delta, eps):
    def meets(s):
        rdp = opacus_rdp_default(q, s, steps)
        return gdp.compute_epsilon(DEFAULT_ORDERS, rdp, delta)[0] <= eps
    lo, hi = 0.01, 1000.0
    while hi - lo > 1e-13 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    return hi


def main():
    out = ['/* generated by scripts/dp_accountant_reference.py: do not edit */', '',
           '/* q, sigma, alpha: RDP exact (mpmath), Opacus, dp_accounting */',
           'static const rdp_case RDP_CASES[] = {']
    for q, s, a in RDP_CASES:
        op = ORP.compute_rdp(q=q, noise_multiplier=s, steps=1, orders=[a])[0]
        g = gdp._compute_rdp_poisson_subsampled_gaussian(q, s, [a])[0]
        out.append(f'    {{{c(q)}, {c(s)}, {c(a)}, {c(exact_rdp(q, s, a))}, {c(op)}, {c(g)}}},')
        print(f'rdp {q} {s} {a}', file=sys.stderr)
    out += ['};', '',
            '/* q, sigma, steps, delta: epsilon and best order of Opacus (its orders), of',
            ' * dp_accounting (its RdpAccountant), and of dp_accounting\'s conversion of Opacus\'',
            ' * RDP at the default orders; delta of that conversion at the Opacus epsilon */',
            'static const eps_case EPS_CASES[] = {']
    for q, s, t, d in EPS_CASES:
        eo, oo = opacus_eps(q, s, t, d)
        eg, og = dpacc_eps(q, s, t, d)
        rdp = opacus_rdp_default(q, s, t)
        ec, oc = gdp.compute_epsilon(DEFAULT_ORDERS, rdp, d)
        dc, odc = gdp.compute_delta(DEFAULT_ORDERS, rdp, eo)
        out.append(f'    {{{c(q)}, {c(s)}, {t}, {c(d)}, {c(eo)}, {c(oo)}, {c(eg)}, {c(og)}, '
                   f'{c(ec)}, {c(oc)}, {c(dc)}, {c(odc)}}},')
    out += ['};', '',
            '/* q, steps, delta, epsilon: the least noise multiplier meeting them on the default',
            ' * orders (bisection to 1e-13 on dp_accounting\'s conversion of Opacus\' RDP) */',
            'static const sigma_case SIGMA_CASES[] = {']
    for q, t, d, e in SIGMA_CASES:
        out.append(f'    {{{c(q)}, {t}, {c(d)}, {c(e)}, {c(sigma_ref(q, t, d, e))}}},')
    out.append('};')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
