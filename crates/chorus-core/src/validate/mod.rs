//! Validation: JSON Schema plus the checks a schema cannot express, with JSON-pointer problems.
//!
//! ```
//! use chorus_core::validate::Validator;
//! let report = Validator::standard().validate_bytes(br#"{"role": "user", "content": "hi"}"#, None);
//! assert!(report.is_valid());
//! ```

mod checks;
mod describe;
mod detect;
mod json_scan;

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use jsonschema::{Draft, ValidationOptions};
use serde_json::Value;
use thiserror::Error;

use crate::problem::{Problem, Severity};
pub use checks::routing_id_problem;
pub use describe::json_type;
pub use detect::detect_kind;
pub use json_scan::{Limits, parse};

use crate::handoff::{HandoffType, VersionCheck};
use crate::schema::{Kind, handoff_base_schema, handoff_data_schema};
use describe::Broken;

/// The outcome of validating one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The kind the document was validated as; `None` when it could not be told.
    pub kind: Option<Kind>,
    /// Errors and warnings, in document order per check.
    pub problems: Vec<Problem>,
}

impl Report {
    /// True when there is no error (warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.problems.iter().all(|p| p.severity != Severity::Error)
    }

    /// The errors only.
    pub fn errors(&self) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
    }
}

/// Why a user data schema cannot be registered.
#[derive(Debug, Error)]
pub enum RegistryError {
    /// The schema file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path}: expected a JSON Schema document, found invalid JSON: {reason}")]
    Json {
        /// The file.
        path: String,
        /// The parse problem.
        reason: String,
    },
    /// The schema does not compile.
    #[error("{name}: expected a valid JSON Schema, found one that does not compile: {reason}")]
    Schema {
        /// The handoff type or file.
        name: String,
        /// The compiler's message.
        reason: String,
    },
    /// The handoff type name is not usable.
    #[error("{name}: expected a handoff type name usable for routing; it {reason}")]
    TypeName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Validates chorus documents; build once, use from many threads.
pub struct Validator {
    limits: Limits,
    kinds: HashMap<Kind, jsonschema::Validator>,
    data_schemas: HashMap<String, jsonschema::Validator>,
    custom_types: Vec<String>,
}

fn options() -> ValidationOptions<'static> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
}

fn compile(name: &str, schema: &Value) -> Result<jsonschema::Validator, RegistryError> {
    options().build(schema).map_err(|e| RegistryError::Schema {
        name: name.to_owned(),
        reason: e.to_string(),
    })
}

impl Default for Validator {
    fn default() -> Self {
        Self::new()
    }
}

impl Validator {
    /// A validator for the standard schemas with default limits.
    pub fn new() -> Self {
        let mut kinds = HashMap::new();
        for kind in Kind::ALL {
            let schema = if kind == Kind::Handoff {
                handoff_base_schema()
            } else {
                kind.schema()
            };
            kinds.insert(
                kind,
                compile(kind.name(), &schema).expect("generated schemas compile"),
            );
        }
        let data_schemas = HandoffType::STANDARD
            .iter()
            .map(|t| {
                let schema = handoff_data_schema(t).expect("standard types have schemas");
                (
                    t.as_str().to_owned(),
                    compile(t.as_str(), &schema).expect("generated schemas compile"),
                )
            })
            .collect();
        Validator {
            limits: Limits::default(),
            kinds,
            data_schemas,
            custom_types: Vec::new(),
        }
    }

    /// A shared validator with the standard schemas and default limits.
    pub fn standard() -> &'static Validator {
        static STANDARD: OnceLock<Validator> = OnceLock::new();
        STANDARD.get_or_init(Validator::new)
    }

    /// The same validator with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Uses `schema` for the `payload.data` of handoffs of `handoff_type` (standard or new).
    pub fn register_data_schema(
        &mut self,
        handoff_type: &str,
        schema: &Value,
    ) -> Result<(), RegistryError> {
        if let Some(reason) = routing_id_problem(handoff_type) {
            return Err(RegistryError::TypeName {
                name: handoff_type.to_owned(),
                reason,
            });
        }
        let validator = compile(handoff_type, schema)?;
        self.data_schemas.insert(handoff_type.to_owned(), validator);
        if matches!(HandoffType::parse(handoff_type), HandoffType::Custom(_))
            && !self.custom_types.iter().any(|t| t == handoff_type)
        {
            self.custom_types.push(handoff_type.to_owned());
            let mut base = handoff_base_schema();
            if let Some(Value::Array(names)) = base.pointer_mut("/$defs/HandoffType/enum") {
                names.extend(self.custom_types.iter().cloned().map(Value::String));
            }
            self.kinds.insert(Kind::Handoff, compile("handoff", &base)?);
        }
        Ok(())
    }

    /// Registers every `*.schema.json` in `dir`; the type is the file name without
    /// `.schema.json` and a `_data` suffix, upper-cased (`escalation_data.schema.json` → ESCALATION).
    pub fn load_data_schema_dir(&mut self, dir: &Path) -> Result<Vec<String>, RegistryError> {
        let io = |source| RegistryError::Io {
            path: dir.display().to_string(),
            source,
        };
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(io)?
            .collect::<Result<_, _>>()
            .map_err(io)?;
        entries.sort_by_key(|e| e.file_name());
        let mut registered = Vec::new();
        for entry in entries {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = file_name.strip_suffix(".schema.json") else {
                continue;
            };
            let handoff_type = stem.strip_suffix("_data").unwrap_or(stem).to_uppercase();
            let path = entry.path().display().to_string();
            let bytes = std::fs::read(entry.path()).map_err(|source| RegistryError::Io {
                path: path.clone(),
                source,
            })?;
            let schema = parse(&bytes, &self.limits).map_err(|p| RegistryError::Json {
                path,
                reason: p.to_string(),
            })?;
            self.register_data_schema(&handoff_type, &schema)?;
            registered.push(handoff_type);
        }
        Ok(registered)
    }

    /// Parses and validates `bytes`; `kind: None` recognises the kind from the shape.
    pub fn validate_bytes(&self, bytes: &[u8], kind: Option<Kind>) -> Report {
        match parse(bytes, &self.limits) {
            Ok(value) => self.validate_value(&value, kind),
            Err(problem) => Report {
                kind,
                problems: vec![problem],
            },
        }
    }

    /// Validates a parsed document; `kind: None` recognises the kind from the shape. Every
    /// semantic check runs, whatever the version and unknown fields, except on values the schema
    /// found missing or of the wrong shape (those are reported once, by the schema).
    pub fn validate_value(&self, value: &Value, kind: Option<Kind>) -> Report {
        let kind = match kind.map_or_else(|| detect_kind(value), Ok) {
            Ok(kind) => kind,
            Err(problem) => {
                return Report {
                    kind: None,
                    problems: vec![problem],
                };
            }
        };
        let mut found = SchemaFindings::default();
        found.add(&self.kinds[&kind], value, "");
        if kind == Kind::Handoff {
            self.check_handoff_data(value, &mut found);
            if is_newer_minor(value) {
                found.accept_unknown_fields();
            }
        }
        let mut semantic = Vec::new();
        self.semantic_checks(value, kind, &mut semantic);
        let mut problems = found.problems;
        problems.extend(semantic.into_iter().filter(|p| {
            !found
                .unreadable
                .iter()
                .any(|b| is_at_or_under(&p.pointer, b))
        }));
        Report {
            kind: Some(kind),
            problems,
        }
    }

    fn check_handoff_data(&self, value: &Value, found: &mut SchemaFindings) {
        let (Some(name), Some(data)) = (
            value
                .pointer("/payload/handoff_type")
                .and_then(Value::as_str),
            value.pointer("/payload/data"),
        ) else {
            return;
        };
        if let Some(validator) = self.data_schemas.get(name) {
            found.add(validator, data, "/payload/data");
        }
    }

    fn semantic_checks(&self, value: &Value, kind: Kind, problems: &mut Vec<Problem>) {
        match kind {
            Kind::Message => checks::check_message(value, "", &mut Default::default(), problems),
            Kind::Conversation => {
                let messages = value.get("messages").and_then(Value::as_array);
                checks::check_conversation(messages.map_or(&[], Vec::as_slice), problems);
            }
            Kind::Handoff => checks::check_handoff(value, problems),
            Kind::HarmonyHandoff => checks::check_packet(value, problems),
            Kind::Data => checks::check_data_part(value, "", problems),
        }
    }
}

/// What the schemas found: the problems, which of them are unknown fields, and the pointers
/// whose values later checks must not read.
#[derive(Default)]
struct SchemaFindings {
    problems: Vec<Problem>,
    /// Indices into `problems` of unknown-field problems.
    unknown_fields: Vec<usize>,
    /// Pointers of missing or mistyped values.
    unreadable: Vec<String>,
}

impl SchemaFindings {
    /// Validates `value` against `schema`, its pointers prefixed by `prefix`.
    fn add(&mut self, schema: &jsonschema::Validator, value: &Value, prefix: &str) {
        if schema.is_valid(value) {
            return;
        }
        for error in schema.iter_errors(value) {
            for found in describe::problems_from_schema_error(&error) {
                let mut problem = found.problem;
                problem.pointer.insert_str(0, prefix);
                match found.broken {
                    Broken::UnknownField => self.unknown_fields.push(self.problems.len()),
                    Broken::Value(pointer) => self.unreadable.push(format!("{prefix}{pointer}")),
                }
                self.problems.push(problem);
            }
        }
    }

    /// Turns unknown-field errors into warnings: a newer minor version may add fields.
    fn accept_unknown_fields(&mut self) {
        for &i in &self.unknown_fields {
            let problem = &mut self.problems[i];
            problem.severity = Severity::Warning;
            problem.hint = Some("accepted: a newer minor protocol version may add fields".into());
        }
    }
}

/// True when `pointer` is `base` or lies inside the value at `base`.
fn is_at_or_under(pointer: &str, base: &str) -> bool {
    pointer
        .strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// True for a handoff whose `protocol_version` is a newer minor of the supported major.
fn is_newer_minor(value: &Value) -> bool {
    value
        .pointer("/metadata/protocol_version")
        .and_then(Value::as_str)
        .and_then(crate::handoff::ProtocolVersion::parse)
        .is_some_and(|v| v.check() == VersionCheck::NewerMinor)
}
