//! The progress bar on a terminal.

use std::io::IsTerminal;

use crate::harness::{DynHarness, HarnessError, RunSummary};

/// Runs `harness`, with a progress bar when stderr is a terminal.
pub(super) fn drive(
    mut harness: Box<dyn DynHarness>,
    steps: u64,
) -> Result<RunSummary, HarnessError> {
    if !std::io::stderr().is_terminal() {
        return harness.run_boxed();
    }
    let bar = indicatif::ProgressBar::new(steps);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {human_pos}/{human_len} steps  {rate}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} steps/s", state.per_sec());
            },
        ),
    );
    bar.set_position(harness.steps_done());
    let b = bar.clone();
    harness.set_progress(Box::new(move |n| b.set_position(n)));
    let result = harness.run_boxed();
    bar.finish_and_clear();
    result
}
