//! The language model interface the hosts implement for `@chat` and `@generate`
//! ([`crate::EngineOptions::llm`]); what the engine does with it is in [`crate::ai::assistant`].

use serde::{Deserialize, Serialize};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// A piece of a model's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    /// Text added by this piece.
    pub text: String,
    /// Whether this is the last piece.
    pub done: bool,
    /// Why the model stopped (last piece), e.g. `stop`.
    pub done_reason: Option<String>,
}

/// The pieces of an answer, as the model produces them (an error ends it).
pub type Chunks = Box<dyn Iterator<Item = std::result::Result<Chunk, String>> + Send>;

/// A language model the engine can ask (hosts implement it; [`crate::EngineOptions::llm`]).
pub trait Llm: Send + Sync {
    /// The model's name, as answers report it.
    fn model(&self) -> String;
    /// Start answering `messages`; the pieces come as the model produces them. `Err` when the
    /// model cannot be reached.
    fn chat(&self, messages: &[Message]) -> std::result::Result<Chunks, String>;
}
