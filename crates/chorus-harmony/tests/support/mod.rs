//! Generators shared by the property tests: texts, JSON Schemas, conversations, token streams.
#![allow(dead_code)] // each test binary uses a different subset

pub mod wild;

use chorus_harmony::tokens::{self, Rank};
use chorus_harmony::{
    ChannelConfig, Content, Conversation, DeveloperContent, Message, ReasoningEffort, RenderMode,
    RenderOptions, Role, SystemContent, ToolDescription, ToolNamespaceConfig, encoding,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Strings that stress the pre-tokenizer and spell special tokens.
const TRICKY: &[&str] = &[
    "<|end|>",
    "<|start|>assistant<|message|>",
    "<|reserved_200013|>",
    "<|channel|>final",
    "<|call|>",
    "  \n\n  x",
    "😀👍🏽",
    "’s 's 'LL I'M",
    "1234567",
    "\r\n",
    " \u{a0} ",
    "\t\t",
    "   ",
    "Ünïcödé",
    "漢字かな",
    "a\u{301}",
    "{\"a\": 1}",
    "to=functions.x",
    " \n",
    "x  ",
    "//",
    "==>",
    "\u{2028}",
];

/// Arbitrary message text, including text that spells special tokens.
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ,.!?'\"\n\t:;=_<|>-]{0,60}",
        "\\PC{0,24}",
        proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(TRICKY).prop_map(str::to_string),
                "[a-z ]{0,6}",
                "\\PC{0,4}"
            ],
            0..6
        )
        .prop_map(|parts| parts.concat()),
    ]
}

fn line() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 ,.'()-]{1,40}"
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z_]{0,10}"
}

fn with_annotations(schema: Value) -> impl Strategy<Value = Value> {
    (
        proptest::option::of(line()),
        proptest::option::of(line()),
        any::<bool>(),
        proptest::option::of(0u8..4),
    )
        .prop_map(move |(description, title, nullable, default)| {
            let mut schema = schema.clone();
            let object = schema.as_object_mut().expect("schemas are objects");
            if let Some(d) = description {
                object.insert("description".into(), d.into());
            }
            if let Some(t) = title {
                object.insert("title".into(), t.into());
            }
            if nullable {
                object.insert("nullable".into(), true.into());
            }
            match default {
                Some(0) => object.insert("default".into(), json!("dflt")),
                Some(1) => object.insert("default".into(), json!(7)),
                Some(2) => object.insert("default".into(), json!(false)),
                Some(_) => object.insert("default".into(), json!(["a", 1])),
                None => None,
            };
            schema
        })
}

/// JSON Schemas as tools declare them: scalars, enums, arrays, oneOf, nested objects.
pub fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": ["number", "string"]})),
        Just(json!({"type": "string", "enum": ["a", "b c", "d\"e"]})),
        Just(json!({"type": "string", "examples": ["x", "y"]})),
        Just(json!({"anyOf": [{"type": "string"}, {"type": "null"}]})),
        Just(json!({"const": 3})),
        Just(json!({"type": "array"})),
    ]
    .prop_flat_map(with_annotations);
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            proptest::collection::vec(inner.clone(), 1..3)
                .prop_map(|variants| json!({"oneOf": variants})),
            (
                proptest::collection::vec((name(), inner), 0..4),
                any::<u8>()
            )
                .prop_map(|(props, required)| {
                    let mut properties = Map::new();
                    let mut names = Vec::new();
                    for (i, (key, schema)) in props.into_iter().enumerate() {
                        if required & (1 << i) != 0 {
                            names.push(Value::from(key.clone()));
                        }
                        properties.insert(key, schema);
                    }
                    json!({"type": "object", "properties": properties, "required": names})
                }),
        ]
        .prop_flat_map(with_annotations)
    })
}

fn system_content() -> impl Strategy<Value = SystemContent> {
    let effort = proptest::option::of(proptest::sample::select(vec![
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ]));
    let channels = proptest::option::of((
        proptest::sample::subsequence(vec!["analysis", "commentary", "final"], 0..=3),
        any::<bool>(),
    ));
    (
        proptest::option::of(line()),
        effort,
        proptest::option::of("20[0-9]{2}-[01][0-9]-[0-3][0-9]"),
        proptest::option::of("20[0-9]{2}-[01][0-9]"),
        channels,
        0u8..4,
    )
        .prop_map(|(identity, effort, date, cutoff, channels, builtins)| {
            let mut system = SystemContent {
                model_identity: identity,
                reasoning_effort: effort,
                tools: None,
                conversation_start_date: date,
                knowledge_cutoff: cutoff,
                channel_config: channels.map(|(valid, required)| ChannelConfig {
                    valid_channels: valid.into_iter().map(String::from).collect(),
                    channel_required: required,
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

fn developer_content() -> impl Strategy<Value = DeveloperContent> {
    let tool = (name(), text(), proptest::option::of(schema())).prop_map(
        |(name, description, parameters)| ToolDescription {
            name,
            description,
            parameters,
        },
    );
    (
        proptest::option::of(text()),
        proptest::option::of((
            proptest::option::of(text()),
            proptest::collection::vec(tool, 0..3),
        )),
    )
        .prop_map(|(instructions, functions)| {
            let tools = functions.map(|(description, tools)| {
                let namespace = ToolNamespaceConfig {
                    name: "functions".into(),
                    description,
                    tools,
                };
                [("functions".to_string(), namespace)].into_iter().collect()
            });
            DeveloperContent {
                instructions,
                tools,
                response_formats: None,
            }
        })
}

fn channel() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(
        proptest::sample::select(vec!["analysis", "commentary", "final"]).prop_map(String::from),
    )
}

/// Messages an assistant produces: text on a channel, or a tool call.
pub fn assistant_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (text(), channel()).prop_map(|(text, channel)| Message {
            channel,
            ..Message::new(Role::Assistant, text)
        }),
        (
            name(),
            text(),
            proptest::sample::select(vec![
                None,
                Some("<|constrain|>json"),
                Some("json"),
                Some("code")
            ]),
            any::<bool>()
        )
            .prop_map(|(tool, args, content_type, analysis)| {
                let mut call = Message::new(Role::Assistant, args)
                    .with_channel(if analysis { "analysis" } else { "commentary" })
                    .with_recipient(format!("functions.{tool}"));
                call.content_type = content_type.map(String::from);
                call
            }),
    ]
}

fn turn() -> impl Strategy<Value = Message> {
    prop_oneof![
        text().prop_map(|t| Message::new(Role::User, t)),
        assistant_message(),
        (name(), text(), any::<bool>()).prop_map(|(tool, result, on_channel)| {
            let message =
                Message::from_tool(format!("functions.{tool}"), result).with_recipient("assistant");
            if on_channel {
                message.with_channel("commentary")
            } else {
                message
            }
        }),
        (text(), text()).prop_map(|(a, b)| Message {
            content: vec![Content::from(a), Content::from(b)],
            ..Message::new(Role::User, "")
        }),
    ]
}

/// Whole conversations: optional system and developer messages, then turns.
pub fn conversation() -> impl Strategy<Value = Conversation> {
    (
        proptest::option::of(system_content()),
        proptest::option::of(developer_content()),
        proptest::collection::vec(turn(), 0..8),
    )
        .prop_map(|(system, developer, turns)| {
            let mut messages = Vec::new();
            messages.extend(system.map(|s| Message::new(Role::System, s)));
            messages.extend(developer.map(|d| Message::new(Role::Developer, d)));
            messages.extend(turns);
            Conversation { messages }
        })
}

/// Rendered assistant output, sometimes damaged (cut, a token dropped, a special token inserted).
pub fn completion_tokens() -> impl Strategy<Value = Vec<Rank>> {
    let specials = proptest::sample::select(vec![
        tokens::START,
        tokens::END,
        tokens::MESSAGE,
        tokens::CHANNEL,
        tokens::CONSTRAIN,
        tokens::CALL,
        tokens::RETURN,
    ]);
    (
        proptest::collection::vec(assistant_message(), 1..4),
        0u8..5,
        any::<prop::sample::Index>(),
        specials,
    )
        .prop_map(|(messages, damage, at, special)| {
            let options = RenderOptions {
                mode: RenderMode::Plain,
                drop_analysis: false,
                ..Default::default()
            };
            let mut tokens = chorus_harmony::render(&Conversation { messages }, &options).unwrap();
            let i = at.index(tokens.len());
            match damage {
                1 => tokens.truncate(i),
                2 => {
                    tokens.remove(i);
                }
                3 => tokens.insert(i, special),
                _ => {}
            }
            tokens
        })
}

/// Random streams of header-ish tokens, special tokens, partial UTF-8 and unknown ids.
pub fn token_soup() -> impl Strategy<Value = Vec<Rank>> {
    let words = [
        "assistant",
        "user",
        "functions.f",
        " to=functions.f",
        " to=assistant",
        "analysis",
        "final",
        "commentary",
        " json",
        " code",
        " ",
        "hi",
        "\n",
        "<|end|>",
    ];
    let mut pool: Vec<Rank> = words
        .iter()
        .flat_map(|w| encoding().encode_ordinary(w))
        .collect();
    pool.extend([
        tokens::START,
        tokens::END,
        tokens::MESSAGE,
        tokens::CHANNEL,
        tokens::CONSTRAIN,
        tokens::CALL,
        tokens::RETURN,
        200_013,
        9552,
        201_089,
    ]);
    proptest::collection::vec(proptest::sample::select(pool), 0..24)
}

/// Drops a leading `<|start|>assistant` (for parsing with the role already opened).
pub fn strip_assistant_start(tokens: &[Rank]) -> Vec<Rank> {
    let mut prefix = vec![tokens::START];
    prefix.extend(encoding().encode_ordinary("assistant"));
    tokens
        .strip_prefix(prefix.as_slice())
        .unwrap_or(tokens)
        .to_vec()
}

/// Asserts that the special tokens in `rendered` are exactly the ones the headers and frames of
/// `conversation` call for, so none came from user, tool or model text.
pub fn assert_no_special_in_content(
    conversation: &Conversation,
    rendered: &[Rank],
) -> Result<(), TestCaseError> {
    let options = RenderOptions {
        drop_analysis: false,
        ..Default::default()
    };
    let tokens = chorus_harmony::render(conversation, &options).unwrap();
    let expected: usize = 1 + conversation
        .messages
        .iter()
        .map(|m| {
            3 + usize::from(m.channel.is_some())
                + usize::from(
                    m.content_type
                        .as_deref()
                        .is_some_and(|c| c.starts_with("<|constrain|>")),
                )
        })
        .sum::<usize>();
    let found = tokens.iter().filter(|&&t| tokens::is_special(t)).count();
    prop_assert_eq!(
        found,
        expected,
        "special tokens in {:?}",
        encoding().decode_utf8(&tokens)
    );
    prop_assert!(rendered.iter().filter(|&&t| tokens::is_special(t)).count() <= expected);
    Ok(())
}
