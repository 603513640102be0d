//! A real Kineto trace as rocprofv3's SQLite database ("rocpd", its default output since
//! ROCm 7): the tables of rocprofiler-sdk's rocpd schema, in the two layouts it has shipped.
//!
//! - **3.0.x** (`share/rocprofiler-sdk-rocpd/versions/3.0.x/rocpd_tables.sql`): regions,
//!   kernel dispatches and copies carry `nid`, `pid`, `tid` (and `agent_id`, `queue_id`,
//!   `stream_id`) themselves; `rocpd_event.category_id` points into `rocpd_string`.
//! - **4.1.0** (`versions/4.1.0/rocpd_tables.sql`): those move to `rocpd_track` (a row per
//!   thread, and per agent/queue/stream), referenced by `track_id`; categories get their own
//!   table, `rocpd_info_category`.
//!
//! As rocprofv3 writes them: every table name ends in `_<uuid>` (the run's UUID, `-` as `_`),
//! with an unsuffixed view over each; each record has a `rocpd_event` row whose `stack_id`
//! is the record's internal correlation id (the HIP call's and its dispatches' are the same;
//! `rocpd convert` writes it as `Correlation_Id`) and whose `correlation_id` is the external
//! one (0 here); HIP calls are regions of category `HIP_RUNTIME_API`, dispatches of
//! `KERNEL_DISPATCH`, ROCTx ranges regions of `MARKER_CORE_RANGE_API` named
//! `roctxRangePushA` with the message in the event's `extdata` (`{"message": …}`).
//! Kernel names are `rocpd_info_kernel_symbol.display_name`; times are ns.
//! The DDL below holds the columns of those definitions that a reader can use, with their
//! names, types and constraints; the rest (PMC, code-object and address tables) is left out.

use crate::SynthError;
use crate::formats::Parts;
use rusqlite::{Connection, params};
use std::collections::HashMap;
use std::path::Path;

/// Which rocpd table layout to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RocpdSchema {
    /// 3.0.x: owner columns in each record table.
    V3,
    /// 4.1.0: owner columns in `rocpd_track`, categories in `rocpd_info_category`.
    V4,
}

/// How to write the database.
#[derive(Debug, Clone)]
pub struct RocpdOptions {
    /// Table layout.
    pub schema: RocpdSchema,
    /// The run's UUID (`_` for `-`), the suffix of every table name.
    pub uuid: String,
    /// Write the unsuffixed views (rocprofv3 does; a reader must also do without them).
    pub views: bool,
    /// Write the HIP API regions (`false`: a run recorded without `--hip-trace`).
    pub hip_api: bool,
    /// The process id written for every record (`None`: each call's own).
    pub pid: Option<i64>,
}

impl Default for RocpdOptions {
    fn default() -> Self {
        RocpdOptions {
            schema: RocpdSchema::V3,
            uuid: "0199a2b4_6c1e_7f3a_9d2b_5e8c4f1a7b30".to_owned(),
            views: true,
            hip_api: true,
            pid: None,
        }
    }
}

const TABLES_V3: &str = "
CREATE TABLE rocpd_metadata{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE rocpd_string{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, string TEXT NOT NULL UNIQUE ON CONFLICT ABORT);
CREATE TABLE rocpd_info_node{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, hash BIGINT NOT NULL UNIQUE, machine_id TEXT NOT NULL UNIQUE, hostname TEXT);
CREATE TABLE rocpd_info_process{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, ppid INTEGER, pid INTEGER NOT NULL, init BIGINT, fini BIGINT, start BIGINT, end BIGINT, command TEXT, environment JSONB DEFAULT '{}' NOT NULL, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_thread{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, ppid INTEGER, pid INTEGER NOT NULL, tid INTEGER NOT NULL, name TEXT, start BIGINT, end BIGINT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_agent{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, type TEXT CHECK (type IN ('CPU', 'GPU', 'NIC')), absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, user_name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_queue{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_stream{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_kernel_symbol{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, code_object_id INTEGER NOT NULL, kernel_name TEXT, display_name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_track{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER, tid INTEGER, name_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_event{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, category_id INTEGER, stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER, call_stack JSONB DEFAULT '{}' NOT NULL, line_info JSONB DEFAULT '{}' NOT NULL, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_region{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER NOT NULL, start BIGINT NOT NULL, end BIGINT NOT NULL, name_id INTEGER NOT NULL, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_sample{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, track_id INTEGER NOT NULL, timestamp BIGINT NOT NULL, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_kernel_dispatch{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER, agent_id INTEGER NOT NULL, kernel_id INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, queue_id INTEGER NOT NULL, stream_id INTEGER NOT NULL, start BIGINT NOT NULL, end BIGINT NOT NULL, private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER NOT NULL, workgroup_size_y INTEGER NOT NULL, workgroup_size_z INTEGER NOT NULL, grid_size_x INTEGER NOT NULL, grid_size_y INTEGER NOT NULL, grid_size_z INTEGER NOT NULL, graph_exec_id INTEGER NOT NULL DEFAULT 0, graph_node_id INTEGER NOT NULL DEFAULT 0, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_memory_copy{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER, start BIGINT NOT NULL, end BIGINT NOT NULL, name_id INTEGER NOT NULL, dst_agent_id INTEGER, dst_address INTEGER, src_agent_id INTEGER, src_address INTEGER, size INTEGER NOT NULL, queue_id INTEGER, stream_id INTEGER, graph_exec_id INTEGER NOT NULL DEFAULT 0, graph_node_id INTEGER NOT NULL DEFAULT 0, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_memory_allocate{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, tid INTEGER, agent_id INTEGER, type TEXT CHECK (type IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM')), level TEXT CHECK (level IN ('REAL', 'VIRTUAL', 'SCRATCH')), start BIGINT NOT NULL, end BIGINT NOT NULL, address INTEGER, size INTEGER NOT NULL, queue_id INTEGER, stream_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
";

const TABLES_V4: &str = "
CREATE TABLE rocpd_metadata{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE rocpd_string{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, string TEXT NOT NULL UNIQUE ON CONFLICT ABORT);
CREATE TABLE rocpd_info_node{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, hash BIGINT NOT NULL UNIQUE, machine_id TEXT NOT NULL UNIQUE, name TEXT, hostname TEXT);
CREATE TABLE rocpd_info_process{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, ppid INTEGER, pid INTEGER NOT NULL, name TEXT, init BIGINT, fini BIGINT, start BIGINT, end BIGINT, command TEXT, environment JSONB DEFAULT '{}' NOT NULL, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_thread{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, ppid INTEGER, pid INTEGER NOT NULL, tid INTEGER NOT NULL, name TEXT, start BIGINT, end BIGINT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_category{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, name TEXT NOT NULL, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_agent{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, type TEXT CHECK (type IN ('CPU', 'GPU')), absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, generic_name TEXT, model_name TEXT, vendor_name TEXT, product_name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_queue{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_stream{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_info_kernel_symbol{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, pid INTEGER NOT NULL, code_object_id INTEGER NOT NULL, kernel_name TEXT, display_name TEXT, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_track{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, nid INTEGER NOT NULL, ppid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER, queue_id INTEGER, stream_id INTEGER, name_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_event{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, category_id INTEGER, stack_id INTEGER, parent_stack_id INTEGER, correlation_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_region{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, track_id INTEGER NOT NULL, name_id INTEGER NOT NULL, start BIGINT NOT NULL, end BIGINT NOT NULL, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_sample{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, track_id INTEGER NOT NULL, name_id INTEGER NOT NULL, timestamp BIGINT NOT NULL, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_kernel_dispatch{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, track_id INTEGER NOT NULL, kernel_id INTEGER NOT NULL, dispatch_id INTEGER NOT NULL, start BIGINT NOT NULL, end BIGINT NOT NULL, private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER NOT NULL, workgroup_size_y INTEGER NOT NULL, workgroup_size_z INTEGER NOT NULL, grid_size_x INTEGER NOT NULL, grid_size_y INTEGER NOT NULL, grid_size_z INTEGER NOT NULL, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_memory_copy{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, track_id INTEGER NOT NULL, start BIGINT NOT NULL, end BIGINT NOT NULL, name_id INTEGER NOT NULL, dst_agent_id INTEGER, dst_address INTEGER, src_agent_id INTEGER, src_address INTEGER, size INTEGER NOT NULL, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
CREATE TABLE rocpd_memory_allocate{u}(id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, guid TEXT DEFAULT '{g}' NOT NULL, track_id INTEGER NOT NULL, type TEXT CHECK (type IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM')), level TEXT CHECK (level IN ('REAL', 'VIRTUAL', 'SCRATCH')), start BIGINT NOT NULL, end BIGINT NOT NULL, name_id INTEGER NOT NULL, address INTEGER, size INTEGER NOT NULL, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT '{}' NOT NULL);
";

/// The logical tables, each written as `<name>_<uuid>` with a view `<name>` over it.
const VIEWS: [&str; 17] = [
    "rocpd_metadata",
    "rocpd_string",
    "rocpd_info_node",
    "rocpd_info_process",
    "rocpd_info_thread",
    "rocpd_info_category",
    "rocpd_info_agent",
    "rocpd_info_queue",
    "rocpd_info_stream",
    "rocpd_info_kernel_symbol",
    "rocpd_track",
    "rocpd_event",
    "rocpd_region",
    "rocpd_sample",
    "rocpd_kernel_dispatch",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
];

/// The GPU agent of device `d` (agent 0 is the CPU).
fn agent(device: i64) -> i64 {
    device + 1
}

/// Writes `parts` as a rocpd database at `path` (see the module doc).
pub fn write_rocpd(parts: &Parts, path: &Path, options: &RocpdOptions) -> Result<(), SynthError> {
    let sql = |e: rusqlite::Error| SynthError::Io(std::io::Error::other(e));
    let conn = Connection::open(path).map_err(sql)?;
    let mut writer = Writer::new(&conn, options).map_err(sql)?;
    writer.header(parts).map_err(sql)?;
    if options.hip_api {
        for c in &parts.calls {
            let pid = options.pid.unwrap_or(c.pid);
            let event = writer
                .event("HIP_RUNTIME_API", c.correlation as i64, "{}")
                .map_err(sql)?;
            writer
                .region((pid, c.tid), (c.start, c.end), &c.name, event)
                .map_err(sql)?;
        }
    }
    for (i, m) in parts.markers.iter().enumerate() {
        let pid = options.pid.unwrap_or(m.pid);
        let extdata = serde_json::json!({ "message": m.name }).to_string();
        let stack = 1_000_000_000 + i as i64;
        let event = writer
            .event("MARKER_CORE_RANGE_API", stack, &extdata)
            .map_err(sql)?;
        writer
            .region((pid, m.tid), (m.start, m.end), "roctxRangePushA", event)
            .map_err(sql)?;
    }
    let pid = options
        .pid
        .or(parts.calls.first().map(|c| c.pid))
        .unwrap_or(1);
    for (i, k) in parts.kernels.iter().enumerate() {
        let event = writer
            .event("KERNEL_DISPATCH", k.correlation as i64, "{}")
            .map_err(sql)?;
        writer.dispatch(pid, i as i64 + 1, k, event).map_err(sql)?;
    }
    if options.views {
        writer.views().map_err(sql)?;
    }
    conn.execute_batch("COMMIT").map_err(sql)?;
    Ok(())
}

/// Inserts rows, keeping the ids of the strings, symbols and tracks written so far.
struct Writer<'c> {
    conn: &'c Connection,
    schema: RocpdSchema,
    uuid: String,
    strings: HashMap<String, i64>,
    categories: HashMap<String, i64>,
    symbols: HashMap<String, i64>,
    tracks: HashMap<(i64, i64, i64, i64), i64>,
}

impl<'c> Writer<'c> {
    fn new(conn: &'c Connection, options: &RocpdOptions) -> rusqlite::Result<Self> {
        let u = format!("_{}", options.uuid);
        let tables = match options.schema {
            RocpdSchema::V3 => TABLES_V3,
            RocpdSchema::V4 => TABLES_V4,
        };
        let ddl = tables
            .replace("{u}", &u)
            .replace("{g}", &options.uuid.replace('_', "-"));
        conn.execute_batch(&ddl)?;
        conn.execute_batch("BEGIN")?;
        Ok(Writer {
            conn,
            schema: options.schema,
            uuid: u,
            strings: HashMap::new(),
            categories: HashMap::new(),
            symbols: HashMap::new(),
            tracks: HashMap::new(),
        })
    }

    fn table(&self, name: &str) -> String {
        format!("{name}{}", self.uuid)
    }

    fn string(&mut self, text: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.strings.get(text) {
            return Ok(*id);
        }
        let sql = format!(
            "INSERT INTO {}(string) VALUES (?1)",
            self.table("rocpd_string")
        );
        self.conn.execute(&sql, [text])?;
        let id = self.conn.last_insert_rowid();
        self.strings.insert(text.to_owned(), id);
        Ok(id)
    }

    /// The metadata, node, process, agents (a CPU, then one GPU per device), queues, streams
    /// and kernel symbols.
    fn header(&mut self, parts: &Parts) -> rusqlite::Result<()> {
        let version = match self.schema {
            RocpdSchema::V3 => "3.0.3",
            RocpdSchema::V4 => "4.1.0",
        };
        let meta = self.table("rocpd_metadata");
        self.conn.execute(
            &format!("INSERT INTO {meta}(tag, value) VALUES ('schema_version', ?1), ('uuid', ?2)"),
            params![version, self.uuid.trim_start_matches('_')],
        )?;
        self.conn.execute(
            &format!("INSERT INTO {}(id, hash, machine_id, hostname) VALUES (1, 42, 'test-machine', 'test-host')", self.table("rocpd_info_node")),
            [],
        )?;
        let mut devices: Vec<i64> = parts.kernels.iter().map(|k| k.device).collect();
        devices.sort_unstable();
        devices.dedup();
        let agents = self.table("rocpd_info_agent");
        self.conn.execute(
            &format!("INSERT INTO {agents}(id, nid, pid, type, absolute_index, logical_index, type_index, name, product_name) VALUES (0, 1, 0, 'CPU', 0, 0, 0, 'cpu', 'Test CPU')"),
            [],
        )?;
        for &d in &devices {
            self.conn.execute(
                &format!("INSERT INTO {agents}(id, nid, pid, type, absolute_index, logical_index, type_index, name, product_name) VALUES (?1, 1, 0, 'GPU', ?1, ?1, ?2, 'gfx942', 'AMD Instinct MI300X')"),
                params![agent(d), d],
            )?;
        }
        let mut names: Vec<&str> = parts.kernels.iter().map(|k| k.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let symbols = self.table("rocpd_info_kernel_symbol");
        for (i, name) in names.into_iter().enumerate() {
            let id = i as i64 + 1;
            self.conn.execute(
                &format!("INSERT INTO {symbols}(id, nid, pid, code_object_id, kernel_name, display_name) VALUES (?1, 1, 0, 1, ?2, ?2)"),
                params![id, name],
            )?;
            self.symbols.insert(name.to_owned(), id);
        }
        Ok(())
    }

    /// The event row of a record: its category, `stack_id` (the internal correlation id),
    /// external `correlation_id` 0.
    fn event(&mut self, category: &str, stack: i64, extdata: &str) -> rusqlite::Result<i64> {
        let category = match self.schema {
            RocpdSchema::V3 => self.string(category)?,
            RocpdSchema::V4 => self.category(category)?,
        };
        let sql = format!(
            "INSERT INTO {}(category_id, stack_id, parent_stack_id, correlation_id, extdata) VALUES (?1, ?2, ?2, 0, ?3)",
            self.table("rocpd_event")
        );
        self.conn.execute(&sql, params![category, stack, extdata])?;
        Ok(self.conn.last_insert_rowid())
    }

    fn category(&mut self, name: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.categories.get(name) {
            return Ok(*id);
        }
        let sql = format!(
            "INSERT INTO {}(name) VALUES (?1)",
            self.table("rocpd_info_category")
        );
        self.conn.execute(&sql, [name])?;
        let id = self.conn.last_insert_rowid();
        self.categories.insert(name.to_owned(), id);
        Ok(id)
    }

    /// The track of (pid, tid, agent, stream) in 4.1.0 (a thread's: agent and stream −1).
    fn track(&mut self, key: (i64, i64, i64, i64)) -> rusqlite::Result<i64> {
        if let Some(id) = self.tracks.get(&key) {
            return Ok(*id);
        }
        let (pid, tid, agent, stream) = key;
        let device = (agent >= 0).then_some(agent);
        let sql = format!(
            "INSERT INTO {}(nid, pid, tid, agent_id, queue_id, stream_id) VALUES (1, ?1, ?2, ?3, ?3, ?4)",
            self.table("rocpd_track")
        );
        let tid = (tid >= 0).then_some(tid);
        let stream = (stream >= 0).then_some(stream);
        self.conn.execute(&sql, params![pid, tid, device, stream])?;
        let id = self.conn.last_insert_rowid();
        self.tracks.insert(key, id);
        Ok(id)
    }

    fn region(
        &mut self,
        (pid, tid): (i64, i64),
        (start, end): (i64, i64),
        name: &str,
        event: i64,
    ) -> rusqlite::Result<()> {
        let name = self.string(name)?;
        let table = self.table("rocpd_region");
        match self.schema {
            RocpdSchema::V3 => self.conn.execute(
                &format!("INSERT INTO {table}(nid, pid, tid, start, end, name_id, event_id) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)"),
                params![pid, tid, start, end, name, event],
            )?,
            RocpdSchema::V4 => {
                let track = self.track((pid, tid, -1, -1))?;
                self.conn.execute(
                    &format!("INSERT INTO {table}(track_id, name_id, start, end, event_id) VALUES (?1, ?2, ?3, ?4, ?5)"),
                    params![track, name, start, end, event],
                )?
            }
        };
        Ok(())
    }

    fn dispatch(
        &mut self,
        pid: i64,
        id: i64,
        k: &crate::formats::Kernel,
        event: i64,
    ) -> rusqlite::Result<()> {
        let symbol = self.symbols[&k.name];
        let region = self.string(&k.name)?;
        let table = self.table("rocpd_kernel_dispatch");
        let shape = "1, 1, 1, 64, 1, 1";
        match self.schema {
            RocpdSchema::V3 => self.conn.execute(
                &format!("INSERT INTO {table}(nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) VALUES (1, ?1, NULL, ?2, ?3, ?4, ?2, ?5, ?6, ?7, {shape}, ?8, ?9)"),
                params![pid, agent(k.device), symbol, id, k.stream, k.start, k.end, region, event],
            )?,
            RocpdSchema::V4 => {
                let track = self.track((pid, -1, agent(k.device), k.stream))?;
                self.conn.execute(
                    &format!("INSERT INTO {table}(track_id, kernel_id, dispatch_id, start, end, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) VALUES (?1, ?2, ?3, ?4, ?5, {shape}, ?6, ?7)"),
                    params![track, symbol, id, k.start, k.end, region, event],
                )?
            }
        };
        Ok(())
    }

    /// The unsuffixed views rocprofv3 creates over each table.
    fn views(&self) -> rusqlite::Result<()> {
        for name in VIEWS {
            let table = self.table(name);
            let exists: bool = self.conn.query_row(
                "SELECT count(*) > 0 FROM sqlite_master WHERE name = ?1",
                [&table],
                |row| row.get(0),
            )?;
            if exists {
                self.conn
                    .execute_batch(&format!("CREATE VIEW {name} AS SELECT * FROM {table};"))?;
            }
        }
        Ok(())
    }
}
