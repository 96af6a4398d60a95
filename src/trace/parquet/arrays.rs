//! The `obs` and `action` columns of a part as Arrow arrays, for Parquet's own writers: a
//! list per row, or in a roles trace a struct by role.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, PrimitiveBuilder};
use arrow_array::{ArrayRef, ArrowPrimitiveType};
use parquet::errors::ParquetError;

/// A list column: row `i` holds `values[ends[i - 1]..ends[i]]` (from 0 for the first).
pub(super) fn list<T: ArrowPrimitiveType>(values: &[T::Native], ends: &[usize]) -> ArrayRef {
    let mut list = ListBuilder::new(PrimitiveBuilder::<T>::with_capacity(values.len()));
    let mut start = 0;
    for &end in ends {
        list.values().append_slice(&values[start..end]);
        list.append(true);
        start = end;
    }
    Arc::new(list.finish())
}

/// A struct column of `fields` holding `columns`, one per field (an empty part of a roles
/// trace, whose buffers never saw a row, holds empty columns).
pub(super) fn by_role(
    fields: arrow_schema::Fields,
    mut columns: Vec<ArrayRef>,
    rows: usize,
) -> Result<ArrayRef, ParquetError> {
    if columns.len() != fields.len() {
        columns = fields
            .iter()
            .map(|f| arrow_array::new_null_array(f.data_type(), rows))
            .collect();
    }
    let array = arrow_array::StructArray::try_new(fields, columns, None)
        .map_err(|e| ParquetError::General(e.to_string()))?;
    Ok(Arc::new(array))
}
