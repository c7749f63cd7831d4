//! `chorus run FLOW.toml`: runs a flow of agents and writes its transcript.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chorus_agent::agents::Item;
use chorus_agent::confirm::{
    Confirmation, Confirmations, MemoryConfirmations, SqliteConfirmations,
};
use chorus_agent::flow::{
    ApprovalWait, Flow, FlowError, FlowReport, FlowSpec, Remote, RemoteConfirmations,
    env_model_factory,
};
use chorus_agent::journal::{Book, BusJournal, Journal};
use chorus_bus::{Bus, BusConfig, SqliteBus};
use chorus_core::Message;
use chorus_server::Store;

use crate::error::CliError;
use crate::output::FormatArgs;
use crate::telemetry::LogArgs;

/// How often a waiting flow reads the confirmation store.
const POLL: Duration = Duration::from_millis(500);
/// For tests of crashes: after this many items sent, a run (or a worker) says so on standard
/// error and stops working (without exiting), to be killed there.
const PAUSE_AFTER: &str = "CHORUS_RUN_PAUSE_AFTER_ITEMS";

/// The place [`PAUSE_AFTER`] names, counting the items sent.
pub(crate) struct PausePoint {
    after: Option<usize>,
    seen: std::sync::atomic::AtomicUsize,
}

impl PausePoint {
    /// The point set in the environment (none when unset).
    pub(crate) fn from_env() -> PausePoint {
        PausePoint {
            after: std::env::var(PAUSE_AFTER).ok().and_then(|n| n.parse().ok()),
            seen: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Counts one item sent; at the point, stops this thread for good.
    pub(crate) fn passed(&self) {
        let seen = self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if self.after == Some(seen) {
            errln!("{PAUSE_AFTER}: paused after {seen} items");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }
}
/// The lease of a delivery on a run's store: a run killed while handling one gives it back
/// this long after (the running flow extends it while its agent works).
const LEASE: Duration = Duration::from_secs(2);

/// Arguments of `chorus run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The flow file (TOML): agents, tools, how they connect, the first message.
    pub flow: PathBuf,
    /// Run against a `chorus serve` at this URL instead of the embedded bus (tokens per sender
    /// in the flow file's `[server]` table).
    #[arg(long)]
    pub server: Option<String>,
    /// Write every message and handoff as chorus JSON lines to this file (appended to by
    /// `--resume`).
    #[arg(long)]
    pub transcript: Option<PathBuf>,
    /// Keep the embedded bus and the agents' work (outputs, tool calls, conversations) in this
    /// SQLite file (or on a server: postgres://USER@HOST/DB?namespace=NAME, nats://…, redis://…),
    /// so that an interrupted run can go on with `--resume`. Default: beside the transcript
    /// (`T.jsonl` → `T.store.db`); without a transcript, in memory.
    #[arg(long, value_name = "FILE|URL")]
    pub store: Option<PathBuf>,
    /// Go on with the run that stopped on `--store` (killed, or failed): nothing it finished is
    /// done again, and the transcript is appended to.
    #[arg(long)]
    pub resume: bool,
    /// Where an embedded flow keeps confirmations, named as for `chorus confirm --store`:
    /// sqlite:DIR/NAME.db keeps them in DIR/NAME-confirmations.db (opened only when a tool
    /// requires confirmation); `memory` keeps them in this process.
    #[arg(long, value_name = "STORE", default_value = "sqlite:chorus.db")]
    pub confirmations: String,
    /// When an agent halts on a confirmation, wait this many seconds for a person to decide,
    /// then resume it (0: do not wait). Default: wait without limit when standard error is a
    /// terminal, else do not wait.
    #[arg(long, value_name = "SECS")]
    pub await_approval: Option<u64>,
    #[command(flatten)]
    pub output: FormatArgs,
    #[command(flatten)]
    pub log: LogArgs,
}

/// Runs `chorus run`: exit 0 when the flow ends normally, 1 when it fails, 2 on usage or I/O
/// errors (including an unusable flow file).
pub fn run(args: RunArgs) -> Result<(), CliError> {
    let in_flow =
        |e: &dyn std::fmt::Display| CliError::usage(format!("{}: {e}", args.flow.display()));
    let text = std::fs::read_to_string(&args.flow).map_err(|e| in_flow(&e))?;
    let spec = FlowSpec::parse(&text).map_err(|e| in_flow(&e))?;
    let store_path = args.store.clone().or_else(|| {
        args.transcript
            .as_ref()
            .filter(|_| args.server.is_none())
            .map(|t| t.with_extension("store.db"))
    });
    if args.resume && (store_path.is_none() || args.server.is_some()) {
        return Err(CliError::usage(
            "--resume goes on with an embedded run kept in --store FILE (or beside --transcript)",
        ));
    }
    let mut transcript = match &args.transcript {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(args.resume)
                .truncate(!args.resume)
                .open(path)
                .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
            Some((path.clone(), std::io::BufWriter::new(file)))
        }
        None => None,
    };
    // Kept to the end: dropping it sends the spans not yet exported. Warnings only by default:
    // the progress lines are the run's own story.
    let _telemetry = args.log.init("chorus run", "chorus", "warn");
    let runtime = tokio::runtime::Runtime::new().map_err(CliError::usage)?;
    let models = env_model_factory();
    let confirmations = open_confirmations(&args, &spec).map_err(CliError::usage)?;
    let stored = match &store_path {
        Some(path) => Some(
            runtime
                .block_on(StoredRun::open(path, &spec, args.resume))
                .map_err(CliError::usage)?,
        ),
        None => None,
    };
    let journal = stored.as_ref().map(StoredRun::journal);
    let flow = Flow::journaled(spec, models.as_ref(), confirmations.store, journal)
        .map_err(|e| in_flow(&e))?;
    let (flow, first) = match &stored {
        Some(run) => match &run.resumed {
            Some((task, first)) => (flow.with_task_id(task.clone()), Some(first.clone())),
            None => {
                let first = flow.first_message();
                runtime
                    .block_on(run.remember(flow.task_id(), &first))
                    .map_err(CliError::usage)?;
                (flow, Some(first))
            }
        },
        None => (flow, None),
    };
    // A resumed run sends again what the stopped one sent (the same items, the same ids): the
    // transcript keeps one line each.
    let mut written = match (&args.transcript, args.resume) {
        (Some(path), true) => transcript_ids(path),
        _ => std::collections::HashSet::new(),
    };
    let pause = PausePoint::from_env();
    let progress = Progress::new();
    let flow = match (
        wait_limit(args.await_approval),
        confirmations.decide_with.clone(),
    ) {
        (Some(timeout), Some(hint)) => {
            let bar = progress.bar.clone();
            flow.await_approval(ApprovalWait {
                timeout,
                poll: POLL,
                notice: Arc::new(move |c: &Confirmation| {
                    let line = format!(
                        "waiting for approval of {}({}) — id {}; approve with: chorus confirm approve {} {hint}",
                        c.tool, c.arguments, c.id, c.id
                    );
                    match &bar {
                        Some(bar) => bar.println(line),
                        None => errln!("{line}"),
                    }
                }),
            })
        }
        _ => flow,
    };
    let mut write_error = None;
    let mut observe = |item: &Item| {
        progress.step(item);
        let id = item.id().unwrap_or_default().to_owned();
        if let Some((path, file)) = transcript.as_mut()
            && write_error.is_none()
            && written.insert(id)
        {
            let line = item.to_json().to_string();
            // Flushed line by line: a killed run's transcript holds what it sent.
            if let Err(e) = writeln!(file, "{line}").and_then(|()| file.flush()) {
                write_error = Some(format!("{}: {e}", path.display()));
            }
        }
        pause.passed();
    };
    let result = runtime.block_on(async {
        match (&args.server, &stored) {
            (Some(url), _) => flow.run_remote(url, &mut observe).await,
            (None, Some(run)) => {
                let first = first.clone().unwrap_or_else(|| flow.first_message());
                flow.run_stored(run.bus.as_ref(), first, &mut observe).await
            }
            (None, None) => flow.run(&mut observe).await,
        }
    });
    progress.finish();
    if let Some((path, mut file)) = transcript {
        file.flush()
            .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    }
    if let Some(e) = write_error {
        return Err(CliError::usage(e));
    }
    match result {
        Ok(report) if args.output.json() => {
            outln!("{}", report_json(&report, flow.task_id()));
            Ok(())
        }
        Ok(report) => {
            for item in &report.outputs {
                outln!("{}: {}", item.recipients().join(","), item.text());
            }
            for c in &report.pending_confirmations {
                errln!(
                    "pending confirmation {}: {} wants to call {} with {}",
                    c.id,
                    c.agent,
                    c.tool,
                    c.arguments
                );
            }
            if let (Some(c), Some(hint)) = (
                report.pending_confirmations.first(),
                confirmations.decide_with.as_deref(),
            ) {
                errln!("approve with: chorus confirm approve {} {hint}", c.id);
            }
            if report.usage.calls > 0 {
                for (name, totals) in &report.per_agent {
                    errln!(
                        "agent {name}: {} model calls, {} prompt + {} completion tokens, ${:.6}",
                        totals.calls,
                        totals.prompt_tokens,
                        totals.completion_tokens,
                        totals.cost_usd
                    );
                }
                errln!(
                    "model calls: {}, tokens: {} prompt + {} completion, cost: ${:.6}",
                    report.usage.calls,
                    report.usage.prompt_tokens,
                    report.usage.completion_tokens,
                    report.usage.cost_usd
                );
            }
            errln!(
                "flow ended after {} steps (task {})",
                report.steps,
                flow.task_id()
            );
            Ok(())
        }
        Err(FlowError::Spec(e)) => Err(in_flow(&e)),
        Err(e @ (FlowError::Failed(_) | FlowError::Refused(_))) => Err(CliError::rejected(e)),
    }
}

/// The embedded store of a durable run: the bus and the record of the runs it holds.
struct StoredRun {
    bus: Arc<dyn Bus>,
    /// The task and the first message of the run being resumed.
    resumed: Option<(String, Message)>,
    /// Runs recorded so far.
    runs: usize,
}

/// The journal book listing a store's runs, one record per run with its task id.
fn runs_book() -> Book {
    Book::new("chorus-run", "runs")
}

impl StoredRun {
    /// Opens (or creates) the store at `path` for a run of `spec`: the last run recorded there
    /// when `resume`; a new run refuses a store that still holds an unfinished one.
    async fn open(
        path: &std::path::Path,
        spec: &FlowSpec,
        resume: bool,
    ) -> Result<StoredRun, String> {
        let at = |e: &dyn std::fmt::Display| format!("--store {}: {e}", path.display());
        let config = BusConfig {
            ack_wait: LEASE,
            // A delivery is tried again after a crash however often the run is resumed.
            max_deliver: u32::MAX,
            ..BusConfig::default()
        };
        let bus: Arc<dyn Bus> = match server_store(path) {
            Some(address) => address.open(config).await.map_err(|e| at(&e))?,
            None => Arc::new(SqliteBus::open(path, config).map_err(|e| at(&e))?),
        };
        let journal = BusJournal::new(bus.clone());
        let runs = journal.records(&runs_book()).await.map_err(|e| at(&e))?;
        let last = runs.last().map(|(_, r)| r);
        let last_task = last
            .and_then(|r| r.get("task_id"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let mut waiting = 0;
        for agent in &spec.agents {
            waiting += bus.depth(&agent.name).await.map_err(|e| at(&e))?;
        }
        let resumed = match (resume, last_task) {
            (true, Some(task)) => {
                let first = last
                    .and_then(|r| r.get("first_message"))
                    .cloned()
                    .and_then(|m| serde_json::from_value::<Message>(m).ok())
                    .ok_or_else(|| at(&format!("the run of task {task} has no first message")))?;
                Some((task, first))
            }
            (true, None) => return Err(at(&"holds no run to resume")),
            (false, Some(task)) if waiting > 0 => {
                return Err(at(&format!(
                    "holds the unfinished run of task {task}; go on with it with --resume, or give another --store"
                )));
            }
            (false, _) => None,
        };
        Ok(StoredRun {
            bus,
            resumed,
            runs: runs.len(),
        })
    }

    fn journal(&self) -> Arc<dyn Journal> {
        Arc::new(BusJournal::new(self.bus.clone()))
    }

    /// Records a new run: its task id and first message.
    async fn remember(&self, task_id: &str, first: &Message) -> Result<(), String> {
        let key = format!("run-{:06}", self.runs + 1);
        let record = serde_json::json!({"task_id": task_id, "first_message": first});
        self.journal()
            .record(&runs_book(), &key, &record)
            .await
            .map(drop)
            .map_err(|e| format!("--store: {e}"))
    }
}

/// The store a `--store` naming a server holds (`postgres://…`, `nats://…`, `redis://…`); none
/// for a file path.
fn server_store(path: &std::path::Path) -> Option<chorus_bus::StoreAddress> {
    let text = path.to_str()?;
    ["postgres://", "postgresql://", "nats://", "redis://"]
        .iter()
        .any(|scheme| text.starts_with(scheme))
        .then(|| chorus_bus::StoreAddress::parse(text).ok())
        .flatten()
}

/// The ids of the items a transcript holds (none when it cannot be read).
fn transcript_ids(path: &std::path::Path) -> std::collections::HashSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|d| Item::from_json(&d).ok())
        .filter_map(|i| i.id().map(str::to_owned))
        .collect()
}

/// A finished run as one JSON object (`--format json`): the task, the steps, the outputs (items
/// addressed to no agent of the flow), model usage in total and per agent, and the pending
/// confirmations.
fn report_json(report: &FlowReport, task_id: &str) -> serde_json::Value {
    serde_json::json!({
        "task_id": task_id,
        "steps": report.steps,
        "outputs": report.outputs.iter().map(Item::to_json).collect::<Vec<_>>(),
        "usage": report.usage,
        "per_agent": report.per_agent,
        "pending_confirmations": report.pending_confirmations,
    })
}

/// The confirmation store of a run, and the `chorus confirm` options that reach it (none when
/// only this process can see it).
struct ConfirmationStore {
    store: Arc<dyn Confirmations>,
    decide_with: Option<String>,
}

/// Against a server, confirmations live there (shown and decided in its UI); an embedded flow
/// with a tool that requires confirmation keeps them in the SQLite file `--confirmations`
/// names (said on standard error), else in memory.
fn open_confirmations(args: &RunArgs, spec: &FlowSpec) -> Result<ConfirmationStore, String> {
    let flow = args.flow.display();
    if let Some(url) = &args.server {
        let remote = Remote::new(url, &spec.server).map_err(|e| format!("{flow}: {e}"))?;
        return Ok(ConfirmationStore {
            store: Arc::new(RemoteConfirmations::new(&remote)),
            decide_with: Some(format!("--server {url} (or in the server's UI)")),
        });
    }
    let memory = || ConfirmationStore {
        store: Arc::new(MemoryConfirmations::new()),
        decide_with: None,
    };
    if !spec.tools.iter().any(|t| t.may_require_confirmation()) {
        return Ok(memory());
    }
    let store = Store::parse(&args.confirmations)
        .map_err(|e| format!("--confirmations {}: {e}", args.confirmations))?;
    let Some(path) = store.confirmations_path() else {
        return Ok(memory());
    };
    let sqlite = SqliteConfirmations::open(&path).map_err(|e| format!("--confirmations: {e}"))?;
    errln!(
        "confirmations of this flow are kept in {} (chorus confirm list --store {})",
        path.display(),
        args.confirmations
    );
    Ok(ConfirmationStore {
        store: Arc::new(sqlite),
        decide_with: Some(format!("--store {}", args.confirmations)),
    })
}

/// How long to wait for a decision: `--await-approval`, or without limit on a terminal.
fn wait_limit(secs: Option<u64>) -> Option<Duration> {
    match secs {
        Some(0) => None,
        Some(s) => Some(Duration::from_secs(s)),
        None => std::io::stderr().is_terminal().then_some(Duration::MAX),
    }
}

/// Progress on standard error: a spinner on a terminal, one line per step otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        Progress { bar }
    }

    fn step(&self, item: &Item) {
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.set_message(item.describe());
            }
            None => errln!("{}", item.describe()),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
