//! One run's metrics: pass 1 over its rows, then pass 2 for what needs P_k or the block count.

use std::collections::{BTreeMap, BinaryHeap, HashMap};

use super::curve::Curve;
use super::lowest::{Block, keep_lowest, lowest_mean};
use super::report::{ConfigurationReport, IntervalReport, RunReport};
use super::span::{GapReference, Span};
use super::sum::{Rolling, Sum, scaled};
use crate::regime::{NotifyLevel, Origin};
use crate::trace::RowRef;

/// The interval being read in pass 1.
struct Open {
    label: String,
    origin: Origin,
    start: u64,
    n: u64,
    sum_r: Sum,
    /// m_k(s_k + W - 1), once the interval is W steps long (the latest m_k(t) is then
    /// the run's rolling mean, worked out when the interval closes).
    head: Option<f64>,
    /// B_k = P_{k-1}.
    reference: Option<f64>,
    /// First step with m_k(t) >= B_k.
    reached: Option<u64>,
    /// l2metrics' reference: the tail of the label's previous interval.
    l2_reference: Option<f64>,
    /// First step with m_k(t) >= that reference.
    l2_reached: Option<u64>,
    sum_x: Sum,
    block: Sum,
    block_len: usize,
    blocks: u64,
    block_mean: f64,
    block_m2: f64,
    block_min: f64,
    /// Rows with a gap reference: their bound, else their ceiling.
    ceiling_rows: u64,
    /// Of those, the rows whose reference is their bound.
    bound_rows: u64,
    gap: Sum,
    ceiling: Sum,
    components: Vec<(String, Sum)>,
    /// Where each name is in `components`, for rows whose names come in another order.
    component_index: HashMap<String, usize>,
    /// True while every x so far equals its reward (no payouts, or payouts counted):
    /// `sum_r` then stands for `sum_x`, which is the same sum.
    x_is_reward: bool,
    /// True when the interval's blocks are the run-wide ones (it opened where a run-wide
    /// block starts): `block` then stands for the run-wide block, which is the same sum,
    /// and the interval's block means are at `first_block..` in `RunScan::blocks`.
    aligned: bool,
    first_block: usize,
    /// True while each of the interval's block means equals its run-wide one to the bit
    /// (they differ only where a mean overflows or is subnormal).
    blocks_match: bool,
}

impl Open {
    /// Where component `name` is summed, a new place if it is new.
    fn slot(&mut self, name: &str) -> usize {
        if let Some(&k) = self.component_index.get(name) {
            return k;
        }
        self.component_index
            .insert(name.to_string(), self.components.len());
        self.components.push((name.to_string(), Sum::default()));
        self.components.len() - 1
    }
}

/// What the configuration totals need from a closed interval.
struct Totals {
    sum_r: Sum,
    components: Vec<(String, Sum)>,
    ceiling_rows: u64,
    bound_rows: u64,
    gap: Sum,
    ceiling: Sum,
}

/// What pass 2 still has to compute for an interval.
#[derive(Clone, Copy, Default)]
struct Need {
    /// A_k's target when P_k > H_k (the crossing is then somewhere inside the interval).
    target: Option<f64>,
    /// ceil(0.05 B) when it exceeds 1 (one lowest block is kept in pass 1).
    lowest: Option<usize>,
}

impl Need {
    fn is_some(&self) -> bool {
        self.target.is_some() || self.lowest.is_some()
    }
}

/// Pass 2's position in the run.
#[derive(Default)]
struct Replay {
    step: u64,
    interval: usize,
    block: Sum,
    block_len: usize,
    lowest: BinaryHeap<Block>,
}

/// One run's state across both passes.
pub(crate) struct RunScan {
    pub(crate) run_id: String,
    seed: u64,
    algorithm_id: String,
    task: String,
    notify: NotifyLevel,
    window: usize,
    pub(crate) rows: u64,
    pub(crate) next_step: u64,
    episodes: u64,
    last_episode: u64,
    rolling: Rolling,
    smooth: Rolling,
    curve: Curve,
    open: Option<Open>,
    intervals: Vec<IntervalReport>,
    totals: Vec<Totals>,
    needs: Vec<Need>,
    last_tail: HashMap<String, f64>,
    /// The current run-wide block of W values of x, and the means of the finished ones.
    run_block: Sum,
    run_block_len: usize,
    blocks: Vec<f64>,
    replay: Replay,
    /// Intervals pass 2 has yet to finish.
    pub(crate) pending: usize,
}

impl RunScan {
    pub(crate) fn new(row: &RowRef<'_>, window: usize) -> Self {
        RunScan {
            run_id: row.run_id.to_string(),
            seed: row.seed,
            algorithm_id: row.algorithm_id.to_string(),
            task: row.task.to_string(),
            notify: row.notify,
            window,
            rows: 0,
            next_step: row.step,
            episodes: 0,
            last_episode: 0,
            rolling: Rolling::new(window),
            smooth: Rolling::new(window),
            curve: Curve::new(),
            open: None,
            intervals: Vec::new(),
            totals: Vec::new(),
            needs: Vec::new(),
            last_tail: HashMap::new(),
            run_block: Sum::default(),
            run_block_len: 0,
            blocks: Vec::new(),
            replay: Replay {
                step: row.step,
                ..Replay::default()
            },
            pending: 0,
        }
    }

    /// The first identity column of `row` that differs from the run's first row.
    pub(crate) fn identity_change(&self, row: &RowRef<'_>) -> Option<&'static str> {
        if row.seed != self.seed {
            Some("seed")
        } else if row.algorithm_id != self.algorithm_id {
            Some("algorithm_id")
        } else if row.task != self.task {
            Some("task")
        } else if row.notify != self.notify {
            Some("notify")
        } else {
            None
        }
    }

    /// Pass 1: takes the run's next row (its step already checked) with its x_t.
    pub(crate) fn push(&mut self, row: &RowRef<'_>, x: f64) {
        self.count(row.step, row.episode);
        if self.open.as_ref().is_none_or(|o| o.label != row.regime) {
            self.close();
            self.rolling.clear();
            let reference = self.intervals.last().map(|i| i.tail);
            self.open = Some(Open {
                label: row.regime.to_string(),
                origin: row.regime_origin,
                start: row.step,
                n: 0,
                sum_r: Sum::default(),
                head: None,
                reference,
                reached: None,
                l2_reference: self.last_tail.get(row.regime.as_ref()).copied(),
                l2_reached: None,
                sum_x: Sum::default(),
                block: Sum::default(),
                block_len: 0,
                blocks: 0,
                block_mean: 0.0,
                block_m2: 0.0,
                block_min: f64::INFINITY,
                ceiling_rows: 0,
                bound_rows: 0,
                gap: Sum::default(),
                ceiling: Sum::default(),
                components: Vec::new(),
                component_index: HashMap::new(),
                x_is_reward: true,
                aligned: self.run_block_len == 0,
                first_block: self.blocks.len(),
                blocks_match: true,
            });
        }
        if let Some(open) = self.open.as_mut() {
            // Rows usually list their names in one order: the same position is tried
            // first, then the index, so 120,000 names cost linear time, not quadratic.
            for (i, (name, v)) in row.components.iter().enumerate() {
                let slot = match open.components.get(i) {
                    Some((n, _)) if n == name => i,
                    _ => open.slot(name),
                };
                open.components[slot].1.add(v);
            }
            open.bound_rows += u64::from(row.bound.is_some());
        }
        self.accumulate(row.step, row.reward, x, row.bound.or(row.ceiling));
    }

    /// Pass 1 for rows that continue the run and its open interval (the label of the row
    /// before them): the same operations as [`RunScan::push`] on each row, in row order,
    /// with each component's place found once.
    ///
    /// Stretches of quiet rows ([`RunScan::quiet_rows`]) go through [`RunScan::quiet`],
    /// one loop with every sum in registers; the others, row by row.
    pub(crate) fn push_span(&mut self, span: &Span<'_>) {
        let slots: Vec<usize> = match self.open.as_mut() {
            Some(open) => {
                open.bound_rows += span.bound_rows;
                span.components.iter().map(|(n, _)| open.slot(n)).collect()
            }
            None => Vec::new(),
        };
        let n = span.rewards.len();
        let mut k = 0;
        while k < n {
            let m = self.quiet_rows(span, k);
            if m > 0 {
                let shared_x = self.open.as_ref().is_some_and(|o| o.x_is_reward);
                let aligned = self.open.as_ref().is_some_and(|o| o.aligned);
                match (shared_x, aligned, &span.gap_reference) {
                    (true, true, GapReference::Dense(c)) => {
                        self.quiet::<true, true, true>(span, k, m, &slots, c)
                    }
                    (true, false, GapReference::Dense(c)) => {
                        self.quiet::<true, false, true>(span, k, m, &slots, c)
                    }
                    (false, true, GapReference::Dense(c)) => {
                        self.quiet::<false, true, true>(span, k, m, &slots, c)
                    }
                    (false, false, GapReference::Dense(c)) => {
                        self.quiet::<false, false, true>(span, k, m, &slots, c)
                    }
                    (true, true, _) => self.quiet::<true, true, false>(span, k, m, &slots, &[]),
                    (true, false, _) => self.quiet::<true, false, false>(span, k, m, &slots, &[]),
                    (false, true, _) => self.quiet::<false, true, false>(span, k, m, &slots, &[]),
                    (false, false, _) => self.quiet::<false, false, false>(span, k, m, &slots, &[]),
                }
                k += m;
                continue;
            }
            let step = span.step + k as u64;
            self.count(step, span.episodes[k]);
            if let Some(open) = self.open.as_mut() {
                for (&slot, (_, values)) in slots.iter().zip(&span.components) {
                    open.components[slot].1.add(values[k]);
                }
            }
            self.accumulate(step, span.rewards[k], span.xs[k], span.gap_reference.get(k));
            k += 1;
        }
    }

    /// How many rows of `span` from row `k` on are quiet: rows that end no block, take no
    /// curve point, wrap neither rolling window, leave no crossing to look for and whose
    /// ceiling is there in all or none. Such rows only add to sums.
    fn quiet_rows(&self, span: &Span<'_>, k: usize) -> usize {
        let Some(open) = self.open.as_ref() else {
            return 0;
        };
        let waiting = open.head.is_none()
            || (open.reached.is_none() && open.reference.is_some())
            || (open.l2_reached.is_none() && open.l2_reference.is_some());
        if waiting || self.rows == 0 || matches!(span.gap_reference, GapReference::Sparse(_)) {
            return 0;
        }
        let last = self.window - 1;
        let mut m = (span.rewards.len() - k)
            .min(last - open.block_len)
            .min(self.rolling.quiet_room())
            .min(self.smooth.quiet_room())
            .min(self.curve.quiet_room());
        if !open.aligned {
            m = m.min(last - self.run_block_len);
        }
        if open.x_is_reward && !span.x_is_reward {
            // sum_r stands for sum_x up to the first row whose x is not its reward.
            m = span.xs[k..k + m]
                .iter()
                .zip(&span.rewards[k..k + m])
                .position(|(x, r)| x != r)
                .unwrap_or(m);
        }
        m
    }

    /// Rows `k..k + m` of `span`, quiet ([`RunScan::quiet_rows`]): the operations
    /// [`RunScan::push`] does on them, each sum's in row order. `SHARED_X`: x is each
    /// row's reward and `sum_r` stands for `sum_x`; `ALIGNED`: the interval's block stands
    /// for the run-wide one; `CEIL`: `ceilings` holds every row's ceiling (none has one
    /// otherwise).
    fn quiet<const SHARED_X: bool, const ALIGNED: bool, const CEIL: bool>(
        &mut self,
        span: &Span<'_>,
        k: usize,
        m: usize,
        slots: &[usize],
        ceilings: &[f64],
    ) {
        let Some(open) = self.open.as_mut() else {
            return;
        };
        let rows = k..k + m;
        let mut last_episode = self.last_episode;
        let mut episodes = 0;
        for &e in &span.episodes[rows.clone()] {
            episodes += u64::from(e != last_episode);
            last_episode = e;
        }
        self.episodes += episodes;
        self.last_episode = last_episode;
        self.rows += m as u64;
        let last_step = span.step + (k + m - 1) as u64;
        self.next_step = last_step.saturating_add(1);
        self.curve.skip(m, last_step);

        for (&slot, (_, values)) in slots.iter().zip(&span.components) {
            let sum = &mut open.components[slot].1;
            for &v in &values[rows.clone()] {
                sum.add(v);
            }
        }
        open.n += m as u64;
        open.block_len += m;
        if CEIL {
            open.ceiling_rows += m as u64;
        }
        if !ALIGNED {
            self.run_block_len += m;
        }
        let (rolling_slots, rolling) = self.rolling.quiet(m);
        let (smooth_slots, smooth) = self.smooth.quiet(m);
        let (mut rolling_sum, mut smooth_sum) = (*rolling, *smooth);
        let (mut sum_r, mut sum_x, mut block) = (open.sum_r, open.sum_x, open.block);
        let (mut gap, mut ceiling, mut run_block) = (open.gap, open.ceiling, self.run_block);
        let rewards = &span.rewards[rows.clone()];
        let xs = &span.xs[rows.clone()];
        let ceilings = if CEIL { &ceilings[rows] } else { &[][..] };
        for j in 0..m {
            let r = scaled(rewards[j]);
            let x = if SHARED_X { r } else { scaled(xs[j]) };
            sum_r.add_scaled(r);
            if !SHARED_X {
                sum_x.add_scaled(x);
            }
            block.add_scaled(x);
            if !ALIGNED {
                run_block.add_scaled(x);
            }
            if CEIL {
                let c = scaled(ceilings[j]);
                gap.add_scaled(c);
                gap.add_scaled(-r);
                ceiling.add_scaled(c);
            }
            rolling_sum.add_scaled(-rolling_slots[j]);
            rolling_slots[j] = x;
            rolling_sum.add_scaled(x);
            smooth_sum.add_scaled(-smooth_slots[j]);
            smooth_slots[j] = x;
            smooth_sum.add_scaled(x);
        }
        (*rolling, *smooth) = (rolling_sum, smooth_sum);
        (open.sum_r, open.sum_x, open.block) = (sum_r, sum_x, block);
        (open.gap, open.ceiling, self.run_block) = (gap, ceiling, run_block);
    }

    /// Counts a row and its episode.
    #[inline(always)]
    fn count(&mut self, step: u64, episode: u64) {
        if self.rows == 0 || episode != self.last_episode {
            self.episodes += 1;
            self.last_episode = episode;
        }
        self.rows += 1;
        // The caller refuses a step of u64::MAX (it would wrap); saturating keeps this
        // total on its own.
        self.next_step = step.saturating_add(1);
    }

    /// Every sum of a row but the components'.
    #[inline(always)]
    fn accumulate(&mut self, step: u64, reward: f64, x: f64, ceiling: Option<f64>) {
        let window = self.window;
        let mut shared_block = false;
        if let Some(open) = self.open.as_mut() {
            open.n += 1;
            if open.x_is_reward && x != reward {
                // sum_x takes over from sum_r, which stood for it so far. (Both zeros
                // count as equal: adding either leaves a sum's bits as they are.)
                open.sum_x = open.sum_r;
                open.x_is_reward = false;
            }
            open.sum_r.add(reward);
            if !open.x_is_reward {
                open.sum_x.add(x);
            }
            // m_k(t) is worked out (a division) only while something waits for it.
            if self.rolling.push_full(x)
                && (open.head.is_none()
                    || (open.reached.is_none() && open.reference.is_some())
                    || (open.l2_reached.is_none() && open.l2_reference.is_some()))
            {
                let m = self.rolling.full_mean();
                open.head.get_or_insert(m);
                if open.reached.is_none() && open.reference.is_some_and(|b| m >= b) {
                    open.reached = Some(step);
                }
                if open.l2_reached.is_none() && open.l2_reference.is_some_and(|b| m >= b) {
                    open.l2_reached = Some(step);
                }
            }
            open.block.add(x);
            open.block_len += 1;
            if open.block_len == window {
                let b = open.block.mean(window as f64);
                if open.aligned {
                    // The run-wide block ends here too, with the same sum.
                    let run_wide = open.block.value() / window as f64;
                    open.blocks_match &= run_wide.to_bits() == b.to_bits();
                    self.blocks.push(run_wide);
                }
                open.block = Sum::default();
                open.block_len = 0;
                open.blocks += 1;
                let d = b - open.block_mean;
                open.block_mean += d / open.blocks as f64;
                open.block_m2 += d * (b - open.block_mean);
                open.block_min = open.block_min.min(b);
            }
            if let Some(c) = ceiling {
                open.ceiling_rows += 1;
                // Added apart: `c - reward` itself can overflow for finite extremes.
                open.gap.add(c);
                open.gap.add(-reward);
                open.ceiling.add(c);
            }
            shared_block = open.aligned;
        }
        if !shared_block {
            self.run_block.add(x);
            self.run_block_len += 1;
            if self.run_block_len == window {
                self.blocks.push(self.run_block.value() / window as f64);
                self.run_block = Sum::default();
                self.run_block_len = 0;
            }
        }
        self.smooth.push_full(x);
        let smooth = &self.smooth;
        self.curve.push(step, || smooth.partial_mean().unwrap_or(x));
    }

    /// Closes the open interval: everything pass 1 can know about it.
    fn close(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        if open.aligned {
            // The run-wide block goes on from where the interval's stopped.
            self.run_block = open.block;
            self.run_block_len = open.block_len;
        }
        let window = self.window as u64;
        let n = open.n;
        let full = n >= window;
        // The rolling window holds the interval's last W values when `head` is set.
        let (head, tail) = match open.head {
            Some(h) if full => (h, self.rolling.full_mean()),
            _ => {
                // n_k < W: w_k = n_k and the only defined m_k is the mean of all of it.
                let p = self.rolling.partial_mean().unwrap_or(0.0);
                (p, p)
            }
        };
        let mut need = Need::default();
        let adaptation_steps = if !full {
            n
        } else if tail <= head {
            // target <= H_k = m_k(s_k + W - 1): reached at the first defined point.
            window
        } else {
            need.target = Some(head + 0.9 * (tail - head));
            n
        };
        let recovery_steps = open.reference.and_then(|b| {
            if full {
                open.reached.map(|t| t - open.start + 1)
            } else {
                (tail >= b).then_some(n)
            }
        });
        let (stability_std, cvar05) = if full {
            let lowest = open.blocks.div_ceil(20) as usize;
            let mut cvar05 = open.block_min;
            if lowest > 1 {
                let first = open.first_block;
                match self.blocks.get(first..first + open.blocks as usize) {
                    // The interval's block means are the run-wide ones: no replay.
                    Some(blocks) if open.aligned && open.blocks_match => {
                        let mut heap = BinaryHeap::with_capacity(lowest + 1);
                        for &b in blocks {
                            keep_lowest(&mut heap, b, lowest);
                        }
                        cvar05 = lowest_mean(heap, lowest);
                    }
                    _ => need.lowest = Some(lowest),
                }
            }
            ((open.block_m2 / open.blocks as f64).max(0.0).sqrt(), cvar05)
        } else {
            (0.0, tail)
        };
        let l2_recovery_steps = open.l2_reference.and_then(|b| {
            if full {
                open.l2_reached.map(|t| t - open.start + 1)
            } else {
                (tail >= b).then_some(n)
            }
        });
        let sum_x = if open.x_is_reward {
            open.sum_r
        } else {
            open.sum_x
        };
        let mean_x = sum_x.value() / n as f64;
        let maintenance = self.last_tail.get(&open.label).map(|p| mean_x - p);
        let forgetting = self.last_tail.get(&open.label).map(|p| p - head);
        self.last_tail.insert(open.label.clone(), tail);
        let ceiling = open.ceiling.value();
        let bound = (open.bound_rows > 0).then(|| open.ceiling.mean(open.ceiling_rows as f64));
        self.intervals.push(IntervalReport {
            index: self.intervals.len(),
            regime: open.label,
            origin: open.origin,
            start: open.start,
            end: open.start + n - 1,
            steps: n,
            mean_reward: open.sum_r.mean(n as f64),
            head,
            tail,
            adaptation_steps,
            recovery_steps,
            recovered: open.reference.map(|_| recovery_steps.is_some()),
            forgetting,
            against: None,
            l2_recovery_steps,
            l2_maintenance: maintenance,
            stability_std,
            cvar05,
            gap: (open.ceiling_rows > 0).then(|| open.gap.mean(open.ceiling_rows as f64)),
            normalized_gap: (open.ceiling_rows > 0 && ceiling != 0.0)
                .then(|| open.gap.ratio(&open.ceiling)),
            bound,
        });
        self.totals.push(Totals {
            sum_r: open.sum_r,
            components: open.components,
            ceiling_rows: open.ceiling_rows,
            bound_rows: open.bound_rows,
            gap: open.gap,
            ceiling: open.ceiling,
        });
        if need.is_some() {
            self.pending += 1;
        }
        self.needs.push(need);
    }

    /// Ends pass 1.
    pub(crate) fn finish_pass1(&mut self) {
        self.close();
        self.rolling.clear();
    }

    /// Pass 2: takes the x_t of the run's next row again. Returns true when this row
    /// finished the last thing an interval needed.
    pub(crate) fn replay(&mut self, x: f64) -> bool {
        let r = &mut self.replay;
        let step = r.step;
        r.step += 1;
        if step > self.intervals[r.interval].end {
            r.interval += 1;
            r.block = Sum::default();
            r.block_len = 0;
            r.lowest.clear();
            self.rolling.clear();
        }
        let k = r.interval;
        let need = &mut self.needs[k];
        if !need.is_some() {
            return false;
        }
        let interval = &mut self.intervals[k];
        if let Some(target) = need.target
            && let Some(m) = self.rolling.push(x)
            && m >= target
        {
            interval.adaptation_steps = step - interval.start + 1;
            need.target = None;
        }
        if let Some(lowest) = need.lowest {
            r.block.add(x);
            r.block_len += 1;
            if r.block_len == self.window {
                keep_lowest(&mut r.lowest, r.block.mean(self.window as f64), lowest);
                r.block = Sum::default();
                r.block_len = 0;
            }
            if step == interval.end {
                interval.cvar05 = lowest_mean(std::mem::take(&mut r.lowest), lowest);
                need.lowest = None;
            }
        }
        if need.is_some() {
            return false;
        }
        self.pending -= 1;
        true
    }

    /// The finished report.
    pub(crate) fn into_report(self) -> RunReport {
        struct Acc {
            steps: u64,
            intervals: u64,
            sum_r: Sum,
            components: BTreeMap<String, Sum>,
            ceiling_rows: u64,
            bound_rows: u64,
            gap: Sum,
            ceiling: Sum,
            forgetting: Vec<f64>,
        }
        let mut labels: BTreeMap<String, Acc> = BTreeMap::new();
        for (i, t) in self.intervals.iter().zip(&self.totals) {
            let a = labels.entry(i.regime.clone()).or_insert_with(|| Acc {
                steps: 0,
                intervals: 0,
                sum_r: Sum::default(),
                components: BTreeMap::new(),
                ceiling_rows: 0,
                bound_rows: 0,
                gap: Sum::default(),
                ceiling: Sum::default(),
                forgetting: Vec::new(),
            });
            a.steps += i.steps;
            a.intervals += 1;
            a.sum_r.merge(t.sum_r);
            for (name, s) in &t.components {
                a.components.entry(name.clone()).or_default().merge(*s);
            }
            a.ceiling_rows += t.ceiling_rows;
            a.bound_rows += t.bound_rows;
            a.gap.merge(t.gap);
            a.ceiling.merge(t.ceiling);
            a.forgetting.extend(i.forgetting);
        }
        let configurations = labels
            .into_iter()
            .map(|(label, a)| {
                let steps = a.steps as f64;
                let ceiling = a.ceiling.value();
                let mut f = Sum::default();
                a.forgetting.iter().for_each(|&v| f.add(v));
                let config = ConfigurationReport {
                    steps: a.steps,
                    intervals: a.intervals,
                    mean_reward: a.sum_r.mean(steps),
                    components: a
                        .components
                        .into_iter()
                        .map(|(k, s)| (k, s.mean(steps)))
                        .collect(),
                    gap: (a.ceiling_rows > 0).then(|| a.gap.mean(a.ceiling_rows as f64)),
                    normalized_gap: (a.ceiling_rows > 0 && ceiling != 0.0)
                        .then(|| a.gap.ratio(&a.ceiling)),
                    bound: (a.bound_rows > 0).then(|| a.ceiling.mean(a.ceiling_rows as f64)),
                    mean_forgetting: (!a.forgetting.is_empty())
                        .then(|| f.mean(a.forgetting.len() as f64)),
                    against: None,
                    performance_recovery: super::l2::performance_recovery(
                        self.intervals.iter().filter(|i| i.regime == label),
                    ),
                    performance_maintenance: super::l2::performance_maintenance(
                        self.intervals.iter().filter(|i| i.regime == label),
                    ),
                };
                (label, config)
            })
            .collect();
        RunReport {
            run_id: self.run_id,
            seed: self.seed,
            algorithm_id: self.algorithm_id,
            task: self.task,
            notify: self.notify,
            steps: self.rows,
            episodes: self.episodes,
            intervals: self.intervals,
            configurations,
            paired: None,
            reliability: super::reliability::run_reliability(&self.blocks),
            blocks: self.blocks,
            curve: self.curve.finish(self.smooth.partial_mean().unwrap_or(0.0)),
        }
    }
}
