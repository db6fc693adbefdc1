"""The end game of a bisection with a learned p, solved exactly: how cheap can "c, not c - 1" be?

Once a search with q = 0 has seen the culprit c fail, what remains is a two-hypothesis
sequential test: H_c (c - 1 is good: its runs never fail) against H_{c-1} (c - 1 is the
culprit: its runs fail at p). A run at a commit bad under both hypotheses (the bad end, c or
after) fails at p either way: it only teaches p. p is learned, with the strategy's prior
`LEARNED_P_BAD` = Beta(1/2, 5/2). The belief state is (F, S, n): failures and passes among the
runs at commits bad under both (the stored runs at the bad end included), and passes at c - 1.
Given it, with Beta function B and alpha = 1/2 + F, beta = 5/2 + S,

    P(H_{c-1}) / P(H_c) = B(alpha, beta + n) / B(alpha, beta)     (uniform prior over culprits)

and the search stops once P(H_c) >= 0.95 (the strategy's stop rule), or when c - 1 fails. A
backward induction over (F, S, n) gives the Bayes-optimal choice between "run c - 1" and "run a
commit bad under both" (the fewest expected runs under the belief, p integrated out). The same
sweep evaluates that policy and the greedy one (the larger information gain about the culprit,
as `decide/probes.py` chooses) under a fixed true p: expected runs when c is the culprit, and
the chance of naming c when c - 1 is the culprit (the end game's error).

A third policy, "oracle", is no rule: it minimises the expected runs knowing that c is the culprit
and the true p (the stop still reads the strategy's posterior). No probe rule that stops as the
strategy does can spend fewer runs in this end game, so oracle against greedy bounds what any
cleverer choice of runs (learning p earlier included) could save there.

Start states: the stored runs (f of 40 failed, f ~ Binomial(40, p)) plus the one failure at c
that every end game begins with (F = f + 1, S = 40 - f, n = 0), with c - 1 the only culprit before
c (prior odds rho = 1). With ``--from-searches K`` also the states read off K real greedy searches
(benchmarks/bisection.py's seeds, N = 256) where c first fails, and where moreover
P(J in {c - 1, c}) >= 0.9; the culprits before c are lumped with c - 1 (prior odds rho, from the
search's posterior: the unprobed commits just before c - 1 share its likelihood), and what the
search spent after that state stands next to the policies' expected runs from it.

    .venv/bin/python benchmarks/bisection_endgame.py [--p 0.15 0.05] [--from-searches 400]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import betaln, entr
from scipy.stats import binom

from heisenbisect.decide.commits import CommitStrategy
from heisenbisect.decide.posterior import LEARNED_P_BAD
from heisenbisect.records import Outcome, TrialStatus

sys.path.insert(0, str(Path(__file__).parent))
from bisection import settings_for  # noqa: E402

CONFIDENCE = 0.95
STORED = 40
LOG_STOP_ODDS = np.log((1 - CONFIDENCE) / CONFIDENCE)  # P(H_{c-1}) / P(H_c) at which H_c holds 0.95
F_MAX, S_MAX, N_MAX = 50, 300, 700  # the grid; at n = N_MAX only passes at c - 1 are counted
N_KEEP = 150  # values kept for start states with n <= N_KEEP


def bits(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return (entr(x) + entr(1.0 - x)) / np.log(2.0)


@dataclass
class Tables:
    """Per start state (F, S, n <= N_KEEP): expected runs and error of each policy."""

    cost: dict[tuple[str, float], np.ndarray]  # (policy, true p) -> expected runs when c is the culprit
    error: dict[tuple[str, float], np.ndarray]  # (policy, true p) -> P(name c | c - 1 is the culprit)
    learn_share: dict[tuple[str, float], np.ndarray]  # expected runs at bad-under-both commits


def _log_odds(alpha: np.ndarray, beta: np.ndarray, n: np.ndarray) -> np.ndarray:
    return betaln(alpha, beta + n) - betaln(alpha, beta)


def _passes_to_stop(alpha: np.ndarray, beta: np.ndarray, n: np.ndarray, rho: float) -> np.ndarray:
    """Passes at c - 1 still needed from n with nothing else run (the grid's far edge)."""
    stop = LOG_STOP_ODDS - np.log(rho)
    low, high = n.astype(float), np.maximum(n * 2.0, 1.0)
    while np.any(more := _log_odds(alpha, beta, high) > stop):
        high = np.where(more, high * 2.0, high)
    for _ in range(60):
        mid = np.floor((low + high) / 2)
        above = _log_odds(alpha, beta, mid) > stop
        low, high = np.where(above, mid, low), np.where(above, high, mid)
    return high - n


POLICIES = ("greedy", "dp", "oracle")


def solve(rates: list[float], rho: float = 1.0) -> Tables:
    """Backward induction over layers u = F + S + n (every run moves one layer up).

    ``rho``: prior odds of "culprit before c" against c; 1 for c - 1 alone, k when c - 1 shares
    its likelihood with k - 1 unprobed commits before it (passes at c - 1 count against all).
    Policies: "greedy" (larger information gain), "dp" (fewest expected runs under the belief),
    "oracle" (fewest expected runs when c is the culprit and p is the true rate: a bound on every
    probe rule that stops as the strategy does, not a rule the strategy could follow).
    """
    a0, b0 = LEARNED_P_BAD.a, LEARNED_P_BAD.b
    f_idx = np.arange(F_MAX + 1)[:, None]
    n_idx = np.arange(N_MAX + 1)[None, :]
    shape = (F_MAX + 1, S_MAX + 1, N_KEEP + 1)
    keys = [(pol, p) for pol in POLICIES for p in rates]
    cost = {key: np.full(shape, np.nan) for key in keys}
    error = {key: np.full(shape, np.nan) for key in keys}
    learn = {key: np.full(shape, np.nan) for key in keys}
    grid = (F_MAX + 2, N_MAX + 2)
    nxt_v = {pol: np.zeros(grid) for pol in ("greedy", "dp")}  # expected runs under the belief
    nxt_w, nxt_z, nxt_l = ({key: np.zeros(grid) for key in keys} for _ in range(3))

    def shifted(a: np.ndarray, df: int, dn: int) -> np.ndarray:
        return a[df : df + F_MAX + 1, dn : dn + N_MAX + 1]

    def padded(a: np.ndarray) -> np.ndarray:
        out = np.zeros(grid)
        out[: F_MAX + 1, : N_MAX + 1] = a
        return out

    for u in range(F_MAX + S_MAX + N_MAX, -1, -1):
        s_idx = u - f_idx - n_idx
        valid = (s_idx >= 0) & (s_idx <= S_MAX)
        if not valid.any():
            continue
        s = np.clip(s_idx, 0, S_MAX).astype(float)
        alpha = a0 + f_idx + 0 * s
        beta = b0 + s
        n = n_idx + 0.0 * s
        log_odds = _log_odds(alpha, beta, n) + np.log(rho)
        done = log_odds <= LOG_STOP_ODDS
        p1 = 1.0 / (1.0 + np.exp(-log_odds))  # P(culprit before c)
        p0 = 1.0 - p1
        r0, r1 = alpha / (alpha + beta), alpha / (alpha + beta + n)  # predictive p under H_c, H_{c-1}
        fail_prev = p1 * r1  # a run at c - 1 fails (then c - 1 is bad: the end game is over)
        fail_bad = p0 * r0 + p1 * r1
        can_learn = (f_idx < F_MAX) & (s_idx < S_MAX)
        edge = n_idx >= N_MAX
        gain_prev = bits(fail_prev) - p1 * bits(r1)
        gain_bad = bits(fail_bad) - p0 * bits(r0) - p1 * bits(r1)
        choice, new_v = {}, {}
        for pol, v in nxt_v.items():
            via_prev = 1.0 + (1.0 - fail_prev) * shifted(v, 0, 1)
            via_bad = 1.0 + fail_bad * shifted(v, 1, 0) + (1.0 - fail_bad) * shifted(v, 0, 0)
            prefer = (via_bad < via_prev) if pol == "dp" else (gain_bad > gain_prev)
            choice[pol] = can_learn & ~edge & prefer
            new_v[pol] = np.where(done, 0.0, np.where(choice[pol], via_bad, via_prev))
        # the far edge (n = N_MAX): count the passes at c - 1 still needed
        stuck = ~done & edge & valid
        remaining = np.zeros_like(log_odds)
        if stuck.any():
            remaining[stuck] = _passes_to_stop(alpha[stuck], beta[stuck], n[stuck], rho)
            for pol in new_v:
                new_v[pol][stuck] = remaining[stuck]
        new_w, new_z, new_l = {}, {}, {}
        for pol, p in keys:
            w, z, lrn = nxt_w[(pol, p)], nxt_z[(pol, p)], nxt_l[(pol, p)]
            w_bad = 1.0 + p * shifted(w, 1, 0) + (1 - p) * shifted(w, 0, 0)
            w_prev = 1.0 + shifted(w, 0, 1)  # c is the culprit: c - 1 never fails
            learn_here = choice[pol] if pol in choice else can_learn & ~edge & (w_bad < w_prev)
            z_bad = p * shifted(z, 1, 0) + (1 - p) * shifted(z, 0, 0)
            z_prev = (1 - p) * shifted(z, 0, 1)  # c - 1 is the culprit: it fails at p, ending the test right
            l_bad = 1.0 + p * shifted(lrn, 1, 0) + (1 - p) * shifted(lrn, 0, 0)
            new_w[(pol, p)] = np.where(done, 0.0, np.where(learn_here, w_bad, w_prev))
            new_z[(pol, p)] = np.where(done, 1.0, np.where(learn_here, z_bad, z_prev))
            new_l[(pol, p)] = np.where(done, 0.0, np.where(learn_here, l_bad, shifted(lrn, 0, 1)))
            if stuck.any():
                new_w[(pol, p)][stuck] = remaining[stuck]
                new_z[(pol, p)][stuck] = (1 - p) ** remaining[stuck]
                new_l[(pol, p)][stuck] = 0.0
        ks = valid & (n_idx <= N_KEEP)
        fk, nk = np.nonzero(ks)
        sk = s_idx[fk, nk]
        for key in keys:
            cost[key][fk, sk, nk] = new_w[key][fk, nk]
            error[key][fk, sk, nk] = new_z[key][fk, nk]
            learn[key][fk, sk, nk] = new_l[key][fk, nk]
        nxt_v = {pol: padded(new_v[pol]) for pol in new_v}
        nxt_w = {key: padded(new_w[key]) for key in new_w}
        nxt_z = {key: padded(new_z[key]) for key in new_z}
        nxt_l = {key: padded(new_l[key]) for key in new_l}
    return Tables(cost, error, learn)


def stored_table(rates: list[float]) -> None:
    """Start states from the stored runs alone, averaged over f ~ Binomial(40, p)."""
    print("End game from the stored runs plus the culprit's first failure (F = f + 1, S = 40 - f, n = 0; "
          "rho = 1: c - 1 alone before c)\n")
    print("| true p | stored failures f | P(f) | greedy: runs | DP: runs | DP: learning p | oracle: runs "
          "| oracle: learning p | greedy error | DP error | p given: runs |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")
    tables = solve(rates)
    for p in rates:
        known = int(np.ceil(LOG_STOP_ODDS / np.log1p(-p)))
        fs = np.arange(STORED + 1)
        weight = binom.pmf(fs, STORED, p)
        rows = []
        for f in fs:
            at = (f + 1, STORED - f, 0)
            rows.append((tables.cost[("greedy", p)][at], tables.cost[("dp", p)][at], tables.learn_share[("dp", p)][at],
                         tables.cost[("oracle", p)][at], tables.learn_share[("oracle", p)][at],
                         tables.error[("greedy", p)][at], tables.error[("dp", p)][at]))
        rows = np.array(rows)
        bins = [(0, 2), (3, 4), (5, 6), (7, 8), (9, 40)] if p >= 0.1 else [(0, 0), (1, 1), (2, 2), (3, 4), (5, 40)]
        for low, high in bins + [(0, 40)]:
            sel = (fs >= low) & (fs <= high)
            w = weight[sel] / weight[sel].sum()
            cells = [f"{w @ rows[sel, i]:.1f}" if i < 5 else f"{w @ rows[sel, i]:.3f}" for i in range(7)]
            label = "all" if (low, high) == (0, 40) else f"{low}-{high}" if low != high else f"{low}"
            print(f"| {p} | {label} | {weight[sel].sum():.3f} | " + " | ".join(cells) + f" | {known} |")
    print()


START_KINDS = {
    "first failure": "the first run that fails at c",
    "pair": "c has failed and P(J in {c - 1, c}) >= 0.9",
}


def endgame_starts(count: int, n: int, p: float) -> dict[str, list[tuple]]:
    """Real greedy searches (benchmarks/bisection.py's seeds): for each kind of start, the state
    there and what the search spends after it: (F, S, n, runs at c - 1, runs elsewhere, all runs,
    right, rho), rho the posterior odds of "before c" over c divided by the Beta ratio of c - 1."""
    out: dict[str, list[tuple]] = {kind: [] for kind in START_KINDS}
    for seed in range(count):
        rng = np.random.default_rng(seed)
        settings = settings_for("stored 40", p, 0.0, 5000, rng)
        culprit = int(rng.integers(n))
        strategy = CommitStrategy([f"c{i}" for i in range(n)], "good", settings)
        starts: dict[str, tuple] = {}
        while not strategy.finished():
            if culprit > 0 and strategy.failures[culprit] > 0 and len(starts) < len(START_KINDS):
                post = strategy.posterior()
                pair = post.probs[culprit - 1] + post.probs[culprit] >= 0.9
                kinds = (("first failure", True), ("pair", pair))
                for kind in [k for k, reached in kinds if reached and k not in starts]:
                    f = settings.stored_bad_failures + int(strategy.failures[culprit:].sum())
                    s = settings.stored_bad_runs - settings.stored_bad_failures + int(
                        (strategy.trials[culprit:] - strategy.failures[culprit:]).sum())
                    n0 = int(strategy.trials[culprit - 1])
                    before = (1.0 - post.probs[culprit]) / post.probs[culprit]
                    rho = before / np.exp(_log_odds(LEARNED_P_BAD.a + f, LEARNED_P_BAD.b + s, n0))
                    starts[kind] = (f, s, n0, strategy.finished_trials, rho)
            config = strategy.propose(Counter(), 1)[0]
            failed = rng.random() < (p if int(config.commit[1:]) >= culprit else 0.0)
            strategy.observe(config, Outcome("sim", config.key, 0, TrialStatus.OK, int(failed), 1))
        for kind, (f, s, n0, trials0, rho) in starts.items():
            at_prev = int(strategy.trials[culprit - 1]) - n0
            spent = strategy.finished_trials - trials0
            out[kind].append((f, s, n0, at_prev, spent - at_prev, spent, strategy.result().culprit == culprit, rho))
    return out


RHOS = 2.0 ** np.arange(0.0, 7.25, 0.5)  # the prior odds solved for; a start state takes the nearest


def searches_table(count: int, n: int, p: float) -> None:
    """The policies' expected runs from the states where real greedy searches start their end game."""
    starts = {kind: [row for row in rows if row[0] <= F_MAX and row[1] < S_MAX and row[2] <= N_KEEP]
              for kind, rows in endgame_starts(count, n, p).items()}
    nearest = {kind: [int(np.argmin(np.abs(np.log(RHOS) - np.log(row[7])))) for row in rows]
               for kind, rows in starts.items()}
    results: dict[str, list[tuple]] = {kind: [] for kind in starts}
    for k in sorted({near for kinds in nearest.values() for near in kinds}):
        tables = solve([p], float(RHOS[k]))
        for kind, rows in starts.items():
            for row, near in zip(rows, nearest[kind]):
                if near == k:
                    f, s, n0, at_prev, elsewhere, spent, right, _ = row
                    results[kind].append((f, spent, at_prev, elsewhere,
                                          *(tables.cost[(pol, p)][f, s, n0] for pol in POLICIES),
                                          tables.learn_share[("oracle", p)][f, s, n0], right))
        del tables
    for kind, found in results.items():
        rows = np.array(found, dtype=float)
        print(f"End game of real greedy searches (N = {n}, p = {p}, q = 0, 40 stored; {len(rows)} of {count} "
              f"searches); start: {START_KINDS[kind]}; rho from the search's posterior, to the nearest sqrt(2)\n")
        print("| F at start | searches | real greedy: runs after | at c - 1 | elsewhere | model greedy: runs | "
              "DP: runs | oracle: runs | oracle: learning p | accuracy |\n|---|---|---|---|---|---|---|---|---|---|")
        for low, high in ((0, 6), (7, 8), (9, 10), (11, 13), (14, 60), (0, 60)):
            part = rows[(rows[:, 0] >= low) & (rows[:, 0] <= high)]
            if len(part):
                label = "all" if (low, high) == (0, 60) else f"{low}-{high}"
                cells = [f"{x:.1f}" for x in part[:, 1:8].mean(axis=0)]
                print(f"| {label} | {len(part)} | " + " | ".join(cells) + f" | {part[:, 8].mean():.3f} |")
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", nargs="+", type=float, default=[0.15, 0.05], help="true failure rates")
    parser.add_argument("--from-searches", type=int, default=0, metavar="K",
                        help="also the end games of K real greedy searches per p (N = 256)")
    args = parser.parse_args()
    started = time.monotonic()
    stored_table(args.p)
    if args.from_searches:
        for p in args.p:
            searches_table(args.from_searches, 256, p)
    print(f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
