//! A table as named, typed columns: what the CSV and the Parquet writers both encode, so
//! the two formats cannot disagree on a table, a column, a type or a unit.

/// The type of a column, as the engines read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 32-bit signed integer (`INTEGER` in DuckDB, `int` in Spark).
    Int32,
    /// 64-bit signed integer (`BIGINT`, `long`): counts and nanoseconds.
    Int64,
    /// 64-bit float (`DOUBLE`): shares and ratios.
    Double,
    /// `BOOLEAN`.
    Bool,
    /// UTF-8 string (`VARCHAR`, `string`), dictionary-encoded.
    Text,
    /// Microseconds since the Unix epoch, UTC (`TIMESTAMP WITH TIME ZONE`, `timestamp`).
    Timestamp,
}

impl Kind {
    /// The type's name in docs/parquet-schema.md (DuckDB's).
    pub fn sql_name(self) -> &'static str {
        match self {
            Kind::Int32 => "INTEGER",
            Kind::Int64 => "BIGINT",
            Kind::Double => "DOUBLE",
            Kind::Bool => "BOOLEAN",
            Kind::Text => "VARCHAR",
            Kind::Timestamp => "TIMESTAMPTZ",
        }
    }
}

/// One column's values, `None` for null.
#[derive(Debug, Clone)]
pub(crate) enum Values {
    Int32(Vec<Option<i32>>),
    Int64(Vec<Option<i64>>),
    Double(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
}

impl Values {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::Int32 => Values::Int32(Vec::new()),
            Kind::Int64 | Kind::Timestamp => Values::Int64(Vec::new()),
            Kind::Double => Values::Double(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::Text => Values::Text(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Values::Int32(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::Double(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Text(v) => v.len(),
        }
    }
}

/// A value one cell holds: its column's type, and whether the column may hold nulls.
pub trait Cell {
    /// The column's type.
    const KIND: Kind;
    /// Whether the column may hold nulls (`Option` cells).
    const NULLABLE: bool;
    /// Appends the value.
    fn push(self, values: &mut Vec<Option<Self::Stored>>);
    /// What the column stores.
    type Stored;
}

macro_rules! cells {
    ($($ty:ty => $kind:ident, $stored:ty, $convert:expr;)*) => {$(
        impl Cell for $ty {
            const KIND: Kind = Kind::$kind;
            const NULLABLE: bool = false;
            type Stored = $stored;
            fn push(self, values: &mut Vec<Option<$stored>>) {
                values.push(Some($convert(self)));
            }
        }
        impl Cell for Option<$ty> {
            const KIND: Kind = Kind::$kind;
            const NULLABLE: bool = true;
            type Stored = $stored;
            fn push(self, values: &mut Vec<Option<$stored>>) {
                values.push(self.map($convert));
            }
        }
    )*};
}

/// Counts beyond `i64::MAX` do not occur; saturate rather than wrap if one did.
fn saturating(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Microseconds since the Unix epoch, UTC: a `TIMESTAMP` cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcMicros(pub i64);

/// A rank or world size: an `INTEGER` cell (ranks fit, and Spark has no unsigned type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Small(pub u32);

cells! {
    i64 => Int64, i64, |v| v;
    u64 => Int64, i64, saturating;
    u32 => Int64, i64, i64::from;
    usize => Int64, i64, |v: usize| saturating(v as u64);
    Small => Int32, i32, |v: Small| i32::try_from(v.0).unwrap_or(i32::MAX);
    UtcMicros => Timestamp, i64, |v: UtcMicros| v.0;
    f64 => Double, f64, |v| v;
    bool => Bool, bool, |v| v;
    String => Text, String, |v| v;
    &str => Text, String, |v: &str| v.to_owned();
}

/// Where a cell's value goes: the typed vector of a column.
pub(crate) trait Sink<T> {
    fn sink(&mut self) -> &mut Vec<Option<T>>;
}

macro_rules! sinks {
    ($($stored:ty => $variant:ident;)*) => {$(
        impl Sink<$stored> for Values {
            fn sink(&mut self) -> &mut Vec<Option<$stored>> {
                match self {
                    Values::$variant(v) => v,
                    // A column's values are made for its cell type's kind (`Values::new`).
                    _ => unreachable!("a column holds one kind of value"),
                }
            }
        }
    )*};
}

sinks! {
    i32 => Int32;
    i64 => Int64;
    f64 => Double;
    bool => Bool;
    String => Text;
}

/// One column.
#[derive(Debug, Clone)]
pub struct Column {
    /// Name.
    pub name: &'static str,
    /// Type.
    pub kind: Kind,
    /// Whether it may hold nulls.
    pub nullable: bool,
    values: Values,
}

/// One cell's value, as a writer reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// No value.
    Null,
    /// An integer (`INTEGER`, `BIGINT`).
    Int(i64),
    /// A float.
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// Text.
    Text(&'a str),
    /// Microseconds since the Unix epoch, UTC.
    Timestamp(i64),
}

impl Column {
    /// The typed values, for the Parquet writer.
    pub(crate) fn values(&self) -> &Values {
        &self.values
    }

    /// The value in `row`.
    pub fn value(&self, row: usize) -> Value<'_> {
        let timestamp = self.kind == Kind::Timestamp;
        match &self.values {
            Values::Int32(v) => v[row].map_or(Value::Null, |x| Value::Int(i64::from(x))),
            Values::Int64(v) if timestamp => v[row].map_or(Value::Null, Value::Timestamp),
            Values::Int64(v) => v[row].map_or(Value::Null, Value::Int),
            Values::Double(v) => v[row].map_or(Value::Null, Value::Double),
            Values::Bool(v) => v[row].map_or(Value::Null, Value::Bool),
            Values::Text(v) => v[row].as_deref().map_or(Value::Null, Value::Text),
        }
    }
}

/// A table: named, typed columns of equal length.
#[derive(Debug, Clone)]
pub struct Table {
    /// Its folder in the dataset.
    pub name: &'static str,
    /// Columns in order.
    pub columns: Vec<Column>,
    rows: usize,
}

impl Table {
    /// An empty table of `rows` rows, its columns to be added.
    pub fn new(name: &'static str, rows: usize) -> Self {
        Table {
            name,
            columns: Vec::new(),
            rows,
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds column `name`: `cell` of each of `rows`.
    pub(crate) fn column<R, C>(
        &mut self,
        name: &'static str,
        rows: &[R],
        cell: impl Fn(&R) -> C,
    ) -> &mut Self
    where
        C: Cell,
        Values: Sink<C::Stored>,
    {
        debug_assert_eq!(rows.len(), self.rows, "column `{name}` of `{}`", self.name);
        let mut values = Values::new(C::KIND);
        let sink = values.sink();
        sink.reserve(rows.len());
        for row in rows {
            cell(row).push(sink);
        }
        debug_assert_eq!(values.len(), self.rows);
        self.columns.push(Column {
            name,
            kind: C::KIND,
            nullable: C::NULLABLE,
            values,
        });
        self
    }
}
