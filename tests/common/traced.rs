//! A harness driven hour by hour through the LLM tool surface.

use perennial::agents::BaseStockAgent;
use perennial::harness::{Harness, HarnessError};
use perennial::morpheus::Morpheus;
use perennial::morpheus::api::{Hour, Stepper};

/// The harness as a [`Stepper`]: every hour a trace row.
pub struct Traced(pub Harness<Morpheus, BaseStockAgent>);

impl Stepper for Traced {
    type Error = HarnessError;

    fn world(&self) -> &Morpheus {
        self.0.env()
    }

    fn step_hour(&mut self, action: usize) -> Result<Hour, HarnessError> {
        let o = self.0.step_with(action)?;
        Ok(Hour {
            reward: o.reward,
            ended: !o.go_on,
        })
    }
}
