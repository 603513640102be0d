//! `tile-trace INPUT --target-bytes 1G [--gzip] [--as FORMAT] -o OUTPUT`: repeats a real Kineto
//! trace in time until its JSON reaches about the target size (for the GB-scale parse
//! benchmark); with `--as`, its runtime calls and kernels are written in another profiler's
//! format instead (`rocprof-json`, `rpd-json`, `rpd`, `rocprof-csv`, `rocpd`: then OUTPUT names the
//! `*kernel_trace.csv`, and the `*hip_api_trace.csv` is written beside it), sized the same way.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
use stepscope_synth::formats::{self, Parts};
use stepscope_synth::tile::{TileSummary, tile};
use stepscope_synth::{SynthError, read_trace_bytes};

/// Repeat a Kineto trace N times in time (correlations kept unique).
#[derive(Debug, Parser)]
#[command(name = "tile-trace", version)]
struct Cli {
    /// Input trace (.json or .json.gz; gzip detected by magic bytes).
    input: PathBuf,
    /// Target size of the uncompressed JSON: bytes, or with K/M/G (×1000) or KiB/MiB/GiB (×1024).
    #[arg(long, value_parser = parse_size)]
    target_bytes: u64,
    /// Compress the output with gzip (fast level).
    #[arg(long)]
    gzip: bool,
    /// Write the calls and kernels in this format (see `stepscope_synth::formats`).
    #[arg(long = "as", value_name = "FORMAT", value_parser = ["rocprof-json", "rpd-json", "rpd", "rocprof-csv", "rocpd"])]
    format: Option<String>,
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
}

/// Parses `1G`, `500M`, `1.5GiB`, `123456`.
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("not a size: {text:?}"))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    if value.is_finite() && value > 0.0 {
        Ok((value * scale).round() as u64)
    } else {
        Err(format!("size must be positive: {text:?}"))
    }
}

/// The input's calls and kernels written in `format`, tiled to about the target size (one
/// copy is written first to measure its size); returns copies, calls + kernels, bytes.
fn run_as(cli: &Cli, format: &str) -> Result<(usize, usize, u64), SynthError> {
    let doc: serde_json::Value = serde_json::from_slice(&read_trace_bytes(&cli.input)?)?;
    let parts = Parts::of_kineto(&doc);
    write_as(&parts, format, &cli.output)?;
    let one = std::fs::metadata(&cli.output)?.len().max(1);
    let copies = usize::try_from(cli.target_bytes.div_ceil(one))
        .unwrap_or(usize::MAX)
        .max(1);
    let tiled = parts.tiled(copies);
    write_as(&tiled, format, &cli.output)?;
    let mut bytes = std::fs::metadata(&cli.output)?.len();
    if let Some(calls) = companion(&cli.output) {
        bytes += std::fs::metadata(calls)?.len();
    }
    Ok((copies, tiled.calls.len() + tiled.kernels.len(), bytes))
}

/// The HIP table written beside a `*kernel_trace.csv`.
fn companion(output: &std::path::Path) -> Option<PathBuf> {
    let name = output.file_name()?.to_str()?;
    let prefix = name.strip_suffix("kernel_trace.csv")?;
    Some(output.with_file_name(format!("{prefix}hip_api_trace.csv")))
}

fn write_as(parts: &Parts, format: &str, output: &std::path::Path) -> Result<(), SynthError> {
    match format {
        "rocprof-json" => formats::write_rocprof_json(parts, File::create(output)?),
        "rpd-json" => formats::write_rpd_json(parts, File::create(output)?),
        "rpd" => {
            if output.exists() {
                std::fs::remove_file(output)?;
            }
            formats::write_rpd(parts, output)
        }
        "rocpd" => {
            if output.exists() {
                std::fs::remove_file(output)?;
            }
            let options = stepscope_synth::rocpd::RocpdOptions::default();
            stepscope_synth::rocpd::write_rocpd(parts, output, &options)
        }
        _ => {
            let name = output
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let prefix = name.strip_suffix("kernel_trace.csv").ok_or_else(|| {
                SynthError::NotATrace(
                    "--as rocprof-csv writes <prefix>kernel_trace.csv: name the output so"
                        .to_owned(),
                )
            })?;
            let dir = output.parent().unwrap_or(std::path::Path::new("."));
            formats::write_rocprof_csv(parts, dir, prefix).map(|_| ())
        }
    }
}

fn run(cli: &Cli) -> Result<(TileSummary, u64), SynthError> {
    let input = read_trace_bytes(&cli.input)?;
    let size = (input.len() as u64).max(1);
    let copies = usize::try_from(cli.target_bytes.div_ceil(size))
        .unwrap_or(usize::MAX)
        .max(1);
    let file = File::create(&cli.output)?;
    let summary = if cli.gzip {
        let mut encoder = GzEncoder::new(BufWriter::new(file), Compression::fast());
        let summary = tile(&input, copies, &mut encoder)?;
        encoder.finish()?.flush()?;
        summary
    } else {
        tile(&input, copies, BufWriter::new(file))?
    };
    let on_disk = std::fs::metadata(&cli.output)?.len();
    Ok((summary, on_disk))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(format) = &cli.format {
        return match run_as(&cli, format) {
            Ok((copies, events, bytes)) => {
                println!(
                    "tile-trace: {copies} copies, {events} calls and kernels, {bytes} bytes of {format} written to {}",
                    cli.output.display()
                );
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("tile-trace: {err}");
                ExitCode::FAILURE
            }
        };
    }
    match run(&cli) {
        Ok((s, on_disk)) => {
            println!(
                "tile-trace: {} copies, {} events, {} bytes JSON, {} bytes written to {}",
                s.copies,
                s.events_written,
                s.bytes_written,
                on_disk,
                cli.output.display()
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("tile-trace: {err}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G"), Ok(1_000_000_000));
        assert_eq!(parse_size("500M"), Ok(500_000_000));
        assert_eq!(parse_size("1.5GiB"), Ok(1_610_612_736));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("1X").is_err());
        assert!(parse_size("big").is_err());
    }
}
