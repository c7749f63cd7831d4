//! `chorus bench bus`: loads a bus backend and prints throughput and latency (text, or one JSON object).

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use chorus_bus::StoreAddress;
use chorus_bus::bench::{BenchOptions, BenchReport, Progress, run as run_bench};

use crate::error::CliError;
use crate::output::FormatArgs;

/// Arguments of `chorus bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// What to benchmark.
    #[command(subcommand)]
    pub target: BenchTarget,
}

/// The benchmarks `chorus bench` knows.
#[derive(clap::Subcommand, Debug)]
pub enum BenchTarget {
    /// Publish handoffs and consume them with acks; print sent, received, lost, duplicates,
    /// throughput and p50/p99 latency (`--json`: one JSON object).
    Bus(BusBenchArgs),
}

/// Arguments of `chorus bench bus`.
#[derive(clap::Args, Debug)]
pub struct BusBenchArgs {
    /// memory, sqlite:PATH, nats://HOST:PORT, redis://HOST:PORT or postgres://USER@HOST/DB (on
    /// SQLite and PostgreSQL the floor, plain SQL on the same rows, is measured after and
    /// printed beside, with chorus's ratio to it)
    #[arg(long)]
    pub backend: String,
    /// Messages to publish.
    #[arg(long, default_value_t = 100_000)]
    pub messages: usize,
    /// Publishing tasks.
    #[arg(long, default_value_t = 1)]
    pub producers: usize,
    /// Consuming tasks.
    #[arg(long, default_value_t = 4)]
    pub consumers: usize,
    /// Size of each handoff, bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Stop publishing after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Do not measure the floor after the run (SQLite and PostgreSQL).
    #[arg(long)]
    pub no_floor: bool,
    #[command(flatten)]
    pub output: FormatArgs,
}

impl BenchArgs {
    /// What starts the benchmark's error line.
    pub fn prefix(&self) -> &'static str {
        match self.target {
            BenchTarget::Bus(_) => "chorus bench bus",
        }
    }
}

/// Runs `chorus bench …`.
pub fn run(args: BenchArgs) -> Result<(), CliError> {
    let BenchTarget::Bus(args) = args.target;
    let backend = StoreAddress::parse(&args.backend).map_err(CliError::usage)?;
    let duration = match args.duration.map(|s| (s, Duration::try_from_secs_f64(s))) {
        None => None,
        Some((_, Ok(d))) if !d.is_zero() => Some(d),
        Some((s, _)) => {
            return Err(CliError::usage(format!(
                "--duration must be a positive number of seconds, found {s}"
            )));
        }
    };
    let opts = BenchOptions {
        backend,
        messages: args.messages,
        producers: args.producers,
        consumers: args.consumers,
        size: args.size,
        duration,
        ..BenchOptions::default()
    };
    // A worker per consumer at least, as in the criterion bench: on a 2-core machine, tokio's
    // one worker per core measured about a quarter lower for the memory backend.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores.max(opts.consumers))
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the async runtime: {e}")))?;
    let progress = Arc::new(Progress::default());
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(opts.messages as u64);
        // The bar takes the width the figures leave, so that the line never wraps.
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{wide_bar} {human_pos}/{human_len} received, {msg} sent, {rate}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}/s", indicatif::HumanCount(state.per_sec() as u64));
                },
            ),
        );
        bar
    });
    let outcome = runtime.block_on(async {
        let ticker = bar.clone().map(|bar| {
            let progress = progress.clone();
            tokio::spawn(async move {
                loop {
                    bar.set_position(progress.received.load(Ordering::Relaxed));
                    let sent = progress.sent.load(Ordering::Relaxed);
                    bar.set_message(indicatif::HumanCount(sent).to_string());
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        });
        let report = run_bench(&opts, progress.clone()).await;
        if let Some(t) = ticker {
            t.abort();
        }
        let report = report?;
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        let floor = match args.no_floor {
            true => None,
            false => {
                if chorus_bus::bench::floor_description(&opts.backend).is_some() {
                    errln!("chorus bench bus: measuring the floor (plain SQL, same rows)...");
                }
                chorus_bus::bench::floor(&opts).await?
            }
        };
        Ok::<_, chorus_bus::BusError>((report, floor))
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (report, floor) = outcome.map_err(CliError::usage)?;
    if args.output.json() {
        let mut json = serde_json::to_value(&report)
            .map_err(|e| CliError::usage(format!("cannot print the report: {e}")))?;
        if let (Some(floor), Some(fields)) = (&floor, json.as_object_mut()) {
            fields.insert("floor".into(), serde_json::json!(floor));
            fields.insert(
                "ratio_to_floor".into(),
                serde_json::json!(ratio(&report, floor)),
            );
        }
        outln!("{json}");
    } else {
        outln!("{}", line(&report));
        if let Some(floor) = &floor {
            let what = chorus_bus::bench::floor_description(&opts.backend).unwrap_or_default();
            outln!("floor ({what}): {}", line(floor));
            outln!("chorus / floor: {:.2}", ratio(&report, floor));
        }
    }
    Ok(())
}

/// A report in one line.
fn line(r: &BenchReport) -> String {
    format!(
        "sent {}, received {}, lost {}, duplicates {}; {:.0} msgs/s; latency p50 {:.2} ms, p99 {:.2} ms",
        r.sent, r.received, r.lost, r.duplicates, r.throughput_msgs_per_s, r.p50_ms, r.p99_ms
    )
}

fn ratio(report: &BenchReport, floor: &BenchReport) -> f64 {
    report.throughput_msgs_per_s / floor.throughput_msgs_per_s.max(1e-9)
}
