//! CSV rows: one record read against the file's header line.

use std::collections::BTreeMap;
use std::path::Path;

use super::serde_path::check_finite;
use crate::regime::{NotifyLevel, Origin};
use crate::trace::error::TraceError;
use crate::trace::row::{BOUND, TraceRow};

pub(super) fn csv_fields(text: &[u8]) -> Result<Vec<String>, csv::Error> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text);
    let mut record = csv::StringRecord::new();
    reader.read_record(&mut record)?;
    Ok(record.iter().map(str::to_string).collect())
}

pub(super) fn parse_csv(
    text: &[u8],
    header: &[String],
    path: &Path,
    line: u64,
) -> Result<TraceRow, TraceError> {
    let err = |m: String| TraceError::parse(path, line, m);
    let fields = csv_fields(text).map_err(|e| err(format!("not a valid CSV record: {e}")))?;
    if fields.len() != header.len() {
        return Err(err(format!(
            "the record has {} fields but the header has {}",
            fields.len(),
            header.len()
        )));
    }
    let get = |name: &str| -> Result<&str, TraceError> {
        header
            .iter()
            .position(|h| h == name)
            .map(|i| fields[i].as_str())
            .ok_or_else(|| {
                err(format!(
                    "the CSV header has no `{name}` column; is this a perennial trace?"
                ))
            })
    };
    let num = |name: &str| -> Result<u64, TraceError> {
        get(name)?
            .parse()
            .map_err(|_| err(format!("column `{name}` must be a non-negative integer")))
    };
    let real = |name: &str, v: &str| -> Result<f64, TraceError> {
        v.parse()
            .map_err(|_| err(format!("column `{name}` must be a number, found `{v}`")))
    };
    let flag = |name: &str| -> Result<bool, TraceError> {
        get(name)?
            .parse()
            .map_err(|_| err(format!("column `{name}` must be true or false")))
    };
    let mut components = BTreeMap::new();
    let mut payout = BTreeMap::new();
    let mut role_rewards = BTreeMap::new();
    for (h, v) in header.iter().zip(&fields) {
        if let Some(name) = h.strip_prefix("c.") {
            components.insert(name.to_string(), real(h, v)?);
        } else if let Some(name) = h.strip_prefix("r.") {
            role_rewards.insert(name.to_string(), real(h, v)?);
        } else if let Some(name) = h.strip_prefix("p.")
            && !v.is_empty()
        {
            payout.insert(name.to_string(), real(h, v)?);
        }
    }
    let text = get("regime_origin")?;
    let origin = Origin::parse(text).ok_or_else(|| {
        err(format!(
            "column `regime_origin` must be initial, scheduled, stochastic or manual, found `{text}`"
        ))
    })?;
    let ceiling = match get("ceiling")? {
        "" => None,
        v => Some(real("ceiling", v)?),
    };
    // Optional: written only for a world with an expected bound.
    let bound = match header
        .iter()
        .position(|h| h == BOUND)
        .map(|i| fields[i].as_str())
    {
        None | Some("") => None,
        Some(v) => Some(real(BOUND, v)?),
    };
    let json = |name: &str| -> Result<Option<serde_json::Value>, TraceError> {
        match header.iter().position(|h| h == name) {
            None => Ok(None),
            Some(i) => serde_json::from_str(&fields[i])
                .map(Some)
                .map_err(|e| err(format!("column `{name}` must be JSON: {e}"))),
        }
    };
    let notify = match header.iter().position(|h| h == "notify") {
        None => NotifyLevel::None,
        Some(i) => fields[i]
            .parse()
            .map_err(|e: String| err(format!("column `notify`: {e}")))?,
    };
    let obs = match json("obs")? {
        None => None,
        Some(v) => Some(serde_json::from_value(v).map_err(|e| {
            err(format!(
                "column `obs` must be an array of numbers, or an object of them by role: {e}"
            ))
        })?),
    };
    let row = TraceRow {
        run_id: get("run_id")?.to_string(),
        seed: num("seed")?,
        algorithm_id: get("algorithm_id")?.to_string(),
        task: get("task")?.to_string(),
        notify,
        step: num("step")?,
        episode: num("episode")?,
        episode_step: num("episode_step")?,
        reward: real("reward", get("reward")?)?,
        components,
        payout,
        regime: get("regime")?.to_string(),
        regime_origin: origin,
        terminated: flag("terminated")?,
        truncated: flag("truncated")?,
        ceiling,
        bound,
        role_rewards,
        obs,
        action: json("action")?,
    };
    check_finite(&row, path, line)?;
    Ok(row)
}
