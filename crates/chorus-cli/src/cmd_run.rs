//! `chorus run FLOW.toml`: runs a flow of agents and writes its transcript.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chorus_agent::agents::Item;
use chorus_agent::confirm::Confirmations;
use chorus_agent::confirm::MemoryConfirmations;
use chorus_agent::flow::{
    Flow, FlowError, FlowSpec, Remote, RemoteConfirmations, env_model_factory,
};

/// Arguments of `chorus run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The flow file (TOML): agents, tools, how they connect, the first message.
    pub flow: PathBuf,
    /// Run against a `chorus serve` at this URL instead of the embedded bus (tokens per sender
    /// in the flow file's `[server]` table).
    #[arg(long)]
    pub server: Option<String>,
    /// Write every message and handoff as chorus JSON lines to this file.
    #[arg(long)]
    pub transcript: Option<PathBuf>,
}

/// Runs `chorus run`: exit 0 when the flow ends normally, 1 when it fails, 2 on usage or I/O
/// errors (including an unusable flow file).
pub fn run(args: RunArgs) -> ExitCode {
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("chorus run: {e}");
        ExitCode::from(2)
    };
    let text = match std::fs::read_to_string(&args.flow) {
        Ok(t) => t,
        Err(e) => return usage(&format!("{}: {e}", args.flow.display())),
    };
    let spec = match FlowSpec::parse(&text) {
        Ok(s) => s,
        Err(e) => return usage(&format!("{}: {e}", args.flow.display())),
    };
    let mut transcript = match &args.transcript {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some((path.clone(), std::io::BufWriter::new(f))),
            Err(e) => return usage(&format!("{}: {e}", path.display())),
        },
        None => None,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => return usage(&e),
    };
    let models = env_model_factory();
    // Against a server, confirmations live there (visible and decided in its UI); else in memory.
    let confirmations: Arc<dyn Confirmations> = match &args.server {
        Some(url) => match Remote::new(url, &spec.server) {
            Ok(remote) => Arc::new(RemoteConfirmations::new(&remote)),
            Err(e) => return usage(&format!("{}: {e}", args.flow.display())),
        },
        None => Arc::new(MemoryConfirmations::new()),
    };
    let flow = match Flow::new(spec, models.as_ref(), confirmations) {
        Ok(f) => f,
        Err(e) => return usage(&format!("{}: {e}", args.flow.display())),
    };
    let progress = Progress::new();
    let mut write_error = None;
    let mut observe = |item: &Item| {
        progress.step(item);
        if let Some((path, file)) = transcript.as_mut()
            && write_error.is_none()
        {
            let line = item.to_json().to_string();
            if let Err(e) = writeln!(file, "{line}") {
                write_error = Some(format!("{}: {e}", path.display()));
            }
        }
    };
    let result = runtime.block_on(async {
        match &args.server {
            Some(url) => flow.run_remote(url, &mut observe).await,
            None => flow.run(&mut observe).await,
        }
    });
    progress.finish();
    if let Some((path, mut file)) = transcript
        && let Err(e) = file.flush()
    {
        return usage(&format!("{}: {e}", path.display()));
    }
    if let Some(e) = write_error {
        return usage(&e);
    }
    match result {
        Ok(report) => {
            for item in &report.outputs {
                println!("{}: {}", item.recipients().join(","), item.text());
            }
            for c in &report.pending_confirmations {
                eprintln!(
                    "pending confirmation {}: {} wants to call {} with {}",
                    c.id, c.agent, c.tool, c.arguments
                );
            }
            if report.usage.calls > 0 {
                eprintln!(
                    "model calls: {}, tokens: {} prompt + {} completion, cost: ${:.6}",
                    report.usage.calls,
                    report.usage.prompt_tokens,
                    report.usage.completion_tokens,
                    report.usage.cost_usd
                );
            }
            eprintln!(
                "flow ended after {} steps (task {})",
                report.steps,
                flow.task_id()
            );
            ExitCode::SUCCESS
        }
        Err(FlowError::Spec(e)) => usage(&format!("{}: {e}", args.flow.display())),
        Err(e @ FlowError::Failed(_)) => {
            eprintln!("chorus run: {e}");
            ExitCode::from(1)
        }
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
            None => eprintln!("{}", item.describe()),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
