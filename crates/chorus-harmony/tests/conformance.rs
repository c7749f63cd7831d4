//! The 23 openai-harmony 0.0.8 vectors in `shared/conformance/harmony`, used as the
//! reference's own tests use them (see that folder's README).

use chorus_harmony::{
    ChannelConfig, Conversation, DeveloperContent, Message, ParseOptions, Rank, ReasoningEffort,
    RenderMode, RenderOptions, Role, StreamParser, SystemContent, ToolDescription, encoding, parse,
    render,
};
use serde_json::json;

fn vector(name: &str) -> String {
    let path = format!(
        "{}/../../../shared/conformance/harmony/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.replace("\r\n", "\n").trim_end().to_string()
}

fn vector_ids(name: &str) -> Vec<Rank> {
    vector(name)
        .split_whitespace()
        .map(|id| id.parse().unwrap())
        .collect()
}

fn conversation(messages: Vec<Message>) -> Conversation {
    Conversation { messages }
}

/// Renders for completion with the reference Rust API's `None` config (no dropping).
fn completion_no_drop(conversation: &Conversation) -> Vec<Rank> {
    render(
        conversation,
        &RenderOptions {
            drop_analysis: false,
            ..Default::default()
        },
    )
    .unwrap()
}

fn assert_renders_to(file: &str, tokens: &[Rank]) {
    let expected = vector(file);
    assert_eq!(
        encoding().decode_utf8(tokens).unwrap(),
        expected,
        "{file} (text)"
    );
    assert_eq!(
        tokens,
        encoding().encode_with_special_tokens(&expected),
        "{file} (tokens)"
    );
}

fn system(identity: bool, effort: ReasoningEffort) -> SystemContent {
    let mut system = SystemContent {
        reasoning_effort: Some(effort),
        ..Default::default()
    };
    if identity {
        system.model_identity =
            Some("You are ChatGPT, a large language model trained by OpenAI.".into());
    }
    system
}

fn required_channels(mut system: SystemContent, channels: &[&str]) -> SystemContent {
    let valid_channels = channels.iter().map(|c| c.to_string()).collect();
    system.channel_config = Some(ChannelConfig {
        valid_channels,
        channel_required: true,
    });
    system
}

#[test]
fn simple_convo() {
    let convo = conversation(vec![
        Message::new(Role::System, system(true, ReasoningEffort::Medium)),
        Message::new(Role::User, "What is 2 + 2?"),
    ]);
    assert_renders_to("test_simple_convo.txt", &completion_no_drop(&convo));
}

#[test]
fn simple_convo_with_effort_and_instructions() {
    let question = "What is the capital of the largest country in the world?";
    for (effort, name) in [
        (ReasoningEffort::Low, "low"),
        (ReasoningEffort::Medium, "medium"),
        (ReasoningEffort::High, "high"),
    ] {
        for with_instruction in [true, false] {
            let mut messages = vec![Message::new(Role::System, system(true, effort))];
            if with_instruction {
                let developer = DeveloperContent {
                    instructions: Some("Answer the user's questions like a robot.".into()),
                    ..Default::default()
                };
                messages.push(Message::new(Role::Developer, developer));
            }
            messages.push(Message::new(Role::User, question));
            let suffix = if with_instruction {
                ""
            } else {
                "_no_instruction"
            };
            let file = format!("test_simple_convo_{name}_effort{suffix}.txt");
            assert_renders_to(&file, &completion_no_drop(&conversation(messages)));
        }
    }
}

#[test]
fn reasoning_system_messages() {
    let cases = [
        (
            "test_reasoning_system_message.txt",
            ReasoningEffort::Medium,
            None,
            "What is 2 + 2?",
        ),
        (
            "test_reasoning_system_message_no_instruction.txt",
            ReasoningEffort::High,
            None,
            "What is the best place to eat candy in the world?",
        ),
        (
            "test_reasoning_system_message_with_dates.txt",
            ReasoningEffort::Medium,
            Some(("2021-01-01", "2021-01")),
            "What is 42 * pi?",
        ),
    ];
    for (file, effort, dates, question) in cases {
        let mut sys = required_channels(system(true, effort), &["analysis", "final"]);
        if let Some((start, cutoff)) = dates {
            sys.conversation_start_date = Some(start.into());
            sys.knowledge_cutoff = Some(cutoff.into());
        }
        let convo = conversation(vec![
            Message::new(Role::System, sys),
            Message::new(Role::User, question),
        ]);
        assert_renders_to(file, &completion_no_drop(&convo));
    }
}

#[test]
fn render_functions_with_parameters() {
    let sys = SystemContent {
        reasoning_effort: Some(ReasoningEffort::High),
        conversation_start_date: Some("2025-06-28".into()),
        ..Default::default()
    };
    let tool = |name: &str, description: &str, parameters| ToolDescription {
        name: name.into(),
        description: description.into(),
        parameters,
    };
    let developer = DeveloperContent { instructions: Some("Always respond in riddles".into()), ..Default::default() }
        .with_function_tools(vec![
            tool("get_location", "Gets the location of the user.", None),
            tool("get_current_weather", "Gets the current weather in the provided location.", Some(json!({
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
                },
                "required": ["location"]
            }))),
            tool("get_multiple_weathers", "Gets the current weather in the provided list of locations.", Some(json!({
                "type": "object",
                "properties": {
                    "locations": {"type": "array", "items": {"type": "string"}, "description": "List of city and state, e.g. [\"San Francisco, CA\", \"New York, NY\"]"},
                    "format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
                },
                "required": ["locations"]
            }))),
            tool("kitchensink", "A function with various complex schemas.", Some(json!({
                "description": "params object",
                "type": "object",
                "properties": {
                    "string": {"type": "string", "title": "STRING", "description": "A string", "examples": ["hello", "world"]},
                    "string_nullable": {"type": "string", "nullable": true, "description": "A nullable string", "default": "the default"},
                    "string_enum": {"type": "string", "enum": ["a", "b", "c"]},
                    "oneof_string_or_number": {
                        "oneOf": [
                            {"type": "string", "default": "default_string_in_oneof"},
                            {"type": "number", "description": "numbers can happen too"}
                        ],
                        "description": "a oneof",
                        "default": 20
                    }
                }
            }))),
        ]);
    let convo = conversation(vec![
        Message::new(Role::System, sys),
        Message::new(Role::Developer, developer),
        Message::new(Role::User, "What is the weather like in SF?"),
    ]);
    assert_renders_to(
        "test_render_functions_with_parameters.txt",
        &completion_no_drop(&convo),
    );
}

fn dated_system() -> SystemContent {
    SystemContent {
        conversation_start_date: Some("2025-06-28".into()),
        ..Default::default()
    }
}

#[test]
fn builtin_tools_and_no_tools() {
    let python_default = RenderOptions::default();
    let both = conversation(vec![Message::new(
        Role::System,
        dated_system().with_browser_tool().with_python_tool(),
    )]);
    assert_renders_to(
        "test_browser_and_python_tool.txt",
        &completion_no_drop(&both),
    );
    let browser = conversation(vec![Message::new(
        Role::System,
        dated_system().with_browser_tool(),
    )]);
    assert_renders_to(
        "test_browser_tool_only.txt",
        &render(&browser, &python_default).unwrap(),
    );
    let none = conversation(vec![Message::new(Role::System, dated_system())]);
    assert_renders_to(
        "test_no_tools.txt",
        &render(&none, &python_default).unwrap(),
    );
}

#[test]
fn browser_and_function_tool() {
    let developer = DeveloperContent::default().with_function_tools(vec![ToolDescription {
        name: "lookup_weather".into(),
        description: "Use this tool to lookup the weather in a given location. Call it with the parameter 'location', can be any textual description of a location.".into(),
        parameters: Some(json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]})),
    }]);
    let convo = conversation(vec![
        Message::new(Role::System, dated_system().with_browser_tool()),
        Message::new(Role::Developer, developer),
    ]);
    assert_renders_to(
        "test_browser_and_function_tool.txt",
        &render(&convo, &RenderOptions::default()).unwrap(),
    );
}

fn two_turns(analysis: &str) -> Conversation {
    conversation(vec![
        Message::new(Role::User, "What is 2 + 2?"),
        Message::new(Role::Assistant, analysis).with_channel("analysis"),
        Message::new(Role::Assistant, "2 + 2 equals 4.").with_channel("final"),
        Message::new(Role::User, "What about 9 / 2?"),
    ])
}

#[test]
fn analysis_dropping() {
    let dropped = two_turns("User asks: “What is 2 + 2?” Simple arithmetic. Provide answer.");
    assert_renders_to(
        "test_dropping_cot_by_default.txt",
        &render(&dropped, &RenderOptions::default()).unwrap(),
    );
    let kept = two_turns("User asks a simple question: \"What is 2 + 2?\" The answer: 4.");
    assert_renders_to("test_preserve_cot.txt", &completion_no_drop(&kept));

    let ongoing = conversation(vec![
        Message::new(Role::User, "What is the weather in SF?"),
        Message::new(
            Role::Assistant,
            "User asks: “What is the weather in SF?” We need to use lookup_weather tool.",
        )
        .with_channel("analysis"),
        Message::new(Role::Assistant, "{\"location\": \"San Francisco\"}")
            .with_channel("commentary")
            .with_recipient("functions.lookup_weather")
            .with_content_type("<|constrain|>json"),
        Message::from_tool(
            "functions.lookup_weather",
            "{\"temperature\": 20, \"description\": \"sunny\"}",
        ),
    ]);
    assert_renders_to(
        "test_does_not_drop_if_ongoing_analysis.txt",
        &render(&ongoing, &RenderOptions::default()).unwrap(),
    );

    let between = conversation(vec![
        Message::new(Role::User, "What is 2 + 2?"),
        Message::new(Role::Assistant, "thinking 2+2").with_channel("analysis"),
        Message::new(Role::Assistant, "4").with_channel("final"),
        Message::new(Role::User, "What is 3 + 5?"),
        Message::new(Role::Assistant, "thinking 3+5").with_channel("analysis"),
        Message::new(Role::Assistant, "8").with_channel("final"),
    ]);
    let plain = RenderOptions {
        mode: RenderMode::Plain,
        ..Default::default()
    };
    assert_renders_to(
        "test_keep_analysis_between_finals.txt",
        &render(&between, &plain).unwrap(),
    );
}

#[test]
fn simple_reasoning_response() {
    let output = parse(
        &vector_ids("test_simple_reasoning_response.txt"),
        Some(Role::Assistant),
        ParseOptions::STRICT,
    )
    .unwrap();
    assert_eq!(
        output.messages,
        vec![
            Message::new(
                Role::Assistant,
                "User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer."
            )
            .with_channel("analysis"),
            Message::new(Role::Assistant, "2 + 2 = 4.").with_channel("final"),
        ]
    );
}

#[test]
fn simple_tool_call() {
    let output = parse(
        &vector_ids("test_simple_tool_call.txt"),
        Some(Role::Assistant),
        ParseOptions::STRICT,
    )
    .unwrap();
    assert_eq!(
        output.messages,
        vec![
            Message::new(
                Role::Assistant,
                "User asks: \"What is the weather in Tokyo?\" We need to use lookup_weather tool."
            )
            .with_channel("analysis"),
            Message::new(Role::Assistant, "{\"location\": \"Tokyo\"}")
                .with_channel("analysis")
                .with_recipient("lookup_weather")
                .with_content_type("code"),
        ]
    );
}

#[test]
fn streamable_parser() {
    let tokens = encoding().encode_with_special_tokens(&vector("test_streamable_parser.txt"));
    let mut parser = StreamParser::new(Some(Role::Assistant), ParseOptions::STRICT);
    for &token in &tokens {
        parser.process(token).unwrap();
    }
    assert_eq!(parser.messages().len(), 3);
    assert_eq!(
        parser.messages()[1].recipient.as_deref(),
        Some("browser.search")
    );
    assert_eq!(parser.messages()[1].content_type.as_deref(), Some("code"));
    assert_eq!(
        parser.messages()[2].author.name.as_deref(),
        Some("browser.search")
    );
}

#[test]
fn tool_response_parsing() {
    let text = vector("test_tool_response_parsing.txt");
    let expected = Message::from_tool("browser.search", "{\"result\": \"https://openai.com/\"}")
        .with_channel("commentary")
        .with_recipient("assistant");
    // Rust test: parse the encoded text with no role.
    let tokens = encoding().encode_with_special_tokens(&text);
    let output = parse(&tokens, None, ParseOptions::STRICT).unwrap();
    assert_eq!(output.messages, vec![expected.clone()]);
    // Python test: render the message, drop the end token, compare the text.
    let mut rendered = chorus_harmony::render_message(&expected, Default::default()).unwrap();
    rendered.pop();
    assert_eq!(encoding().decode_utf8(&rendered).unwrap(), text);
}

/// The JSON that openai-harmony's Python `Conversation.to_json()` writes (author `name: null`,
/// content as a list of typed parts, `None` fields left out) reads and renders unchanged.
#[test]
fn python_to_json_shape_renders_like_the_vector() {
    let json = r#"{"messages": [
        {"role": "system", "name": null, "content": [{"model_identity": "You are ChatGPT, a large language model trained by OpenAI.", "reasoning_effort": "Medium", "knowledge_cutoff": "2024-06", "channel_config": {"valid_channels": ["analysis", "commentary", "final"], "channel_required": true}, "type": "system_content"}]},
        {"role": "user", "name": null, "content": [{"type": "text", "text": "What is 2 + 2?"}]}
    ]}"#;
    let convo: Conversation = serde_json::from_str(json).unwrap();
    assert_renders_to("test_simple_convo.txt", &completion_no_drop(&convo));
}
