"""Fixed prose of REPORT.md: what each scale shrinks, and why items differ from the paper.

Kept apart from :mod:`experiments.report` so the generator stays short; the
explanations are about mechanisms (network model, scale), not about tuning.
"""

from __future__ import annotations

SCALE_TEXT = [
    "## How these numbers were made",
    "",
    "- What was run: every item at `--scale laptop` (timing items at the paper's size with 12 "
    "rounds, seeds 0–2); nothing at `--scale paper` (not enough time on 2 shared cores). "
    "Training rows state their seed count (`n`/`seeds` columns): where it is below 3, the "
    "remaining runs did not finish in the session; `run_all.sh laptop` resumes them.",
    "- Engine: `fl_r2sp.server.runner.run` in-process over the virtual clock (deterministic; "
    "same result as `flwr run .`). Times are *virtual* seconds of the emulated deployment.",
    "- Network: `paper-ec2` = fair-shared server link of 8.3 MB/s each way, client links "
    "16.8 MB/s; `paper-ec2-fcfs` = a server that sends/receives one model at a time at 4.4 MB/s. "
    "Both calibrated to Table V (see `docs/paper-notes.md` §4); nothing else "
    "was fitted to the paper.",
    "- Timing items (Tables II, IV round time, V, Figs. 16–18, C sweep round time) are "
    "timing-only runs (no SGD) at the paper's size: 128 clients, 8 groups of 16, C = 0.75, "
    "tau = 100 (Table II: 50), log-normal(−2, 1) delays, model sizes of the CNN (62k params), "
    "LSTM (61k) and ResNet20 (272k). `laptop` runs 12 BSP-round equivalents per config "
    "(paper scale: 60). Averages leave out the first 2 (every scheme starts all clients at "
    "t = 0, a BSP-like burst, and FL-R²SP needs a round to stagger its groups).",
    "- Training items (Table IV convergence, Fig. 15, C sweep accuracy, outliers) run real SGD "
    "at `laptop` scale: 32 clients (4 groups of 8, C = 0.75 -> 6 of 8), tau = 20, 8,000 "
    "training samples (250 per client), batch 32, lr 0.05 (paper 0.01), at most 60 rounds, "
    "25% outlier clients (Dirichlet 0.1, others 10). Convergence: test accuracy (evaluated once "
    "per BSP-round equivalent) has not improved by more than 0.5 points for 10 evaluations; the "
    "convergence time is the start of that window. Only CNN/CIFAR-10 is trained at laptop "
    "scale: ResNet20 is too slow on 2 shared cores, and the LSTM/KWS did not learn at this size "
    "(BSP, 20 rounds: 9.8% test accuracy, chance level, 280 s wall), so its convergence time "
    "would be meaningless.",
]

NOTES = {
    "table2": (
        "**Not reproduced (fair), close by coincidence (FCFS).** Our contended figure is the "
        "Table V contention (BSP releases 96 clients at once; under fair sharing their pushes "
        "collide too), about 3.5x (FCFS) to 7x (fair) the paper's 1.02 s CNN figure; and a lone "
        "client is capped by the server link fitted to Table V (8.3 / 4.4 MB/s), so its CNN push "
        "+ pull takes 0.06 / 0.11 s instead of 0.03 s. The paper's Table II (2000 s windows, 50 "
        "iterations) is not consistent with its own Table V (1.02 s vs 3.11 s BSP CNN "
        "communication); we calibrate to Table V, so Table II is a secondary check. Under FCFS "
        "both numerator and denominator are ~3.6x the paper's, which makes the slowdown (32x) "
        "match 34x without the parts matching."),
    "table4": (
        "**Per-round time: direction reproduced, size not.** FL-R²SP's group round is within "
        "5–10% of the paper's 8.31 s (CNN) and 36.75 s (ResNet20), but our BSP round is longer "
        "than the paper's (CNN 14.6 s fair / 12.9 s FCFS vs 10.69 s), so the reduction is about "
        "2x the paper's. Under fair sharing the cause is BSP's colliding pushes (Table V); under "
        "FCFS it is the serialized pull of 96 models before training can start. "
        "**Convergence: not comparable.** Laptop training (32 clients, tau 20, 8k samples, "
        "lr 0.05, ≤ 60 rounds) is too short and small: the outlier filter blacklists most "
        "*regular* clients at this size (see the outlier section), after which BSP's accuracy "
        "plateaus early and 'converges', while FL-R²SP keeps improving until the round cap. The "
        "time-to-accuracy columns compare the schemes more fairly at this scale. With the "
        "filter off (the cleaner comparison here), neither scheme converges within 60 rounds; "
        "FL-R²SP runs its 60 round-equivalents in ~30% less virtual time but learns less per "
        "round (final 0.42 vs 0.47), so it reaches the common accuracy target ~20% *later*: at "
        "this scale the convergence gain is not reproduced. A plausible cause is the 1/M damping "
        "of each group's contribution with only 6 updates per group; the paper's implied round "
        "counts (≈ 380 for both schemes) suggest no such loss at its scale. Absolute seconds "
        "are not comparable with the paper's."),
    "table5": (
        "**Pulls reproduced (both disciplines, within 1.2–1.4x); pushes not under fair "
        "sharing.** Under fair sharing every BSP pull ends at the same instant, so all clients "
        "finish training together and their pushes collide: BSP push is ~9x the paper's (3.4 s "
        "vs 0.38 s CNN), which inflates the speedup (≈ 91% vs 76.5%). A first-come-first-served "
        "sender releases clients one after another and spreads the pushes (BSP push 0.20 s, "
        "0.5x the paper's), giving speedups of ≈ 84% (paper 72–86%). FL-R²SP's CNN/LSTM pushes are "
        "about half the paper's 0.34 s in both: the paper's floor of ~0.34 s suggests a per-call "
        "RPC cost that the calibrated profiles deliberately do not model (no per-transfer "
        "overhead). FL-R²SP's ResNet20 push under fair sharing is 3.7x the paper's: a group's "
        "12 members are released together and their 1.09 MB pushes share the server link."),
    "fig15": (
        "**Not reproduced at laptop scale: the filter costs accuracy here instead of saving "
        "~10%.** With 250 samples per client and tau 20, a regular client's delta has a median "
        "cosine of only ≈ 0.5 with its group's mean delta (measured on the BSP run, seed 0), so "
        "β = 0.5 for 3 consecutive rounds blacklists regular clients as readily as outliers "
        "(see the outlier section). Blacklisting stops only when a group is so small (≈ 4 "
        "members) that each client's own share of the group mean props its cosine up. BSP with "
        "the filter then trains on ~4 clients and stagnates early. Without the filter, ASP "
        "(averaging mixing) ends 4–9 points below FL-R²SP and BSP: lower, but not the severe "
        "degradation the paper shows. FedBuff (K = 10, server lr 1, staleness weight "
        "1/sqrt(1 + t); not in the paper) reaches 0.35 at best and stagnates below the others: "
        "with 32 clients in flight each buffered delta is several versions stale. (With the "
        "earlier default of constant staleness weights it diverged to chance level.) Runs stop "
        "at 60 rounds "
        "or on stagnation, so 'final' accuracies are at different virtual times (last column)."),
    "fig16": (
        "The window is three client cycles around the middle of a 12-round run, not rounds "
        "100–102. The claim checked: FL-R²SP's pull phase is much shorter and its global updates "
        "are evenly gapped (cv of inter-update gaps; BSP's cv is ~0 only because it has a single "
        "group, whose updates are one round apart)."),
    "fig17": (
        "**Why it differs.** In a fluid model every burst of pulls saturates the server link, so "
        "at 0.1 s resolution both schemes peak at the link capacity (ratio 1). The paper's 3x "
        "is a nethogs figure (1 s refresh); at coarser bins BSP's synchronized burst fills whole "
        "bins while FL-R²SP's staggered group pulls fill only part of theirs. For ResNet20 one "
        "FL-R²SP group pull (12 x 1.09 MB at 8.3 MB/s = 1.6 s) itself fills a 1 s bin, so the "
        "ratio only appears at 5 s bins. The ratio is a function of bin width, model size and "
        "discipline (under FCFS the sender is busy almost all the time for both schemes), not a "
        "calibrated quantity; we do not reproduce 3x at the paper's 1 s resolution."),
    "fig18": (
        "**U-shape reproduced, optimum not (ours: 4, paper: 32).** The client cycle rises "
        "steeply above 16 (intra-group contention: one group's 0.75 x size pulls share the "
        "server link), as in the paper, but small groups cost little here: the only client "
        "instability emulated is the log-normal(−2, 1) delay (mean 0.22 s), with no dropouts and "
        "no per-group coordination cost, so the gap-enforcement overhead the paper blames for "
        "small groups is mild (turn waits of ~1.3–1.9 s for CNN at sizes 2–8). The group round "
        "(release to C-th update) alone is nearly flat."),
    "c_sweep": (
        "No paper numbers (the study is in its unavailable appendix). Round time: C = 1 makes "
        "every group wait for its slowest member (delay tail), C = 0.5 barely helps under "
        "contention because pulls, not stragglers, dominate BSP's round."),
    "outliers": (
        "**The rule over-fires at laptop scale.** Precision/recall are against the true "
        "outlier ids (25% of clients, Dirichlet 0.1). In the no-outlier cases every "
        "blacklisted client is a false positive: with all clients at alpha 10, FL-R²SP "
        "blacklists exactly 4 of every group of 8 (the point at which self-inclusion in the "
        "group mean keeps the remaining cosines above 0.5); with all at alpha 0.3 even more. "
        "Small local data (250 samples) and short rounds (tau 20) make regular deltas noisy; "
        "the paper's clients had ~390 samples and tau 100. A leave-one-out reference "
        "(`cosine_reference='group-loo'`) or a lower β would change this, but that would be "
        "tuning beyond the paper's rule, so it is not done here. The paper prints no numbers. "
        "A diagnostic run (FL-R²SP, same laptop setting, 120 updates, scores only) shows why "
        "the outliers are not the ones caught: in group rounds 0–4 the single-class outliers "
        "score *higher* than regular clients (median cosine 0.61 vs 0.46) because their large "
        "deltas dominate the unweighted group mean; from round 5 on the order flips (0.47 vs "
        "0.59), but the gap stays small. The `outlier-warmup` knob (group rounds left "
        "unscored) skips that early inversion; it is 0 here, as in the paper."),
}
