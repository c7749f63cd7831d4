//! Typed Rust functions as tools: the parameter schema is derived from the argument type.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use async_trait::async_trait;
use chorus_core::ToolDefinition;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolOutput, definition};

type Handler<A> = Box<dyn Fn(A) -> Pin<Box<dyn Future<Output = ToolOutput> + Send>> + Send + Sync>;

/// A tool backed by an async Rust function taking a typed argument struct `A`.
pub struct FunctionTool<A> {
    name: String,
    description: String,
    parameters: Value,
    requires_confirmation: bool,
    handler: Handler<A>,
    _args: PhantomData<fn(A)>,
}

impl<A: JsonSchema + DeserializeOwned + Send + 'static> FunctionTool<A> {
    /// A tool named `name` whose parameters are the JSON Schema of `A`.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        let mut parameters = schemars::schema_for!(A).to_value();
        if let Some(map) = parameters.as_object_mut() {
            map.remove("$schema");
            map.remove("title");
        }
        FunctionTool {
            name: name.into(),
            description: description.into(),
            parameters,
            requires_confirmation: false,
            handler: Box::new(move |a| Box::pin(f(a))),
            _args: PhantomData,
        }
    }

    /// The same tool, needing a person's approval for each call.
    pub fn with_confirmation(mut self) -> Self {
        self.requires_confirmation = true;
        self
    }
}

#[async_trait]
impl<A: JsonSchema + DeserializeOwned + Send + 'static> Tool for FunctionTool<A> {
    fn definition(&self) -> ToolDefinition {
        definition(&self.name, Some(&self.description), self.parameters.clone())
    }

    fn requires_confirmation(&self) -> bool {
        self.requires_confirmation
    }

    async fn call(&self, arguments: Value) -> ToolOutput {
        match serde_path_to_error::deserialize::<_, A>(arguments) {
            Ok(args) => (self.handler)(args).await,
            Err(e) => ToolOutput::error(
                "InvalidArguments",
                format!(
                    "at argument path `{}`: {}. Hint: follow the tool's parameter schema.",
                    e.path(),
                    e.inner()
                ),
            ),
        }
    }
}
