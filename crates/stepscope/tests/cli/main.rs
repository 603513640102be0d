//! End-to-end tests of the `stepscope` binary: the real built binary on the real traces in
//! the trace corpus (and files derived from them in temp folders), checking exit codes,
//! messages, the JSON document, the CSV tables and golden outputs.

mod bad_input;
mod bench;
mod bench_hostile;
mod bounded;
mod browser;
mod changed_while_read;
mod common;
mod csv_capture;
mod damage_matrix;
mod demo;
mod diff;
mod diff_gate;
mod efficiency;
mod env;
mod escaped_output;
mod exit_codes;
mod flags;
mod golden;
mod grade;
mod grade_boot;
mod grade_integrity;
mod help;
mod html;
mod install;
mod json;
mod json_snapshot;
mod kernel_ids;
mod markers;
mod multi_file;
mod nsys_sqlite;
mod outputs;
mod parquet;
mod perfetto;
mod profile;
mod rocpd;
mod rocprof_csv;
mod rocprof_json;
mod rpd;
mod schema_doc;
mod serving;
mod strict_unchecked;
