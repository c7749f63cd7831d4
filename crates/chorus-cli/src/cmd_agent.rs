//! `chorus agent run FLOW.toml --agent NAME --server URL`: one agent of a flow as a long-lived
//! worker consuming its inbox (or a pool's) on a running `chorus serve`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chorus_agent::agents::Item;
use chorus_agent::confirm::Confirmation;
use chorus_agent::flow::{
    ApprovalWait, Flow, FlowSpec, Remote, RemoteConfirmations, WorkerOptions, env_model_factory,
};

use crate::cmd_run::PausePoint;
use crate::error::CliError;
use crate::telemetry::LogArgs;

/// How often a worker waiting for an approval reads the server's confirmations.
const POLL: Duration = Duration::from_millis(500);

/// Arguments of `chorus agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: AgentCommand,
}

/// The `chorus agent` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum AgentCommand {
    /// Run one agent of a flow as a worker on a chorus server until SIGTERM or Ctrl-C.
    Run(WorkerArgs),
}

/// Arguments of `chorus agent run`.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The flow file (TOML) that declares the agent, its tools and the `[server]` tokens.
    pub flow: PathBuf,
    /// The agent of the flow to run.
    #[arg(long)]
    pub agent: String,
    /// The `chorus serve` to consume from.
    #[arg(long)]
    pub server: String,
    /// Consume this inbox instead of the agent's own: a pool the agent may read (`read` in the
    /// server's config), shared with the pool's other replicas.
    #[arg(long, value_name = "POOL")]
    pub inbox: Option<String>,
    /// Deliveries handled at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub max_in_flight: usize,
    /// Retries of a failed delivery when its handoff's failure_handling_strategy names no
    /// retry_count.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Milliseconds before the first retry; doubled after each further failure.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub backoff_ms: u64,
    /// The longest wait before a retry, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub max_backoff_ms: u64,
    /// How often the lease of a delivery being handled is extended, in milliseconds; keep it
    /// well under the server's ack_wait_secs.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub renew_ms: u64,
    /// When the agent halts on a confirmation, wait this many seconds for a person's decision
    /// (the lease is extended meanwhile), then resume it (0: do not wait).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub await_approval: u64,
    #[command(flatten)]
    pub log: LogArgs,
}

/// Runs `chorus agent`: exit 0 after a graceful shutdown, 2 on usage errors, 1 when the
/// server refuses the worker.
pub fn run(args: AgentArgs) -> Result<(), CliError> {
    match args.command {
        AgentCommand::Run(args) => run_worker(args),
    }
}

fn run_worker(args: WorkerArgs) -> Result<(), CliError> {
    let in_flow =
        |e: &dyn std::fmt::Display| CliError::usage(format!("{}: {e}", args.flow.display()));
    let text = std::fs::read_to_string(&args.flow).map_err(|e| in_flow(&e))?;
    let spec = FlowSpec::parse(&text).map_err(|e| in_flow(&e))?;
    if args.max_in_flight == 0 {
        return Err(CliError::usage("--max-in-flight must be at least 1"));
    }
    let remote = Remote::new(&args.server, &spec.server).map_err(|e| in_flow(&e))?;
    let confirmations = Arc::new(RemoteConfirmations::new(&remote));
    // Kept to the end (its drop sends the spans not yet exported). Retries are logged at
    // `info`; dead letters, leases not extended and broken streams at `warn`.
    let _telemetry = args.log.init("chorus agent", "chorus", "info,rmcp=warn");
    let runtime = tokio::runtime::Runtime::new().map_err(CliError::usage)?;
    let models = env_model_factory();
    let journal = Arc::new(remote.journal());
    let mut flow = Flow::journaled(spec, models.as_ref(), confirmations, Some(journal))
        .map_err(|e| in_flow(&e))?;
    if args.await_approval > 0 {
        let server = args.server.clone();
        flow = flow.await_approval(ApprovalWait {
            timeout: Duration::from_secs(args.await_approval),
            poll: POLL,
            notice: Arc::new(move |c: &Confirmation| {
                errln!(
                    "waiting for approval of {}({}) — id {}; approve with: chorus confirm approve {} --server {server}",
                    c.tool, c.arguments, c.id, c.id
                );
            }),
        });
    }
    let options = WorkerOptions {
        inbox: args.inbox.clone(),
        max_in_flight: args.max_in_flight,
        retries: args.retries,
        backoff: Duration::from_millis(args.backoff_ms),
        max_backoff: Duration::from_millis(args.max_backoff_ms),
        renew_every: Duration::from_millis(args.renew_ms.max(1)),
    };
    let pause = PausePoint::from_env();
    let worker = flow
        .worker(&args.agent, remote, options)
        .map_err(|e| in_flow(&e))?
        .on_sent(Arc::new(move |item: &Item| {
            errln!("sent {}", item.describe());
            pause.passed();
        }));
    let worker = Arc::new(worker);
    errln!(
        "agent {} consuming inbox {} on {}",
        args.agent,
        worker.inbox(),
        args.server
    );
    let report = runtime
        .block_on(async { worker.run(chorus_server::shutdown_signal()).await })
        .map_err(CliError::rejected)?;
    errln!(
        "agent {} stopped: {} acked, {} retried, {} escalated, {} dead-lettered, {} handed back",
        args.agent,
        report.acked,
        report.retried,
        report.escalated,
        report.dead_lettered,
        report.handed_back
    );
    Ok(())
}
