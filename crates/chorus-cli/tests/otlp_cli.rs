//! `chorus run` exports its GenAI spans (`invoke_agent`, `chat`, `execute_tool`) to an OTLP
//! collector named by the standard `OTEL_*` variables, over HTTP and over HTTPS (a certificate
//! made here, trusted through `OTEL_EXPORTER_OTLP_CERTIFICATE`); `chorus serve` exports a
//! server span per request with its request id.
#![cfg(feature = "otlp")]

mod common;

/// The fake OpenAI-compatible server of chorus-agent's tests (not every helper is used here).
#[allow(dead_code)]
#[path = "../../chorus-agent/tests/support/fake_openai.rs"]
mod fake_openai;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use fake_openai::{FakeOpenAi, Reply};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// One export the collector received: the path, the headers, the decoded request.
struct Export {
    path: String,
    headers: HeaderMap,
    request: ExportTraceServiceRequest,
}

type Received = Arc<Mutex<Vec<Export>>>;

/// An OTLP/HTTP collector's `POST`: protobuf bodies decoded, anything else refused.
async fn collect(
    State(received): State<Received>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    if headers
        .get("content-type")
        .is_none_or(|v| v != "application/x-protobuf")
    {
        return StatusCode::UNSUPPORTED_MEDIA_TYPE;
    }
    match ExportTraceServiceRequest::decode(body) {
        Ok(request) => {
            received.lock().unwrap().push(Export {
                path: uri.path().to_owned(),
                headers,
                request,
            });
            StatusCode::OK
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

/// A collector on 127.0.0.1 (HTTPS with the certificate and key files `tls`); its address and
/// what it received.
async fn collector(tls: Option<(&Path, &Path)>) -> (String, Received) {
    let received = Received::default();
    let app = Router::new()
        .fallback(axum::routing::post(collect))
        .with_state(received.clone());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    match tls {
        Some((cert, key)) => {
            let acceptor = chorus_server::tls::acceptor(cert, key).unwrap();
            let listener = chorus_server::tls::TlsListener::new(tcp, acceptor).unwrap();
            tokio::spawn(async move { axum::serve(listener, app).await });
            (format!("https://localhost:{}", addr.port()), received)
        }
        None => {
            tokio::spawn(async move { axum::serve(tcp, app).await });
            (format!("http://{addr}"), received)
        }
    }
}

/// A certificate authority and a server certificate for `localhost` and 127.0.0.1 signed by
/// it, written to `dir`: (CA file, server certificate file, server key file).
fn certificates(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, server.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

const FLOW: &str = r#"name = "otlp"
mode = "handoffs"

[input]
from = "operator"
to = "assistant"
text = "Greet the operator through the tool."

[[tools]]
name = "shout"
kind = "command"
description = "Echoes the words."
program = "echo"
args = ["{words}"]
parameters = { type = "object", properties = { words = { type = "string" } }, required = ["words"], additionalProperties = false }

[[agents]]
name = "assistant"
kind = "llm"
model = "gpt-test"
tools = ["shout"]
"#;

/// Every variable that would steer the exporter, so the test's own environment does not.
const OTEL_VARS: [&str; 9] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
];

/// The model's part in [`FLOW`]: a tool call, then an answer.
fn script() -> Vec<Reply> {
    vec![
        Reply::call("call_1", "shout", r#"{"words":"hello"}"#, (10, 3)),
        Reply::answer("Said hello.", (20, 4)),
    ]
}

/// Runs the flow against a fake model (a tool call, then an answer) with `env`.
async fn run_flow(dir: &Path, env: &[(&str, String)]) -> Output {
    run_flow_with(dir, env, &[], script()).await
}

/// [`run_flow`] with more arguments and the model's replies `replies`.
async fn run_flow_with(
    dir: &Path,
    env: &[(&str, String)],
    args: &[&str],
    replies: Vec<Reply>,
) -> Output {
    let fake = FakeOpenAi::start(replies).await;
    let flow = dir.join("flow.toml");
    std::fs::write(&flow, FLOW).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_chorus"));
    command
        .args(["run", flow.to_str().unwrap()])
        .args(args)
        .current_dir(dir)
        .env("CHORUS_MODEL_BASE_URL", fake.base_url())
        .env_remove("CHORUS_LOG");
    for var in OTEL_VARS {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(fake.remaining(), 0, "every model reply was used");
    out
}

/// The spans received within a few seconds once `ready` holds for them.
async fn spans_when(received: &Received, ready: impl Fn(&[Span]) -> bool) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spans: Vec<Span> = received
            .lock()
            .unwrap()
            .iter()
            .flat_map(|e| e.request.resource_spans.iter())
            .flat_map(|r| r.scope_spans.iter())
            .flat_map(|s| s.spans.iter().cloned())
            .collect();
        if ready(&spans) || Instant::now() > deadline {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    match attr(&span.attributes, key) {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn operation<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| text(s, "gen_ai.operation.name") == Some(name))
        .collect()
}

fn has_genai_spans(spans: &[Span]) -> bool {
    operation(spans, "invoke_agent").len() == 1
        && operation(spans, "chat").len() == 2
        && operation(spans, "execute_tool").len() == 1
}

/// The spans of a run of [`FLOW`]: one agent invocation, two model calls and one tool call
/// under it, with the GenAI attributes of the current conventions.
fn check_genai_spans(spans: &[Span]) {
    let agents = operation(spans, "invoke_agent");
    assert_eq!(agents.len(), 1, "{:?}", names(spans));
    let agent = agents[0];
    assert_eq!(agent.name, "invoke_agent assistant");
    assert_eq!(text(agent, "gen_ai.agent.name"), Some("assistant"));
    let conversation = text(agent, "gen_ai.conversation.id").expect("a conversation id");
    assert!(conversation.starts_with("task-"), "{conversation}");

    let chats = operation(spans, "chat");
    assert_eq!(chats.len(), 2, "{:?}", names(spans));
    for (chat, reason) in chats.iter().zip(["tool_calls", "stop"]) {
        assert_eq!(chat.name, "chat gpt-test");
        assert_eq!(chat.parent_span_id, agent.span_id, "under invoke_agent");
        assert_eq!(chat.trace_id, agent.trace_id);
        assert_eq!(text(chat, "gen_ai.provider.name"), Some("openai"));
        assert_eq!(text(chat, "gen_ai.request.model"), Some("gpt-test"));
        assert_eq!(text(chat, "gen_ai.conversation.id"), Some(conversation));
        let reasons = match attr(&chat.attributes, "gen_ai.response.finish_reasons") {
            Some(Any::ArrayValue(array)) => array
                .values
                .iter()
                .filter_map(|v| match &v.value {
                    Some(Any::StringValue(s)) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            other => panic!("finish reasons are not a string array: {other:?}"),
        };
        assert_eq!(reasons, [reason]);
        let (input, output) = if reason == "stop" { (20, 4) } else { (10, 3) };
        assert_eq!(
            attr(&chat.attributes, "gen_ai.usage.input_tokens"),
            Some(&Any::IntValue(input))
        );
        assert_eq!(
            attr(&chat.attributes, "gen_ai.usage.output_tokens"),
            Some(&Any::IntValue(output))
        );
        assert!(
            matches!(attr(&chat.attributes, "server.port"), Some(Any::IntValue(p)) if *p > 0),
            "{chat:?}"
        );
    }

    let tools = operation(spans, "execute_tool");
    assert_eq!(tools.len(), 1, "{:?}", names(spans));
    let tool = tools[0];
    assert_eq!(tool.name, "execute_tool shout");
    assert_eq!(tool.parent_span_id, agent.span_id, "under invoke_agent");
    assert_eq!(text(tool, "gen_ai.tool.name"), Some("shout"));
    assert_eq!(text(tool, "gen_ai.tool.type"), Some("function"));
    assert_eq!(text(tool, "gen_ai.tool.call.id"), Some("call_1"));
    assert_eq!(text(tool, "gen_ai.conversation.id"), Some(conversation));
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// The request paths of every export received.
fn paths(received: &Received) -> Vec<String> {
    received
        .lock()
        .unwrap()
        .iter()
        .map(|e| e.path.clone())
        .collect()
}

/// `service.name` of the first export.
fn service(received: &Received) -> Option<String> {
    let received = received.lock().unwrap();
    let resource = received
        .first()?
        .request
        .resource_spans
        .first()?
        .resource
        .as_ref()?;
    match attr(&resource.attributes, "service.name") {
        Some(Any::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chorus_run_exports_genai_spans_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (endpoint, received) = collector(None).await;
    let out = run_flow(
        dir.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-collector-key=k1".to_owned(),
            ),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(common::stdout(&out).contains("Said hello."));
    let spans = spans_when(&received, has_genai_spans).await;
    check_genai_spans(&spans);
    let received_paths: Vec<(String, Option<String>)> = received
        .lock()
        .unwrap()
        .iter()
        .map(|e| {
            let key = e.headers.get("x-collector-key");
            (e.path.clone(), key.map(|k| k.to_str().unwrap().to_owned()))
        })
        .collect();
    assert!(
        received_paths
            .iter()
            .all(|(path, key)| path == "/v1/traces" && key.as_deref() == Some("k1")),
        "{received_paths:?}"
    );
    assert_eq!(service(&received).as_deref(), Some("chorus"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chorus_run_exports_genai_spans_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(dir.path());
    let (endpoint, received) = collector(Some((&cert, &key))).await;
    assert!(endpoint.starts_with("https://"));
    let out = run_flow(
        dir.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.display().to_string()),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let spans = spans_when(&received, has_genai_spans).await;
    check_genai_spans(&spans);
    let paths = paths(&received);
    assert!(paths.iter().all(|p| p == "/v1/traces"), "{paths:?}");
    assert_eq!(service(&received).as_deref(), Some("chorus"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_traces_endpoint_and_the_service_name_of_the_environment_win() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(dir.path());
    let (base, received) = collector(Some((&cert, &key))).await;
    let out = run_flow(
        dir.path(),
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("{base}/collector/traces"),
            ),
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://127.0.0.1:9/unused".to_owned(),
            ),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.display().to_string()),
            ("OTEL_SERVICE_NAME", "desk-agents".to_owned()),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let spans = spans_when(&received, has_genai_spans).await;
    check_genai_spans(&spans);
    let paths = paths(&received);
    assert!(
        paths.iter().all(|p| p == "/collector/traces"),
        "the traces endpoint is used as given: {paths:?}"
    );
    assert_eq!(service(&received).as_deref(), Some("desk-agents"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chorus_run_writes_json_log_lines_with_their_span() {
    let dir = tempfile::tempdir().unwrap();
    let mut replies = vec![Reply::status(429).retry_after("0")];
    replies.extend(script());
    let out = run_flow_with(
        dir.path(),
        &[("CHORUS_LOG", "chorus_agent=debug".to_owned())],
        &["--log-format", "json"],
        replies,
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let stderr = common::stderr(&out);
    let logs: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let retried = logs
        .iter()
        .find(|l| l["fields"]["message"] == "model call retried")
        .unwrap_or_else(|| panic!("no retry line in {stderr}"));
    assert_eq!(retried["level"], "DEBUG");
    assert_eq!(
        retried["span"]["gen_ai.operation.name"], "chat",
        "{retried}"
    );
    assert!(!stderr.contains('\u{1b}'), "no colour on a pipe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_https_collector_gets_nothing_and_the_run_still_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let (_ca, cert, key) = certificates(dir.path());
    let (base, received) = collector(Some((&cert, &key))).await;
    let out = run_flow(dir.path(), &[("OTEL_EXPORTER_OTLP_ENDPOINT", base)]).await;
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(
        received.lock().unwrap().is_empty(),
        "no certificate, no export"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chorus_serve_exports_a_server_span_per_request_with_its_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let (endpoint, received) = collector(None).await;
    let mut served = common::Served::start_with(
        dir.path(),
        &["--store", "memory", "--log-format", "json"],
        std::process::Stdio::piped(),
        |command| {
            command.env("CHORUS_LOG", "chorus_server=debug,tower_http=debug");
            for var in OTEL_VARS {
                command.env_remove(var);
            }
            command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
        },
    );
    served.keep_reading();
    let url = format!("http://{}/healthz", served.addr);
    let response = reqwest::Client::new()
        .get(&url)
        .header("x-request-id", "req-otlp-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "req-otlp-1");
    assert!(served.stop().success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut served.child.stderr.take().unwrap(), &mut stderr).unwrap();
    let spans = spans_when(&received, |spans| {
        spans.iter().any(|s| s.name == "GET /healthz")
    })
    .await;
    let span = spans
        .iter()
        .find(|s| s.name == "GET /healthz")
        .unwrap_or_else(|| panic!("no request span in {:?}", names(&spans)));
    assert_eq!(span.kind, 2, "a server span");
    assert_eq!(text(span, "request.id"), Some("req-otlp-1"));
    assert_eq!(text(span, "http.route"), Some("/healthz"));
    assert!(
        matches!(
            attr(&span.attributes, "http.response.status_code"),
            Some(Any::IntValue(200))
        ),
        "{span:?}"
    );
    assert_eq!(service(&received).as_deref(), Some("chorus-server"));
    // `--log-format json`: every log line on standard error is a JSON object.
    let logs: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!logs.is_empty());
    for line in logs {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(value.get("level").is_some(), "{line}");
    }
    assert!(
        stderr.contains("req-otlp-1"),
        "the request's log lines carry its id: {stderr}"
    );
}
