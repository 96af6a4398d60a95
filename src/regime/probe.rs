//! `RegimeProbe`: a shared handle to the regime label in force, for privileged reference agents.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The label of the regime in force, shared between a harness that publishes it and a
/// reference agent that reads it.
///
/// The harness is the only writer: given a probe with
/// [`Harness::publish_regime`](crate::harness::Harness::publish_regime), it publishes the
/// label at the start of a run, after every shift and when a run is resumed. An agent that
/// holds a clone sees the label of the step it is acting on. This is **privileged**
/// information: the observation never carries the regime, and a learner is never told
/// about shifts (see [`crate::harness::Agent`]). Only reference agents (the enterprise
/// world's `oracle`) read a probe; their traces are yardsticks, not results.
///
/// Reading is one atomic load while nothing changes ([`RegimeProbe::generation`]); the
/// label itself is behind a mutex, read once per change.
///
/// # Examples
///
/// ```
/// use perennial::regime::RegimeProbe;
///
/// let probe = RegimeProbe::default();
/// let seen_by_agent = probe.clone();
/// assert_eq!(seen_by_agent.label(), None);
/// probe.publish("storm");
/// let g = seen_by_agent.generation();
/// assert_eq!(seen_by_agent.label().as_deref(), Some("storm"));
/// probe.publish("storm");
/// assert_eq!(seen_by_agent.generation(), g, "the same label again changes nothing");
/// ```
#[derive(Clone, Debug, Default)]
pub struct RegimeProbe(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    generation: AtomicU64,
    label: Mutex<Option<String>>,
}

impl RegimeProbe {
    /// A probe on which nothing is published yet.
    pub fn new() -> Self {
        RegimeProbe::default()
    }

    /// Publishes `label` as the regime in force; the generation moves on only when the
    /// label differs from the one published last.
    pub fn publish(&self, label: &str) {
        let mut current = self.0.label.lock().unwrap_or_else(PoisonError::into_inner);
        if current.as_deref() != Some(label) {
            *current = Some(label.to_string());
            self.0.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// The label published last, or `None` before the first.
    pub fn label(&self) -> Option<String> {
        self.0
            .label
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A counter that moves on whenever a new label is published: compare it with the
    /// last value seen to know, with one atomic load, whether to read the label again.
    pub fn generation(&self) -> u64 {
        self.0.generation.load(Ordering::Acquire)
    }
}
