// SPDX-License-Identifier: BSD-3-Clause
//! Per-responder health, the hedge delay learnt from round trips, and the
//! hedge budget: the state of doc/clients.md, "Availability: deadlines,
//! hedging, health", shared by every call of one client.

use std::time::{Duration, Instant};

/// Round trips kept for the hedge delay.
const RTT_WINDOW: usize = 256;
/// Samples before the delay is learnt (10 ms until then).
const RTT_MIN_SAMPLES: usize = 16;
/// The delay is recomputed every this many samples (never a sort per call).
const RTT_RECOMPUTE: u32 = 64;
const HEDGE_DEFAULT: Duration = Duration::from_millis(10);
const HEDGE_MAX: Duration = Duration::from_millis(100);
/// The hedge budget's bucket: capacity and the tokens it starts with.
pub(crate) const BUDGET_CAPACITY: f64 = 10.0;
/// A responder unhealthy for a status (NO_LEASE, CLOCK_UNSAFE, REFUSED) is
/// not probed before this has passed since its last such status: it answers
/// INFO, so a probe would make it healthy again at once, and every call would
/// ask it first only to hear the status again.
pub(crate) const STATUS_HOLD: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub(crate) struct Resp {
    pub healthy: bool,
    pub hold_until: Option<Instant>,
    /// Its last status + [`STATUS_HOLD`]: not probed before.
    pub probe_after: Option<Instant>,
    pub reason: String,
}

#[derive(Debug)]
pub(crate) struct Health {
    pub resp: Vec<Resp>,
    rtt: Vec<u32>,
    rtt_total: usize,
    since_recompute: u32,
    p99: Duration,
    tokens: f64,
    /// A probe thread runs (started on demand, ends when nothing is unhealthy).
    pub prober: bool,
}

impl Health {
    pub fn new(n: usize) -> Health {
        Health {
            resp: vec![Resp { healthy: true, hold_until: None, probe_after: None, reason: String::new() }; n],
            rtt: Vec::with_capacity(RTT_WINDOW),
            rtt_total: 0,
            since_recompute: 0,
            p99: HEDGE_DEFAULT,
            tokens: BUDGET_CAPACITY,
            prober: false,
        }
    }

    fn eligible(&self, i: usize, now: Instant) -> bool {
        let r = &self.resp[i];
        r.healthy && r.hold_until.map_or(true, |h| h <= now)
    }

    /// Healthy, held off by RETRY_AFTER at `now`.
    pub fn held_off(&self, i: usize, now: Instant) -> bool {
        self.resp[i].healthy && !self.eligible(i, now)
    }

    /// The order for a call: eligible responders in configured order, then
    /// held-off ones (earliest `hold_until` first), then unhealthy ones.
    pub fn order(&self, now: Instant) -> Vec<usize> {
        let n = self.resp.len();
        let mut out: Vec<usize> = (0..n).filter(|&i| self.eligible(i, now)).collect();
        let mut held: Vec<usize> = (0..n).filter(|&i| self.resp[i].healthy && !self.eligible(i, now)).collect();
        held.sort_by_key(|&i| self.resp[i].hold_until);
        out.extend(held);
        out.extend((0..n).filter(|&i| !self.resp[i].healthy));
        out
    }

    /// The hedge delay: the 99th percentile of the last 256 successful
    /// round trips, at least `hedge_min`, at most 100 ms; 10 ms with fewer
    /// than 16 samples.
    pub fn hedge_delay(&self, hedge_min: Duration) -> Duration {
        if self.rtt_total < RTT_MIN_SAMPLES {
            return HEDGE_DEFAULT;
        }
        self.p99.max(hedge_min).min(HEDGE_MAX)
    }

    pub fn record_rtt(&mut self, rtt: Duration) {
        let us = rtt.as_micros().min(u128::from(u32::MAX)) as u32;
        if self.rtt.len() < RTT_WINDOW {
            self.rtt.push(us);
        } else {
            self.rtt[self.rtt_total % RTT_WINDOW] = us;
        }
        self.rtt_total += 1;
        self.since_recompute += 1;
        if self.rtt_total == RTT_MIN_SAMPLES || self.since_recompute >= RTT_RECOMPUTE {
            self.since_recompute = 0;
            let mut v = self.rtt.clone();
            v.sort_unstable();
            let k = ((v.len() * 99 + 99) / 100).max(1) - 1;
            self.p99 = Duration::from_micros(u64::from(v[k.min(v.len() - 1)]));
        }
    }

    /// A call adds `pct / 100` of a token (at most the capacity).
    pub fn add_budget(&mut self, pct: u32) {
        self.tokens = (self.tokens + f64::from(pct) / 100.0).min(BUDGET_CAPACITY);
    }

    /// Takes a token for a hedge, if there is one.
    pub fn take_token(&mut self) -> bool {
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Marks a responder unhealthy; true when it was healthy.
    pub fn mark_unhealthy(&mut self, i: usize, reason: &str) -> bool {
        let r = &mut self.resp[i];
        r.reason = reason.to_string();
        std::mem::replace(&mut r.healthy, false)
    }

    /// Marks a responder unhealthy for a status it answered `at` (NO_LEASE,
    /// CLOCK_UNSAFE, REFUSED): not probed before `at` + [`STATUS_HOLD`].
    pub fn mark_status(&mut self, i: usize, reason: &str, at: Instant) {
        self.resp[i].probe_after = Some(at + STATUS_HOLD);
        self.mark_unhealthy(i, reason);
    }

    /// It answered OK: healthy, and an older status no longer holds its probe.
    pub fn mark_healthy(&mut self, i: usize) {
        let r = &mut self.resp[i];
        r.healthy = true;
        r.probe_after = None;
        r.reason.clear();
    }

    /// Whether the probe may ask it at `now` (not held by its last status).
    pub fn probe_due(&self, i: usize, now: Instant) -> bool {
        self.resp[i].probe_after.map_or(true, |t| t <= now)
    }

    /// A valid INFO reply to a probe: healthy, unless a status it answered since holds it.
    pub fn probe_answered(&mut self, i: usize, now: Instant) {
        if self.probe_due(i, now) {
            let r = &mut self.resp[i];
            r.healthy = true;
            r.reason.clear();
        }
    }

    pub fn hold(&mut self, i: usize, until: Instant, reason: &str) {
        let r = &mut self.resp[i];
        r.hold_until = Some(until);
        r.reason = reason.to_string();
    }

    pub fn any_unhealthy(&self) -> bool {
        self.resp.iter().any(|r| !r.healthy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_eligible_then_held_then_unhealthy() {
        let mut h = Health::new(4);
        let now = Instant::now();
        h.mark_unhealthy(0, "refused");
        h.hold(1, now + Duration::from_secs(2), "RETRY_AFTER");
        h.hold(3, now + Duration::from_secs(1), "RETRY_AFTER");
        assert_eq!(h.order(now), vec![2, 3, 1, 0]);
        assert_eq!(h.order(now + Duration::from_secs(3)), vec![1, 2, 3, 0]);
    }

    #[test]
    fn status_holds_the_probe() {
        let mut h = Health::new(2);
        let now = Instant::now();
        h.mark_status(0, "answered REFUSED", now);
        h.mark_unhealthy(1, "refused");
        assert!(!h.probe_due(0, now) && !h.probe_due(0, now + STATUS_HOLD / 2) && h.probe_due(0, now + STATUS_HOLD));
        assert!(h.probe_due(1, now));
        h.probe_answered(0, now + STATUS_HOLD / 2);
        assert!(!h.resp[0].healthy, "an INFO reply within the hold made it healthy");
        h.probe_answered(0, now + STATUS_HOLD);
        assert!(h.resp[0].healthy);
        h.mark_status(0, "answered NO_LEASE", now);
        h.mark_healthy(0);
        h.mark_unhealthy(0, "no reply in 50 ms");
        assert!(h.probe_due(0, now), "an OK reply left the older status holding the probe");
    }

    #[test]
    fn hedge_delay_learnt_and_bounded() {
        let mut h = Health::new(1);
        let min = Duration::from_millis(2);
        assert_eq!(h.hedge_delay(min), HEDGE_DEFAULT);
        for _ in 0..16 {
            h.record_rtt(Duration::from_micros(300));
        }
        assert_eq!(h.hedge_delay(min), min);
        for _ in 0..256 {
            h.record_rtt(Duration::from_millis(40));
        }
        assert_eq!(h.hedge_delay(min), Duration::from_millis(40));
        for _ in 0..256 {
            h.record_rtt(Duration::from_millis(400));
        }
        assert_eq!(h.hedge_delay(min), HEDGE_MAX);
    }

    #[test]
    fn budget_starts_full_and_refills_by_pct() {
        let mut h = Health::new(2);
        for _ in 0..10 {
            assert!(h.take_token());
        }
        assert!(!h.take_token());
        for _ in 0..19 {
            h.add_budget(5);
        }
        assert!(!h.take_token());
        h.add_budget(5);
        h.add_budget(5);
        assert!(h.take_token());
    }
}
