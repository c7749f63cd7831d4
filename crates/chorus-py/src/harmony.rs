//! Harmony for `chorus.harmony`: render, parse, stream and tokenize with chorus-harmony, taking
//! and giving JSON in the shapes openai-harmony's Python package uses.

use chorus_harmony::tokens::{self, Rank};
use chorus_harmony::{
    Conversation, Message, ParseOptions, RenderMode, RenderOptions, Role, StreamState,
    SystemContent, encoding, reference_json,
};
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::repairs;

create_exception!(
    chorus.harmony,
    HarmonyError,
    PyRuntimeError,
    "An input Harmony cannot render, parse or decode (the message says where and why)."
);

/// The one encoding there is (openai-harmony's `HarmonyEncodingName.HARMONY_GPT_OSS`).
const ENCODING_NAME: &str = "HarmonyGptOss";

/// What undecodable bytes become.
const REPLACEMENT: &str = "\u{FFFD}";

/// A parsed message: role, author name, text, channel, recipient, content type.
type MessageTuple = (
    &'static str,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A parsed message as a tuple (parsing yields one text part per message).
fn message_tuple(message: &Message) -> MessageTuple {
    (
        message.author.role.as_str(),
        message.author.name.clone(),
        message.text(),
        message.channel.clone(),
        message.recipient.clone(),
        message.content_type.clone(),
    )
}

/// A repair made by lenient parsing: token position, kind, what it holds.
type RepairTuple = (usize, &'static str, Option<String>);

fn error(message: impl std::fmt::Display) -> PyErr {
    HarmonyError::new_err(message.to_string())
}

fn runtime_error(message: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(message.to_string())
}

fn role(name: Option<&str>) -> PyResult<Option<Role>> {
    name.map(|name| Role::from_name(name).ok_or_else(|| error(format!("unknown role {name:?}"))))
        .transpose()
}

/// The drop-in's rendering: as the reference, header text is rendered as written.
fn options(mode: RenderMode, next_role: Role, drop_analysis: bool) -> RenderOptions {
    RenderOptions {
        mode,
        next_role,
        drop_analysis,
        check_headers: false,
        ..RenderOptions::default()
    }
}

/// Loads the vocabulary (embedded; no download) and returns the encoding's name.
#[pyfunction]
fn load_encoding(py: Python<'_>, name: &str) -> PyResult<&'static str> {
    if name != ENCODING_NAME {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown encoding {name:?}: the one Harmony encoding is {ENCODING_NAME:?}"
        )));
    }
    py.detach(encoding);
    Ok(ENCODING_NAME)
}

/// Renders conversation JSON: `mode` is `completion`, `training` or `plain`.
#[pyfunction]
#[pyo3(signature = (conversation_json, mode, next_role, drop_analysis))]
fn render_conversation(
    py: Python<'_>,
    conversation_json: &str,
    mode: &str,
    next_role: Option<&str>,
    drop_analysis: bool,
) -> PyResult<Vec<Rank>> {
    let mode = match mode {
        "completion" => RenderMode::Completion,
        "training" => RenderMode::Training,
        "plain" => RenderMode::Plain,
        other => return Err(error(format!("unknown render mode {other:?}"))),
    };
    let next_role = role(next_role)?.unwrap_or(Role::Assistant);
    // As the reference: rendering for completion fails with HarmonyError, the other modes with
    // a plain RuntimeError.
    let completion = mode == RenderMode::Completion;
    let fail = |message: String| {
        if completion {
            error(message)
        } else {
            runtime_error(message)
        }
    };
    py.detach(|| {
        let conversation: Conversation =
            reference_json::from_str(conversation_json).map_err(|e| fail(e.to_string()))?;
        chorus_harmony::render(&conversation, &options(mode, next_role, drop_analysis))
            .map_err(|e| fail(e.to_string()))
    })
}

/// Renders one message's JSON on its own.
#[pyfunction]
fn render_message(py: Python<'_>, message_json: &str, function_tools: bool) -> PyResult<Vec<Rank>> {
    py.detach(|| {
        // As the reference, a plain RuntimeError.
        let message: Message = reference_json::from_str(message_json).map_err(runtime_error)?;
        let options = options(RenderMode::Plain, Role::Assistant, false);
        chorus_harmony::render_message_with(&message, function_tools, &options)
            .map_err(runtime_error)
    })
}

/// Parses completion tokens: the messages and, when not strict, the repairs made.
#[pyfunction]
fn parse(
    py: Python<'_>,
    tokens: Vec<Rank>,
    role: Option<&str>,
    strict: bool,
) -> PyResult<(Vec<MessageTuple>, Vec<RepairTuple>)> {
    let role = self::role(role)?;
    py.detach(|| {
        // Not strict: what the reference accepts reads as the reference reads it; the rest is
        // repaired.
        let output = match chorus_harmony::parse(&tokens, role, ParseOptions::STRICT) {
            Ok(output) => output,
            Err(_) if !strict => {
                chorus_harmony::parse(&tokens, role, ParseOptions::LENIENT).map_err(error)?
            }
            Err(failure) => return Err(error(failure)),
        };
        let messages = output.messages.iter().map(message_tuple).collect();
        let repairs = output
            .diagnostics
            .iter()
            .map(|d| {
                let (kind, detail) = repairs::describe(&d.kind);
                (d.position, kind, detail)
            })
            .collect();
        Ok((messages, repairs))
    })
}

/// Encodes text; the special tokens named in `allowed_special` are read as special tokens,
/// every other text as ordinary tokens.
#[pyfunction]
fn encode(py: Python<'_>, text: &str, allowed_special: Vec<String>) -> Vec<Rank> {
    py.detach(|| {
        let encoding = encoding();
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut plain_start = 0;
        let mut search = 0;
        while let Some(open) = text[search..].find("<|").map(|i| i + search) {
            let close = text[open + 2..].find("|>").map(|i| i + open + 4);
            let special = close.and_then(|close| {
                let name = &text[open..close];
                let allowed = allowed_special.iter().any(|a| a == name);
                tokens::special_id(name)
                    .filter(|_| allowed)
                    .map(|id| (id, close))
            });
            match special {
                Some((id, close)) => {
                    encoding.encode_ordinary_into(&text[plain_start..open], &mut out);
                    out.push(id);
                    plain_start = close;
                    search = close;
                }
                None => search = open + 2,
            }
        }
        encoding.encode_ordinary_into(&text[plain_start..], &mut out);
        out
    })
}

/// The bytes of `tokens` (special tokens as their names).
#[pyfunction]
fn decode_bytes<'py>(py: Python<'py>, tokens: Vec<Rank>) -> PyResult<Bound<'py, PyBytes>> {
    let mut bytes = Vec::with_capacity(tokens.len() * 4);
    encoding()
        .decode_bytes_into(&tokens, &mut bytes)
        .map_err(error)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The text of `tokens`; an error when the bytes are not UTF-8.
#[pyfunction]
fn decode_utf8(tokens: Vec<Rank>) -> PyResult<String> {
    encoding().decode_utf8(&tokens).map_err(error)
}

/// The names of every special token.
#[pyfunction]
fn special_tokens() -> Vec<String> {
    (tokens::FIRST_SPECIAL..=tokens::LAST_SPECIAL)
        .filter_map(tokens::special_name)
        .collect()
}

/// Whether `token` is a special token.
#[pyfunction]
fn is_special_token(token: Rank) -> bool {
    tokens::is_special(token)
}

/// `<|return|>`, `<|call|>`, `<|end|>`.
#[pyfunction]
fn stop_tokens() -> Vec<Rank> {
    tokens::STOP_TOKENS.to_vec()
}

/// `<|return|>`, `<|call|>`.
#[pyfunction]
fn stop_tokens_for_assistant_actions() -> Vec<Rank> {
    tokens::STOP_TOKENS_FOR_ASSISTANT_ACTIONS.to_vec()
}

/// The JSON of a built-in tool namespace (`browser` or `python`).
#[pyfunction]
fn tool_namespace(name: &str) -> PyResult<String> {
    let system = match name {
        "browser" => SystemContent::default().with_browser_tool(),
        "python" => SystemContent::default().with_python_tool(),
        other => return Err(error(format!("no built-in tool namespace {other:?}"))),
    };
    let namespace = system.tools.and_then(|mut tools| tools.remove(name));
    serde_json::to_string(&namespace).map_err(error)
}

/// Maps a chorus conversation (JSON) to a Harmony one under the default system message: the
/// Harmony conversation's JSON and what it could not carry (pointer, what).
#[pyfunction]
fn from_chorus(chorus_json: &str) -> PyResult<(String, Vec<(String, String)>)> {
    let source: chorus_core::Conversation = serde_json::from_str(chorus_json).map_err(error)?;
    let mapped = chorus_harmony::chorus_map::to_harmony(&source, SystemContent::default());
    let losses = mapped
        .losses
        .into_iter()
        .map(|loss| (loss.pointer, loss.what))
        .collect();
    Ok((
        serde_json::to_string(&mapped.conversation).map_err(error)?,
        losses,
    ))
}

/// Maps a Harmony conversation (JSON) to a chorus one (JSON).
#[pyfunction]
fn to_chorus(harmony_json: &str) -> PyResult<String> {
    let source: Conversation = reference_json::from_str(harmony_json).map_err(error)?;
    serde_json::to_string(&chorus_harmony::chorus_map::from_harmony(&source)).map_err(error)
}

/// Writes the vocabulary as tiktoken's `o200k_base.tiktoken` file (for tools that load it).
#[pyfunction]
fn write_tiktoken_file(path: std::path::PathBuf) -> PyResult<()> {
    let write = || -> std::io::Result<()> {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        encoding().write_tiktoken_file(&mut file)?;
        std::io::Write::flush(&mut file)
    };
    write().map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display())))
}

/// The streaming parser, one token at a time.
#[pyclass(module = "chorus._native")]
struct StreamParser {
    inner: chorus_harmony::StreamParser,
    tokens: Vec<Rank>,
    /// Where the current state's tokens (header or content) begin in `tokens`.
    state_start: usize,
    /// The content read so far as the reference keeps it: each delta encoded on its own.
    content_tokens: Vec<Rank>,
}

#[pymethods]
impl StreamParser {
    #[new]
    fn new(role: Option<&str>, strict: bool) -> PyResult<Self> {
        let options = if strict {
            ParseOptions::STRICT
        } else {
            ParseOptions::LENIENT
        };
        Ok(Self {
            inner: chorus_harmony::StreamParser::new(self::role(role)?, options),
            tokens: Vec::new(),
            state_start: 0,
            content_tokens: Vec::new(),
        })
    }

    /// Feeds one token.
    fn process(&mut self, token: Rank) -> PyResult<()> {
        let before = self.inner.state();
        self.tokens.push(token);
        let result = self.inner.process(token).map_err(error);
        if self.inner.state() != before {
            self.state_start = self.tokens.len();
            self.content_tokens.clear();
        } else if let Some(delta) = self.inner.last_content_delta() {
            // The reference encodes a replacement character apart from the text before it.
            let (text, replaced) = match delta.strip_suffix(REPLACEMENT) {
                Some(text) if !text.is_empty() => (text, true),
                _ => (delta, false),
            };
            let encoding = encoding();
            encoding.encode_ordinary_into(text, &mut self.content_tokens);
            if replaced {
                encoding.encode_ordinary_into(REPLACEMENT, &mut self.content_tokens);
            }
        }
        result
    }

    /// Ends the input (completes the message being read).
    fn process_eos(&mut self) -> PyResult<()> {
        let before = self.inner.state();
        let result = self.inner.process_eos().map_err(error);
        if self.inner.state() != before {
            self.state_start = self.tokens.len();
        }
        result
    }

    /// The state as openai-harmony reports it: the header tokens read so far, or the header
    /// and the content tokens (JSON).
    #[getter]
    fn state_data(&self) -> String {
        let since = &self.tokens[self.state_start.min(self.tokens.len())..];
        let content_tokens = &self.content_tokens;
        let parser = &self.inner;
        let data = match parser.state() {
            StreamState::ExpectStart => serde_json::json!({"state": "ExpectStart"}),
            StreamState::Header => serde_json::json!({"state": "Header", "header_tokens": since}),
            StreamState::Content => {
                let mut author =
                    serde_json::json!({"role": parser.current_role().map(Role::as_str)});
                if let Some(name) = parser.current_name() {
                    author["name"] = name.into();
                }
                serde_json::json!({
                    "state": "Content",
                    "header": {
                        "author": author,
                        "recipient": parser.current_recipient(),
                        "channel": parser.current_channel(),
                        "content_type": parser.current_content_type(),
                    },
                    "content_tokens": content_tokens,
                })
            }
        };
        data.to_string()
    }

    #[getter]
    fn current_content(&self) -> &str {
        self.inner.current_content()
    }

    #[getter]
    fn current_role(&self) -> Option<&'static str> {
        self.inner.current_role().map(Role::as_str)
    }

    #[getter]
    fn current_content_type(&self) -> Option<&str> {
        self.inner.current_content_type()
    }

    #[getter]
    fn current_recipient(&self) -> Option<&str> {
        self.inner.current_recipient()
    }

    #[getter]
    fn current_channel(&self) -> Option<&str> {
        self.inner.current_channel()
    }

    #[getter]
    fn last_content_delta(&self) -> Option<&str> {
        self.inner.last_content_delta()
    }

    /// The completed messages.
    #[getter]
    fn messages(&self) -> Vec<MessageTuple> {
        self.inner.messages().iter().map(message_tuple).collect()
    }

    #[getter]
    fn message_count(&self) -> usize {
        self.inner.messages().len()
    }

    #[getter]
    fn tokens(&self) -> Vec<Rank> {
        self.tokens.clone()
    }

    /// `ExpectStart`, `Header` or `Content`.
    #[getter]
    fn state(&self) -> &'static str {
        match self.inner.state() {
            StreamState::ExpectStart => "ExpectStart",
            StreamState::Header => "Header",
            StreamState::Content => "Content",
        }
    }

    /// Repairs made so far (lenient mode).
    #[getter]
    fn repairs(&self) -> Vec<RepairTuple> {
        self.inner
            .diagnostics()
            .iter()
            .map(|d| {
                let (kind, detail) = repairs::describe(&d.kind);
                (d.position, kind, detail)
            })
            .collect()
    }
}

/// Adds the Harmony functions, `StreamParser` and `HarmonyError` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("HarmonyError", module.py().get_type::<HarmonyError>())?;
    module.add_class::<StreamParser>()?;
    module.add_function(wrap_pyfunction!(load_encoding, module)?)?;
    module.add_function(wrap_pyfunction!(render_conversation, module)?)?;
    module.add_function(wrap_pyfunction!(render_message, module)?)?;
    module.add_function(wrap_pyfunction!(parse, module)?)?;
    module.add_function(wrap_pyfunction!(encode, module)?)?;
    module.add_function(wrap_pyfunction!(decode_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(decode_utf8, module)?)?;
    module.add_function(wrap_pyfunction!(special_tokens, module)?)?;
    module.add_function(wrap_pyfunction!(is_special_token, module)?)?;
    module.add_function(wrap_pyfunction!(stop_tokens, module)?)?;
    module.add_function(wrap_pyfunction!(stop_tokens_for_assistant_actions, module)?)?;
    module.add_function(wrap_pyfunction!(tool_namespace, module)?)?;
    module.add_function(wrap_pyfunction!(write_tiktoken_file, module)?)?;
    module.add_function(wrap_pyfunction!(from_chorus, module)?)?;
    module.add_function(wrap_pyfunction!(to_chorus, module)?)?;
    Ok(())
}
