//! Which rocprof table a header is, and where its columns are: by name, case-insensitive,
//! with each version's spelling (rocprofv3 `Correlation_Id`, `Agent_Id`, `Queue_Id`;
//! rocprof v2 / omniperf `Correlation_ID`, `GPU_ID`, `Queue_ID`, `PID`, `TID`).

/// A rocprof CSV table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Kernel dispatches (`kernel_trace.csv`, rocprof v2 `timestamps.csv`).
    Kernel,
    /// HIP API calls (`hip_api_trace.csv`).
    HipApi,
    /// Memory copies (`memory_copy_trace.csv`).
    MemoryCopy,
}

impl Table {
    /// The table a header describes, if any.
    pub(crate) fn of_header(header: &[String]) -> Option<Self> {
        let has = |name: &str| header.iter().any(|h| h.eq_ignore_ascii_case(name));
        let timed = has("Start_Timestamp") && has("End_Timestamp");
        if !timed {
            return None;
        }
        if has("Kernel_Name") {
            Some(Table::Kernel)
        } else if has("Function") && has("Domain") {
            Some(Table::HipApi)
        } else if has("Direction") {
            Some(Table::MemoryCopy)
        } else {
            None
        }
    }

    /// For messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Kernel => "kernel dispatch",
            Table::HipApi => "HIP API",
            Table::MemoryCopy => "memory copy",
        }
    }
}

/// Column positions of one table.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    pub name: Option<usize>,
    pub start: Option<usize>,
    pub end: Option<usize>,
    pub correlation: Option<usize>,
    pub process: Option<usize>,
    pub thread: Option<usize>,
    pub device: Option<usize>,
    pub queue: Option<usize>,
    /// `Domain` of API tables: `MARKER_CORE_RANGE_API` rows are ROCTx ranges.
    pub domain: Option<usize>,
}

impl Columns {
    /// The columns of `table` in `header`; the name of a required one that is missing.
    pub fn find(table: Table, header: &[String]) -> Result<Self, &'static str> {
        let at = |names: &[&str]| {
            header
                .iter()
                .position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
        };
        let name_column: &[&str] = match table {
            Table::Kernel => &["Kernel_Name"],
            Table::HipApi => &["Function"],
            Table::MemoryCopy => &["Direction"],
        };
        let columns = Columns {
            name: at(name_column),
            start: at(&["Start_Timestamp"]),
            end: at(&["End_Timestamp"]),
            correlation: at(&["Correlation_Id"]),
            process: at(&["Process_Id", "PID"]),
            thread: at(&["Thread_Id", "TID"]),
            device: at(&["Agent_Id", "GPU_ID", "Destination_Agent_Id"]),
            queue: at(&["Stream_Id", "Queue_Id"]),
            domain: at(&["Domain"]),
        };
        let required = [
            (columns.name, name_column[0]),
            (columns.correlation, "Correlation_Id"),
        ];
        match required.into_iter().find(|(column, _)| column.is_none()) {
            Some((_, missing)) => Err(missing),
            None => Ok(columns),
        }
    }
}
