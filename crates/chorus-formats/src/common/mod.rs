//! Passes and helpers shared by the codecs.

pub mod arguments;
pub mod call_ids;
pub mod extras;
pub mod fields;
pub mod json;
pub mod media;
pub mod names;
pub mod origin;
pub mod outgoing;
pub mod pairing;
pub mod params;
pub mod pyjson;
pub mod reasoning;
pub mod roles;
pub mod rotation;
pub mod spelling;
pub mod system;
pub mod usage;
