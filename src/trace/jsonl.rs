//! The JSON Lines trace writer: one object per line, columns in DESIGN order.

use super::line::LineFormat;
use super::row::{RowRecord, RunIdentity};
use super::sink::TraceColumns;

/// Renders rows as JSON Lines.
///
/// The run's constant columns and the component keys are rendered once, so a row costs a
/// handful of number formats; strings are escaped by `serde_json`.
pub(crate) struct JsonlWriter {
    prefix: Vec<u8>,
    component_keys: Vec<Vec<u8>>,
    payout_keys: Vec<Vec<u8>>,
    record_transitions: bool,
    bound: bool,
    /// Each role's key in the `role_rewards` map; empty without roles.
    role_keys: Vec<Vec<u8>>,
    last_regime: String,
    last_regime_json: Vec<u8>,
}

fn json_string(s: &str) -> Vec<u8> {
    // Serializing a `str` cannot fail.
    serde_json::to_vec(s).unwrap_or_default()
}

impl JsonlWriter {
    /// The format of a run with this identity and these columns.
    pub(crate) fn new(identity: &RunIdentity, columns: &TraceColumns) -> Self {
        let mut prefix = b"{\"run_id\":".to_vec();
        prefix.extend(json_string(&identity.run_id));
        prefix.extend(b",\"seed\":");
        prefix.extend(identity.seed.to_string().as_bytes());
        prefix.extend(b",\"algorithm_id\":");
        prefix.extend(json_string(&identity.algorithm_id));
        prefix.extend(b",\"task\":");
        prefix.extend(json_string(&identity.task));
        if !identity.notify.is_none() {
            prefix.extend(b",\"notify\":");
            prefix.extend(json_string(identity.notify.as_str()));
        }
        prefix.extend(b",\"step\":");
        let key = |name: &String| {
            let mut k = json_string(name);
            k.push(b':');
            k
        };
        JsonlWriter {
            prefix,
            component_keys: columns.components.iter().map(key).collect(),
            payout_keys: columns.payouts.iter().map(key).collect(),
            record_transitions: columns.record_transitions,
            bound: columns.bound,
            role_keys: columns.roles.iter().map(key).collect(),
            last_regime: String::new(),
            last_regime_json: json_string(""),
        }
    }
}

fn push_f64(buf: &mut Vec<u8>, v: f64) {
    if v.is_finite() {
        buf.extend(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        buf.extend(b"null");
    }
}

fn push_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend(itoa::Buffer::new().format(v).as_bytes());
}

/// `[v, ...]`, each value its shortest decimal form (null when not finite).
pub(super) fn push_f32s(buf: &mut Vec<u8>, values: &[f32]) {
    buf.push(b'[');
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        if v.is_finite() {
            buf.extend(ryu::Buffer::new().format_finite(v).as_bytes());
        } else {
            buf.extend(b"null");
        }
    }
    buf.push(b']');
}

fn push_map(buf: &mut Vec<u8>, keys: &[Vec<u8>], values: &[f64]) {
    buf.push(b'{');
    for (i, (k, &v)) in keys.iter().zip(values).enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend(k);
        push_f64(buf, v);
    }
    buf.push(b'}');
}

impl LineFormat for JsonlWriter {
    fn encode(&mut self, row: &RowRecord<'_>, b: &mut Vec<u8>) -> std::io::Result<()> {
        if row.regime != self.last_regime {
            self.last_regime = row.regime.to_string();
            self.last_regime_json = json_string(row.regime);
        }
        b.extend(&self.prefix);
        push_u64(b, row.step);
        b.extend(b",\"episode\":");
        push_u64(b, row.episode);
        b.extend(b",\"episode_step\":");
        push_u64(b, row.episode_step);
        b.extend(b",\"reward\":");
        push_f64(b, row.reward);
        b.extend(b",\"components\":");
        push_map(b, &self.component_keys, row.components);
        b.extend(b",\"payout\":");
        push_map(b, &self.payout_keys, row.payouts);
        b.extend(b",\"regime\":");
        b.extend(&self.last_regime_json);
        b.extend(b",\"regime_origin\":\"");
        b.extend(row.origin.as_str().as_bytes());
        b.extend(b"\",\"terminated\":");
        b.extend(if row.terminated {
            &b"true"[..]
        } else {
            b"false"
        });
        b.extend(b",\"truncated\":");
        b.extend(if row.truncated {
            &b"true"[..]
        } else {
            b"false"
        });
        b.extend(b",\"ceiling\":");
        match row.ceiling {
            Some(c) => push_f64(b, c),
            None => b.extend(b"null"),
        }
        if self.bound {
            b.extend(b",\"bound\":");
            match row.bound {
                Some(c) => push_f64(b, c),
                None => b.extend(b"null"),
            }
        }
        if !self.role_keys.is_empty() {
            b.extend(b",\"role_rewards\":");
            push_map(b, &self.role_keys, row.role_rewards);
        }
        if self.record_transitions && !row.role_obs.is_empty() {
            b.extend(b",\"obs\":{");
            for (i, (k, view)) in self.role_keys.iter().zip(row.role_obs).enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                b.extend(k);
                push_f32s(b, view);
            }
            b.extend(b"},\"action\":{");
            for (i, (k, &a)) in self.role_keys.iter().zip(row.role_actions).enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                b.extend(k);
                push_u64(b, a as u64);
            }
            b.push(b'}');
        } else if self.record_transitions {
            b.extend(b",\"obs\":");
            push_f32s(b, row.obs.unwrap_or_default());
            b.extend(b",\"action\":");
            b.extend(row.action_json.unwrap_or("null").as_bytes());
        }
        b.extend(b"}\n");
        Ok(())
    }
}
