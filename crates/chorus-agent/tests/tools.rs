//! The tool registry: argument validation with self-repair, http and command kinds, images,
//! and confirmation (halted, approved, consumed once).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};
use chorus_agent::confirm::{ConfirmationState, Confirmations, MemoryConfirmations};
use chorus_agent::tools::{
    CommandTool, FunctionTool, HttpTool, ToolOutput, ToolRegistry, definition,
};
use chorus_core::{ContentPart, ToolCall, ToolOutcome};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// City name.
    city: String,
    /// Days ahead, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    let mut c = ToolCall::function(id, name, &Value::Null);
    c.function.arguments = arguments.to_owned();
    c
}

fn error_of(output: &ToolOutput) -> (String, String) {
    match &output.outcome {
        ToolOutcome::Error {
            error_type,
            message,
        } => (error_type.clone(), message.clone()),
        other => panic!("expected an error result, found {other:?}"),
    }
}

fn forecast_registry(runs: Arc<AtomicUsize>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry
        .register(Arc::new(FunctionTool::new(
            "forecast",
            "Weather forecast",
            move |a: Forecast| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    ToolOutput::success(
                        json!({"status": "success", "city": a.city, "days": a.days}),
                    )
                }
            },
        )))
        .unwrap();
    registry
}

#[tokio::test]
async fn invalid_arguments_come_back_as_error_results_the_model_can_repair() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = forecast_registry(runs.clone());
    let schema = &registry.definitions(None)[0].function.parameters;
    assert_eq!(schema.as_ref().unwrap()["properties"]["days"]["maximum"], 7);

    let (kind, message) = error_of(
        &registry
            .invoke("a", &call("1", "forecast", "{\"city\": 'Paris'}"), None)
            .await,
    );
    assert_eq!(kind, "InvalidArgumentsJson");
    assert!(message.contains("line 1"), "{message}");

    let (kind, message) = error_of(
        &registry
            .invoke(
                "a",
                &call("2", "forecast", r#"{"city": "Paris", "days": 30}"#),
                None,
            )
            .await,
    );
    assert_eq!(kind, "InvalidArguments");
    assert!(message.contains("at /days"), "{message}");
    assert!(message.contains("Hint"), "{message}");

    let (_, message) = error_of(
        &registry
            .invoke("a", &call("3", "forecast", r#"{"days": 2}"#), None)
            .await,
    );
    assert!(message.contains("city"), "{message}");

    let (kind, _) = error_of(
        &registry
            .invoke("a", &call("4", "forcast", "{}"), None)
            .await,
    );
    assert_eq!(kind, "UnknownTool");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no invalid call ran");

    let repaired = registry
        .invoke(
            "a",
            &call("5", "forecast", r#"{"city": "Paris", "days": 3}"#),
            None,
        )
        .await;
    assert_eq!(
        repaired.outcome,
        ToolOutcome::Success(json!({"status": "success", "city": "Paris", "days": 3}))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let message = repaired.to_message("5", "forecast");
    assert_eq!(message.tool_call_id.as_deref(), Some("5"));
    assert_eq!(ToolOutcome::from_text(&message.text()), repaired.outcome);
}

async fn http_server() -> String {
    let app = Router::new()
        .route(
            "/weather/{city}",
            get(|Path(city): Path<String>, headers: HeaderMap| async move {
                let auth = headers
                    .get("x-token")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                axum::Json(json!({"status": "success", "city": city, "token": auth}))
            }),
        )
        .route("/echo", post(|body: String| async move { body }))
        .route(
            "/down",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "maintenance") }),
        )
        .route(
            "/map.png",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    vec![0x89u8, b'P', b'N', b'G'],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    format!("http://{addr}")
}

fn http_tool(name: &str, method: &str, url: String) -> HttpTool {
    let params = json!({"type": "object", "properties": {"city": {"type": "string"}, "token": {"type": "string"}}});
    HttpTool::new(definition(name, None, params), method, url).unwrap()
}

#[tokio::test]
async fn http_tools_fill_encoded_urls_and_report_failures() {
    let base = http_server().await;
    let mut registry = ToolRegistry::new();
    let headers = [("x-token".to_owned(), "{token}".to_owned())]
        .into_iter()
        .collect();
    registry
        .register(Arc::new(
            http_tool("weather", "GET", format!("{base}/weather/{{city}}")).with_headers(headers),
        ))
        .unwrap();
    registry
        .register(Arc::new(http_tool("echo", "POST", format!("{base}/echo"))))
        .unwrap();
    registry
        .register(Arc::new(http_tool("down", "GET", format!("{base}/down"))))
        .unwrap();
    registry
        .register(Arc::new(http_tool("map", "GET", format!("{base}/map.png"))))
        .unwrap();

    let out = registry
        .invoke(
            "a",
            &call("1", "weather", r#"{"city": "São Paulo/SP", "token": "t1"}"#),
            None,
        )
        .await;
    assert_eq!(
        out.outcome,
        ToolOutcome::Success(json!({"status": "success", "city": "São Paulo/SP", "token": "t1"}))
    );

    let out = registry
        .invoke("a", &call("2", "echo", r#"{"city": "Oslo"}"#), None)
        .await;
    assert_eq!(
        out.outcome,
        ToolOutcome::Success(json!({"city": "Oslo"})),
        "POST sends the arguments"
    );

    let (kind, message) = error_of(&registry.invoke("a", &call("3", "down", "{}"), None).await);
    assert_eq!(kind, "HttpStatus503");
    assert!(message.contains("maintenance"), "{message}");

    let (kind, message) = error_of(
        &registry
            .invoke("a", &call("4", "weather", r#"{"token": "t"}"#), None)
            .await,
    );
    assert_eq!(kind, "InvalidArguments");
    assert!(message.contains("`city`"), "{message}");

    let out = registry.invoke("a", &call("5", "map", "{}"), None).await;
    match &out.media[..] {
        [ContentPart::Image(image)] => {
            assert_eq!(image.image_url.url, "data:image/png;base64,iVBORw==")
        }
        other => panic!("expected one image, found {other:?}"),
    }
    let message = out.to_message("5", "map");
    assert_eq!(message.parts().len(), 2, "the result text and the image");
}

#[tokio::test]
async fn command_tools_run_without_a_shell_with_exit_codes_and_timeouts() {
    let mut registry = ToolRegistry::new();
    let params =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    registry
        .register(Arc::new(CommandTool::new(
            definition("say", None, params.clone()),
            "echo",
            vec!["-n".into(), "{text}".into()],
        )))
        .unwrap();
    registry
        .register(Arc::new(CommandTool::new(
            definition("list", None, params.clone()),
            "ls",
            vec!["{text}".into()],
        )))
        .unwrap();
    registry
        .register(Arc::new(
            CommandTool::new(
                definition("slow", None, json!({"type": "object"})),
                "sleep",
                vec!["5".into()],
            )
            .with_timeout(Duration::from_millis(200)),
        ))
        .unwrap();

    let out = registry
        .invoke(
            "a",
            &call("1", "say", r#"{"text": "a; rm -rf / $(x)"}"#),
            None,
        )
        .await;
    assert_eq!(
        out.outcome,
        ToolOutcome::Success(json!({"status": "success", "output": "a; rm -rf / $(x)"})),
        "the argument reaches the program as one literal argument"
    );
    let (kind, message) = error_of(
        &registry
            .invoke("a", &call("2", "list", r#"{"text": "/no/such/dir"}"#), None)
            .await,
    );
    assert_eq!(kind, "CommandFailed");
    assert!(message.contains("exited with code"), "{message}");
    let started = std::time::Instant::now();
    let (kind, _) = error_of(&registry.invoke("a", &call("3", "slow", "{}"), None).await);
    assert_eq!(kind, "Timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_confirmed_tool_halts_then_runs_once_after_approval_of_that_exact_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let store = Arc::new(MemoryConfirmations::new());
    let mut registry = ToolRegistry::new().with_confirmations(store.clone());
    let counter = runs.clone();
    registry
        .register(Arc::new(
            FunctionTool::new("drop_table", "Deletes a table", move |_: Forecast| {
                let counter = counter.clone();
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    ToolOutput::success(json!({"status": "success"}))
                }
            })
            .with_confirmation(),
        ))
        .unwrap();
    let args = r#"{"city": "prod", "days": 1}"#;
    let first = registry
        .invoke("ops", &call("c1", "drop_table", args), Some("task-1"))
        .await;
    match &first.outcome {
        ToolOutcome::Halted { reason, message } => {
            assert_eq!(reason, "human_confirmation_required");
            assert!(message.contains("MUST ask the user"), "{message}");
        }
        other => panic!("expected halted, found {other:?}"),
    }
    let pending = store.list(Some(ConfirmationState::Pending)).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].agent.as_str(), pending[0].arguments.as_str()),
        ("ops", args)
    );
    assert_eq!(pending[0].task_id.as_deref(), Some("task-1"));

    let again = registry
        .invoke("ops", &call("c1", "drop_table", args), Some("task-1"))
        .await;
    assert!(
        matches!(again.outcome, ToolOutcome::Halted { .. }),
        "still waiting"
    );
    assert_eq!(
        store.list(None).await.unwrap().len(),
        1,
        "the same call is recorded once"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    store
        .decide(&pending[0].id, true, "alice", None)
        .await
        .unwrap();
    let other_args = registry
        .invoke(
            "ops",
            &call("c1", "drop_table", r#"{"city": "staging", "days": 1}"#),
            Some("task-1"),
        )
        .await;
    let (kind, _) = error_of(&other_args);
    assert_eq!(
        kind, "ConfirmationArgumentsChanged",
        "approval is for the exact arguments"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let approved = registry
        .invoke("ops", &call("c1", "drop_table", args), Some("task-1"))
        .await;
    assert_eq!(
        approved.outcome,
        ToolOutcome::Success(json!({"status": "success"}))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let (kind, _) = error_of(
        &registry
            .invoke("ops", &call("c1", "drop_table", args), Some("task-1"))
            .await,
    );
    assert_eq!(kind, "ConfirmationAlreadyUsed");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "an approval runs the call once"
    );
}

#[test]
fn a_tool_needing_confirmation_needs_a_store() {
    let mut registry = ToolRegistry::new();
    let tool = FunctionTool::new("x", "x", |_: Forecast| async {
        ToolOutput::success(json!({}))
    })
    .with_confirmation();
    assert!(
        registry
            .register(Arc::new(tool))
            .unwrap_err()
            .to_string()
            .contains("confirmation store")
    );
}
