//! Column chunks of a Parquet part encoded by the trace writer itself, straight from its
//! typed row buffers.
//!
//! Parquet's own column writers take Arrow arrays, hash every float into a dictionary,
//! keep page statistics and write levels value by value; the trace needs none of that for
//! its number, flag and label columns, whose shapes it knows. Each chunk here is a run of
//! v1 data pages of at most [`PAGE_ROWS`] rows (one page for a label column), each
//! zstd-compressed, with the CRC-32 of its bytes in its header, and no statistics:
//!
//! | column | encoding |
//! |---|---|
//! | counters (`step`, `episode`, `episode_step`) | `DELTA_BINARY_PACKED` |
//! | floats (`reward`, `c.*`, `p.*`, `ceiling`) | `PLAIN`, definition levels as RLE runs when nullable |
//! | flags (`terminated`, `truncated`) | `PLAIN` (bit-packed) |
//! | labels (identity, `regime`, `regime_origin`) | a `PLAIN` dictionary page and RLE runs of keys |
//!
//! Every reader decodes these as it decodes the chunks Parquet's writer makes: the logical
//! schema (names, types, nullability, the Arrow schema in the footer) is the same.

use std::ops::Range;

use arrow_buffer::ToByteSlice;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::schema::types::ColumnDescPtr;

/// Rows of a data page at most: half a megabyte of a float column, so a reader decodes a
/// part a page at a time in little memory.
pub(super) const PAGE_ROWS: usize = 1 << 16;

/// The zstd level of every page: the fastest; the trace's columns are either nearly
/// constant or delta-packed already, and level 3 saved about 1% of their bytes.
pub(super) const ZSTD_LEVEL: i32 = 1;

pub(crate) fn zstd_level() -> ZstdLevel {
    ZstdLevel::try_new(ZSTD_LEVEL).unwrap_or_default()
}

/// Runs of equal keys, in row order: `(key, rows)`.
pub(super) type Runs = Vec<(u32, u32)>;

/// Appends `key` to `runs`, lengthening the last run when it holds the same key.
pub(super) fn push_run(runs: &mut Runs, key: u32) {
    match runs.last_mut() {
        Some((k, n)) if *k == key => *n += 1,
        _ => runs.push((key, 1)),
    }
}

/// Encodes column chunks, reusing its zstd context and scratch buffer from page to page.
pub(super) struct ChunkEncoder {
    zstd: zstd::bulk::Compressor<'static>,
    raw: Vec<u8>,
}

/// A finished column chunk: its bytes and what the row group records of it.
pub(super) type Chunk = (Bytes, ColumnCloseResult);

fn external(e: std::io::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl ChunkEncoder {
    /// An encoder at [`ZSTD_LEVEL`].
    ///
    /// # Errors
    ///
    /// zstd cannot make a compression context.
    pub(super) fn new() -> Result<Self, ParquetError> {
        Ok(ChunkEncoder {
            zstd: zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(external)?,
            raw: Vec::new(),
        })
    }

    /// A counter column, `DELTA_BINARY_PACKED`.
    pub(super) fn counters(
        &mut self,
        descr: ColumnDescPtr,
        values: &[u64],
    ) -> Result<Chunk, ParquetError> {
        let pages = self.data_pages(values.len(), |rows, raw| delta_pack(&values[rows], raw));
        self.chunk(descr, None, Encoding::DELTA_BINARY_PACKED, pages)
    }

    /// A float column, `PLAIN`; `valid` marks the rows that hold a value in a nullable
    /// column (the others' values are not written).
    pub(super) fn floats(
        &mut self,
        descr: ColumnDescPtr,
        values: &[f64],
        valid: Option<&[bool]>,
    ) -> Result<Chunk, ParquetError> {
        let pages = self.data_pages(values.len(), |rows, raw| {
            let values = &values[rows.clone()];
            let Some(valid) = valid else {
                raw.extend_from_slice(values.to_byte_slice());
                return;
            };
            let valid = &valid[rows];
            levels(valid, raw);
            if valid.iter().all(|&ok| ok) {
                raw.extend_from_slice(values.to_byte_slice());
                return;
            }
            for (v, _) in values.iter().zip(valid).filter(|&(_, &ok)| ok) {
                raw.extend_from_slice(&v.to_le_bytes());
            }
        });
        self.chunk(descr, None, Encoding::PLAIN, pages)
    }

    /// A boolean column, `PLAIN`: one bit per row, the first row in the lowest bit.
    pub(super) fn flags(
        &mut self,
        descr: ColumnDescPtr,
        values: &[bool],
    ) -> Result<Chunk, ParquetError> {
        let pages = self.data_pages(values.len(), |rows, raw| {
            raw.extend(values[rows].chunks(8).map(|byte| {
                byte.iter()
                    .enumerate()
                    .fold(0u8, |acc, (i, &b)| acc | (u8::from(b) << i))
            }));
        });
        self.chunk(descr, None, Encoding::PLAIN, pages)
    }

    /// A dictionary column written from its keys: one `PLAIN` dictionary page holding
    /// `dict` (`len` values) and one data page of RLE runs of keys, a few bytes however
    /// many rows the runs cover.
    pub(super) fn keyed(
        &mut self,
        descr: ColumnDescPtr,
        dict: &[u8],
        len: usize,
        runs: &Runs,
    ) -> Result<Chunk, ParquetError> {
        // The RLE / bit-packing hybrid: the key width, then per run a ULEB128 header (the
        // run length, shifted left once) and the key in as few bytes as the width needs.
        let width = (usize::BITS - len.saturating_sub(1).leading_zeros()) as u8;
        let key_bytes = usize::from(width).div_ceil(8);
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        raw.push(width);
        let mut rows: u64 = 0;
        for &(key, n) in runs {
            rows += u64::from(n);
            uleb128(u64::from(n) << 1, &mut raw);
            raw.extend_from_slice(&key.to_le_bytes()[..key_bytes]);
        }
        let page = self.page(&raw, rows);
        self.raw = raw;
        let dict = self.compress(dict).map(|buf| (buf, dict.len(), len));
        self.chunk(descr, Some(dict?), Encoding::RLE_DICTIONARY, vec![page])
    }

    /// The data pages of `rows` rows, [`PAGE_ROWS`] at most each, `encode` writing the
    /// levels and values of a range of rows into an empty buffer.
    fn data_pages(
        &mut self,
        rows: usize,
        mut encode: impl FnMut(Range<usize>, &mut Vec<u8>),
    ) -> Vec<Result<RawPage, ParquetError>> {
        let mut raw = std::mem::take(&mut self.raw);
        let pages = (0..rows)
            .step_by(PAGE_ROWS)
            .map(|start| {
                let range = start..(start + PAGE_ROWS).min(rows);
                let n = range.len() as u64;
                raw.clear();
                encode(range, &mut raw);
                self.page(&raw, n)
            })
            .collect();
        self.raw = raw;
        pages
    }

    fn compress(&mut self, raw: &[u8]) -> Result<Bytes, ParquetError> {
        self.zstd.compress(raw).map(Bytes::from).map_err(external)
    }

    fn page(&mut self, raw: &[u8], values: u64) -> Result<RawPage, ParquetError> {
        let values = u32::try_from(values)
            .map_err(|_| ParquetError::General(format!("{values} rows do not fit one page")))?;
        Ok(RawPage {
            buf: self.compress(raw)?,
            size: raw.len(),
            values,
        })
    }

    /// Writes the dictionary page (compressed bytes, raw size, values) if any, then the
    /// data pages, and describes the chunk.
    fn chunk(
        &mut self,
        descr: ColumnDescPtr,
        dict: Option<(Bytes, usize, usize)>,
        encoding: Encoding,
        pages: Vec<Result<RawPage, ParquetError>>,
    ) -> Result<Chunk, ParquetError> {
        let mut out = Vec::new();
        let mut uncompressed = 0;
        let mut dictionary_offset = None;
        if let Some((buf, size, len)) = dict {
            dictionary_offset = Some(out.len() as i64);
            let header = PageHeader {
                kind: DICTIONARY_PAGE,
                size,
                values: len,
                encoding: Encoding::PLAIN,
            };
            uncompressed += header.write(&buf, &mut out)? + size;
        }
        let mut data_offset = None;
        let mut rows = 0u64;
        for page in pages {
            let RawPage { buf, size, values } = page?;
            data_offset.get_or_insert(out.len() as i64);
            let header = PageHeader {
                kind: DATA_PAGE,
                size,
                values: values as usize,
                encoding,
            };
            uncompressed += header.write(&buf, &mut out)? + size;
            rows += u64::from(values);
        }
        let bytes = Bytes::from(out);
        let total = bytes.len() as i64;
        let mut encodings = vec![encoding, Encoding::RLE];
        if dictionary_offset.is_some() {
            encodings.insert(0, Encoding::PLAIN);
        }
        let metadata = ColumnChunkMetaData::builder(descr)
            .set_compression(Compression::ZSTD(zstd_level()))
            .set_encodings(encodings)
            .set_num_values(rows as i64)
            .set_total_compressed_size(total)
            .set_total_uncompressed_size(uncompressed as i64)
            .set_dictionary_page_offset(dictionary_offset)
            .set_data_page_offset(data_offset.unwrap_or_default())
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: total as u64,
            rows_written: rows,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        Ok((bytes, close))
    }
}

/// The Thrift `PageType` of a v1 data page and of a dictionary page.
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;

/// What the header of a page written here says: Parquet's `PageHeader` with its CRC, a
/// `DataPageHeader` (levels RLE) or a `DictionaryPageHeader` (not sorted), and no
/// statistics. Parquet's own page writer leaves the CRC out; a reader built with the
/// `crc` feature checks it, so a byte changed in a page's values is an error naming the
/// part rather than a different number.
struct PageHeader {
    kind: i32,
    /// The raw (uncompressed) bytes of the page.
    size: usize,
    values: usize,
    encoding: Encoding,
}

impl PageHeader {
    /// Writes the header, in Thrift's compact protocol, and then `buf`, to `out`; returns
    /// the header's length.
    fn write(&self, buf: &[u8], out: &mut Vec<u8>) -> Result<usize, ParquetError> {
        let int = |v: usize| {
            i32::try_from(v)
                .map_err(|_| ParquetError::General(format!("a page of {v} bytes or values")))
        };
        let at = out.len();
        // Field headers: the id's delta from the previous field's, and the type (5: i32,
        // 12: struct, 1/2: true/false).
        thrift_i32(out, 0x15, self.kind);
        thrift_i32(out, 0x15, int(self.size)?);
        thrift_i32(out, 0x15, int(buf.len())?);
        thrift_i32(out, 0x15, crc32fast::hash(buf) as i32);
        let encoding = encoding_id(self.encoding)?;
        if self.kind == DICTIONARY_PAGE {
            // Field 7, three after the CRC.
            out.push(0x3C);
            thrift_i32(out, 0x15, int(self.values)?);
            thrift_i32(out, 0x15, encoding);
            out.push(0x12);
        } else {
            out.push(0x1C);
            thrift_i32(out, 0x15, int(self.values)?);
            thrift_i32(out, 0x15, encoding);
            thrift_i32(out, 0x15, RLE);
            thrift_i32(out, 0x15, RLE);
        }
        // The inner struct's stop, then the header's.
        out.extend_from_slice(&[0, 0]);
        let len = out.len() - at;
        out.extend_from_slice(buf);
        Ok(len)
    }
}

/// The Thrift value of the `RLE` encoding.
const RLE: i32 = 3;

/// The Thrift value of an encoding this module writes.
fn encoding_id(e: Encoding) -> Result<i32, ParquetError> {
    match e {
        Encoding::PLAIN => Ok(0),
        Encoding::RLE => Ok(RLE),
        Encoding::DELTA_BINARY_PACKED => Ok(5),
        Encoding::RLE_DICTIONARY => Ok(8),
        other => Err(ParquetError::General(format!(
            "the trace's pages are never {other} encoded"
        ))),
    }
}

/// A compact-protocol field header byte and an `i32` (zigzag, then ULEB128).
fn thrift_i32(out: &mut Vec<u8>, field: u8, v: i32) {
    out.push(field);
    uleb128(u64::from(((v << 1) ^ (v >> 31)) as u32), out);
}

/// A data page's compressed levels and values, its raw size and its rows.
struct RawPage {
    buf: Bytes,
    size: usize,
    values: u32,
}

fn uleb128(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The definition levels of a nullable column (1: a value, 0: null) as RLE runs of width
/// 1, behind their length in bytes (u32, little-endian), as a v1 data page holds them.
fn levels(valid: &[bool], out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut rest = valid;
    while let Some(&first) = rest.first() {
        let n = rest.iter().position(|&v| v != first).unwrap_or(rest.len());
        uleb128((n as u64) << 1, out);
        out.push(u8::from(first));
        rest = &rest[n..];
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Values per block of [`delta_pack`], and per miniblock.
const BLOCK: usize = 128;
const MINIBLOCK: usize = 32;

/// `values` in the `DELTA_BINARY_PACKED` encoding: a header (block size, miniblocks per
/// block, value count, first value), then per block of [`BLOCK`] deltas the smallest delta
/// and each miniblock's deltas above it, bit-packed at the miniblock's width. A counter
/// that goes up by one each row packs at width 0: a few bytes per block.
fn delta_pack(values: &[u64], out: &mut Vec<u8>) {
    uleb128(BLOCK as u64, out);
    uleb128((BLOCK / MINIBLOCK) as u64, out);
    uleb128(values.len() as u64, out);
    let Some(&first) = values.first() else {
        uleb128(0, out);
        return;
    };
    uleb128(zigzag(first as i64), out);
    let mut deltas = [0u64; BLOCK];
    for start in (1..values.len()).step_by(BLOCK) {
        // The block's values and the one before them.
        let block = &values[start - 1..(start + BLOCK).min(values.len())];
        let n = block.len() - 1;
        for (d, pair) in deltas.iter_mut().zip(block.windows(2)) {
            *d = pair[1].wrapping_sub(pair[0]);
        }
        let min = deltas[..n]
            .iter()
            .map(|&d| d as i64)
            .min()
            .unwrap_or_default();
        uleb128(zigzag(min), out);
        let widths_at = out.len();
        out.extend_from_slice(&[0; BLOCK / MINIBLOCK]);
        for (m, mini) in deltas[..n].chunks_mut(MINIBLOCK).enumerate() {
            let mut any = 0;
            for d in mini.iter_mut() {
                *d = d.wrapping_sub(min as u64);
                any |= *d;
            }
            let width = u64::BITS - any.leading_zeros();
            out[widths_at + m] = width as u8;
            bit_pack(mini, width, out);
        }
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// A miniblock's values, `width` bits each, the first in the lowest bits; a short (last)
/// miniblock is padded to [`MINIBLOCK`] values.
fn bit_pack(values: &[u64], width: u32, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let mut acc: u128 = 0;
    let mut bits = 0;
    for i in 0..MINIBLOCK {
        acc |= u128::from(values.get(i).copied().unwrap_or(0)) << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    // 32 values of any width fill whole bytes.
    debug_assert_eq!(bits, 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, BooleanArray, Float64Array, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::arrow::ArrowSchemaConverter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;

    /// Writes one column chunk as a whole Parquet file of `field` and reads it back with
    /// Parquet's own reader.
    fn round_trip(
        field: Field,
        encode: impl FnOnce(&mut ChunkEncoder, ColumnDescPtr) -> Result<Chunk, ParquetError>,
    ) -> ArrayRef {
        let schema = Arc::new(Schema::new(vec![field]));
        let parquet = ArrowSchemaConverter::new().convert(&schema).unwrap();
        let mut props = WriterProperties::builder().build();
        parquet::arrow::add_encoded_arrow_schema_to_metadata(&schema, &mut props);
        let mut file = Vec::new();
        let mut writer =
            SerializedFileWriter::new(&mut file, parquet.root_schema_ptr(), Arc::new(props))
                .unwrap();
        let mut rows = writer.next_row_group().unwrap();
        let (bytes, close) = encode(&mut ChunkEncoder::new().unwrap(), parquet.column(0)).unwrap();
        rows.append_column(&bytes, close).unwrap();
        rows.close().unwrap();
        writer.close().unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(file))
            .unwrap()
            .with_batch_size(1 << 20)
            .build()
            .unwrap();
        let batches: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(batches.len(), 1, "one batch holds every row");
        batches[0].column(0).clone()
    }

    fn counters_read_back(values: &[u64]) {
        let back = round_trip(Field::new("c", DataType::UInt64, false), |e, d| {
            e.counters(d, values)
        });
        let back = back.as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(back.values().as_ref(), values);
    }

    #[test]
    fn counters_read_back_whatever_their_deltas() {
        counters_read_back(&[7]);
        let steps: Vec<u64> = (1_000..1_000 + 129).collect();
        counters_read_back(&steps);
        // Episode steps: up by one, back to zero at each end, across pages.
        let episode_steps: Vec<u64> = (0..PAGE_ROWS as u64 + 300).map(|i| i % 23).collect();
        counters_read_back(&episode_steps);
        // Deltas of every width, negative ones and wrapping ones.
        let wild: Vec<u64> = (0..1_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64))
            .chain([u64::MAX, 0, u64::MAX, 1 << 63, 3])
            .collect();
        counters_read_back(&wild);
    }

    #[test]
    fn floats_read_back_with_their_nulls() {
        let values: Vec<f64> = (0..PAGE_ROWS + 77).map(|i| i as f64 * 0.5 - 3.0).collect();
        let valid: Vec<bool> = (0..values.len())
            .map(|i| i % 5 == 0 || i > 70_000)
            .collect();
        let back = round_trip(Field::new("f", DataType::Float64, true), |e, d| {
            e.floats(d, &values, Some(&valid))
        });
        let back = back.as_any().downcast_ref::<Float64Array>().unwrap();
        let expected: Float64Array = values
            .iter()
            .zip(&valid)
            .map(|(&v, &ok)| ok.then_some(v))
            .collect();
        assert_eq!(back, &expected);
        let back = round_trip(Field::new("f", DataType::Float64, false), |e, d| {
            e.floats(d, &values, None)
        });
        let back = back.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(back.values().as_ref(), &values[..]);
    }

    #[test]
    fn flags_read_back() {
        let values: Vec<bool> = (0..PAGE_ROWS + 13).map(|i| i % 3 == 1).collect();
        let back = round_trip(Field::new("b", DataType::Boolean, false), |e, d| {
            e.flags(d, &values)
        });
        let back = back.as_any().downcast_ref::<BooleanArray>().unwrap();
        assert_eq!(back, &BooleanArray::from(values));
    }
}
