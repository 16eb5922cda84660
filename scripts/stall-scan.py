#!/usr/bin/env python3
"""Scan stalled_recovery variants on daily values exported from the clinic cohort
(docs/alert-quality.md, "What was tried and not kept").

The shipped rule's statistics (rules/recovery.rules: the 7-day p95 level, progress from the lowest
week, the four-week and two-week 95 % bounds on the daily median, the 7-day change of slope, the
double-support and step-length excuses, the recovery_setback hold) recomputed in numpy on each
user's exported daily series, and variants of the break test scored against the labels as
`mobility-sim quality` scores the rule (`for 2 d`, `keep_firing_for 7 d`; a firing more than 3
days before a stall's onset or for a user without one is a false alert; per 100 patient-weeks of
recovery days 14-60). The scan reads what the engine computed per day, not the samples, and
agrees with the engine to about a point of recall and a tenth of a false alert: use it to compare
variants on the same users, and the engine (`mobility-sim quality`) for figures.

Break tests compared (each in place of the shipped 7-day change of slope below -z, with the same
two-week bound below 0.10 m/s):

* `glr`: a generalised likelihood ratio for a hinge: the recovery line goes on (H0) against "it
  flattened on an unknown day tau, 3-21 days back" (H1), fitted by generalised least squares on
  the recovery so far (up to 60 days), each day's daily median with the covariance of an AR(1) day
  effect (SD and phi) plus sample noise / the day's sample count, maximised over tau:
  max_tau (RSS_H0 - RSS_tau). The noise is estimated from the fit's residuals (`fit`) or from the
  30 days before the injury (`pre`); `-nw` without the sample-count weights, `-nar` without AR(1).
* `joint`: the same on walking speed and step length, their statistics added at a shared tau
  (independent noise assumed).
* `glr40`: the GLR with tau up to 40 days back as the only trend test (no "no gain" branch).

Input, per seed N: the cohort's traffic and labels, and the engine's daily values of five series:

    mkdir -p scan/rules && cat > scan/rules/series.rules <<EOF
    series sp95 = p95(walkingSpeed, source: device)
    series sp50 = median(walkingSpeed, source: device)
    series sn = count(walkingSpeed, source: device)
    series ds50 = median(walkingDoubleSupportPercentage, source: device)
    series st50 = median(walkingStepLength, source: device)
    EOF
    for s in 1 2; do
      .build/release/mobility-sim population --users 2000 --days 90 --seed $s --cohort clinic -o scan/clinic-$s.jsonl
      .build/release/mobilityctl replay --rules scan/rules --series scan/clinic-$s.jsonl > scan/clinic-$s.series.jsonl
    done
    python3 scripts/stall-scan.py --dir scan --seeds 1,2      # numpy (pip install numpy)
"""
import argparse
import datetime
import json
import math
import warnings

import numpy as np

K = 61  # recovery days 0..60
NAMES = ["sp95", "sp50", "sn", "ds50", "st50"]


def t95(df):
    """One-sided 95 % quantile of Student's t (Cornish-Fisher, to 4th order; exact enough for df >= 2)."""
    z = 1.6448536269514722
    df = np.maximum(np.asarray(df, float), 1.0)
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
            + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * df**4))


def load(d, seed):
    day0 = None
    labels = [json.loads(x) for x in open("%s/clinic-%d.labels.jsonl" % (d, seed))]
    idx = {x["user"]: i for i, x in enumerate(labels)}
    A = np.full((len(NAMES), len(labels), 92), np.nan)
    rows = []
    for line in open("%s/clinic-%d.series.jsonl" % (d, seed)):
        j = json.loads(line)
        if j.get("series") in NAMES and j.get("value") is not None:
            rows.append(j)
            day = datetime.date.fromisoformat(j["day"])
            day0 = day if day0 is None or day < day0 else day0
    for j in rows:
        k = (datetime.date.fromisoformat(j["day"]) - day0).days + 1
        if k <= 90:
            A[NAMES.index(j["series"]), idx[j["user"]], k] = j["value"]
    inj = np.full(len(labels), -1)
    ill = [None] * len(labels)
    for line in open("%s/clinic-%d.jsonl" % (d, seed)):
        if '/events"' not in line:
            continue
        r = json.loads(line)
        p, u = r["payload"], r["topic"].split("/")[3]
        if p.get("kind") == "injury":
            inj[idx[u]] = (datetime.date.fromisoformat(p["date"]) - day0).days + 1
        elif p.get("kind") == "illness":
            ill[idx[u]] = ((datetime.date.fromisoformat(p["start"]) - day0).days + 1, (datetime.date.fromisoformat(p["end"]) - day0).days + 1)
    keep = np.where(inj > 0)[0]
    U = len(keep)
    R = np.full((len(NAMES), U, K), np.nan)
    out = dict(base=np.full(U, np.nan), usual=np.full(U, np.nan), sig_s=np.full(U, np.nan), ill=np.zeros((U, K), bool),
               pre_v=np.full((2, U), np.nan), pre_c1=np.full((2, U), np.nan))
    for i, u in enumerate(keep):
        a = inj[u]
        hi = min(90, a + K - 1)
        R[:, i, :hi - a + 1] = A[:, u, a:hi + 1]
        pre = A[:, u, max(1, a - 30):a]
        for key, row in (("base", 0), ("usual", 2)):
            v = pre[row][~np.isnan(pre[row])]
            if len(v) >= 10:
                out[key][i] = v.mean()
        m = ~np.isnan(pre[0]) & ~np.isnan(pre[1]) & (pre[2] >= 10)
        if m.sum() >= 5:  # the sample SD from the day's p95 - median
            out["sig_s"][i] = np.mean((pre[0][m] - pre[1][m]) / 1.645)
        for s, row in enumerate((1, 4)):  # the pre-injury days' variance and lag-1 covariance
            y = pre[row]
            m = ~np.isnan(y)
            if m.sum() >= 10:
                r = np.where(m, y - np.nanmean(y), 0.0)
                out["pre_v"][s, i] = (r[m] ** 2).sum() / (m.sum() - 1)
                pair = m[1:] & m[:-1]
                out["pre_c1"][s, i] = (r[1:] * r[:-1])[pair].mean() if pair.sum() > 3 else 0.0
        if ill[u]:
            s0, e0 = ill[u]
            for dd in range(max(s0, a), min(e0, hi) + 1):
                out["ill"][i, dd - a] = True
    labs = [labels[u] for u in keep]
    out.update(R=R, pos=np.array([x["expected"]["stalled_recovery"] for x in labs]),
               onset=np.array([((datetime.date.fromisoformat(x["onset"]["stalled_recovery"]) - day0).days + 1 - inj[u]) if x["expected"]["stalled_recovery"] else 10**6 for x, u in zip(labs, keep)]),
               shapes=[[x["pattern"]] + ["+" + t for t in x.get("traits", [])] for x in labs],
               last=np.array([min(90, inj[u] + 60) - inj[u] for u in keep]))
    return out


def cat(Ds):
    out = {}
    for k in Ds[0]:
        v = [D[k] for D in Ds]
        out[k] = np.concatenate(v, axis=1) if k in ("R", "pre_v", "pre_c1") else (sum(v, []) if k == "shapes" else np.concatenate(v))
    return out


def series(D, name, excl_ill=True):
    y = D["R"][NAMES.index(name)].copy()
    if excl_ill:
        y[D["ill"]] = np.nan
    return y


def window(y, lo, hi):
    lo = max(0, lo)
    if hi < lo:
        return np.zeros(0), y[:, :0]
    return np.arange(lo, hi + 1, dtype=float), y[:, lo:hi + 1]


def linfit(y, lo, hi, minn):
    t, v = window(y, lo, hi)
    m = ~np.isnan(v)
    w = m.astype(float)
    vv = np.where(m, v, 0.0)
    n = m.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tm = (w * t).sum(1) / n
        ym = vv.sum(1) / n
        sxx = (w * (t - tm[:, None]) ** 2).sum(1)
        b = (w * (t - tm[:, None]) * (vv - ym[:, None])).sum(1) / sxx
        a = ym - b * tm
        r = np.where(m, vv - (a[:, None] + b[:, None] * t), 0.0)
        s2 = (r * r).sum(1) / (n - 2)
    return dict(a=a, b=b, s2=s2, sxx=sxx, tm=tm, n=n, ok=(n >= max(3, minn)) & (sxx > 0), m=m, r=r)


def slope_bound(y, lo, hi, minn, side=1):
    f = linfit(y, lo, hi, minn)
    with np.errstate(invalid="ignore"):
        v = f["b"] + side * t95(f["n"] - 2) * np.sqrt(f["s2"] / f["sxx"])
    return np.where(f["ok"], v, np.nan)


def slope_change_z(y, k, recent, fit, minr, fitmin):
    """The engine's slope_change_z: the line fitted on the days before the last `recent`, those
    days' residuals weighted by their day since the break, as a z-score."""
    f = linfit(y, k - recent - fit + 1, k - recent, fitmin)
    t, v = window(y, k - recent + 1, k)
    m = ~np.isnan(v)
    j = np.where(m, t - (k - recent), 0.0)
    sw, sww = j.sum(1), (j * j).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rt = (j * t).sum(1) / sw
        ry = (j * np.where(m, v, 0)).sum(1) / sw
        var = f["s2"] * sww / sw**2 + f["s2"] / f["n"] + (rt - f["tm"]) ** 2 * f["s2"] / f["sxx"]
        z = (ry - (f["a"] + f["b"] * rt)) / np.sqrt(var)
    return np.where(f["ok"] & (f["n"] >= fitmin) & (m.sum(1) >= minr) & (f["s2"] > 1e-12), z, np.nan)


def shortfall(y, k, recent, fit, minr, fitmin):
    f = linfit(y, k - recent - fit + 1, k - recent, fitmin)
    t, v = window(y, k - recent + 1, k)
    m = ~np.isnan(v)
    nr = m.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = (np.where(m, f["a"][:, None] + f["b"][:, None] * t - v, 0)).sum(1) / nr
    return np.where(f["ok"] & (f["n"] >= fitmin) & (nr >= minr), d, np.nan)


def mean_w(y, lo, hi, minn):
    _, v = window(y, lo, hi)
    n = (~np.isnan(v)).sum(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.where(n >= minn, np.nanmean(v, 1) if v.shape[1] else np.nan, np.nan)


def rolling(x, n, fn):
    out = np.full_like(x, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(x.shape[1]):
            out[:, k] = fn(x[:, max(0, k - n + 1):k + 1], axis=1)
    return out


# three-valued logic as the rule language's: 1 true, 0 false, nan unknown
def lt(a, b):
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(a) | np.isnan(b), np.nan, (a < b).astype(float))


def AND(*xs):
    x = np.stack(np.broadcast_arrays(*xs))
    return np.where((x == 0).any(0), 0.0, np.where((x == 1).all(0), 1.0, np.nan))


def OR(*xs):
    x = np.stack(np.broadcast_arrays(*xs))
    return np.where((x == 1).any(0), 1.0, np.where((x == 0).all(0), 0.0, np.nan))


def NOT(x):
    return np.where(np.isnan(x), np.nan, 1 - x)


def known(x):
    return (~np.isnan(x)).astype(float)


def rule_stats(D):
    U = D["R"].shape[1]
    sp95, sp, st, ds, sn = series(D, "sp95", False), series(D, "sp50"), series(D, "st50"), series(D, "ds50"), series(D, "sn", False)
    S = {k: np.full((U, K), np.nan) for k in ["recent", "gain", "gain2w", "z", "zsb", "dsup", "stepgain", "stepz", "dip", "fewest"]}
    for k in range(K):
        S["recent"][:, k] = mean_w(sp95, k - 6, k, 2)
        S["gain"][:, k] = slope_bound(sp, k - 27, k, 10) * 28
        S["gain2w"][:, k] = slope_bound(sp, k - 13, k, 4) * 14
        S["z"][:, k] = slope_change_z(sp, k, 7, 60, 2, 7)
        S["zsb"][:, k] = slope_change_z(sp, k, 7, 60, 3, 7)
        S["dsup"][:, k] = slope_bound(ds, k - 13, k, 8)
        S["stepgain"][:, k] = slope_bound(st, k - 20, k, 8, side=-1) * 21
        S["stepz"][:, k] = slope_change_z(st, k, 7, 60, 3, 7)
        S["dip"][:, k] = shortfall(sp, k, 3, 28, 2, 7)
        S["fewest"][:, k] = mean_w(sn, k - 2, k, 2)
    return S


def rule(D, S, broke=None, z=-1.75, no_gain_branch=True):
    """stalled_recovery's condition per user and recovery day, with `broke` in place of the break."""
    recent = S["recent"]
    lowest = rolling(recent, 61, np.nanmin)
    rec14 = np.full_like(recent, np.nan)
    rec14[:, 14:] = recent[:, :-14]
    p2w = rec14 - lowest
    no_gain = AND(lt(S["gain"], 0.15), OR(NOT(lt(p2w, 0.05)), NOT(known(p2w)))) if no_gain_branch else np.zeros_like(recent)
    if broke is None:
        broke = AND(lt(S["z"], z), lt(S["gain2w"], 0.10))
    gait = AND(known(S["dsup"]), lt(S["dsup"], 0))
    step = AND(known(S["stepgain"]), lt(0, S["stepgain"]), lt(-1, S["stepz"]))
    cond = AND(lt(recent, D["base"][:, None] - 0.10), NOT(lt(recent - lowest, 0.05)), OR(no_gain, broke), NOT(gait), NOT(step))
    ch = np.full_like(recent, np.nan)
    ch[:, 3:] = S["zsb"][:, 3:] - S["zsb"][:, :-3]
    drop, dip = rolling(ch, 10, np.nanmin), rolling(S["dip"], 10, np.nanmax)
    fewer = lt(rolling(S["fewest"], 5, np.nanmin), 0.6 * D["usual"][:, None])
    setback = AND(OR(lt(drop, -4), AND(lt(drop, -2.5), fewer)), lt(0.10, dip))
    setback[:, :10] = 0
    return np.where(setback == 1, np.nan, cond)  # held: inhibited by recovery_setback


def glr(D, name, taus=range(3, 22), noise="fit", weights=True, ar=True, fit_days=60, pre_min=7):
    """max over tau of RSS(line) - RSS(line flattened at tau), generalised least squares; also the
    per-tau statistic (U, K, len(taus))."""
    y_all, n_all = series(D, name), series(D, "sn", False)
    U = y_all.shape[0]
    tau2 = (1.2533 * np.nan_to_num(D["sig_s"], nan=0.1)) ** 2 if (weights and name == "sp50") else np.zeros(U)
    if noise == "pre":
        s = 0 if name == "sp50" else 1
        v, c1 = D["pre_v"][s], D["pre_c1"][s]
        sd2_pre = np.maximum(np.maximum(np.nan_to_num(v - tau2 / np.nanmedian(n_all, 1), nan=1e-3), 0.15 * np.nan_to_num(v, nan=1e-2)), 1e-6)
        phi_pre = np.clip(np.nan_to_num(c1 / sd2_pre), 0, 0.9) if ar else np.zeros(U)
    taus = list(taus)
    best = np.full((U, K), np.nan)
    per = np.full((U, K, len(taus)), np.nan)
    for k in range(10, K):
        lo = max(0, k - fit_days + 1)
        t = np.arange(lo, k + 1, dtype=float)
        y = y_all[:, lo:k + 1]
        m = ~np.isnan(y)
        nn = np.maximum(np.where(m, np.nan_to_num(n_all[:, lo:k + 1], nan=1.0), 1.0), 1)
        if noise == "pre":
            sd2, phi = sd2_pre, phi_pre
        else:
            f = linfit(y_all, lo, k, 5)
            cnt = m.sum(1)
            with np.errstate(all="ignore"):
                v = (f["r"] ** 2).sum(1) / np.maximum(cnt - 2, 1)
                sd2 = np.maximum(v - np.where(m, tau2[:, None] / nn, 0).sum(1) / np.maximum(cnt, 1), 0.15 * v)
                pair = m[:, 1:] & m[:, :-1]
                c1 = np.where(pair, f["r"][:, 1:] * f["r"][:, :-1], 0).sum(1) / np.maximum(pair.sum(1), 1)
                phi = np.clip(c1 / sd2, 0, 0.9) if ar else np.zeros(U)
            sd2, phi = np.maximum(np.nan_to_num(sd2, nan=1.0), 1e-6), np.nan_to_num(phi)
        dt = np.abs(t[:, None] - t[None, :])
        cov = sd2[:, None, None] * phi[:, None, None] ** dt[None] + np.eye(len(t))[None] * (tau2[:, None] / nn)[:, :, None]
        P = np.linalg.inv(np.where(m[:, :, None] & m[:, None, :], cov, np.eye(len(t))[None]))
        tl = [i for i, tt in enumerate(taus) if k - tt - lo >= pre_min - 1]
        if not tl:
            continue
        cols = [y, np.ones_like(y), np.broadcast_to(t, y.shape)] + [np.broadcast_to(np.minimum(t, k - taus[i]), y.shape) for i in tl]
        C = np.stack([np.where(m, c, 0.0) for c in cols], axis=2)
        G = np.matmul(np.transpose(C, (0, 2, 1)), np.matmul(P, C))
        enough = m.sum(1) >= pre_min + 2
        G[~enough] = np.eye(G.shape[1])
        G = G + 1e-9 * np.eye(G.shape[1])[None]

        def rss(idx):
            Gxy = G[:, idx, 0]
            b = np.linalg.solve(G[:, idx][:, :, idx], Gxy[..., None])[..., 0]
            return G[:, 0, 0] - (b * Gxy).sum(1)

        r0 = rss([1, 2])
        for c, i in enumerate(tl):
            per[:, k, i] = np.where(enough, r0 - rss([1, 3 + c]), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            best[:, k] = np.nanmax(per[:, k], 1)
    return best, per


def score(D, cond, label):
    res = {}
    for i in range(cond.shape[0]):
        last = D["last"][i]
        if last < 14:
            continue
        fires, state, pend, off = [], False, 0, 0
        for kk, x in enumerate(cond[i, 14:last + 1]):
            if state:
                off = off + 1 if x == 0 else (0 if x == 1 else off)
                if off >= 7:
                    state, pend = False, 0
                continue
            pend = pend + 1 if x == 1 else 0
            if pend >= 2:
                state, off = True, 0
                fires.append(kk + 14)
        days = np.arange(14, last + 1)
        for key in D["shapes"][i] + ["all"]:
            r = res.setdefault(key, dict(pos=0, det=0, fa=0, risk=0, delays=[]))
            if D["pos"][i]:
                on = D["onset"][i]
                det = [f for f in fires if f >= on - 3]
                r["pos"] += 1
                r["det"] += bool(det)
                r["fa"] += sum(f < on - 3 for f in fires)
                r["risk"] += int((days < on - 3).sum())
                if det:
                    r["delays"].append(det[0] - on)
            else:
                r["fa"] += len(fires)
                r["risk"] += len(days)

    def q(d, p):
        d = sorted(d)
        return d[min(len(d), max(1, math.ceil(p * len(d)))) - 1] if d else -1

    r = res["all"]
    worst = max((res[k]["fa"] / (res[k]["risk"] / 7) * 100, k) for k in res if res[k]["risk"] > 500)
    sp = res["+sparse"]
    print("%-36s recall %.3f  false %.2f (%d)  delay %s / %s  sparse %.3f  worst %.2f %s" % (
        label, r["det"] / r["pos"], r["fa"] / (r["risk"] / 7) * 100, r["fa"], q(r["delays"], .5), q(r["delays"], .9),
        sp["det"] / sp["pos"], worst[0], worst[1]), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="scan")
    ap.add_argument("--seeds", default="1,2")
    a = ap.parse_args()
    D = cat([load(a.dir, int(s)) for s in a.seeds.split(",")])
    S = rule_stats(D)
    gate = lt(S["gain2w"], 0.10)
    for z in (1.75, 2.0, 2.25, 2.5, 3.0):
        score(D, rule(D, S, z=-z), "shipped, break z < -%.2f" % z)
    variants = [("glr fit", "sp50", dict()), ("glr pre", "sp50", dict(noise="pre")), ("glr pre -nw", "sp50", dict(noise="pre", weights=False)),
                ("glr pre -nar", "sp50", dict(noise="pre", ar=False))]
    per = {}
    for label, name, kw in variants:
        g, p = glr(D, name, **kw)
        per[label] = p
        for h in (3, 4, 5, 6, 8):
            score(D, rule(D, S, broke=AND(lt(h, g), gate)), "%s > %g" % (label, h))
    _, step = glr(D, "st50", noise="pre")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joint = np.nanmax(per["glr pre"] + step, 2)
    for h in (4, 6, 8, 10, 12):
        score(D, rule(D, S, broke=AND(lt(h, joint), gate)), "joint speed+step pre > %g" % h)
    for fit_days in (28, 42):
        g, _ = glr(D, "sp50", noise="pre", fit_days=fit_days)
        score(D, rule(D, S, broke=AND(lt(5, g), gate)), "glr pre, line on %d days > 5" % fit_days)
    g, _ = glr(D, "sp50", noise="pre", taus=range(3, 15))
    score(D, rule(D, S, broke=AND(lt(5, g), gate)), "glr pre, tau 3-14 > 5")
    g40, _ = glr(D, "sp50", taus=range(3, 41), noise="pre")
    for h in (4, 6, 8):
        score(D, rule(D, S, broke=lt(h, g40), no_gain_branch=False), "glr40 pre alone > %g" % h)


if __name__ == "__main__":
    main()
