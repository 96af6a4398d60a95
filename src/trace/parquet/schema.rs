//! The Arrow schema of a Parquet trace and the writer properties of its parts.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::pages::zstd_level;
use crate::regime::Origin;
use crate::trace::row::{BOUND, ROLE_REWARDS, RunIdentity};
use crate::trace::sink::TraceColumns;

pub(super) const ORIGINS: [&str; 4] = ["initial", "scheduled", "stochastic", "manual"];

pub(super) fn origin_key(o: Origin) -> u32 {
    match o {
        Origin::Initial => 0,
        Origin::Scheduled => 1,
        Origin::Stochastic => 2,
        Origin::Manual => 3,
    }
}

pub(super) fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// `schema` with a `notify` column after `task` when the run's level is not `none`.
pub(super) fn with_notify(schema: Schema, identity: &RunIdentity) -> Schema {
    if identity.notify.is_none() {
        return schema;
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.insert(4, Field::new("notify", dict_type(), false));
    Schema::new(fields)
}

/// The Arrow schema of a trace with these columns.
pub fn schema(columns: &TraceColumns) -> Schema {
    let (components, payouts) = (&columns.components, &columns.payouts);
    let mut fields = vec![
        Field::new("run_id", dict_type(), false),
        Field::new("seed", DataType::UInt64, false),
        Field::new("algorithm_id", dict_type(), false),
        Field::new("task", dict_type(), false),
        Field::new("step", DataType::UInt64, false),
        Field::new("episode", DataType::UInt64, false),
        Field::new("episode_step", DataType::UInt64, false),
        Field::new("reward", DataType::Float64, false),
    ];
    fields.extend(
        components
            .iter()
            .map(|c| Field::new(format!("c.{c}"), DataType::Float64, false)),
    );
    fields.extend(
        payouts
            .iter()
            .map(|p| Field::new(format!("p.{p}"), DataType::Float64, true)),
    );
    fields.extend([
        Field::new("regime", dict_type(), false),
        Field::new("regime_origin", dict_type(), false),
        Field::new("terminated", DataType::Boolean, false),
        Field::new("truncated", DataType::Boolean, false),
        Field::new("ceiling", DataType::Float64, true),
    ]);
    if columns.bound {
        fields.push(Field::new(BOUND, DataType::Float64, true));
    }
    if !columns.roles.is_empty() {
        let roles: Vec<Field> = columns
            .roles
            .iter()
            .map(|r| Field::new(r, DataType::Float64, false))
            .collect();
        fields.push(Field::new(
            ROLE_REWARDS,
            DataType::Struct(roles.into()),
            false,
        ));
    }
    if columns.record_transitions && !columns.roles.is_empty() {
        // A roles trace: each role's view and action index, a struct by role.
        let by_role = |item: &dyn Fn() -> DataType| -> DataType {
            let roles: Vec<Field> = columns
                .roles
                .iter()
                .map(|r| Field::new(r, item(), false))
                .collect();
            DataType::Struct(roles.into())
        };
        let view = || DataType::List(Arc::new(Field::new("item", DataType::Float32, true)));
        fields.push(Field::new("obs", by_role(&view), false));
        fields.push(Field::new("action", by_role(&|| DataType::UInt64), false));
    } else if columns.record_transitions {
        fields.push(Field::new(
            "obs",
            DataType::List(Arc::new(Field::new("item", DataType::Float32, true))),
            false,
        ));
        fields.push(Field::new(
            "action",
            DataType::List(Arc::new(Field::new("item", DataType::Float64, true))),
            false,
        ));
    }
    Schema::new(fields)
}

/// The writer properties of a part: its file metadata, and for the columns Parquet's own
/// writers encode (`obs` and `action`, and every column of a part that `--resume` cuts
/// back) zstd, dictionaries for the strings and the (often repeating) rewards, delta
/// encoding for the counters.
pub(super) fn properties(metadata: Vec<KeyValue>) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(zstd_level()))
        .set_key_value_metadata(Some(metadata));
    for counter in ["step", "episode", "episode_step"] {
        let path = ColumnPath::from(counter);
        b = b
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    b.build()
}
