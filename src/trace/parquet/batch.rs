//! A part being read and its rows decoded into typed columns ([`Batch`]); which columns
//! a reader needs ([`Projection`], [`Columns`]).

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{Array, BooleanArray, Float64Array, ListArray, RecordBatch, StringArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;

use crate::trace::error::TraceError;
use crate::trace::row::{BOUND, COLUMNS, ROLE_REWARDS};

/// The run a part's rows belong to, by the manifest perennial stores in every part's
/// metadata: its run id, seed and agent.
#[derive(Debug, PartialEq, serde::Deserialize)]
pub(super) struct PartRun {
    pub(super) run_id: String,
    pub(super) seed: u64,
    pub(super) agent: String,
}

/// A string column, plain or dictionary-encoded.
pub(super) enum Strings {
    Dict(arrow_array::DictionaryArray<Int32Type>, StringArray),
    Plain(StringArray),
    Large(arrow_array::LargeStringArray),
}

impl Strings {
    /// True when every row holds the same string as row 0 (by dictionary key, so a
    /// dictionary that repeats a value reads as not uniform).
    pub(super) fn uniform(&self) -> bool {
        match self {
            Strings::Dict(keys, _) => {
                let keys: &[i32] = keys.keys().values();
                // Without an early exit, so the comparison vectorizes.
                keys.first().is_none_or(|&k0| every(keys, |&k| k == k0))
            }
            Strings::Plain(a) => (0..a.len()).all(|i| a.value(i) == a.value(0)),
            Strings::Large(a) => (0..a.len()).all(|i| a.value(i) == a.value(0)),
        }
    }

    /// True when every row's string passes `ok`: each dictionary value checked once.
    pub(super) fn all(&self, ok: impl Fn(&str) -> bool) -> bool {
        match self {
            Strings::Dict(keys, values) => {
                let good: Vec<bool> = (0..values.len()).map(|v| ok(values.value(v))).collect();
                keys.keys()
                    .values()
                    .iter()
                    .all(|&k| usize::try_from(k).ok().and_then(|k| good.get(k)) == Some(&true))
            }
            Strings::Plain(a) => (0..a.len()).all(|i| ok(a.value(i))),
            Strings::Large(a) => (0..a.len()).all(|i| ok(a.value(i))),
        }
    }

    /// The first row at or after `from` (at least 1) whose string may differ from the row
    /// before it, or the batch's length: dictionary keys are compared, not strings.
    pub(super) fn run_end(&self, from: usize) -> usize {
        match self {
            Strings::Dict(keys, _) => {
                let keys: &[i32] = keys.keys().values();
                let Some(&k0) = from.checked_sub(1).and_then(|p| keys.get(p)) else {
                    return from.min(keys.len());
                };
                keys[from..]
                    .iter()
                    .position(|&k| k != k0)
                    .map_or(keys.len(), |p| from + p)
            }
            Strings::Plain(a) => (from..a.len())
                .find(|&i| i == 0 || a.value(i) != a.value(i - 1))
                .unwrap_or(a.len()),
            Strings::Large(a) => (from..a.len())
                .find(|&i| i == 0 || a.value(i) != a.value(i - 1))
                .unwrap_or(a.len()),
        }
    }

    pub(super) fn get(&self, i: usize) -> &str {
        match self {
            Strings::Dict(keys, values) => {
                let k = keys.keys().value(i);
                if k >= 0 && (k as usize) < values.len() {
                    values.value(k as usize)
                } else {
                    ""
                }
            }
            Strings::Plain(a) => a.value(i),
            Strings::Large(a) => a.value(i),
        }
    }
}

/// An integer column: unsigned, or signed with values checked when read.
pub(super) enum Ints {
    U(arrow_array::UInt64Array),
    I(arrow_array::Int64Array),
}

impl Ints {
    pub(super) fn unsigned(&self) -> Option<&[u64]> {
        match self {
            Ints::U(a) => Some(a.values()),
            Ints::I(_) => None,
        }
    }

    pub(super) fn get(&self, i: usize) -> Option<u64> {
        match self {
            Ints::U(a) => Some(a.value(i)),
            Ints::I(a) => u64::try_from(a.value(i)).ok(),
        }
    }
}

/// One batch's columns, downcast once.
pub(super) struct Batch {
    pub(super) len: usize,
    pub(super) run_id: Strings,
    pub(super) seed: Ints,
    pub(super) algorithm_id: Strings,
    pub(super) task: Strings,
    pub(super) notify: Option<Strings>,
    pub(super) step: Ints,
    pub(super) episode: Ints,
    /// `None` when the projection leaves it out (it is then 0 in every row).
    pub(super) episode_step: Option<Ints>,
    pub(super) reward: Float64Array,
    pub(super) components: Vec<Float64Array>,
    pub(super) payouts: Vec<Float64Array>,
    pub(super) regime: Strings,
    pub(super) origin: Strings,
    /// `None` (false in every row) when the projection leaves them out.
    pub(super) terminated: Option<BooleanArray>,
    pub(super) truncated: Option<BooleanArray>,
    pub(super) ceiling: Option<Float64Array>,
    /// `None` for a trace without a `bound` column (null in every row).
    pub(super) bound: Option<Float64Array>,
    /// Each role's name and rewards; empty for a trace without roles.
    pub(super) role_rewards: Vec<(String, Float64Array)>,
    pub(super) obs: Option<Transitions>,
    pub(super) action: Option<Transitions>,
}

/// A transitions column (`obs` or `action`): a list per row, or in a roles trace a struct
/// with one column per role.
pub(super) enum Transitions {
    /// One list per row.
    List(ListArray),
    /// Each role's name and column, in the struct's order.
    Roles(Vec<(String, arrow_array::ArrayRef)>),
}

/// Which columns a [`ParquetSource`] decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Projection {
    /// What the metrics read: every column but `episode_step`, `terminated`, `truncated`,
    /// `obs` and `action`, which then read as 0, false and absent. Eval's column-wise pass.
    Metrics,
    /// Every trace column but `obs` and `action` ([`crate::trace::TraceReader::next_ref`]).
    Rows,
    /// Every column, `obs` and `action` included (the owned rows).
    Transitions,
}

impl Projection {
    pub(super) fn reads(self, column: &str) -> bool {
        match column {
            "episode_step" | "terminated" | "truncated" => self != Projection::Metrics,
            "obs" | "action" => self == Projection::Transitions,
            _ => true,
        }
    }
}

/// The current batch as plain slices, for a reader that goes column by column (eval's
/// pass 1), given only when every row of the batch reads as a valid row: one run identity
/// throughout (the same dictionary key in each identity column, the same seed), unsigned
/// counters, finite rewards, components, payouts and ceilings, a known `regime_origin`
/// and `notify` in every row. Otherwise such a reader takes the batch row by row
/// ([`ParquetSource::row_at`]), which finds the error or the odd row.
pub(crate) struct Columns<'a> {
    /// Rows in the batch.
    pub(crate) len: usize,
    pub(crate) step: &'a [u64],
    pub(crate) episode: &'a [u64],
    pub(crate) reward: &'a [f64],
    /// Each component's name and values.
    pub(crate) components: Vec<(&'a str, &'a [f64])>,
    /// The payout columns (a row's payout is set where the column is not null).
    pub(crate) payouts: Vec<&'a Float64Array>,
    /// The ceilings (null where a row has none); `None` without a ceiling column.
    pub(crate) ceiling: Option<&'a Float64Array>,
    /// The expected bounds (null where a row has none); `None` without a bound column.
    pub(crate) bound: Option<&'a Float64Array>,
    pub(super) regime: &'a Strings,
}

impl Columns<'_> {
    /// The first row at or after `from` (at least 1) whose regime label may differ from
    /// the row before it, or `len`. A dictionary key is compared, not the label: a
    /// dictionary holding one label twice shows a change that is none.
    pub(crate) fn regime_run_end(&self, from: usize) -> usize {
        self.regime.run_end(from)
    }
}

/// True when `ok` holds for every value: all of them tested, without an early exit, so the
/// loop vectorizes (a batch passes in the common case).
pub(super) fn every<T>(values: &[T], ok: impl Fn(&T) -> bool) -> bool {
    values.iter().fold(true, |all, v| all & ok(v))
}

/// True when every value that is not null is finite and within
/// [`MAX_REWARD`](crate::limits::MAX_REWARD).
pub(super) fn finite(column: &Float64Array) -> bool {
    use crate::limits::reward_in_range;
    let values: &[f64] = column.values();
    every(values, |&v| reward_in_range(v))
        || (column.null_count() > 0
            && values
                .iter()
                .enumerate()
                .all(|(i, &v)| reward_in_range(v) || column.is_null(i)))
}

/// The DESIGN columns but `components` and `payout`, which are one `c.*` / `p.*` column per
/// term here: every trace has them, `ceiling` aside (it may be left out).
pub(super) fn required() -> impl Iterator<Item = &'static str> {
    COLUMNS
        .into_iter()
        .filter(|c| !matches!(*c, "components" | "payout"))
}

pub(super) struct Part {
    pub(super) path: PathBuf,
    pub(super) reader: ParquetRecordBatchReader,
    pub(super) components: Vec<String>,
    pub(super) payouts: Vec<String>,
    pub(super) action_scalar: bool,
    pub(super) batch: Option<Batch>,
    /// Index of the current row in `batch`.
    pub(super) row: usize,
    /// Rows of the part before `batch`.
    pub(super) before: u64,
    /// The run its metadata's manifest names, when perennial wrote it.
    pub(super) run: Option<PartRun>,
}

pub(super) fn schema_error(path: &Path, message: String) -> TraceError {
    TraceError::parse(
        path,
        0,
        format!(
            "not a perennial trace: {message}; a trace has the columns of `perennial run --format parquet`"
        ),
    )
}

/// An action value as JSON: whole numbers as integers, as the JSON Lines writer prints
/// discrete actions.
pub(super) fn number(v: f64) -> serde_json::Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        if v >= 0.0 {
            serde_json::Value::from(v as u64)
        } else {
            serde_json::Value::from(v as i64)
        }
    } else {
        serde_json::Number::from_f64(v)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null)
    }
}

pub(super) fn to_batch(batch: &RecordBatch, part: &Part) -> Result<Batch, TraceError> {
    let path = &part.path;
    let col = |name: &str| batch.column_by_name(name);
    let need = |name: &str| {
        col(name).ok_or_else(|| schema_error(path, format!("it has no column `{name}`")))
    };
    let kind = |name: &str, want: &str, got: &DataType| {
        schema_error(
            path,
            format!("column `{name}` is {got}, where a trace has {want}"),
        )
    };
    let no_nulls = |name: &str, a: &dyn Array| {
        if a.null_count() > 0 {
            let first = (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0);
            Err(TraceError::parse(
                path,
                part.before + first as u64 + 1,
                format!("column `{name}` is null"),
            ))
        } else {
            Ok(())
        }
    };
    // The column `name`, which may hold no null.
    let filled = |name: &str| -> Result<_, TraceError> {
        let a = need(name)?;
        no_nulls(name, a.as_ref())?;
        Ok(a)
    };
    let strings = |name: &str| -> Result<Strings, TraceError> {
        let a = filled(name)?;
        match a.data_type() {
            DataType::Utf8 => Ok(Strings::Plain(a.as_string::<i32>().clone())),
            DataType::LargeUtf8 => Ok(Strings::Large(a.as_string::<i64>().clone())),
            DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
                let d = a.as_dictionary::<Int32Type>().clone();
                let values = d.values().as_string::<i32>().clone();
                Ok(Strings::Dict(d, values))
            }
            other => Err(kind(name, "strings", other)),
        }
    };
    let ints = |name: &str| -> Result<Ints, TraceError> {
        let a = filled(name)?;
        match a.data_type() {
            DataType::UInt64 => Ok(Ints::U(a.as_primitive::<UInt64Type>().clone())),
            DataType::Int64 => Ok(Ints::I(a.as_primitive::<Int64Type>().clone())),
            other => Err(kind(name, "64-bit integers", other)),
        }
    };
    let floats = |name: &str, nullable: bool| -> Result<Float64Array, TraceError> {
        let a = if nullable { need(name)? } else { filled(name)? };
        a.as_primitive_opt::<Float64Type>()
            .cloned()
            .ok_or_else(|| kind(name, "float64", a.data_type()))
    };
    let bools = |name: &str| -> Result<BooleanArray, TraceError> {
        let a = filled(name)?;
        a.as_boolean_opt()
            .cloned()
            .ok_or_else(|| kind(name, "booleans", a.data_type()))
    };
    let list = |name: &str| -> Result<Option<Transitions>, TraceError> {
        let Some(a) = col(name) else {
            return Ok(None);
        };
        if let Some(list) = a.as_list_opt::<i32>() {
            return Ok(Some(Transitions::List(list.clone())));
        }
        let s = a.as_struct_opt().ok_or_else(|| {
            kind(
                name,
                "lists of numbers, or a struct of them by role",
                a.data_type(),
            )
        })?;
        no_nulls(name, a.as_ref())?;
        let roles = s
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .zip(s.columns().iter().cloned());
        Ok(Some(Transitions::Roles(roles.collect())))
    };
    Ok(Batch {
        len: batch.num_rows(),
        run_id: strings("run_id")?,
        seed: ints("seed")?,
        algorithm_id: strings("algorithm_id")?,
        task: strings("task")?,
        notify: match col("notify") {
            None => None,
            Some(_) => Some(strings("notify")?),
        },
        step: ints("step")?,
        episode: ints("episode")?,
        episode_step: match col("episode_step") {
            None => None,
            Some(_) => Some(ints("episode_step")?),
        },
        reward: floats("reward", false)?,
        components: part
            .components
            .iter()
            .map(|c| floats(&format!("c.{c}"), false))
            .collect::<Result<_, _>>()?,
        payouts: part
            .payouts
            .iter()
            .map(|p| floats(&format!("p.{p}"), true))
            .collect::<Result<_, _>>()?,
        regime: strings("regime")?,
        origin: strings("regime_origin")?,
        terminated: match col("terminated") {
            None => None,
            Some(_) => Some(bools("terminated")?),
        },
        truncated: match col("truncated") {
            None => None,
            Some(_) => Some(bools("truncated")?),
        },
        ceiling: match col("ceiling") {
            None => None,
            Some(_) => Some(floats("ceiling", true)?),
        },
        bound: match col(BOUND) {
            None => None,
            Some(_) => Some(floats(BOUND, true)?),
        },
        role_rewards: match col(ROLE_REWARDS) {
            None => Vec::new(),
            Some(a) => {
                let s = a
                    .as_struct_opt()
                    .ok_or_else(|| kind(ROLE_REWARDS, "a struct of float64", a.data_type()))?;
                no_nulls(ROLE_REWARDS, a.as_ref())?;
                s.fields()
                    .iter()
                    .zip(s.columns())
                    .map(|(f, c)| {
                        c.as_primitive_opt::<Float64Type>()
                            .map(|v| (f.name().clone(), v.clone()))
                            .ok_or_else(|| kind(ROLE_REWARDS, "a struct of float64", a.data_type()))
                    })
                    .collect::<Result<_, _>>()?
            }
        },
        obs: list("obs")?,
        action: list("action")?,
    })
}
