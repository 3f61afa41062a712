//! The language model behind `@chat` and `@generate`: the [`Llm`] trait a host implements (the
//! server talks to an Ollama or OpenAI-compatible HTTP endpoint; the engine never does I/O), the
//! prompt the engine builds (the caller's question, its chat history, and the site content
//! nearest to the question that the caller may view, when an embedding model is configured), and
//! the answer as Nick gives it: Ollama's `/api/generate` object (`model`, `created_at`,
//! `response`, `done`, `done_reason`), whole or as a stream of such objects, one JSON per line.

use std::sync::Arc;

use serde::Serialize;

pub use crate::ai::llm::{Chunk, Chunks, Llm, Message};

use crate::ai::embedding;
use crate::ai::related;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// The configured model, or 400 "AI is disabled.".
pub fn llm(ctx: &Ctx<'_>) -> Result<Arc<dyn Llm>> {
    ctx.core
        .options
        .llm
        .clone()
        .ok_or_else(|| EngineError::BadRequest(related::DISABLED.into()))
}

/// Site content sent with a question: at most this many items.
const CONTEXT_ITEMS: usize = 3;
/// ... and at most this many characters of each.
const CONTEXT_CHARS: usize = 2000;

/// The messages for a question: a system message with the site content nearest to `prompt`
/// that the caller may view (when an embedding model is configured) and `extra` (texts the client
/// sent as context), then `history`, then `prompt` as the user's message.
pub fn messages(
    ctx: &Ctx<'_>,
    prompt: &str,
    history: &[Message],
    extra: &[String],
) -> Result<Vec<Message>> {
    let mut system = String::from(
        "You answer questions about the content of this website. Use the website content \
         below when it helps; say so when it does not contain the answer.\n",
    );
    for (rec, _) in nearest_to_text(ctx, prompt, CONTEXT_ITEMS)? {
        let text: String = related::text_of(&rec).chars().take(CONTEXT_CHARS).collect();
        system.push_str(&format!(
            "\n--- {} ({})\n{text}\n",
            rec.title(),
            ctx.url(&rec.path)
        ));
    }
    for e in extra {
        system.push_str("\n--- context\n");
        system.push_str(e);
        system.push('\n');
    }
    let mut out = vec![Message {
        role: "system".into(),
        content: system,
    }];
    out.extend(history.iter().cloned());
    out.push(Message {
        role: "user".into(),
        content: prompt.to_string(),
    });
    Ok(out)
}

/// The objects nearest to `text` the caller may view (none without an embedding model).
fn nearest_to_text(ctx: &Ctx<'_>, text: &str, limit: usize) -> Result<Vec<(ContentRecord, f64)>> {
    let Some(e) = ctx.core.options.embedder.as_deref() else {
        return Ok(Vec::new());
    };
    let query = e.embed(text);
    let mut scored: Vec<(f64, String)> = ctx
        .scan_prefix(keys::VECTOR_PREFIX)?
        .into_iter()
        .map(|(k, v)| {
            let uid = String::from_utf8_lossy(&k[keys::VECTOR_PREFIX.len()..]).into_owned();
            (embedding::cosine(&query, &embedding::from_bytes(&v)), uid)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for (sim, uid) in scored {
        if out.len() >= limit || sim <= 0.0 {
            break;
        }
        if let Some(rec) = tree::load(ctx, &uid)? {
            if ctx.permitted(Permission::View, &rec)? {
                out.push((rec, sim));
            }
        }
    }
    Ok(out)
}

/// One answer object, as Nick (Ollama's `/api/generate`) gives it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Answer {
    /// The model's name.
    pub model: String,
    /// When the answer started.
    pub created_at: String,
    /// The text (of this piece, when streamed).
    pub response: String,
    /// Whether the answer is complete.
    pub done: bool,
    /// Why the model stopped (last piece).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done_reason: Option<String>,
}

/// Ask `llm` and wait for the whole answer. 502 when the model fails.
pub fn answer(llm: &dyn Llm, messages: &[Message], created_at: String) -> Result<Answer> {
    let mut text = String::new();
    let mut reason = None;
    for chunk in llm.chat(messages).map_err(unreachable)? {
        let chunk = chunk.map_err(unreachable)?;
        text.push_str(&chunk.text);
        if chunk.done {
            reason = chunk.done_reason;
            break;
        }
    }
    Ok(Answer {
        model: llm.model(),
        created_at,
        response: text,
        done: true,
        done_reason: Some(reason.unwrap_or_else(|| "stop".into())),
    })
}

fn unreachable(e: String) -> EngineError {
    EngineError::BadGateway(format!("The language model failed: {e}"))
}

/// An answer being streamed: each piece as one JSON line (an [`Answer`]), for the host to send as
/// the model produces them ([`crate::core::http::Response::lines`]). A failure of the model midway ends
/// the stream with a line `{"error": ...}`.
pub struct AnswerLines {
    chunks: Chunks,
    model: String,
    created_at: String,
    finished: bool,
}

impl AnswerLines {
    /// Start `llm` on `messages`. 502 when it cannot be reached.
    pub fn start(llm: &dyn Llm, messages: &[Message], created_at: String) -> Result<Self> {
        Ok(AnswerLines {
            chunks: llm.chat(messages).map_err(unreachable)?,
            model: llm.model(),
            created_at,
            finished: false,
        })
    }

    fn piece(&self, response: String, done: bool, reason: Option<String>) -> serde_json::Value {
        serde_json::to_value(Answer {
            model: self.model.clone(),
            created_at: self.created_at.clone(),
            response,
            done,
            done_reason: done.then(|| reason.unwrap_or_else(|| "stop".into())),
        })
        .unwrap_or_default()
    }
}

impl Iterator for AnswerLines {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.finished {
            return None;
        }
        let value = match self.chunks.next() {
            None => {
                self.finished = true;
                self.piece(String::new(), true, None)
            }
            Some(Ok(c)) => {
                self.finished = c.done;
                self.piece(c.text, c.done, c.done_reason)
            }
            Some(Err(e)) => {
                self.finished = true;
                serde_json::json!({"error": format!("The language model failed: {e}")})
            }
        };
        let mut line = serde_json::to_vec(&value).ok()?;
        line.push(b'\n');
        Some(line)
    }
}
