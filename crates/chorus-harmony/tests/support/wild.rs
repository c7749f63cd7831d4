//! Conversations as real clients write them, as JSON text: Unicode and odd header text, channels
//! no system message lists, numbers in every JSON form in tool schemas, every role, multi-turn
//! tool use, and now and then header text that spells a special token.

use chorus_harmony::{
    ChannelConfig, Content, Conversation, DeveloperContent, Message, ReasoningEffort, Role,
    SystemContent, ToolDescription, ToolNamespaceConfig,
};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

use super::text;

/// Stands for a number literal inside a JSON string until the text is written.
const NUMBER_MARK: &str = "§num§";

/// Header text that spells a special token: the one thing chorus refuses to render.
pub const INJECTIONS: &[&str] = &[
    "<|end|>",
    "a<|message|>b",
    "<|reserved_200013|>",
    "x<|channel|>final",
    "<|start|>system",
    "<|constrain|>",
    "<|call|>",
];

const ODD_WORDS: &[&str] = &[
    "太郎",
    "Алиса",
    "zoë",
    "未来天气",
    "поиск",
    "😀",
    "👍🏽x",
    "a b",
    " ",
    "x\ty",
    "天気 予報",
    "to=x",
    "ä.ö",
    "with:colon",
    "<|x|>",
    "<|",
    "|>",
    "",
    "a\nb",
    "json",
    "assistant",
    "user",
    "Ǆ",
    "\u{a0}",
];

/// A word for a header field: mostly plain or Unicode, rarely a special token's name.
pub fn header_word() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z_]{1,10}",
        6 => select(ODD_WORDS).prop_map(String::from),
        2 => "\\PC{1,6}",
        1 => select(INJECTIONS).prop_map(String::from),
    ]
}

fn channel_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => select(vec!["analysis", "commentary", "final"]).prop_map(String::from),
        2 => select(vec!["notes", "комментарий", "final answer", "思考", "", "final?"]).prop_map(String::from),
        1 => header_word(),
    ]
}

fn content_type() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![
        4 => select(vec!["<|constrain|>json", "json", "code", "<|constrain|>"]).prop_map(String::from),
        2 => select(vec!["<|constrain|> json", "text/plain", "a b", "<|constrain|>Ĵson", "<|constrain|><|x|>"]).prop_map(String::from),
        1 => header_word(),
        1 => header_word().prop_map(|w| format!("<|constrain|>{w}")),
    ])
}

/// A JSON number literal in any form: integers of any size, `-0`, exponents, long fractions.
pub fn number_literal() -> impl Strategy<Value = String> {
    let finite = any::<f64>().prop_filter("finite", |x| x.is_finite());
    prop_oneof![
        3 => select(vec![
            "0", "-0", "1", "-1", "1.0", "-0.0", "0.0", "1e30", "1E+2", "1e-7", "2.5E-5",
            "1e308", "1.7976931348623157e308", "5e-324", "1e-400", "1e400",
            "18446744073709551615", "18446744073709551616", "-9223372036854775808",
            "-9223372036854775809", "123456789012345678901234567890", "9007199254740993",
            "0.1", "3.14159265358979323846", "123.456e10", "1e22", "1e23", "1e+16", "1e16",
            "12345678901234567.0", "0.0001", "0.00001", "1e-05", "100",
        ]).prop_map(String::from),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => "-?[1-9][0-9]{19,40}",
        2 => finite.clone().prop_map(|x| format!("{x:e}")),
        1 => finite.clone().prop_map(|x| format!("{x:E}")),
        1 => finite.prop_map(|x| format!("{x:?}")),
        2 => "-?(0|[1-9][0-9]{0,20})\\.[0-9]{1,20}([eE][+-]?[12]?[0-9]{1,2})?",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    number_literal().prop_map(|literal| Value::String(format!("{NUMBER_MARK}{literal}")))
}

/// Default values: strings, numbers, booleans, null, arrays and objects holding numbers.
fn default_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => number(),
        1 => "[a-zé ]{0,6}".prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::from),
        1 => Just(Value::Null),
        1 => proptest::collection::vec(number(), 0..3).prop_map(Value::from),
        1 => (number(), number()).prop_map(|(a, b)| json!({"a": a, "b": [b, "x"]})),
    ]
}

fn leaf_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": ["number", "string"]})),
        proptest::collection::vec(
            prop_oneof![number(), "[a-z]{1,4}".prop_map(Value::from)],
            1..4
        )
        .prop_map(|values| json!({"type": "string", "enum": values})),
        proptest::collection::vec(number(), 1..4)
            .prop_map(|values| json!({"type": "number", "enum": values})),
        proptest::collection::vec(
            prop_oneof![number(), "[a-z]{1,4}".prop_map(Value::from)],
            1..3
        )
        .prop_map(|values| json!({"type": "number", "examples": values})),
        number().prop_map(|n| json!({"const": n})),
        (number(), number())
            .prop_map(|(min, max)| json!({"type": "integer", "minimum": min, "maximum": max})),
    ]
}

fn annotated(schema: Value) -> impl Strategy<Value = Value> {
    (
        proptest::option::of(default_value()),
        proptest::option::of(header_word()),
        any::<bool>(),
    )
        .prop_map(move |(default, description, nullable)| {
            let mut schema = schema.clone();
            let object = schema.as_object_mut().expect("schemas are objects");
            if let Some(default) = default {
                object.insert("default".into(), default);
            }
            if let Some(description) = description {
                object.insert("description".into(), description.into());
            }
            if nullable {
                object.insert("nullable".into(), true.into());
            }
            schema
        })
}

/// Tool parameter schemas with numbers in defaults, enums, examples and bounds.
pub fn schema() -> impl Strategy<Value = Value> {
    let leaf = leaf_schema().prop_flat_map(annotated);
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            proptest::collection::vec(inner.clone(), 1..3)
                .prop_map(|variants| json!({"oneOf": variants})),
            proptest::collection::vec((header_word(), inner), 0..4).prop_map(|props| {
                let names: Vec<Value> = props.iter().map(|(k, _)| Value::from(k.clone())).collect();
                let properties: Map<String, Value> = props.into_iter().collect();
                json!({"type": "object", "properties": properties, "required": names})
            }),
        ]
        .prop_flat_map(annotated)
    })
}

fn tool() -> impl Strategy<Value = ToolDescription> {
    (header_word(), text(), proptest::option::of(schema())).prop_map(
        |(name, description, parameters)| ToolDescription {
            name,
            description,
            parameters,
        },
    )
}

fn namespace() -> impl Strategy<Value = ToolNamespaceConfig> {
    (
        prop_oneof![Just("functions".to_string()), header_word()],
        proptest::option::of(text()),
        proptest::collection::vec(tool(), 0..3),
    )
        .prop_map(|(name, description, tools)| ToolNamespaceConfig {
            name,
            description,
            tools,
        })
}

fn system() -> impl Strategy<Value = SystemContent> {
    (
        proptest::option::of(text()),
        proptest::option::of(select(vec![
            ReasoningEffort::Low,
            ReasoningEffort::Medium,
            ReasoningEffort::High,
        ])),
        proptest::option::of("20[0-9]{2}-[01][0-9]-[0-3][0-9]"),
        proptest::option::of("20[0-9]{2}-[01][0-9]"),
        proptest::option::of((
            proptest::collection::vec(channel_name(), 0..4),
            any::<bool>(),
        )),
        0u8..4,
    )
        .prop_map(|(identity, effort, date, cutoff, channels, builtins)| {
            let mut system = SystemContent {
                model_identity: identity,
                reasoning_effort: effort,
                tools: None,
                conversation_start_date: date,
                knowledge_cutoff: cutoff,
                channel_config: channels.map(|(valid_channels, channel_required)| ChannelConfig {
                    valid_channels,
                    channel_required,
                }),
            };
            if builtins & 1 != 0 {
                system = system.with_browser_tool();
            }
            if builtins & 2 != 0 {
                system = system.with_python_tool();
            }
            system
        })
}

fn developer() -> impl Strategy<Value = DeveloperContent> {
    (
        proptest::option::of(text()),
        proptest::option::of(proptest::collection::vec(namespace(), 0..3)),
    )
        .prop_map(|(instructions, namespaces)| DeveloperContent {
            instructions,
            tools: namespaces.map(|all| all.into_iter().map(|n| (n.name.clone(), n)).collect()),
            response_formats: None,
        })
}

fn name() -> impl Strategy<Value = Option<String>> {
    proptest::option::weighted(0.3, header_word())
}

/// One turn of a multi-agent, multi-tool conversation.
fn turn() -> impl Strategy<Value = Message> {
    let role = select(vec![
        Role::User,
        Role::Assistant,
        Role::System,
        Role::Developer,
    ]);
    prop_oneof![
        10 => (text(), name()).prop_map(|(text, name)| {
            let mut message = Message::new(Role::User, text);
            message.author.name = name;
            message
        }),
        10 => (text(), proptest::option::of(channel_name())).prop_map(|(text, channel)| Message {
            channel,
            ..Message::new(Role::Assistant, text)
        }),
        10 => (
            header_word(),
            text(),
            content_type(),
            proptest::option::of(channel_name())
        )
            .prop_map(|(tool, args, content_type, channel)| Message {
                recipient: Some(format!("functions.{tool}")),
                content_type,
                channel,
                ..Message::new(Role::Assistant, args)
            }),
        10 => (
            header_word(),
            text(),
            proptest::option::of(channel_name()),
            any::<bool>()
        )
            .prop_map(|(tool, result, channel, to_assistant)| Message {
                recipient: to_assistant.then(|| "assistant".to_string()),
                channel,
                ..Message::from_tool(format!("functions.{tool}"), result)
            }),
        5 => (
            role,
            name(),
            proptest::option::of(header_word()),
            proptest::collection::vec(text(), 0..3)
        )
            .prop_map(|(role, name, recipient, parts)| Message {
                author: chorus_harmony::Author { role, name },
                recipient,
                content: parts.into_iter().map(Content::from).collect(),
                channel: None,
                content_type: None,
            }),
        // The reference refuses a tool message without a name.
        1 => text().prop_map(|text| Message::new(Role::Tool, text)),
    ]
}

/// A conversation and its JSON text (numbers written as literals).
pub fn conversation_json() -> impl Strategy<Value = String> {
    (
        proptest::option::of(system()),
        proptest::option::of(developer()),
        proptest::collection::vec(turn(), 0..8),
    )
        .prop_map(|(system, developer, turns)| {
            let mut messages = Vec::new();
            messages.extend(system.map(|s| Message::new(Role::System, s)));
            messages.extend(developer.map(|d| Message::new(Role::Developer, d)));
            messages.extend(turns);
            write_numbers(&serde_json::to_string(&Conversation { messages }).unwrap())
        })
}

/// Replaces each marked string with the number literal it stands for.
fn write_numbers(json: &str) -> String {
    let quoted = format!("\"{NUMBER_MARK}");
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(at) = rest.find(&quoted) {
        out.push_str(&rest[..at]);
        let literal_start = at + quoted.len();
        let literal_len = rest[literal_start..].find('"').expect("a closing quote");
        out.push_str(&rest[literal_start..literal_start + literal_len]);
        rest = &rest[literal_start + literal_len + 1..];
    }
    out.push_str(rest);
    out
}
