//! `input` data parts: a request declares its parameters, is called with values like a
//! function, and runs a batch in parallel with one `_instance` per input.

use chorus_context::data::{current, deep_merge};
use chorus_core::{Content, ContentPart, DataPart, Message, Nullable, Role};
use futures::StreamExt;
use serde_json::Value;

use super::{Schema, StructuredError, StructuredReply, StructuredRequest};
use crate::model::ModelClient;

/// The data kind that declares a request's parameters.
pub(crate) const INPUT: &str = "input";
/// The data kind of a loop's memory.
pub(crate) const STATE: &str = "state";

/// Replaces every data part of `kind` with `part`, put where the first one was (appended as a
/// user message when there was none); messages left empty are dropped.
pub(crate) fn replace_parts(messages: &[Message], kind: &str, part: DataPart) -> Vec<Message> {
    let mut part = Some(part);
    let mut out = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        let Some(Content::Parts(parts)) = message.content() else {
            out.push(message.clone());
            continue;
        };
        let mut kept = Vec::with_capacity(parts.len());
        for p in parts {
            match p {
                ContentPart::Data(d) if d.kind.as_deref() == Some(kind) => {
                    kept.extend(part.take().map(ContentPart::Data));
                }
                other => kept.push(other.clone()),
            }
        }
        if !kept.is_empty() || !message.calls().is_empty() {
            let mut changed = message.clone();
            changed.content = Nullable::Value(Content::Parts(kept));
            out.push(changed);
        }
    }
    if let Some(part) = part {
        out.push(Message::with_parts(
            Role::User,
            vec![ContentPart::Data(part)],
        ));
    }
    out
}

impl StructuredRequest {
    /// The merged `input` declaration (schema, description, default values), if any.
    pub fn input_declaration(&self) -> Option<DataPart> {
        current(&self.messages, INPUT, None).map(|m| m.to_part())
    }

    /// This request called with `input`: the values are merged over the declared defaults,
    /// checked against the declared schema, and become the one `input` data part, tagged with
    /// `instance` when given.
    pub fn with_input(
        &self,
        input: &Value,
        instance: Option<Value>,
    ) -> Result<StructuredRequest, StructuredError> {
        let declared = self.input_declaration().unwrap_or_default();
        let mut data = declared.data.clone();
        if data.is_object() && input.is_object() {
            deep_merge(&mut data, input);
        } else {
            data = input.clone();
        }
        if let Some(schema) = &declared.schema {
            let violations = Schema::compile("the input schema", schema)?.violations(&data);
            if !violations.is_empty() {
                return Err(StructuredError::Input {
                    instance: instance.unwrap_or(Value::Null),
                    violations,
                });
            }
        }
        let part = DataPart {
            kind: Some(INPUT.into()),
            data,
            schema: declared.schema,
            description: declared.description,
            instance: instance.clone(),
            extra: Default::default(),
        };
        let mut messages = replace_parts(&self.messages, INPUT, part);
        if let Some(instance) = instance {
            tag_state(&mut messages, &instance);
        }
        Ok(StructuredRequest {
            messages,
            ..self.clone()
        })
    }

    /// Runs the request once per input, at most `concurrency` at a time; input `i` gets
    /// `_instance` `i`, and the results come back in input order.
    pub async fn run_batch(
        &self,
        client: &dyn ModelClient,
        inputs: &[Value],
        concurrency: usize,
    ) -> Vec<Result<StructuredReply, StructuredError>> {
        futures::stream::iter(inputs.iter().enumerate())
            .map(|(i, input)| async move {
                let request = self.with_input(input, Some(Value::from(i)))?;
                request.run(client).await
            })
            .buffered(concurrency.max(1))
            .collect()
            .await
    }
}

/// Gives `state` data parts without an `_instance` the batch instance, so each run keeps its
/// own memory.
fn tag_state(messages: &mut [Message], instance: &Value) {
    for message in messages {
        let Some(Content::Parts(parts)) = message.content.value_mut() else {
            continue;
        };
        for part in parts {
            if let ContentPart::Data(d) = part
                && d.kind.as_deref() == Some(STATE)
                && d.instance.is_none()
            {
                d.instance = Some(instance.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn declared() -> StructuredRequest {
        StructuredRequest::new(
            "m",
            vec![Message::with_parts(
                Role::User,
                vec![
                    ContentPart::text("Greet the person."),
                    ContentPart::Data(DataPart {
                        kind: Some(INPUT.into()),
                        data: json!({"greeting": "Hello"}),
                        schema: Some(json!({"type": "object",
                            "properties": {"name": {"type": "string"}, "greeting": {"type": "string"}},
                            "required": ["name"]})),
                        description: Some("Who to greet".into()),
                        ..DataPart::default()
                    }),
                ],
            )],
        )
    }

    #[test]
    fn input_merges_over_defaults_and_replaces_the_declaration() {
        let bound = declared()
            .with_input(&json!({"name": "Ada"}), Some(json!(3)))
            .unwrap();
        assert_eq!(bound.messages.len(), 1);
        let parts = bound.messages[0].parts();
        assert_eq!(parts.len(), 2);
        let ContentPart::Data(d) = &parts[1] else {
            panic!("{parts:?}")
        };
        assert_eq!(d.data, json!({"greeting": "Hello", "name": "Ada"}));
        assert_eq!(d.instance, Some(json!(3)));
        assert_eq!(d.description.as_deref(), Some("Who to greet"));
        assert!(d.schema.is_some());
    }

    #[test]
    fn input_that_breaks_the_schema_is_rejected_with_its_instance() {
        let err = declared()
            .with_input(&json!({"name": 7}), Some(json!(1)))
            .unwrap_err();
        let StructuredError::Input {
            instance,
            violations,
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!(instance, &json!(1));
        assert_eq!(violations[0].pointer, "/name");
        assert!(err.to_string().contains("/name"), "{err}");
    }

    #[test]
    fn a_request_without_declaration_gets_its_input_appended() {
        let plain = StructuredRequest::new("m", vec![Message::new(Role::User, "hi")]);
        let bound = plain.with_input(&json!(5), None).unwrap();
        assert_eq!(bound.messages.len(), 2);
        let ContentPart::Data(d) = &bound.messages[1].parts()[0] else {
            panic!()
        };
        assert_eq!(d.data, json!(5));
    }
}
