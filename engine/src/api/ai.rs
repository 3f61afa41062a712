//! `@chat` and `@generate`: questions to the configured language model, augmented with the site
//! content nearest to the question that the caller may view (the rules are in [`crate::ai::assistant`]).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::extract::Call;
use super::router::{Carriage, RouteDef, RouteTable};
use crate::ai::assistant::{self, Answer, AnswerLines, Message};
use crate::core::error::{EngineError, Result};
use crate::core::http::{LineStream, Response};
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@chat` and `@generate`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::post("@chat", chat)
            .reads()
            .carried(Carriage::Lines)
            .requires(Permission::View)
            .summary(
                "Ask the language model `prompt` after the conversation `messages`, with the \
                 site content nearest to the question (that the caller may view) and the \
                 client's `context` texts; `stream: true` answers one JSON object per line \
                 (`application/x-ndjson`) as the model produces them. 400 \"AI is disabled.\" \
                 without a configured model; 502 when the model fails",
            )
            .body::<ChatRequest>()
            .answers::<Answer>(),
    );
    r.route(
        RouteDef::post("@generate", generate)
            .reads()
            .carried(Carriage::Lines)
            .requires(Permission::View)
            .summary(
                "Ask the language model `prompt`, with the site content nearest to it (that the \
                 caller may view) and the client's `context` texts; `stream: true` streams as \
                 `@chat`. 400 \"AI is disabled.\" without a configured model",
            )
            .body::<GenerateRequest>()
            .answers::<Answer>(),
    );
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The body of `@chat`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    /// The question.
    pub prompt: String,
    /// The conversation so far (`user` and `assistant` messages).
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Texts the client adds as context (strings; other values are sent as JSON).
    #[serde(default)]
    pub context: Vec<Value>,
    /// Options of the client (Nick's `params`, such as `{"Site": "enable"}`); accepted, unused.
    #[serde(default)]
    pub params: Option<serde_json::Map<String, Value>>,
    /// Stream the answer as it is produced.
    #[serde(default)]
    pub stream: bool,
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The body of `@generate`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateRequest {
    /// The question.
    pub prompt: String,
    /// Texts the client adds as context.
    #[serde(default)]
    pub context: Vec<Value>,
    /// Options of the client (Nick's `params`); accepted, unused.
    #[serde(default)]
    pub params: Option<serde_json::Map<String, Value>>,
    /// Stream the answer as it is produced.
    #[serde(default)]
    pub stream: bool,
}

fn chat(ctx: &mut Ctx<'_>, call: &Call<'_>, _obj: ContentRecord) -> Result<Response> {
    let llm = assistant::llm(ctx)?;
    let req: ChatRequest = call.body()?;
    for m in &req.messages {
        if !matches!(m.role.as_str(), "user" | "assistant") {
            return Err(EngineError::BadRequest(format!(
                "messages: role must be \"user\" or \"assistant\", not {:?}",
                m.role
            )));
        }
    }
    ask(
        ctx,
        llm.as_ref(),
        &req.prompt,
        &req.messages,
        &req.context,
        req.stream,
    )
}

fn generate(ctx: &mut Ctx<'_>, call: &Call<'_>, _obj: ContentRecord) -> Result<Response> {
    let llm = assistant::llm(ctx)?;
    let req: GenerateRequest = call.body()?;
    ask(
        ctx,
        llm.as_ref(),
        &req.prompt,
        &[],
        &req.context,
        req.stream,
    )
}

fn ask(
    ctx: &Ctx<'_>,
    llm: &dyn assistant::Llm,
    prompt: &str,
    history: &[Message],
    context: &[Value],
    stream: bool,
) -> Result<Response> {
    if prompt.trim().is_empty() {
        return Err(EngineError::BadRequest("prompt must not be empty".into()));
    }
    let extra: Vec<String> = context
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let messages = assistant::messages(ctx, prompt, history, &extra)?;
    let created_at = crate::core::clock::iso(&ctx.now());
    if stream {
        let lines = AnswerLines::start(llm, &messages, created_at)?;
        let mut resp = Response::empty(200).with_header("Content-Type", "application/x-ndjson");
        resp.lines = Some(LineStream::new(lines));
        return Ok(resp);
    }
    Ok(Response::json(
        200,
        &assistant::answer(llm, &messages, created_at)?,
    ))
}
