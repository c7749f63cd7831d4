//! Request parameters convert between the provider formats, responses decode as responses, and
//! Gemini's key spelling survives (issue 20, item 6).

use chorus_formats::{EncodeOptions, Error, Format, Loss, convert};
use serde_json::{Value, json};

fn run(from: Format, to: Format, input: &Value) -> (Value, Vec<Loss>) {
    let out = convert(
        from,
        to,
        &input.to_string(),
        &EncodeOptions::default(),
        false,
    )
    .unwrap_or_else(|e| panic!("{} → {}: {e}", from.id(), to.id()));
    (serde_json::from_str(&out.value).unwrap(), out.losses)
}

fn paths(losses: &[Loss]) -> Vec<&str> {
    losses.iter().map(|l| l.path.as_str()).collect()
}

const USER: &str = "Weather in Paris?";

fn chat_request() -> Value {
    json!({
        "model": "gpt-4.1", "temperature": 0.2, "top_p": 0.9, "max_completion_tokens": 300,
        "stop": ["END"], "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "response_format": {"type": "json_schema", "json_schema": {"name": "response", "schema": {"type": "object"}}},
        "messages": [{"role": "user", "content": USER}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    })
}

#[test]
fn chat_parameters_take_each_providers_fields() {
    let (anthropic, losses) = run(Format::OpenAiChat, Format::Anthropic, &chat_request());
    // anthropic 2.13.0's MessageCreateParams has no sampling settings.
    assert_eq!(paths(&losses), ["/temperature", "/top_p"]);
    assert!(anthropic.get("temperature").is_none());
    assert_eq!(
        (
            &anthropic["model"],
            &anthropic["max_tokens"],
            &anthropic["stop_sequences"],
            &anthropic["tool_choice"],
            &anthropic["output_config"]
        ),
        (
            &json!("gpt-4.1"),
            &json!(300),
            &json!(["END"]),
            &json!({"type": "tool", "name": "get_weather"}),
            &json!({"format": {"type": "json_schema", "schema": {"type": "object"}}})
        )
    );
    let (responses, losses) = run(Format::OpenAiChat, Format::OpenAiResponses, &chat_request());
    assert_eq!(paths(&losses), ["/stop"]);
    assert_eq!(responses["max_output_tokens"], 300);
    assert_eq!(
        responses["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    assert_eq!(
        responses["text"]["format"]["schema"],
        json!({"type": "object"})
    );
    let (gemini, losses) = run(Format::OpenAiChat, Format::Gemini, &chat_request());
    assert_eq!(paths(&losses), ["/model"]);
    assert_eq!(
        gemini["generation_config"],
        json!({"temperature": 0.2, "top_p": 0.9, "max_output_tokens": 300, "stop_sequences": ["END"],
               "response_mime_type": "application/json", "response_json_schema": {"type": "object"}})
    );
    assert_eq!(
        gemini["tool_config"],
        json!({"function_calling_config": {"mode": "ANY", "allowed_function_names": ["get_weather"]}})
    );
}

#[test]
fn parameters_come_back_to_chat_from_every_provider() {
    for format in [Format::Anthropic, Format::OpenAiResponses, Format::Gemini] {
        let (request, _) = run(Format::OpenAiChat, format, &chat_request());
        let (chat, losses) = run(format, Format::OpenAiChat, &request);
        assert_eq!(losses, [], "{}", format.id());
        let sampling: &[&str] = if format == Format::Anthropic {
            &[]
        } else {
            &["temperature", "top_p"]
        };
        for key in ["max_completion_tokens", "tool_choice", "response_format"]
            .iter()
            .chain(sampling)
        {
            assert_eq!(chat[key], chat_request()[key], "{}: {key}", format.id());
        }
    }
}

#[test]
fn a_provider_request_keeps_its_parameters_through_chorus() {
    let anthropic = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "temperature": 1,
        "top_k": 5, "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "messages": [{"role": "user", "content": USER}]});
    let (back, losses) = run(Format::Anthropic, Format::Anthropic, &anthropic);
    // An older request's temperature is read, but the current request type has none.
    assert_eq!(paths(&losses), ["/temperature"]);
    let mut current = anthropic.clone();
    current.as_object_mut().unwrap().remove("temperature");
    assert_eq!(back, current);
    let (chat, losses) = run(Format::Anthropic, Format::OpenAiChat, &anthropic);
    assert_eq!(
        paths(&losses),
        ["/x-anthropic"],
        "top_k has no Chat Completions field"
    );
    assert_eq!(
        (
            &chat["model"],
            &chat["max_completion_tokens"],
            &chat["tool_choice"],
            &chat["parallel_tool_calls"],
            &chat["temperature"]
        ),
        (
            &json!("claude-sonnet-4-5"),
            &json!(1024),
            &json!("required"),
            &json!(false),
            &json!(1)
        )
    );
    assert!(
        losses.iter().all(|l| !l.what.contains("no field `model`")),
        "{losses:?}"
    );
}

#[test]
fn a_chat_response_is_not_a_request() {
    let response = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "service_tier": "default", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
        "finish_reason": "stop"}]});
    let (request, losses) = run(Format::OpenAiChat, Format::OpenAiChat, &response);
    assert!(
        request.get("object").is_none() && request.get("service_tier").is_none(),
        "{request}"
    );
    assert!(
        paths(&losses).contains(&"/x-openai-chat-response"),
        "{losses:?}"
    );
    let (again, losses) = run(
        Format::OpenAiChatResponse,
        Format::OpenAiChatResponse,
        &response,
    );
    assert_eq!((again, losses), (response, vec![]));
    let refused = convert(
        Format::OpenAiChatResponse,
        Format::Anthropic,
        &chat_request().to_string(),
        &EncodeOptions::default(),
        false,
    );
    assert!(
        matches!(&refused, Err(Error::Decode(e)) if e.pointer == "/choices"),
        "{refused:?}"
    );
}

#[test]
fn provider_responses_do_not_leak_into_requests() {
    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "finishReason": "STOP"}],
        "promptFeedback": {"blockReason": "OTHER"}, "modelVersion": "gemini-2.5-flash"});
    let (request, _) = run(Format::Gemini, Format::Gemini, &gemini);
    assert!(request.get("promptFeedback").is_none(), "{request}");
    let responses = json!({"id": "resp_1", "object": "response", "status": "completed", "temperature": 1.0,
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}]});
    let (request, _) = run(Format::OpenAiResponses, Format::OpenAiResponses, &responses);
    for key in ["object", "status", "id", "temperature"] {
        assert!(request.get(key).is_none(), "{key} in {request}");
    }
}

#[test]
fn gemini_key_spelling_survives_a_round_trip() {
    let camel = json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": USER}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city_name": "Paris"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp_c": 21}}}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city_name": {"type": "string"}}}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"maxOutputTokens": 100, "thinkingConfig": {"includeThoughts": true}}
    });
    let (back, losses) = run(Format::Gemini, Format::Gemini, &camel);
    assert_eq!(losses, []);
    assert_eq!(back, camel);
    let snake = json!({"contents": [{"role": "user", "parts": [{"text": USER}]}],
        "generation_config": {"max_output_tokens": 100, "top_p": 0.5}});
    let (back, losses) = run(Format::Gemini, Format::Gemini, &snake);
    assert_eq!((back, losses), (snake, vec![]));
    let mut plain = camel.clone();
    plain["generationConfig"] = json!({"maxOutputTokens": 100});
    let (anthropic, losses) = run(Format::Gemini, Format::Anthropic, &plain);
    assert!(
        losses.iter().all(|l| !l.path.starts_with("/x-gemini")),
        "the spelling is not a loss: {losses:?}"
    );
    assert_eq!(anthropic["max_tokens"], 100);
}
