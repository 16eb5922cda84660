#!/usr/bin/env python3
"""Detection-delay bound for stalled_recovery on the wide cohort (docs/alert-quality.md).

A numpy model of `mobility-sim --cohort wide` (Sources/Simulator/Population.swift `widen`,
TrafficGenerator.swift `meanSpeed` / `parts`): the injured shapes (normal, slow_steady, stalled,
drifting_plateau, relapse), their traits (sparse, noisy, quiet; heat wave, missing days) and the
day's samples (day effect N(0, 0.4 sigma), samples N(day, sigma), 2-24 a day, the daily p95 by
linear interpolation as the engine computes it).

Detectors, each scored as `mobility-sim quality` scores a rule (a firing for an unlabelled user or
more than 3 days before a labelled onset is a false alert; false alerts per 100 patient-weeks of
recovery days 21-60; the detection delay from the labelled onset; a firing resolves after 7 days
without the condition, as keep_firing_for 7 d), evaluated on recovery days 14-60:

* oracle: knows every user's true recovery line (level and pre-stall slope), the noise of each
  day's value and the heat-wave days, and runs the generalised likelihood-ratio test for a slope
  change at an unknown day (the matched filter: residuals from the true line weighted by the days
  since a candidate break, maximised over all candidate breaks since the injury). No rule can know
  more, so its delay at a false-alert rate is a lower bound for any rule over the same daily values.
  Run on the daily p95 (what the rules read) and on the daily mean of the samples (the most
  efficient daily value; the day effect stays).
* hinge K: what a rule can compute: the line fitted by least squares to the (up to) 60 days before
  the last K (from the injury on), the last K days' residuals weighted by their day since the break
  (j = 1..K), as a z-score with the fit's own residual scatter (`slope_change_z` in the rule
  language), with the level gate of the rule (7-day mean more than 0.10 m/s below baseline).
* flat K: the same with equal weights (v3's `shortfall_z`), for comparison.

For each detector the threshold is set so that the false-alert rate is 1.0 (and 0.5) per 100
patient-weeks, and recall and delay are read there.

    python3 scripts/delay-bound.py [--users 4000] [--seed 1] [--rule-stats]   # numpy (pip install numpy)
"""
import argparse

import numpy as np

DAYS = 90
MAXN = 24


def cohort(rng, users):
    """Per-user parameters of the wide generator's injured shapes, in their relative shares."""
    shapes = np.array(["normal", "slow_steady", "stalled", "drifting_plateau", "relapse"])
    share = np.array([0.20, 0.22, 0.14, 0.12, 0.12])
    shape = rng.choice(len(shapes), size=users, p=share / share.sum())
    base = 1.05 + rng.random(users) * 0.45
    sigma = 0.05 + rng.random(users) * 0.04
    inj = 31 + rng.integers(0, 10, users)
    drop = np.full(users, 0.55)
    r = 0.010 + rng.random(users) * 0.006
    ss = shape == 1
    drop[ss] = 0.55 + rng.random(ss.sum()) * 0.15
    r[ss] = 0.005 + rng.random(ss.sum()) * 0.005
    st = shape >= 2
    drop[st] = 0.55 + rng.random(st.sum()) * 0.10
    r[st] = 0.008 + rng.random(st.sum()) * 0.008
    room = (base - 0.15 - base * drop) / r
    k = np.minimum(room.astype(int), 10 + rng.integers(0, 21, users))
    plateau = np.where(st, inj + np.maximum(5, k), 10_000)
    level = base * drop + r * np.maximum(5, k)
    span = (inj + 60 - plateau).astype(float)
    drift = np.where(shape == 3, np.minimum(0.0003 + rng.random(users) * 0.0012, np.maximum(0, (base - 0.12 - level) / np.maximum(span, 1))), 0.0)
    relapse = np.where(shape == 4, 0.002 + rng.random(users) * 0.003, 0.0)
    relapse_days = np.where(shape == 4, 10 + rng.integers(0, 11, users), 0)
    # traits
    sparse = rng.random(users) < 0.2
    lo = np.where(sparse, 2, 8)
    hi = np.where(sparse, 5, 24)
    nroll = rng.random(users)
    sigma = np.where(nroll < 0.15, 0.10 + rng.random(users) * 0.03, np.where(nroll < 0.30, 0.02 + rng.random(users) * 0.02, sigma))
    droll = rng.random(users)
    at = inj + 14 + rng.integers(0, 20, users)
    heat = droll < 0.15
    heat_factor = 0.8 + rng.random(users) * 0.1
    missing = (droll >= 0.25) & (droll < 0.35)
    miss_len = rng.integers(0, 2, users)
    d = np.arange(1, DAYS + 1)[None, :]
    eff = np.minimum(d, plateau[:, None]) - inj[:, None]
    line = np.where(d >= inj[:, None], np.minimum(base[:, None], base[:, None] * drop[:, None] + r[:, None] * (d - inj[:, None])), base[:, None])
    mean = np.where(d >= inj[:, None], np.minimum(base[:, None], base[:, None] * drop[:, None] + r[:, None] * eff), base[:, None])
    after = d - plateau[:, None]
    past = after > 0
    mean = np.where(past, np.minimum(base[:, None], mean + drift[:, None] * after) - relapse[:, None] * np.minimum(after, relapse_days[:, None]), mean)
    is_heat = heat[:, None] & (d >= at[:, None]) & (d <= at[:, None] + 10)
    factor = np.where(is_heat, heat_factor[:, None], 1.0)
    is_missing = missing[:, None] & (((d >= at[:, None]) & (d <= at[:, None] + miss_len[:, None])) | ((d >= at[:, None] + 6) & (d <= at[:, None] + 7)))
    n = lo[:, None] + (rng.random((users, DAYS)) * (hi - lo + 1)[:, None]).astype(int)
    return dict(shape=shape, base=base, sigma=sigma, inj=inj, plateau=plateau, line=line * factor, mean=mean * factor,
                heat=is_heat, missing=is_missing, n=n, positive=st)


def daily_values(rng, c):
    """The day's p95 (linear) and mean of the samples, NaN on missing days."""
    users = len(c["base"])
    day = c["mean"] + rng.standard_normal((users, DAYS)) * (0.4 * c["sigma"])[:, None]
    s = np.maximum(0.2, day[:, :, None] + rng.standard_normal((users, DAYS, MAXN)) * c["sigma"][:, None, None])
    idx = np.arange(MAXN)[None, None, :]
    used = idx < c["n"][:, :, None]
    mean = np.where(used, s, 0).sum(axis=2) / c["n"]
    s = np.sort(np.where(used, s, np.inf), axis=2)
    h = (c["n"] - 1) * 0.95
    lo = np.floor(h).astype(int)
    hi = np.minimum(lo + 1, c["n"] - 1)
    vlo = np.take_along_axis(s, lo[:, :, None], 2)[:, :, 0]
    vhi = np.take_along_axis(s, hi[:, :, None], 2)[:, :, 0]
    p95 = vlo + (h - lo) * (vhi - vlo)
    p95[c["missing"]] = np.nan
    mean[c["missing"]] = np.nan
    return p95, mean


def p95_moments(rng):
    """Mean and standard deviation of the linear p95 of n standard normals, n = 1..24."""
    m = np.zeros(MAXN + 1)
    v = np.zeros(MAXN + 1)
    for n in range(1, MAXN + 1):
        q = np.percentile(rng.standard_normal((200_000, n)), 95, axis=1)
        m[n], v[n] = q.mean(), q.var()
    return m, v


def oracle_stat(c, x, kind, moments):
    """max over breaks tau of the slope-change matched filter on the true residuals, per (user, day)."""
    sig = c["sigma"][:, None]
    if kind == "p95":
        m, v = moments
        mu = c["line"] + sig * m[c["n"]]
        var = (0.4 * sig) ** 2 + sig ** 2 * v[c["n"]]
    else:
        mu = c["line"]
        var = (0.4 * sig) ** 2 + sig ** 2 / c["n"]
    ok = ~np.isnan(x) & ~c["heat"]
    a = np.where(ok, (mu - np.nan_to_num(x)) / var, 0.0)  # shortfall / variance
    w = np.where(ok, 1 / var, 0.0)
    d = np.arange(1, DAYS + 1)[None, :].astype(float)
    z = lambda q: np.concatenate([np.zeros((q.shape[0], 1)), np.cumsum(q, axis=1)], axis=1)
    A0, A1, B0, B1, B2 = z(a), z(a * d), z(w), z(w * d), z(w * d * d)
    users = x.shape[0]
    out = np.full((users, DAYS), -np.inf)
    inj = c["inj"]
    for t in range(1, DAYS + 1):
        taus = np.arange(0, t)  # break after day tau: residual days tau+1..t
        s0 = A0[:, t:t + 1] - A0[:, taus]
        s1 = A1[:, t:t + 1] - A1[:, taus]
        q0 = B0[:, t:t + 1] - B0[:, taus]
        q1 = B1[:, t:t + 1] - B1[:, taus]
        q2 = B2[:, t:t + 1] - B2[:, taus]
        tau = taus[None, :].astype(float)
        num = s1 - tau * s0
        den = q2 - 2 * tau * q1 + tau * tau * q0
        stat = np.where((den > 0) & (tau >= inj[:, None]), num / np.sqrt(np.maximum(den, 1e-30)), -np.inf)
        out[:, t - 1] = stat.max(axis=1)
    return out


def hinge_stat(c, x, K, weighted, fit=60, fit_min=7, k_min=None):
    """The rule-language statistic: line fitted to the fit days before the last K (after the
    injury, heat left out), the last K days' residuals (weights j or 1) as a z-score."""
    users = x.shape[0]
    k_min = k_min or max(1, (K * 4 + 6) // 7)
    ok = ~np.isnan(x) & ~c["heat"]
    xv = np.nan_to_num(x)
    out = np.full((users, DAYS), np.nan)
    inj = c["inj"]
    for t in range(1, DAYS + 1):
        rec_lo = np.maximum(t - K + 1, inj)
        fit_hi = rec_lo - 1
        fit_lo = np.maximum(fit_hi - fit + 1, inj)
        d = np.arange(1, DAYS + 1)[None, :]
        inrec = ok & (d >= rec_lo[:, None]) & (d <= t)
        infit = ok & (d >= fit_lo[:, None]) & (d <= fit_hi[:, None])
        wgt = np.where(inrec, (d - fit_hi[:, None]) if weighted else 1, 0).astype(float)
        n = infit.sum(1)
        tt = (d - fit_lo[:, None]).astype(float)
        sx = (tt * infit).sum(1)
        sy = (xv * infit).sum(1)
        mx = sx / np.maximum(n, 1)
        my = sy / np.maximum(n, 1)
        dx = np.where(infit, tt - mx[:, None], 0)
        dy = np.where(infit, xv - my[:, None], 0)
        xx = (dx * dx).sum(1)
        b = (dx * dy).sum(1) / np.where(xx > 0, xx, 1)
        rss = ((dy - b[:, None] * dx) ** 2 * infit).sum(1)
        s2 = rss / np.maximum(n - 2, 1)
        sw = wgt.sum(1)
        sww = (wgt * wgt).sum(1)
        tw = (wgt * tt).sum(1) / np.where(sw > 0, sw, 1)
        yw = (wgt * xv).sum(1) / np.where(sw > 0, sw, 1)
        pred = my + b * (tw - mx)
        fallen = pred - yw
        var = s2 * (sww / np.where(sw > 0, sw * sw, 1) + 1 / np.maximum(n, 1) + (tw - mx) ** 2 / np.where(xx > 0, xx, 1))
        good = (n >= fit_min) & (n >= 3) & (xx > 0) & (inrec.sum(1) >= k_min) & (var > 0)
        out[:, t - 1] = np.where(good, fallen / np.sqrt(np.where(var > 0, var, 1)), np.nan)
    return out


def hinge_glr(c, x, min_before=5):
    """What a detector that must estimate the line can reach: the hinge model (level, slope, and a
    slope change at day tau) fitted by least squares to the days since the injury (heat left out),
    the slope change in standard errors, minimised over every candidate break tau with at least
    `min_before` fitted days before it (the likelihood-ratio test at an unknown break)."""
    users = x.shape[0]
    ok = ~np.isnan(x) & ~c["heat"] & (np.arange(1, DAYS + 1)[None, :] >= c["inj"][:, None])
    y = np.where(ok, np.nan_to_num(x), 0.0)
    w = ok.astype(float)
    d = np.arange(1, DAYS + 1)[None, :].astype(float)
    z = lambda q: np.concatenate([np.zeros((q.shape[0], 1)), np.cumsum(q, axis=1)], axis=1)
    W0, W1, W2 = z(w), z(w * d), z(w * d * d)
    Y0, Y1, YY = z(y), z(y * d), z(y * y)
    inj = c["inj"].astype(float)
    out = np.full((users, DAYS), np.nan)
    for t in range(2, DAYS + 1):
        taus = np.arange(1, t)
        tau = taus[None, :].astype(float)
        # over the days inj..t (w is 0 before the injury): x = d - inj
        n = W0[:, t][:, None]
        sd, sdd = W1[:, t][:, None], W2[:, t][:, None]
        sy, sdy, syy = Y0[:, t][:, None], Y1[:, t][:, None], YY[:, t][:, None]
        # over tau < d <= t: h = d - tau
        a0 = W0[:, t:t + 1] - W0[:, taus]
        a1 = W1[:, t:t + 1] - W1[:, taus]
        a2 = W2[:, t:t + 1] - W2[:, taus]
        b0 = Y0[:, t:t + 1] - Y0[:, taus]
        b1 = Y1[:, t:t + 1] - Y1[:, taus]
        sx = sd - inj[:, None] * n
        sxx = sdd - 2 * inj[:, None] * sd + inj[:, None] ** 2 * n
        sxy = sdy - inj[:, None] * sy
        sh = a1 - tau * a0
        shh = a2 - 2 * tau * a1 + tau * tau * a0
        sxh = a2 - (inj[:, None] + tau) * a1 + inj[:, None] * tau * a0
        shy = b1 - tau * b0
        shape = sh.shape
        M = np.empty(shape + (3, 3))
        M[..., 0, 0] = np.broadcast_to(n, shape)
        M[..., 0, 1] = M[..., 1, 0] = np.broadcast_to(sx, shape)
        M[..., 0, 2] = M[..., 2, 0] = sh
        M[..., 1, 1] = np.broadcast_to(sxx, shape)
        M[..., 1, 2] = M[..., 2, 1] = sxh
        M[..., 2, 2] = shh
        v = np.stack([np.broadcast_to(sy, shape), np.broadcast_to(sxy, shape), shy], axis=-1)
        before = n - a0
        good = (before >= min_before) & (a0 >= 1) & (n >= 6) & (tau >= inj[:, None] + 1)
        M[~good] = np.eye(3)
        v[~good] = 0
        try:
            inv = np.linalg.inv(M)
        except np.linalg.LinAlgError:
            inv = np.linalg.pinv(M)
        beta = np.einsum("...ij,...j->...i", inv, v)
        rss = np.broadcast_to(syy, shape) - np.einsum("...i,...i->...", beta, v)
        s2 = np.maximum(rss, 0) / np.maximum(n - 3, 1)
        var = s2 * inv[..., 2, 2]
        zc = np.where(good & (var > 0), beta[..., 2] / np.sqrt(np.where(var > 0, var, 1)), np.inf)
        out[:, t - 1] = np.where(np.isfinite(zc.min(axis=1)), zc.min(axis=1), np.nan)
    return -out  # positive when slower


def level_gate(c, p95):
    """The rule's level gate: 7-day mean (>= 4 days, since the injury) below baseline - 0.10."""
    users = p95.shape[0]
    d = np.arange(1, DAYS + 1)[None, :]
    pre = (d < c["inj"][:, None]) & (d >= c["inj"][:, None] - 30)
    base = np.nanmean(np.where(pre, p95, np.nan), axis=1)
    gate = np.zeros((users, DAYS), bool)
    for t in range(1, DAYS + 1):
        win = (d >= np.maximum(t - 6, c["inj"])[:, None]) & (d <= t)
        vals = np.where(win, p95, np.nan)
        cnt = (~np.isnan(vals)).sum(1)
        with np.errstate(invalid="ignore"):
            m = np.nanmean(np.where(cnt[:, None] > 0, vals, 0), axis=1)
        gate[:, t - 1] = (cnt >= 4) & (m < base - 0.10)
    return gate


def score(c, cond):
    """Firings (keep_firing_for 7 d) scored as QualityReport scores them."""
    users = cond.shape[0]
    inj, onset, pos = c["inj"], c["plateau"], c["positive"]
    d = np.arange(1, DAYS + 1)
    window = (d[None, :] >= inj[:, None] + 14) & (d[None, :] <= inj[:, None] + 60)
    cond = cond & window
    fa = 0
    delays = []
    detected = 0
    risk = 0
    for u in range(users):
        days = np.nonzero(cond[u])[0] + 1
        fires = []
        last = -100
        for dd in days:
            if dd - last > 7:
                fires.append(dd)
            last = dd
        hi = min(inj[u] + 60, DAYS)
        if pos[u]:
            frm = onset[u] - 3
            fa += sum(1 for f in fires if f < frm)
            det = [f for f in fires if f >= frm]
            if det:
                detected += 1
                delays.append(det[0] - onset[u])
            risk += max(0, min(hi, frm - 1) - (inj[u] + 21) + 1)
        else:
            fa += len(fires)
            risk += max(0, hi - (inj[u] + 21) + 1)
    npos = int(pos.sum())
    delays = np.sort(np.array(delays)) if delays else np.array([np.nan])
    p90 = delays[max(0, int(np.ceil(0.9 * len(delays))) - 1)]
    return dict(recall=detected / npos, fa=fa / (risk / 7) * 100, median=float(np.median(delays)), p90=float(p90), fires=fa)


def first_cross_rate(c, stat, gate, h, for_days=1):
    cond = (np.nan_to_num(stat, nan=-np.inf) > h) & gate
    if for_days > 1:
        run = cond.copy()
        for k in range(1, for_days):
            run[:, k:] &= cond[:, :-k]
            run[:, :k] = False
        cond = run
    return score(c, cond)


def calibrate(c, stat, gate, target, for_days=1, lo=0.0, hi=12.0):
    """The lowest threshold whose false-alert rate is at most `target` per 100 patient-weeks."""
    for _ in range(22):
        mid = (lo + hi) / 2
        if first_cross_rate(c, stat, gate, mid, for_days)["fa"] > target:
            lo = mid
        else:
            hi = mid
    return hi, first_cross_rate(c, stat, gate, hi, for_days)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=4000, help="injured users simulated")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rule-stats", action="store_true", help="also the rule-language statistics (slower)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    moments = p95_moments(rng)
    c = cohort(rng, args.users)
    p95, mean = daily_values(rng, c)
    everywhere = np.ones_like(p95, bool)
    rows = []
    for name, x, kind in [("oracle GLR, daily p95", p95, "p95"), ("oracle GLR, daily mean of samples", mean, "mean")]:
        st = oracle_stat(c, x, kind, moments)
        for target in (1.0, 0.5):
            h, s = calibrate(c, st, everywhere, target)
            rows.append((name, target, h, s))
    gate = level_gate(c, p95)
    st = hinge_glr(c, p95)
    for for_days in (1, 2):
        h, s = calibrate(c, st, gate, 1.0, for_days)
        rows.append((f"estimated hinge GLR (line fitted since the injury, any break), level gate, for {for_days} d", 1.0, h, s))
    if args.rule_stats:
        for K in (7, 10, 14):
            for weighted in (True, False):
                st = hinge_stat(c, p95, K, weighted)
                for for_days in (1, 2):
                    h, s = calibrate(c, st, gate, 1.0, for_days)
                    rows.append((f"{'hinge' if weighted else 'flat'} K={K}, level gate, for {for_days} d", 1.0, h, s))
    print(f"wide model, {args.users} injured users, seed {args.seed}")
    print("| detector | FP target / 100 pw | threshold z | recall | false alerts / 100 pw | delay median / p90 (d) |")
    print("|---|---|---|---|---|---|")
    for name, target, h, s in rows:
        print(f"| {name} | {target:.1f} | {h:.2f} | {s['recall']:.3f} | {s['fa']:.2f} | {s['median']:.0f} / {s['p90']:.0f} |")


if __name__ == "__main__":
    main()
