//! The CSV trace writer: maps flattened into `c.<name>`, `p.<name>` and `r.<role>` columns.

use super::line::LineFormat;
use super::row::{BOUND, COLUMNS, RowRecord, RunIdentity};
use super::sink::TraceColumns;

/// Renders rows as CSV records (the header is written by [`header`] when the file is new).
pub(crate) struct CsvWriter {
    /// The identity cells: `run_id`, `seed`, `algorithm_id`, `task`, and `notify` unless
    /// it is `none`.
    identity: Vec<String>,
    record_transitions: bool,
    bound: bool,
    payout_count: usize,
    /// Each role's name as a JSON key (`"warehouse":`), for the `obs` and `action` cells
    /// of a roles trace.
    role_keys: Vec<Vec<u8>>,
    fields: Vec<String>,
}

/// The CSV header for a run with these columns; a `notify` column follows `task` when the
/// run's level is not `none`.
pub(crate) fn header(columns: &TraceColumns, notify: bool) -> Vec<String> {
    let (components, payouts) = (&columns.components, &columns.payouts);
    let (identity, head) = COLUMNS[..8].split_at(4);
    let tail = &COLUMNS[8..];
    let mut h: Vec<String> = identity.iter().map(|s| s.to_string()).collect();
    if notify {
        h.push("notify".into());
    }
    h.extend(head.iter().map(|s| s.to_string()));
    h.extend(components.iter().map(|c| format!("c.{c}")));
    h.extend(payouts.iter().map(|p| format!("p.{p}")));
    // `tail` starts with the `components` and `payout` maps, flattened above.
    h.extend(tail[2..].iter().map(|s| s.to_string()));
    if columns.bound {
        h.push(BOUND.into());
    }
    h.extend(columns.roles.iter().map(|r| format!("r.{r}")));
    if columns.record_transitions {
        h.push("obs".into());
        h.push("action".into());
    }
    h
}

fn fmt_f64(v: f64) -> String {
    if v.is_finite() {
        ryu::Buffer::new().format_finite(v).to_string()
    } else {
        String::new()
    }
}

impl CsvWriter {
    /// The format of a run with this identity and these columns.
    pub(crate) fn new(identity: &RunIdentity, columns: &TraceColumns) -> Self {
        CsvWriter {
            identity: [
                identity.run_id.clone(),
                identity.seed.to_string(),
                identity.algorithm_id.clone(),
                identity.task.clone(),
            ]
            .into_iter()
            .chain((!identity.notify.is_none()).then(|| identity.notify.as_str().to_string()))
            .collect(),
            record_transitions: columns.record_transitions,
            bound: columns.bound,
            role_keys: columns
                .roles
                .iter()
                .map(|r| format!("{}:", serde_json::Value::from(r.as_str())).into_bytes())
                .collect(),
            payout_count: columns.payouts.len(),
            fields: Vec::new(),
        }
    }

    /// Appends `fields` to `buf` as one CSV record (quoted where needed).
    pub(crate) fn encode_fields(fields: &[String], buf: &mut Vec<u8>) -> std::io::Result<()> {
        let mut line = csv::WriterBuilder::new().from_writer(Vec::new());
        line.write_record(fields).map_err(std::io::Error::other)?;
        let bytes = line
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        buf.extend(bytes);
        Ok(())
    }
}

impl LineFormat for CsvWriter {
    fn encode(&mut self, row: &RowRecord<'_>, buf: &mut Vec<u8>) -> std::io::Result<()> {
        self.fields.clear();
        self.fields.extend(self.identity.iter().cloned());
        self.fields.push(row.step.to_string());
        self.fields.push(row.episode.to_string());
        self.fields.push(row.episode_step.to_string());
        self.fields.push(fmt_f64(row.reward));
        self.fields
            .extend(row.components.iter().map(|&v| fmt_f64(v)));
        if row.payouts.is_empty() {
            self.fields
                .extend(std::iter::repeat_n(String::new(), self.payout_count));
        } else {
            self.fields.extend(row.payouts.iter().map(|&v| fmt_f64(v)));
        }
        self.fields.push(row.regime.to_string());
        self.fields.push(row.origin.as_str().to_string());
        self.fields.push(row.terminated.to_string());
        self.fields.push(row.truncated.to_string());
        self.fields
            .push(row.ceiling.map(fmt_f64).unwrap_or_default());
        if self.bound {
            self.fields.push(row.bound.map(fmt_f64).unwrap_or_default());
        }
        self.fields
            .extend(row.role_rewards.iter().map(|&v| fmt_f64(v)));
        if self.record_transitions {
            if row.role_obs.is_empty() {
                let obs = serde_json::to_string(row.obs.unwrap_or_default());
                self.fields.push(obs.unwrap_or_default());
                self.fields
                    .push(row.action_json.unwrap_or("null").to_string());
            } else {
                // Each cell a JSON object by role, as JSON Lines writes them.
                let mut obs = Vec::new();
                let mut action = Vec::new();
                for (i, name) in self.role_keys.iter().enumerate() {
                    let sep: &[u8] = if i == 0 { b"{" } else { b"," };
                    obs.extend(sep);
                    obs.extend(name);
                    super::jsonl::push_f32s(&mut obs, &row.role_obs[i]);
                    action.extend(sep);
                    action.extend(name);
                    action.extend(row.role_actions[i].to_string().as_bytes());
                }
                obs.push(b'}');
                action.push(b'}');
                self.fields.push(String::from_utf8_lossy(&obs).into_owned());
                self.fields
                    .push(String::from_utf8_lossy(&action).into_owned());
            }
        }
        Self::encode_fields(&self.fields, buf)
    }
}
