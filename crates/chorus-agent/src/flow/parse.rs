//! Reading a flow file: TOML into a [`FlowSpec`], every error with its place.
//!
//! An `[[agents]]` or `[[tools]]` entry names its kind in `kind`, next to the options every entry
//! has and the options of that kind. serde's internally tagged enums would read such an entry
//! through a buffer that forgets where each value was (every error would point at the entry's
//! first line, and a mistyped value would not be named), so before serde reads the file each
//! entry is reshaped: the options of its kind move under `kind`, as `kind = { <kind> = { … } }`,
//! which the derived enums ([`AgentKind`](super::AgentKind), [`ToolKind`]) read with every key
//! and value still at its place in the file.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::spec::{AgentSpec, FlowSpec, SpecError};
#[cfg(doc)]
use crate::tools::ToolKind;
use crate::tools::ToolSpec;

/// An array of entries tagged by `kind`.
struct Tagged {
    /// The array's key in the flow file.
    array: &'static str,
    /// What one entry is, for messages.
    what: &'static str,
    /// The keys every entry takes, whatever its kind (`kind` aside).
    shared: &'static [&'static str],
}

/// The arrays of the flow file whose entries are tagged by `kind`.
static TAGGED: [Tagged; 2] = [
    Tagged {
        array: "agents",
        what: "agent",
        shared: AgentSpec::SHARED_KEYS,
    },
    Tagged {
        array: "tools",
        what: "tool",
        shared: ToolSpec::SHARED_KEYS,
    },
];

/// The keys that [`reshape`] moved under `kind`, by where they are in the file, and the entries
/// they belong to (to say, of a key the kind refuses, which keys every entry takes).
struct Moved(Vec<(Range<usize>, &'static Tagged)>);

impl FlowSpec {
    /// Parses and checks a flow file.
    pub fn parse(text: &str) -> Result<FlowSpec, SpecError> {
        let at = |span: Option<Range<usize>>, message: String| SpecError {
            location: span.map_or_else(|| "flow file".into(), |span| line_column(text, span)),
            message,
        };
        let mut root = DeTable::parse(text).map_err(|e| at(e.span(), e.message().to_owned()))?;
        let moved = reshape(root.get_mut()).map_err(|(span, message)| at(Some(span), message))?;
        let spec = FlowSpec::deserialize(toml::de::Deserializer::from(root)).map_err(|e| {
            let mut message = e.message().to_owned();
            if let Some(tagged) = moved.entry_of(e.span())
                && message.starts_with("unknown field")
            {
                message.push_str(&format!(
                    "; every {} also takes `kind`, `{}`",
                    tagged.what,
                    tagged.shared.join("`, `")
                ));
            }
            at(e.span(), message)
        })?;
        spec.check()?;
        Ok(spec)
    }
}

impl Moved {
    /// The entries of the key at `span`, when [`reshape`] moved it.
    fn entry_of(&self, span: Option<Range<usize>>) -> Option<&'static Tagged> {
        let span = span?;
        self.0
            .iter()
            .find(|(moved, _)| *moved == span)
            .map(|(_, tagged)| *tagged)
    }
}

/// Moves the options of each tagged entry's kind under `kind`; an entry without a string `kind`
/// is refused here, with its place. What is not a table is left for serde to refuse.
fn reshape(root: &mut DeTable<'_>) -> Result<Moved, (Range<usize>, String)> {
    let mut moved = Vec::new();
    for tagged in &TAGGED {
        let Some(DeValue::Array(entries)) = root.get_mut(tagged.array).map(Spanned::get_mut) else {
            continue;
        };
        for entry in entries.iter_mut() {
            let span = entry.span();
            let DeValue::Table(table) = entry.get_mut() else {
                continue;
            };
            let (key, kind) = table
                .remove_entry("kind")
                .ok_or_else(|| (span.clone(), "missing field `kind`".to_owned()))?;
            let kind_span = kind.span();
            let DeValue::String(name) = kind.into_inner() else {
                return Err((
                    kind_span,
                    format!("expected the {}'s kind as a string", tagged.what),
                ));
            };
            let (shared, own): (DeTable<'_>, DeTable<'_>) = std::mem::take(table)
                .into_iter()
                .partition(|(key, _)| tagged.shared.contains(&key.get_ref().as_ref()));
            moved.extend(own.keys().map(|key| (key.span(), tagged)));
            let options = Spanned::new(span, DeValue::Table(own));
            let variant = DeTable::from_iter([(Spanned::new(kind_span.clone(), name), options)]);
            *table = shared;
            table.insert(key, Spanned::new(kind_span, DeValue::Table(variant)));
        }
    }
    Ok(Moved(moved))
}

/// `line L, column C` (1-based) of where `span` starts in `text`.
fn line_column(text: &str, span: Range<usize>) -> String {
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::spec::{AgentKind, ClientKind, Mode};
    use crate::tools::ToolKind;

    const HEAD: &str = "name = \"x\"\n[input]\ntext = \"hi\"\n";

    fn error(body: &str) -> SpecError {
        FlowSpec::parse(&format!("{HEAD}{body}")).unwrap_err()
    }

    #[test]
    fn errors_name_the_line_or_the_toml_path() {
        let e = error("[[agents]]\nname = \"a\"\nkind = \"rule\"\nmodle = \"x\"\n");
        assert_eq!(e.location, "line 7, column 1");
        assert!(e.message.contains("modle"), "{e}");
        let e = error("[[agents]]\nname = \"a\"\nkind = \"llm\"\n");
        assert_eq!(
            (e.location.as_str(), e.message.as_str()),
            ("agents[0].model", "an llm agent needs `model`")
        );
        let rule = "[[agents.rules]]\n";
        let e = error(&format!(
            "[[agents]]\nname = \"a\"\nkind = \"rule\"\nhandoffs = [\"b\"]\n{rule}"
        ));
        assert_eq!(e.location, "agents[0].handoffs[0]");
        let twice = format!("[[agents]]\nname = \"a\"\nkind = \"rule\"\n{rule}");
        assert_eq!(error(&twice.repeat(2)).location, "agents[1].name");
        let e = FlowSpec::parse(&format!("order = [\"z\"]\n{HEAD}{twice}")).unwrap_err();
        assert_eq!(e.location, "order[0]");
    }

    #[test]
    fn defaults_fill_the_optional_parts() {
        let spec = FlowSpec::parse(&format!(
            "{HEAD}[[agents]]\nname = \"a\"\nkind = \"rule\"\n[[agents.rules]]\n"
        ))
        .unwrap();
        assert_eq!(spec.mode, Mode::Handoffs);
        assert_eq!(spec.input.from, "user");
        assert!(spec.tools.is_empty() && spec.server.tokens.is_empty());
    }

    #[test]
    fn each_kind_reads_its_own_options_and_the_shared_ones() {
        let spec = FlowSpec::parse(&format!(
            "{HEAD}[[tools]]\nname = \"get\"\nkind = \"http\"\nurl = \"http://h/{{q}}\"\n\
             description = \"d\"\nparameters = {{ type = \"object\" }}\n\
             requires_confirmation = true\ntimeout_ms = 5\nmethod = \"POST\"\n\
             headers = {{ A = \"b\" }}\n\
             [[tools]]\nkind = \"command\"\nname = \"ls\"\nprogram = \"ls\"\nargs = [\"-l\"]\n\
             idempotent = false\n\
             [[agents]]\nname = \"a\"\nkind = \"llm\"\nmodel = \"m\"\nclient = \"harmony\"\n\
             personality = \"p\"\ntools = [\"get\"]\nhandoffs = [\"b\"]\ncontext_budget = 9\n\
             max_steps = 2\nshow_analysis = true\ntemperature = 0.5\n\
             [[agents]]\nname = \"b\"\nkind = \"rule\"\npersonality = \"q\"\ntools = [\"ls\"]\n\
             handoffs = [\"a\"]\n[[agents.rules]]\n"
        ))
        .unwrap();
        let (get, ls) = (&spec.tools[0], &spec.tools[1]);
        assert!(get.requires_confirmation && get.timeout_ms == Some(5));
        assert!(
            get.idempotent && !ls.idempotent,
            "idempotent unless said otherwise"
        );
        let ToolKind::Http(http) = &get.kind else {
            panic!("{:?}", get.kind)
        };
        assert_eq!(
            (
                http.url.as_str(),
                http.method.as_deref(),
                http.headers["A"].as_str()
            ),
            ("http://h/{q}", Some("POST"), "b")
        );
        let ToolKind::Command(command) = &ls.kind else {
            panic!("{:?}", ls.kind)
        };
        assert_eq!(
            (ls.name.as_str(), command.args.as_slice()),
            ("ls", &["-l".to_owned()][..])
        );
        let (a, b) = (&spec.agents[0], &spec.agents[1]);
        let AgentKind::Llm(llm) = &a.kind else {
            panic!("{:?}", a.kind)
        };
        assert_eq!((llm.model.as_str(), llm.client), ("m", ClientKind::Harmony));
        assert_eq!((llm.max_steps, llm.temperature), (Some(2), Some(0.5)));
        assert!(llm.show_analysis && a.handoffs == ["b"] && a.tools == ["get"]);
        let AgentKind::Rule(rule) = &b.kind else {
            panic!("{:?}", b.kind)
        };
        assert_eq!((rule.rules.len(), b.personality.as_deref()), (1, Some("q")));
    }

    #[test]
    fn an_a2a_agent_reads_its_card_and_refuses_other_kinds_options() {
        let spec = FlowSpec::parse(&format!(
            "{HEAD}[[agents]]\nname = \"remote\"\nkind = \"a2a\"\n\
             card = \"http://127.0.0.1:9/.well-known/agent-card.json\"\n\
             token_env = \"REMOTE_TOKEN\"\ntimeout_secs = 20\n"
        ))
        .unwrap();
        let AgentKind::A2a(a2a) = &spec.agents[0].kind else {
            panic!("{:?}", spec.agents[0].kind)
        };
        assert_eq!(
            (
                a2a.card.as_str(),
                a2a.token_env.as_deref(),
                a2a.timeout_secs
            ),
            (
                "http://127.0.0.1:9/.well-known/agent-card.json",
                Some("REMOTE_TOKEN"),
                Some(20)
            )
        );
        let e = error(
            "[[agents]]\nname = \"r\"\nkind = \"a2a\"\ncard = \"http://h/c\"\nmodel = \"m\"\n",
        );
        assert_eq!(e.location, "line 8, column 1");
        assert!(e.message.contains("model"), "{e}");
        let e = error("[[agents]]\nname = \"r\"\nkind = \"a2a\"\n");
        assert_eq!(e.location, "agents[0].card");
    }

    #[test]
    fn an_mcp_entry_reads_its_options_and_agents_may_name_its_tools() {
        let spec = FlowSpec::parse(&format!(
            "{HEAD}[[tools]]\nname = \"orders\"\nkind = \"mcp\"\ncommand = \"python3\"\n\
             args = [\"s.py\"]\nenv = {{ K = \"v\" }}\nconfirm = [\"refund_order\"]\n\
             connect_timeout_ms = 5\ntimeout_ms = 7\n\
             [[agents]]\nname = \"a\"\nkind = \"llm\"\nmodel = \"m\"\n\
             tools = [\"orders\", \"orders__lookup_order\"]\n"
        ))
        .unwrap();
        let tool = &spec.tools[0];
        let ToolKind::Mcp(mcp) = &tool.kind else {
            panic!("{:?}", tool.kind)
        };
        assert_eq!(
            (
                mcp.command.as_deref(),
                mcp.args.as_slice(),
                mcp.env["K"].as_str()
            ),
            (Some("python3"), &["s.py".to_owned()][..], "v")
        );
        assert_eq!(
            (mcp.connect_timeout_ms, tool.timeout_ms),
            (Some(5), Some(7))
        );
        assert!(tool.may_require_confirmation() && !tool.requires_confirmation);
        // Descriptions and parameters come from the server: refused before connecting.
        let described = FlowSpec::parse(&format!(
            "{HEAD}[[tools]]\nname = \"s\"\nkind = \"mcp\"\ncommand = \"p\"\n\
             description = \"d\"\n[[agents]]\nname = \"a\"\nkind = \"rule\"\n[[agents.rules]]\n"
        ))
        .unwrap();
        let e = described.tools[0].build_all().err().unwrap();
        assert!(e.message.contains("remove `description`"), "{e}");
        // A namespaced name needs an mcp entry of that name.
        refused(
            "[[tools]]\nname = \"orders\"\nkind = \"command\"\nprogram = \"p\"\n\
             [[agents]]\nname = \"a\"\nkind = \"rule\"\ntools = [\"orders__x\"]\n\
             [[agents.rules]]\n",
            "agents[0].tools[0]",
            "expected a tool declared in [[tools]]",
            "found `orders__x`",
        );
        refused(
            "[[tools]]\nname = \"orders\"\nkind = \"mcp\"\nprogram = \"p\"\n",
            "line 7, column 1",
            "unknown field `program`, expected one of `command`",
            "`timeout_ms`, `idempotent`",
        );
    }

    /// Asserts that `body` after [`HEAD`] is refused at `location` with a message that starts
    /// with `message` and ends with `end`.
    fn refused(body: &str, location: &str, message: &str, end: &str) {
        let e = error(body);
        assert_eq!(e.location, location, "{e}");
        assert!(
            e.message.starts_with(message) && e.message.ends_with(end),
            "{e}"
        );
    }

    #[test]
    fn an_option_of_another_kind_is_refused_at_its_line() {
        refused(
            "[[agents]]\nname = \"a\"\nkind = \"llm\"\nmodel = \"m\"\nrules = []\n",
            "line 8, column 1",
            "unknown field `rules`, expected one of `model`",
            "; every agent also takes `kind`, `name`, `personality`, `tools`, `handoffs`",
        );
        refused(
            "[[tools]]\nname = \"t\"\nurl = \"http://h\"\nkind = \"command\"\nprogram = \"p\"\n\
             [[agents]]\nname = \"a\"\nkind = \"rule\"\n[[agents.rules]]\n",
            "line 6, column 1",
            "unknown field `url`, expected `program` or `args`; every tool also takes `kind`",
            "`timeout_ms`, `idempotent`",
        );
    }

    #[test]
    fn a_kind_that_is_missing_unknown_or_not_a_string_is_refused_at_its_place() {
        let robot = "[[agents]]\nname = \"a\"\nkind = \"robot\"\n";
        let (unknown, none) = (
            "unknown variant `robot`, expected one of `rule`, `llm`, `a2a`",
            "",
        );
        refused(robot, "line 6, column 8", unknown, none);
        let (missing, kind) = ("[[agents]]\nname = \"a\"\n", "missing field `kind`");
        refused(missing, "line 4, column 1", kind, kind);
        let three = "[[tools]]\nname = \"t\"\nkind = 3\n";
        let string = "expected the tool's kind as a string";
        refused(three, "line 6, column 8", string, string);
    }

    #[test]
    fn values_inside_an_entry_keep_their_place() {
        let llm = "[[agents]]\nname = \"a\"\nkind = \"llm\"\nmodel = \"m\"\n";
        let steps = "invalid type: string \"x\", expected usize";
        refused(
            &format!("{llm}max_steps = \"x\"\n"),
            "line 8, column 13",
            steps,
            "",
        );
        let grpc = "unknown variant `grpc`, expected `chat` or `harmony`";
        refused(
            &format!("{llm}client = \"grpc\"\n"),
            "line 8, column 10",
            grpc,
            grpc,
        );
        let rule = "[[agents]]\nkind = \"rule\"\nname = \"a\"\n[[agents.rules]]\nonn = 1\n";
        refused(rule, "line 8, column 1", "unknown field `onn`", "`then`");
        let url = "missing field `url`";
        refused(
            "[[tools]]\nname = \"t\"\nkind = \"http\"\n",
            "line 4, column 1",
            url,
            url,
        );
    }
}
