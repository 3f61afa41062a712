//! The language model of `@chat` and `@generate` over HTTP ([`engine::Llm`]): an Ollama
//! server (`POST <url>/api/chat`, answers streamed as JSON lines) or an OpenAI-compatible one
//! (`POST <url>/chat/completions` with `<url>` ending in `/v1`, answers streamed as server-sent
//! events). The request always asks for a stream, so the engine can pass pieces on as they come.
//! Plain HTTP only (no TLS in this build): a local model server, or a TLS proxy in front.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use engine::{Chunk, Chunks, Llm, Message};
use serde_json::{json, Value};

/// Which protocol the endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LlmApi {
    /// Ollama's `/api/chat`.
    Ollama,
    /// OpenAI's `/chat/completions` (vLLM, llama.cpp server, LM Studio, ...).
    Openai,
}

/// A model behind an HTTP endpoint.
pub struct HttpLlm {
    url: String,
    api: LlmApi,
    model: String,
    key: Option<String>,
    agent: ureq::Agent,
}

impl HttpLlm {
    /// The model `model` at `url` speaking `api`, with bearer `key` if given.
    pub fn new(url: &str, api: LlmApi, model: &str, key: Option<String>) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        HttpLlm {
            url: url.trim_end_matches('/').to_string(),
            api,
            model: model.to_string(),
            key,
            agent,
        }
    }
}

impl Llm for HttpLlm {
    fn model(&self) -> String {
        self.model.clone()
    }

    fn chat(&self, messages: &[Message]) -> Result<Chunks, String> {
        let (path, body) = match self.api {
            LlmApi::Ollama => (
                "/api/chat",
                json!({"model": self.model, "messages": messages, "stream": true}),
            ),
            LlmApi::Openai => (
                "/chat/completions",
                json!({"model": self.model, "messages": messages, "stream": true}),
            ),
        };
        let mut req = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("Content-Type", "application/json");
        if let Some(k) = &self.key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        let resp = req.send(body.to_string()).map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        if status != 200 {
            let text = resp
                .into_body()
                .read_to_string()
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect::<String>();
            return Err(format!("HTTP {status}: {text}"));
        }
        let lines = BufReader::new(resp.into_body().into_reader()).lines();
        let api = self.api;
        Ok(Box::new(lines.filter_map(move |line| match line {
            Err(e) => Some(Err(e.to_string())),
            Ok(line) => parse_line(api, line.trim()),
        })))
    }
}

/// One line of the endpoint's stream as a piece of the answer (`None`: nothing to pass on).
fn parse_line(api: LlmApi, line: &str) -> Option<Result<Chunk, String>> {
    let data = match api {
        LlmApi::Ollama => line,
        LlmApi::Openai => {
            let d = line.strip_prefix("data:")?.trim();
            if d == "[DONE]" {
                return Some(Ok(Chunk {
                    done: true,
                    ..Chunk::default()
                }));
            }
            d
        }
    };
    if data.is_empty() {
        return None;
    }
    let v: Value = match serde_json::from_str(data) {
        Ok(v) => v,
        Err(e) => return Some(Err(format!("unreadable answer line: {e}"))),
    };
    if let Some(err) = v.get("error") {
        return Some(Err(err.to_string()));
    }
    Some(Ok(match api {
        LlmApi::Ollama => Chunk {
            text: v["message"]["content"]
                .as_str()
                .or_else(|| v["response"].as_str())
                .unwrap_or("")
                .to_string(),
            done: v["done"].as_bool().unwrap_or(false),
            done_reason: v["done_reason"].as_str().map(str::to_string),
        },
        LlmApi::Openai => {
            let choice = &v["choices"][0];
            let reason = choice["finish_reason"].as_str().map(str::to_string);
            Chunk {
                text: choice["delta"]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                done: reason.is_some(),
                done_reason: reason,
            }
        }
    }))
}
