//! A bounded, evenly spaced sample of a curve of unknown length: the run plot's points.

/// Points kept per run for the plot before halving.
const CURVE_POINTS: usize = 2000;

/// Keeps a bounded, evenly spaced sample of a curve of unknown length.
pub(crate) struct Curve {
    points: Vec<(u64, f64)>,
    stride: u64,
    countdown: u64,
    /// The step of the last point taken.
    last: Option<u64>,
}

impl Curve {
    pub(crate) fn new() -> Self {
        Curve {
            points: Vec::new(),
            stride: 1,
            countdown: 0,
            last: None,
        }
    }

    /// Takes the point of `step`; `y` is asked for only when the point is kept.
    pub(crate) fn push(&mut self, step: u64, y: impl FnOnce() -> f64) {
        if self.countdown == 0 {
            self.points.push((step, y()));
            self.countdown = self.stride;
            if self.points.len() >= CURVE_POINTS {
                // Keeping every other point doubles the spacing and keeps it even.
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.countdown -= 1;
        self.last = Some(step);
    }

    /// How many next steps [`Curve::skip`] may pass over: those before the next kept point.
    pub(crate) fn quiet_room(&self) -> usize {
        usize::try_from(self.countdown).unwrap_or(usize::MAX)
    }

    /// Passes over `m` steps (at most [`Curve::quiet_room`]), the last of them `last_step`,
    /// as `m` calls of [`Curve::push`] that keep no point would.
    pub(crate) fn skip(&mut self, m: usize, last_step: u64) {
        self.countdown -= m as u64;
        self.last = Some(last_step);
    }

    /// The points, the last step's among them; `y` is its value (the curve's last).
    pub(crate) fn finish(mut self, y: f64) -> Vec<(u64, f64)> {
        if let Some(last) = self.last
            && self.points.last().map(|p| p.0) != Some(last)
        {
            self.points.push((last, y));
        }
        self.points
    }
}
