//! `chorus confirm`: list, approve and reject the tool calls waiting for a person, on a running
//! server (its HTTP API, admin token) or in the confirmations file of a server's store or of an
//! embedded flow (read directly).

use chorus_agent::confirm::{
    ConfirmError, Confirmation, ConfirmationState, Confirmations, HttpConfirmations,
    SqliteConfirmations,
};
use chorus_server::Store;
use clap::{Args, Subcommand};

use crate::error::CliError;
use crate::output::FormatArgs;

/// The environment variable read when `--admin-token` is not given.
const TOKEN_ENV: &str = "CHORUS_ADMIN_TOKEN";

/// Arguments of `chorus confirm`.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List confirmations, oldest first.
    List {
        /// Which ones: pending, approved, rejected, consumed or all.
        #[arg(long, default_value = "pending", value_parser = parse_state)]
        state: Filter,
        #[command(flatten)]
        source: Source,
    },
    /// Approve a pending confirmation: the agent may make that exact call, once.
    Approve(Decide),
    /// Reject a pending confirmation: the call is never made.
    Reject(Decide),
}

#[derive(Debug, Args)]
struct Decide {
    /// The confirmation's id (as `chorus confirm list` shows it).
    id: String,
    /// Why (kept with the decision).
    #[arg(long)]
    note: Option<String>,
    #[command(flatten)]
    source: Source,
}

/// Where the confirmations are, and how to print them.
#[derive(Debug, Args)]
struct Source {
    /// A running chorus server (e.g. http://127.0.0.1:7700).
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "store",
        conflicts_with = "store"
    )]
    server: Option<String>,
    /// The server's admin token (default: the environment variable CHORUS_ADMIN_TOKEN).
    #[arg(long, value_name = "TOKEN", requires = "server")]
    admin_token: Option<String>,
    /// The store given to `chorus serve --store` or `chorus run --confirmations`: its
    /// confirmations file (sqlite:DIR/NAME.db keeps them in DIR/NAME-confirmations.db) is
    /// opened directly.
    #[arg(long, value_name = "STORE")]
    store: Option<String>,
    /// A table (text), or one JSON object per line (json).
    #[command(flatten)]
    output: FormatArgs,
}

/// A `--state` value: one state, or all.
#[derive(Debug, Clone, Copy)]
struct Filter(Option<ConfirmationState>);

fn parse_state(s: &str) -> Result<Filter, String> {
    if s == "all" {
        return Ok(Filter(None));
    }
    ConfirmationState::parse(s)
        .map(|st| Filter(Some(st)))
        .ok_or_else(|| "expected pending, approved, rejected, consumed or all".to_owned())
}

/// Runs `chorus confirm`: exit 1 when a decision is refused, 2 on usage or I/O errors.
pub fn run(args: ConfirmArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::usage)?;
    runtime.block_on(act(args.action))
}

async fn act(action: Action) -> Result<(), CliError> {
    match action {
        Action::List { state, source } => {
            let store = open(&source)?;
            let list = store.list(state.0).await.map_err(CliError::usage)?;
            print_list(&list, state.0, source.output.json())
        }
        Action::Approve(d) => decide(d, true).await,
        Action::Reject(d) => decide(d, false).await,
    }
}

async fn decide(d: Decide, approve: bool) -> Result<(), CliError> {
    check_id(&d.id)?;
    let store = open(&d.source)?;
    let decided = store
        .decide(&d.id, approve, "cli", d.note)
        .await
        .map_err(|e| refused(&d.id, approve, e))?;
    if d.source.output.json() {
        return print_json(&[decided]);
    }
    let word = if approve { "approved" } else { "rejected" };
    let line = format!(
        "{word} {}: {} may{} call {} with {}\n",
        decided.id,
        decided.agent,
        if approve { "" } else { " not" },
        decided.tool,
        printable(&decided.arguments)
    );
    write_out(&line)
}

/// The message and exit code of a refused decision.
fn refused(id: &str, approve: bool, e: ConfirmError) -> CliError {
    let verb = if approve { "approve" } else { "reject" };
    match e {
        ConfirmError::NotFound(_) => CliError::rejected(format!(
            "no confirmation {id:?}; `chorus confirm list --state all` shows the ids"
        )),
        ConfirmError::WrongState { state, .. } => CliError::rejected(format!(
            "cannot {verb} {id}: it is already {} (a confirmation is decided once)",
            state.as_str()
        )),
        other => CliError::usage(other),
    }
}

/// Refuses an id that could not be a confirmation's (it goes into a URL path).
fn check_id(id: &str) -> Result<(), CliError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "{id:?} is not a confirmation id (letters, digits, '-', '_' and '.' only)"
        )))
    }
}

/// The confirmations store `source` names.
fn open(source: &Source) -> Result<Box<dyn Confirmations>, CliError> {
    if let Some(url) = &source.server {
        let token = match &source.admin_token {
            Some(t) => t.clone(),
            None => std::env::var(TOKEN_ENV).map_err(|_| {
                CliError::usage(format!(
                    "--server needs the admin token: give --admin-token or set {TOKEN_ENV}"
                ))
            })?,
        };
        let http = HttpConfirmations::new(url.as_str(), token.as_str()).with_admin_token(token);
        return Ok(Box::new(http));
    }
    let spec = source.store.as_deref().unwrap_or_default();
    let store = Store::parse(spec).map_err(CliError::usage)?;
    let path = store.confirmations_path().ok_or_else(|| {
        CliError::usage("a memory store keeps confirmations inside the process that made them: use --server for a server's",
        )
    })?;
    if !path.is_file() {
        return Err(CliError::usage(format!(
            "no confirmations file at {} (--store takes the store given to `chorus serve --store` or `chorus run --confirmations`, e.g. sqlite:./chorus.db)",
            path.display()
        )));
    }
    let sqlite = SqliteConfirmations::open(&path).map_err(CliError::usage)?;
    Ok(Box::new(sqlite))
}

fn print_list(
    list: &[Confirmation],
    state: Option<ConfirmationState>,
    json: bool,
) -> Result<(), CliError> {
    if json {
        return print_json(list);
    }
    if list.is_empty() {
        return write_out(&match state {
            Some(s) => format!("no {} confirmations\n", s.as_str()),
            None => "no confirmations\n".to_owned(),
        });
    }
    let header = ["ID", "STATE", "AGENT", "TOOL", "TASK", "ARGUMENTS"];
    let rows: Vec<[String; 6]> = list
        .iter()
        .map(|c| {
            [
                c.id.clone(),
                c.state.as_str().to_owned(),
                printable(&c.agent),
                printable(&c.tool),
                c.task_id.as_deref().map_or_else(|| "-".into(), printable),
                printable(&c.arguments),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let last = cells.len() - 1;
        for (i, cell) in cells.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push('\n');
    };
    line(&header);
    for row in &rows {
        line(&row.each_ref().map(String::as_str));
    }
    write_out(&out)
}

/// Control characters (a newline in the arguments) written as escapes, so a row stays a row.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

fn print_json(list: &[Confirmation]) -> Result<(), CliError> {
    let mut out = String::new();
    for c in list {
        let line = serde_json::to_string(c).map_err(CliError::usage)?;
        out.push_str(&line);
        out.push('\n');
    }
    write_out(&out)
}

/// Writes `text` to standard output (a closed pipe ends the command quietly).
fn write_out(text: &str) -> Result<(), CliError> {
    out!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_states_and_ids() {
        assert!(parse_state("all").unwrap().0.is_none());
        assert_eq!(
            parse_state("consumed").unwrap().0,
            Some(ConfirmationState::Consumed)
        );
        assert!(parse_state("done").is_err());
        assert!(check_id("conf-0123abc").is_ok());
        for bad in ["", "../admin", "a/b", "x?state=all"] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        assert_eq!(printable("{\"a\":\n1}"), "{\"a\":\\n1}");
    }
}
