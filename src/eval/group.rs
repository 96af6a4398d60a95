//! A group of runs compared across seeds: one task, one algorithm, one notify level.

use serde::Serialize;

use crate::regime::NotifyLevel;

/// The runs of one `(task, algorithm_id, notify)`: what the cross-run comparison and the
/// reliability across runs are computed over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunGroup {
    /// The task.
    pub task: String,
    /// The algorithm.
    pub algorithm_id: String,
    /// What the group's agents were told about shifts; serialized only when it is not
    /// `none`.
    #[serde(skip_serializing_if = "NotifyLevel::is_none")]
    pub notify: NotifyLevel,
    /// Number of runs in the group.
    pub runs: usize,
}

impl RunGroup {
    /// The name the group's algorithm goes by across groups: `algorithm_id`, with
    /// `+notify=LEVEL` for a level other than `none`.
    pub fn arm(&self) -> String {
        arm(&self.algorithm_id, self.notify)
    }
}

/// `algorithm_id`, or `algorithm_id+notify=LEVEL` for a level other than `none`.
pub(crate) fn arm(algorithm_id: &str, notify: NotifyLevel) -> String {
    if notify.is_none() {
        algorithm_id.to_string()
    } else {
        format!("{algorithm_id}+notify={notify}")
    }
}
