//! The columns a record table has, so a query names only those: rocpd's versions add and move
//! columns (3.0.2 added `graph_exec_id`; 4.1.0 moved `pid`, `tid`, `agent_id`, `queue_id` and
//! `stream_id` to `rocpd_track`), and a column a database lacks reads as NULL instead of
//! failing the whole file.

use super::Tables;
use crate::sqlite::Database;

/// A record table (`x`) joined to its event (`e`) and, in the 4.1.0 layout, its track (`t`).
pub(super) struct Joined {
    /// The FROM clause.
    pub from: String,
    record: Vec<String>,
    event: Vec<String>,
    /// The track's columns when the owner columns live there.
    track: Option<Vec<String>>,
}

impl Joined {
    pub(super) fn new(db: &Database, run: &Tables, table: &str) -> Self {
        let record = db.columns(table);
        let mut from = format!("\"{table}\" x");
        let has = |name: &str| record.iter().any(|c| c == name);
        let event = match run.get("rocpd_event").filter(|_| has("event_id")) {
            Some(event) => {
                from.push_str(&format!(" LEFT JOIN \"{event}\" e ON e.id = x.event_id"));
                db.columns(event)
            }
            None => Vec::new(),
        };
        let track = match run.get("rocpd_track").filter(|_| has("track_id")) {
            Some(track) => {
                from.push_str(&format!(" LEFT JOIN \"{track}\" t ON t.id = x.track_id"));
                Some(db.columns(track))
            }
            None => None,
        };
        Joined {
            from,
            record,
            event,
            track,
        }
    }

    /// The record's own column, or NULL.
    pub(super) fn record(&self, name: &str) -> String {
        column_or_null(&self.record, "x", name)
    }

    /// An event column, or NULL.
    pub(super) fn event(&self, name: &str) -> String {
        column_or_null(&self.event, "e", name)
    }

    /// An owner column (`pid`, `tid`, `agent_id`, `queue_id`, `stream_id`): the track's in
    /// the 4.1.0 layout, the record's own before; NULL where neither has it.
    pub(super) fn owner(&self, name: &str) -> String {
        match &self.track {
            Some(track) if track.iter().any(|c| c == name) => format!("t.\"{name}\""),
            _ => self.record(name),
        }
    }
}

/// `alias."name"` when `columns` (lower-case) hold it, else `NULL`.
pub(super) fn column_or_null(columns: &[String], alias: &str, name: &str) -> String {
    if columns.iter().any(|c| c == name) {
        format!("{alias}.\"{name}\"")
    } else {
        "NULL".to_owned()
    }
}
