//! Related content and the language model: embedding vectors and the objects nearest to one,
//! the `Llm` interface a host implements, and the assistant behind `@chat` and `@generate`.

pub mod assistant;
pub mod embedding;
pub mod llm;
pub mod related;
