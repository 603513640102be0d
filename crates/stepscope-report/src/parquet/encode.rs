//! A [`Table`]'s Parquet file: the `parquet` crate's column writer, without arrow
//! (docs/parquet-schema.md says why).

use crate::tables::{Column, Kind, Table, Values};
use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as PhysicalType};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int32Type, Int64Type,
};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::Type;
use std::sync::Arc;

/// Rows per row group: engines split work by row group, and a writer holds one in memory.
const ROW_GROUP_ROWS: usize = 1 << 20;

fn field(column: &Column) -> Result<Arc<Type>, ParquetError> {
    let (physical, logical) = match column.kind {
        Kind::Int32 => (PhysicalType::INT32, None),
        Kind::Int64 => (PhysicalType::INT64, None),
        Kind::Double => (PhysicalType::DOUBLE, None),
        Kind::Bool => (PhysicalType::BOOLEAN, None),
        Kind::Text => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
        Kind::Timestamp => (
            PhysicalType::INT64,
            Some(LogicalType::timestamp(true, TimeUnit::MICROS)),
        ),
    };
    let repetition = if column.nullable {
        Repetition::OPTIONAL
    } else {
        Repetition::REQUIRED
    };
    Ok(Arc::new(
        Type::primitive_type_builder(column.name, physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .build()?,
    ))
}

/// The Parquet schema of `table`.
fn schema(table: &Table) -> Result<Arc<Type>, ParquetError> {
    let fields = table.columns.iter().map(field).collect::<Result<_, _>>()?;
    Ok(Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()?,
    ))
}

/// Writes `table` as one Parquet file (zstd, dictionary-encoded strings, row groups of
/// [`ROW_GROUP_ROWS`]), with `metadata` as the file's key-value metadata.
pub fn write_parquet<W: std::io::Write + Send>(
    table: &Table,
    metadata: Vec<KeyValue>,
    out: W,
) -> Result<(), ParquetError> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(Default::default()))
        .set_created_by(format!("stepscope {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(metadata))
        .build();
    let mut writer = SerializedFileWriter::new(out, schema(table)?, Arc::new(properties))?;
    // An empty table is a file with its schema and no row group: engines read its columns.
    for first in (0..table.rows()).step_by(ROW_GROUP_ROWS) {
        let rows = first..(first + ROW_GROUP_ROWS).min(table.rows());
        let mut group = writer.next_row_group()?;
        for column in &table.columns {
            let mut writer = group
                .next_column()?
                .ok_or_else(|| ParquetError::General(format!("no column `{}`", column.name)))?;
            write_column(&mut writer, column, rows.clone())?;
            writer.close()?;
        }
        group.close()?;
    }
    writer.close()?;
    Ok(())
}

/// Writes `values` (one row group's share of a column) as the physical type `D`: the
/// non-null values, converted, and the definition levels when the column is nullable.
fn write_values<D: DataType, T>(
    writer: &mut SerializedColumnWriter<'_>,
    values: &[Option<T>],
    nullable: bool,
    convert: impl Fn(&T) -> D::T,
) -> Result<(), ParquetError> {
    let present: Vec<D::T> = values.iter().flatten().map(convert).collect();
    let definitions: Option<Vec<i16>> =
        nullable.then(|| values.iter().map(|v| i16::from(v.is_some())).collect());
    writer
        .typed::<D>()
        .write_batch(&present, definitions.as_deref(), None)
        .map(drop)
}

fn write_column(
    writer: &mut SerializedColumnWriter<'_>,
    column: &Column,
    range: std::ops::Range<usize>,
) -> Result<(), ParquetError> {
    let nullable = column.nullable;
    match column.values() {
        Values::Int32(v) => write_values::<Int32Type, _>(writer, &v[range], nullable, |x| *x),
        Values::Int64(v) => write_values::<Int64Type, _>(writer, &v[range], nullable, |x| *x),
        Values::Double(v) => write_values::<DoubleType, _>(writer, &v[range], nullable, |x| *x),
        Values::Bool(v) => write_values::<BoolType, _>(writer, &v[range], nullable, |x| *x),
        Values::Text(v) => write_values::<ByteArrayType, _>(writer, &v[range], nullable, |x| {
            ByteArray::from(x.as_str())
        }),
    }
}
