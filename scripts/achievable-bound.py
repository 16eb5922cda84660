#!/usr/bin/env python3
"""How close to the achievable: detection delay of stalled_recovery for an ideal test on the
clinic cohort (docs/alert-quality.md, "How close to the achievable").

A numpy model of `mobility-sim --cohort clinic`'s injured users (Sources/Simulator/
Population+Clinic.swift `clinic` and `dayEffects`, TrafficGenerator.swift `course` / `regained`):
the recovery shapes in their shares (normal, slow_full, slow_start, s_curve, stalled with a third
S-shaped, drifting_plateau, relapse), the day's mean walking speed as the course plus an AR(1)
day effect and a weekend offset, 1-30 samples a day with the user's sample noise, phones at home,
week-long gaps and illness weeks (80-90 % speed, fewer samples). The daily value is the mean of
the day's samples (the efficient daily value under the cohort's normal sample noise).

Two tests, each given every user's true noise parameters (sample SD, day-effect SD, phi, weekend
offset, samples a day) and the illness days (left out), evaluated on recovery days 14-60 from the
data up to the day:

* oracle (told the line): knows the course the recovery would take if it went on (for a stall
  shape, its course without the stop); tests the residuals from it against "flattened at an
  unknown day tau" (the shortfall c(j) - c(min(j, tau)), amplitude free), by generalised
  likelihood ratio with the exact covariance (AR(1) day effects plus sample noise / n), maximised
  over tau. No rule can know more, so its delay at a false-alert rate bounds any rule on these data.
  With --course-error E the course it is told is off by a per-user factor (its gain since the
  injury times 1 + N(0, E)): what a rule could do with an expected course about that good.
* known noise (estimates the line): the same test with the line estimated from the data (generalised
  least squares on the recovery so far, up to 60 days, against the same line flattened at tau,
  tau 3-21 days back, or up to --back). What a line-based rule could do with perfect noise estimates.

Each is scored as `mobility-sim quality` scores a rule (a firing more than 3 days before a stall's
onset, or for a user without a stall, is a false alert; false alerts per 100 patient-weeks at risk,
recovery days 14-60; a firing resolves after 7 days without the condition) at the threshold that
gives 1.0 (or --rates) false alerts per 100 patient-weeks, `for 1 d` and `for 2 d` (per shape for
`for 2 d` at 1.0).

    python3 scripts/achievable-bound.py [--users 4000] [--seed 1]   # numpy (pip install numpy)
"""
import argparse
import math

import numpy as np

LAST = 60
SHAPES = ["normal", "slow_full", "slow_start", "s_curve", "stalled", "drifting_plateau", "relapse"]
SHARE = np.array([0.16, 0.12, 0.10, 0.10, 0.12, 0.08, 0.08])
STALLS = {"stalled", "drifting_plateau", "relapse"}


def regained(base, drop, kind, r, lag, mid, width, k):
    low = base * drop
    if kind == "logistic":
        s0 = 1 / (1 + math.exp(mid / width))
        s = 1 / (1 + np.exp(-(k - mid) / width))
        return low + (base - low) * (s - s0) / (1 - s0)
    if kind == "slow_start":
        return low + r * np.maximum(0, k - lag)
    return low + r * k


def user(rng):
    shape = SHAPES[rng.choice(len(SHAPES), p=SHARE / SHARE.sum())]
    u = dict(shape=shape)
    base = 0.95 + rng.random() * 0.5
    sig_s = (0.06 + rng.random() * 0.05) * base
    drop = 0.55 + rng.random() * 0.15
    deficit = base * (1 - drop)
    kind, r, lag, mid, width = "linear", 0.0, 0, 0.0, 1.0
    plateau, drift, relapse, rdays = None, 0.0, 0.0, 0
    if shape == "normal":
        r = 0.010 + rng.random() * 0.006
    elif shape == "slow_full":
        days = 50 + rng.integers(0, 11)
        deficit = max(deficit, 0.006 * days)
        drop = 1 - deficit / base
        r = deficit / days
    elif shape == "slow_start":
        kind, lag = "slow_start", 7 + rng.integers(0, 15)
        r = deficit / max(20, 40 + rng.integers(0, 21) - lag)
    elif shape == "s_curve":
        kind, mid, width = "logistic", 18 + rng.random() * 12, 4 + rng.random() * 4
    else:
        r = 0.008 + rng.random() * 0.008
        if shape == "stalled" and rng.random() < 1 / 3:
            kind, mid, width = "logistic", 14 + rng.random() * 10, 4 + rng.random() * 3
        k = 10 + rng.integers(0, 21)
        while k > 5 and regained(base, drop, kind, r, lag, mid, width, k) > base - 0.15:
            k -= 1
        plateau = k
        level = regained(base, drop, kind, r, lag, mid, width, k)
        if shape == "drifting_plateau":
            drift = min(0.0003 + rng.random() * 0.0012, max(0, (base - 0.12 - level) / (60 - k)))
        elif shape == "relapse":
            relapse, rdays = 0.002 + rng.random() * 0.003, 10 + rng.integers(0, 11)
    j = np.arange(LAST + 1)
    go_on = np.minimum(base, regained(base, drop, kind, r, lag, mid, width, j))  # the course if it went on
    course = go_on.copy()
    if plateau is not None:
        eff = np.minimum(j, plateau)
        course = np.minimum(base, regained(base, drop, kind, r, lag, mid, width, eff))
        after = np.maximum(0, j - plateau)
        course = np.where(j > plateau, np.minimum(base, course + drift * after) - relapse * np.minimum(after, rdays), course)
    sparse, noisy, few, ill = rng.random() < 0.15, rng.random() < 0.20, rng.random() < 0.20, rng.random() < 0.30
    sd = 0.06 + rng.random() * 0.04 if noisy else 0.02 + rng.random() * 0.025
    phi = 0.5 + rng.random() * 0.3 if noisy else 0.2 + rng.random() * 0.4
    weekend = (rng.random() * 2 - 1) * (0.10 if noisy else 0.05)
    few_share = 0.25 + rng.random() * 0.2 if few else 0.03 + rng.random() * 0.05
    at_home = 0.3 + rng.random() * 0.2 if sparse else 0.0
    ill_days = np.zeros(LAST + 1, bool)
    factor = np.ones(LAST + 1)
    sample_factor = 1.0
    if ill:
        s = 10 + rng.integers(0, 36)
        ill_days[s:s + 5 + rng.integers(0, 5)] = True
        factor[ill_days] = 0.8 + rng.random() * 0.1
        sample_factor = 0.33 + rng.random() * 0.34
    e = np.empty(LAST + 1)
    e[0] = rng.normal() * sd
    for i in range(1, LAST + 1):
        e[i] = phi * e[i - 1] + sd * math.sqrt(1 - phi * phi) * rng.normal()
    phase = rng.integers(0, 7)
    wk = np.where(((j + phase) % 7) >= 5, weekend, 0.0)
    n = np.where(rng.random(LAST + 1) < few_share, 1 + rng.integers(0, 5, LAST + 1), 10 + rng.integers(0, 21, LAST + 1))
    n = np.where(ill_days, np.maximum(1, np.round(n * sample_factor)), n).astype(int)
    home = rng.random(LAST + 1) < at_home
    if sparse and rng.random() < 0.5:
        g = rng.integers(0, LAST - 7)
        home[g:g + 7] = True
    n = np.where(home, 0, n)
    day_mean = course * factor + e + wk
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(n > 0, day_mean + rng.normal(size=LAST + 1) * sig_s / np.sqrt(np.maximum(n, 1)), np.nan)
    y[ill_days] = np.nan  # told: illness days left out
    last = 90 - (31 + rng.integers(0, 10))  # 90 simulated days, the injury on day 31-40
    u.update(base=base, last=last, y=y - wk, n=n, go_on=go_on, sd=sd, phi=phi, sig_s=sig_s, onset=plateau if shape in STALLS else None,
             traits=[t for t, on in (("sparse", sparse), ("noisy", noisy), ("few_samples", few), ("illness", ill)) if on])
    return u


def covariance(us, d):
    """Per-user covariance of days 0..d (known days), identity rows for unknown ones."""
    t = np.arange(d + 1)
    dt = np.abs(t[:, None] - t[None, :])
    sd = np.array([u["sd"] for u in us]); phi = np.array([u["phi"] for u in us])
    n = np.stack([u["n"][:d + 1] for u in us]); y = np.stack([u["y"][:d + 1] for u in us])
    sig = np.array([u["sig_s"] for u in us])
    m = ~np.isnan(y)
    S = sd[:, None, None] ** 2 * phi[:, None, None] ** dt[None] + np.eye(d + 1)[None] * (sig[:, None] ** 2 / np.maximum(n, 1))[:, :, None]
    S = np.where(m[:, :, None] & m[:, None, :], S, np.eye(d + 1)[None])
    return np.linalg.inv(S), m, np.where(m, y, 0.0)


def statistics(us, back):
    """Per user and recovery day 14..60: the oracle's and the known-noise test's statistics."""
    N = len(us)
    zo = np.full((N, LAST + 1), np.nan); gk = np.full((N, LAST + 1), np.nan)
    for d in range(14, LAST + 1):
        P, m, y = covariance(us, d)
        t = np.arange(d + 1, dtype=float)
        # oracle: residuals from the course that goes on; signal = shortfall if flattened at tau
        c = np.stack([u["go_on"][:d + 1] for u in us])
        r = np.where(m, y - c, 0.0)
        taus = np.arange(5, d)
        sig = np.maximum(0, c[:, None, :] - c[:, taus][:, :, None])  # N, tau, days
        sig = np.where(m[:, None, :], sig, 0.0)
        Ps = np.einsum("nij,ntj->nti", P, sig)
        num = (Ps * r[:, None, :]).sum(2); den = (Ps * sig).sum(2)
        with np.errstate(all="ignore"):
            z = np.where(den > 0, num / np.sqrt(den), np.nan)
            zo[:, d] = -np.nanmin(z, 1)  # a shortfall: residuals below the course
        # known noise, estimated line: flat-after-tau vs straight line, GLS, tau 3..21 days back
        lo = max(0, d - 59)
        tl = [d - k for k in range(3, back + 1) if d - k - lo >= 6]
        cols = [y, np.ones_like(y), np.broadcast_to(t, y.shape)] + [np.broadcast_to(np.minimum(t, tau), y.shape) for tau in tl]
        C = np.stack([np.where(m & (t >= lo), col, 0.0) for col in cols], 2)
        G = np.matmul(np.transpose(C, (0, 2, 1)), np.matmul(P, C)) + 1e-9 * np.eye(C.shape[2])[None]

        def rss(idx):
            Gxx = G[:, idx][:, :, idx]; Gxy = G[:, idx, 0]
            b = np.linalg.solve(Gxx, Gxy[..., None])[..., 0]
            return G[:, 0, 0] - (b * Gxy).sum(1)

        enough = (m & (t >= lo)).sum(1) >= 9
        if tl:
            r0 = rss([1, 2])
            gk[:, d] = np.where(enough, np.max(np.stack([r0 - rss([1, 3 + i]) for i in range(len(tl))], 1), 1), np.nan)
        # both only while still impaired, as the rule: the last 7 days' mean more than 0.10 m/s
        # under the pre-injury baseline (a recovery that is back has flattened for good)
        recent = np.stack([u["y"][max(0, d - 6):d + 1] for u in us])
        known = (~np.isnan(recent)).sum(1)
        with np.errstate(all="ignore"):
            impaired = (known >= 2) & (np.nanmean(recent, 1) < np.array([u["base"] for u in us]) - 0.10)
        zo[~impaired, d] = np.nan
        gk[~impaired, d] = np.nan
    return zo, gk


def fires(cond, for_days, keep=7):
    out, state, pend, off = [], False, 0, 0
    for k, c in enumerate(cond):
        if state:
            off = off + 1 if not c else 0
            if off >= keep:
                state, pend = False, 0
            continue
        pend = pend + 1 if c else 0
        if pend >= for_days:
            state, off = True, 0
            out.append(k)
    return out


def score(us, stat, h, for_days):
    fa = risk = 0
    rows = {}
    for i, u in enumerate(us):
        days = np.arange(14, u["last"] + 1)
        s = stat[i, 14:u["last"] + 1]
        f = [days[k] for k in fires(np.nan_to_num(s, nan=-np.inf) > h, for_days)]
        keys = [u["shape"]] + ["+" + t for t in u["traits"]] + ["all"]
        if u["onset"] is not None:
            frm = u["onset"] - 3
            a = sum(x < frm for x in f); det = [x for x in f if x >= frm]
            rk = int((days < frm).sum())
        else:
            a, det, rk = len(f), [], len(days)
        for k in keys:
            r = rows.setdefault(k, dict(pos=0, det=0, fa=0, risk=0, delays=[]))
            r["fa"] += a; r["risk"] += rk
            if u["onset"] is not None:
                r["pos"] += 1; r["det"] += bool(det)
                if det:
                    r["delays"].append(det[0] - u["onset"])
    return rows


def quant(d, p):
    d = sorted(d)
    return d[min(len(d), max(1, math.ceil(p * len(d)))) - 1] if d else float("nan")


def at_rate(us, stat, rate, for_days):
    lo, hi = 0.0, 40.0
    for _ in range(30):
        h = (lo + hi) / 2
        r = score(us, stat, h, for_days)["all"]
        if r["fa"] / (r["risk"] / 7) * 100 > rate:
            lo = h
        else:
            hi = h
    return hi, score(us, stat, hi, for_days)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=4000, help="injured users (the clinic cohort has about 3 of 4 injured)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--back", type=int, default=21, help="the estimated-line test's oldest candidate break (days back)")
    ap.add_argument("--course-error", type=float, default=0.0,
                    help="the oracle's course is off: the gain since the injury scaled by 1 + N(0, this), per user")
    ap.add_argument("--rates", default="0.5,1.0,1.5", help="false alerts per 100 patient-weeks to read recall and delay at")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    us = [user(rng) for _ in range(a.users)]
    if a.course_error:
        # the oracle told the course only roughly: what it regains scaled by 1 + N(0, error)
        err = np.random.default_rng(a.seed + 1_000_000)
        for u in us:
            c = u["go_on"]
            u["go_on"] = np.minimum(u["base"], c[0] + (c - c[0]) * (1 + a.course_error * err.normal()))
    zo, gk = statistics(us, a.back)
    print("users %d, stalls %d" % (len(us), sum(u["onset"] is not None for u in us)))
    for name, stat in (("oracle (told the line)", zo), ("known noise, estimated line", gk)):
        for for_days in (1, 2):
            for rate in [float(x) for x in a.rates.split(",")]:
                h, rows = at_rate(us, stat, rate, for_days)
                r = rows["all"]
                print("%-28s for %d d  FA %.2f / 100 pw (threshold %.2f): recall %.3f, delay median %s / p90 %s" % (
                    name, for_days, r["fa"] / (r["risk"] / 7) * 100, h, r["det"] / r["pos"], quant(r["delays"], .5), quant(r["delays"], .9)))
                if rate == 1.0 and for_days == 2:
                    for k in ["stalled", "drifting_plateau", "relapse", "normal", "slow_full", "slow_start", "s_curve", "+noisy", "+sparse", "+few_samples", "+illness"]:
                        x = rows[k]
                        rec = "%.3f" % (x["det"] / x["pos"]) if x["pos"] else "    -"
                        print("    %-18s recall %s  FA %.2f  delay %s / %s" % (k, rec, x["fa"] / (x["risk"] / 7) * 100, quant(x["delays"], .5), quant(x["delays"], .9)))


if __name__ == "__main__":
    main()
