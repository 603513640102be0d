//! `tile-trace INPUT --target-bytes 1G [--gzip] -o OUTPUT`: repeats a real Kineto trace in time
//! until its JSON reaches about the target size (for the GB-scale parse benchmark).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
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
